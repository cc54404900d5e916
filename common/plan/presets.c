#include "plan/presets.h"

#include "core/error.h"

#include <string.h>

/* Shapes from the published model cards (GPT-3 paper table 2.1 for the GPT
 * models, LLaMA paper table 2 for the LLaMA models). `tiny` exists for tests. */
static const pb_presets_model presets[] = {
    {"tiny", 256, 4, 8, 128, 1024, 1, 0}, /* 8 heads: TP of 8 ranks (a GPU node) divides them */
    {"gpt-1.3b", 2048, 24, 16, 2048, 50257, 1, 1.3e9},
    {"llama-7b", 4096, 32, 32, 2048, 32000, 1, 7e9},
    {"llama-70b", 8192, 80, 64, 4096, 32000, 1, 70e9},
    {"gpt-175b", 12288, 96, 96, 2048, 50257, 1, 175e9},
};

const char *pb_presets_preset_names(void)
{
    return "tiny, gpt-1.3b, llama-7b, llama-70b, gpt-175b";
}

int pb_presets_preset(const char *name, const char *option, pb_presets_model *out)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        if (strcmp(presets[i].name, name) == 0) {
            *out = presets[i];
            return PB_OK;
        }
    }
    return pb_error_usage(option, "unknown model '%s'; accepted: %s", name, pb_presets_preset_names());
}

int pb_presets_validate(const pb_presets_model *m)
{
    if (m->hidden <= 0) return pb_error_usage("--hidden", "must be a positive integer, got %lld", (long long)m->hidden);
    if (m->layers <= 0) return pb_error_usage("--layers", "must be a positive integer, got %lld", (long long)m->layers);
    if (m->heads <= 0) return pb_error_usage("--heads", "must be a positive integer, got %lld", (long long)m->heads);
    if (m->seq <= 0) return pb_error_usage("--seq", "must be a positive integer, got %lld", (long long)m->seq);
    if (m->micro_batch <= 0)
        return pb_error_usage("--micro-batch", "must be a positive integer, got %lld", (long long)m->micro_batch);
    if (m->vocab < 0) return pb_error_usage("--vocab", "must be zero or positive, got %lld", (long long)m->vocab);
    if (m->hidden % m->heads != 0)
        return pb_error_usage("--hidden", "hidden size %lld is not divisible by the head count %lld",
                        (long long)m->hidden, (long long)m->heads);
    return PB_OK;
}

double pb_presets_layer_params(int64_t hidden) { return 12.0 * (double)hidden * (double)hidden; }

double pb_presets_params(const pb_presets_model *m)
{
    return (double)m->layers * pb_presets_layer_params(m->hidden) + (double)m->vocab * (double)m->hidden;
}
