/* Transformer model presets, shared by the planner and the workload benchmarks.
 *
 * Parameter count convention (docs/METRICS.md): each layer holds the four
 * linear weights of a Megatron/GPT layer, QKV h->3h, output h->h, MLP h->4h->h,
 * i.e. 12*h^2 parameters (biases and layer norms, O(h), are ignored), plus one
 * tied token embedding of vocab*h. `nominal_params` is the count the model is
 * known by ("7B"); the planner uses it where a document quotes it. */
#ifndef PB_PRESETS_H
#define PB_PRESETS_H

#include <stddef.h>
#include <stdint.h>

typedef struct pb_presets_model {
    const char *name;
    int64_t hidden;     /* h */
    int64_t layers;     /* L */
    int64_t heads;      /* attention heads; must divide h */
    int64_t seq;        /* s, sequence length */
    int64_t vocab;      /* tied embedding rows */
    int64_t micro_batch;/* b, sequences per micro-batch */
    double nominal_params; /* advertised size, e.g. 7e9; 0 = use the formula */
} pb_presets_model;

/* Look up a preset by name ("tiny", "gpt-1.3b", "llama-7b", "llama-70b", "gpt-175b").
 * Returns PB_OK or PB_ERR_USAGE (message names `option` and the accepted names). */
int pb_presets_preset(const char *name, const char *option, pb_presets_model *out);

/* Comma-separated list of preset names, for help and error messages. */
const char *pb_presets_preset_names(void);

/* Check the shape is consistent: all positive, heads divides hidden.
 * Returns PB_OK or PB_ERR_USAGE naming the offending option. */
int pb_presets_validate(const pb_presets_model *m);

/* 12*h^2, the linear-layer parameters of one transformer layer. */
double pb_presets_layer_params(int64_t hidden);

/* L*12*h^2 + vocab*h: parameters by the convention above. */
double pb_presets_params(const pb_presets_model *m);

#endif
