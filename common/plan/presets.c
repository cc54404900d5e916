#include "plan/presets.h"

#include "core/error.h"
#include "core/flops.h"
#include "core/lines.h"
#include "core/parse.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define PB_PRESET(name, h, L, a, kv, ffn, mlp, s, V, tied, nominal, experts, top_k) \
    {name, h, L, a, kv, ffn, PB_MLP_##mlp, s, V, tied, 1, nominal, experts, top_k},
static const pb_presets_model presets[] = {
#include "plan/presets.def"
};
#undef PB_PRESET

enum { N_PRESETS = sizeof presets / sizeof presets[0] };

const char *pb_presets_preset_names(void)
{
    static char names[256];
    if (!names[0])
        for (size_t i = 0; i < N_PRESETS; i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "", presets[i].name);
    return names;
}

int pb_presets_preset(const char *name, const char *option, pb_presets_model *out)
{
    for (size_t i = 0; i < N_PRESETS; i++) {
        if (strcmp(presets[i].name, name) == 0) {
            *out = presets[i];
            return PB_OK;
        }
    }
    return pb_error_usage(option, "unknown model '%s'; accepted: %s", name, pb_presets_preset_names());
}

const char *pb_presets_mlp_name(pb_presets_mlp mlp) { return mlp == PB_MLP_SWIGLU ? "swiglu" : "gelu"; }

/* ---- model files ---------------------------------------------------------- */

typedef struct file_key {
    const char *key;
    int64_t *field; /* integer keys */
    long long min, max;
} file_key;

static char *trim(char *s)
{
    while (isspace((unsigned char)*s)) s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) *--end = '\0';
    return s;
}

/* One `key value` line into m; `where` is FILE:LINE for messages. */
static int file_line(char *line, const char *where, pb_presets_model *m, char *name_buf, size_t name_len)
{
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *key = trim(line);
    if (!*key) return PB_OK;
    char *value = key + strcspn(key, " \t=");
    if (*value) *value++ = '\0';
    value = trim(value);
    if (*value == '=') value = trim(value + 1);
    if (!*value) return pb_error_usage(where, "key '%s' has no value", key);
    int64_t tied = m->tied;
    const file_key ints[] = {{"hidden", &m->hidden, 1, 1 << 20}, {"layers", &m->layers, 1, 100000},
                             {"heads", &m->heads, 1, 1 << 16}, {"kv_heads", &m->kv_heads, 1, 1 << 16},
                             {"ffn", &m->ffn, 1, 1 << 24}, {"seq", &m->seq, 1, 1 << 24},
                             {"vocab", &m->vocab, 0, 1LL << 32}, {"micro_batch", &m->micro_batch, 1, 1 << 20},
                             {"tied", &tied, 0, 1}, {"experts", &m->experts, 0, 1 << 16},
                             {"top_k", &m->top_k, 0, 1 << 16}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (strcmp(key, ints[i].key) != 0) continue;
        long long v;
        PB_TRY(pb_parse_int(where, value, ints[i].min, ints[i].max, &v));
        *ints[i].field = v;
        m->tied = (int)tied;
        return PB_OK;
    }
    if (strcmp(key, "mlp") == 0) {
        static const char *const kinds[] = {"gelu", "swiglu", NULL};
        int k;
        PB_TRY(pb_parse_choice(where, value, kinds, &k));
        m->mlp = (pb_presets_mlp)k;
        return PB_OK;
    }
    if (strcmp(key, "params") == 0) return pb_parse_count(where, value, 1, 1e16, &m->nominal_params);
    if (strcmp(key, "name") == 0) {
        size_t n = strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-");
        if (value[n] || n >= name_len)
            return pb_error_usage(where, "name '%s': expected at most %zu letters, digits, '.', '_' or '-'", value,
                                  name_len - 1);
        memcpy(name_buf, value, n + 1);
        return PB_OK;
    }
    return pb_error_usage(where, "unknown key '%s'; accepted: name, hidden, layers, heads, kv_heads, ffn, mlp, "
                          "seq, vocab, tied, micro_batch, params, experts, top_k", key);
}

