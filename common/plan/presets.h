/* Transformer model presets, shared by the planner and the workload benchmarks,
 * and model files (--model-file) for a shape of the user's own.
 *
 * Parameter count convention (docs/METRICS.md): each layer holds its linear
 * weights (core/flops.h: attention Q, K, V, output; the MLP's two or, gated,
 * three matrices); biases and norms, O(h), are ignored. The token embedding
 * adds vocab*h, and an untied output projection as much again.
 * `nominal_params` is the count the model is known by ("7B"); the planner
 * uses it where a document quotes it. */
#ifndef PB_PRESETS_H
#define PB_PRESETS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { PB_MLP_GELU, PB_MLP_SWIGLU } pb_presets_mlp;

typedef struct pb_presets_model {
    const char *name;
    int64_t hidden;     /* h */
    int64_t layers;     /* L */
    int64_t heads;      /* attention (query) heads; must divide h */
    int64_t kv_heads;   /* key/value heads (grouped-query attention); must divide heads */
    int64_t ffn;        /* the MLP's inner width */
    pb_presets_mlp mlp; /* GELU (two matrices) or SwiGLU (three) */
    int64_t seq;        /* s, sequence length */
    int64_t vocab;      /* embedding rows */
    int tied;           /* 1: the output projection is the embedding */
    int64_t micro_batch;/* b, sequences per micro-batch */
    double nominal_params; /* advertised size, e.g. 7e9; 0 = use the formula */
    int64_t experts;    /* mixture of experts: experts per MLP, each of width ffn; 0 = dense */
    int64_t top_k;      /* experts each token is routed to; 0 = dense */
} pb_presets_model;

/* Look up a preset by name (pb_presets_preset_names). Returns PB_OK or
 * PB_ERR_USAGE (message names `option` and the accepted names). */
int pb_presets_preset(const char *name, const char *option, pb_presets_model *out);

/* Comma-separated list of preset names, for help and error messages. */
const char *pb_presets_preset_names(void);

/* Read a model file: one `key value` a line (`key = value` too), '#'
 * comments; keys name, hidden, layers, heads, kv_heads, ffn, mlp (gelu or
 * swiglu), seq, vocab, tied (0 or 1), micro_batch, params. hidden, layers,
 * heads and seq are required; kv_heads defaults to heads, ffn to 4h, mlp to
 * gelu, tied to 1, micro_batch to 1. The name is copied into name_buf.
 * PB_ERR_USAGE naming FILE:LINE and the key, PB_ERR_ENV when unreadable. */
int pb_presets_load_file(const char *path, const char *option, pb_presets_model *out, char *name_buf,
                         size_t name_len);

/* Check the shape is consistent: all positive, heads divides hidden,
 * kv_heads divides heads. Returns PB_OK or PB_ERR_USAGE naming the option. */
int pb_presets_validate(const pb_presets_model *m);

/* The linear parameters of one transformer layer (core/flops.h). */
double pb_presets_layer_params(const pb_presets_model *m);

/* L * layer params + vocab*h (tied) or 2*vocab*h (untied). */
double pb_presets_params(const pb_presets_model *m);

/* A new hidden size and head count (0: unchanged): the MLP width scales with
 * the hidden size, and the query heads per KV head stay, where the result is
 * a whole number (else 4h, and multi-head attention). --hidden and --heads
 * change a preset through this, so a swept layer keeps the model's form. */
void pb_presets_resize(pb_presets_model *m, int64_t hidden, int64_t heads);

/* Global batch (sequences) the planner assumes for a preset when none is
 * given: the published tokens per batch / sequence length (GPT-3 table 2.1,
 * LLaMA); the CPU models' 8 sequences for tiny and tiny-gqa. */
int64_t pb_presets_default_global_batch(const pb_presets_model *m);

/* "gelu" or "swiglu". */
const char *pb_presets_mlp_name(pb_presets_mlp mlp);

#endif