int pb_presets_load_file(const char *path, const char *option, pb_presets_model *out, char *name_buf,
                         size_t name_len)
{
    pb_presets_model m = {.mlp = PB_MLP_GELU, .tied = 1, .micro_batch = 1};
    snprintf(name_buf, name_len, "custom");
    pb_lines r;
    PB_TRY(pb_lines_open(&r, path, option));
    char *line, where[PB_LINES_MAX];
    int rc;
    while ((rc = pb_lines_next(&r, &line)) == PB_OK && line) {
        snprintf(where, sizeof where, "%s %s:%d", option, path, r.lineno);
        if ((rc = file_line(line, where, &m, name_buf, name_len)) != PB_OK) break;
    }
    pb_lines_close(&r);
    PB_TRY(rc);
    const char *missing = !m.hidden ? "hidden" : !m.layers ? "layers" : !m.heads ? "heads" : !m.seq ? "seq" : NULL;
    if (missing) return pb_error_usage(option, "%s: key '%s' is required", path, missing);
    /* A mixture of experts routes each token to top_k of its experts: both set, or neither (dense). */
    if ((m.experts > 0) != (m.top_k > 0))
        return pb_error_usage(option, "%s: experts and top_k go together (an MoE model sets both, a dense one neither)",
                              path);
    if (m.top_k > m.experts)
        return pb_error_usage(option, "%s: top_k %lld is more than the %lld experts; expected 1 <= top_k <= experts",
                              path, (long long)m.top_k, (long long)m.experts);
    if (!m.kv_heads) m.kv_heads = m.heads;
    if (!m.ffn) m.ffn = 4 * m.hidden;
    m.name = name_buf;
    *out = m;
    return pb_presets_validate(out);
}

int pb_presets_validate(const pb_presets_model *m)
{
    if (m->hidden <= 0) return pb_error_usage("--hidden", "must be a positive integer, got %lld", (long long)m->hidden);
    if (m->layers <= 0) return pb_error_usage("--layers", "must be a positive integer, got %lld", (long long)m->layers);
    if (m->heads <= 0) return pb_error_usage("--heads", "must be a positive integer, got %lld", (long long)m->heads);
    if (m->kv_heads <= 0)
        return pb_error_usage("--kv-heads", "must be a positive integer, got %lld", (long long)m->kv_heads);
    if (m->ffn <= 0) return pb_error_usage("--ffn", "must be a positive integer, got %lld", (long long)m->ffn);
    if (m->seq <= 0) return pb_error_usage("--seq", "must be a positive integer, got %lld", (long long)m->seq);
    if (m->micro_batch <= 0)
        return pb_error_usage("--micro-batch", "must be a positive integer, got %lld", (long long)m->micro_batch);
    if (m->vocab < 0) return pb_error_usage("--vocab", "must be zero or positive, got %lld", (long long)m->vocab);
    if (m->hidden % m->heads != 0)
        return pb_error_usage("--hidden", "hidden size %lld is not divisible by the head count %lld",
                        (long long)m->hidden, (long long)m->heads);
    if (m->heads % m->kv_heads != 0)
        return pb_error_usage("--kv-heads", "%lld KV heads do not divide the %lld query heads", (long long)m->kv_heads,
                              (long long)m->heads);
    return PB_OK;
}

/* v * num / den when that is a whole number, else 0. */
static int64_t scaled(int64_t v, int64_t num, int64_t den)
{
    return den > 0 && (v * num) % den == 0 ? v * num / den : 0;
}

void pb_presets_resize(pb_presets_model *m, int64_t hidden, int64_t heads)
{
    if (hidden > 0 && hidden != m->hidden) {
        int64_t ffn = scaled(m->ffn, hidden, m->hidden);
        m->ffn = ffn > 0 ? ffn : 4 * hidden;
        m->hidden = hidden;
    }
    if (heads > 0 && heads != m->heads) {
        int64_t kv = scaled(m->kv_heads, heads, m->heads);
        m->kv_heads = kv > 0 && heads % kv == 0 ? kv : heads;
        m->heads = heads;
    }
}

double pb_presets_layer_params(const pb_presets_model *m)
{
    return pb_flops_layer_linear_params((double)m->hidden, (double)m->heads, (double)m->kv_heads, (double)m->ffn,
                                        m->mlp == PB_MLP_SWIGLU);
}

double pb_presets_params(const pb_presets_model *m)
{
    double embedding = (double)m->vocab * (double)m->hidden;
    return (double)m->layers * pb_presets_layer_params(m) + (m->tied ? 1.0 : 2.0) * embedding;
}

int64_t pb_presets_default_global_batch(const pb_presets_model *m)
{
    /* GPT-3 table 2.1: 0.5M tokens = 512 sequences (1.3B), 3.2M = 1536 (175B);
     * LLaMA: 4M = 4*2^20 tokens per batch. */
    const char *name = m->name ? m->name : "";
    if (strcmp(name, "gpt-175b") == 0) return 1536;
    if (strcmp(name, "gpt-1.3b") == 0) return 512;
    if (strcmp(name, "tiny") == 0 || strcmp(name, "tiny-gqa") == 0) return 8; /* the CPU models (suite/shapes.py) */
    int64_t gb = ((int64_t)4 << 20) / m->seq;
    return gb > 0 ? gb : 1;
}
