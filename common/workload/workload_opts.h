/* Options every workload benchmark (dp_allreduce, tp_layer, pp_pipeline,
 * hybrid_3d, fsdp_step, cp_attention, moe_layer) shares: the model shape, from a preset with overrides, the
 * compute dtype, and the compute engine. One group, so the four binaries
 * spell these options the same way. */
#ifndef PB_WORKLOAD_OPTS_H
#define PB_WORKLOAD_OPTS_H

#include "backend/comm.h"
#include "compute/compute.h"
#include "compute/layer.h"
#include "core/options.h"
#include "harness/bench.h"
#include "plan/presets.h"

typedef struct pb_workload_opts {
    pb_presets_model model;          /* preset (--model) or --model-file, with overrides applied */
    pb_presets_model declared;       /* the preset or file as declared, before the overrides */
    const char *preset;      /* preset name as given, or the model file's name once resolved */
    const char *model_file;  /* --model-file FILE, or NULL */
    char file_name[64];      /* the model file's name (model.name points here) */
    int64_t layers, hidden, heads, kv_heads, ffn, seq, micro_batch; /* 0 = from the preset */
    int mlp;                 /* -1 = from the preset, else pb_presets_mlp */
    int attn_scores;         /* --attn-scores 0|1 */
    int recompute;           /* --recompute: pb_layer_recompute */
    int recompute_max;       /* the most this benchmark runs (set after the defaults; 0: none only) */
    pb_dtype compute_dtype;  /* --compute-dtype float|bfloat16 */
    pb_dtype grad_dtype;     /* --grad-dtype float|bfloat16 */
    int compute_dtype_given, grad_dtype_given; /* else the engine's memory decides (pb_workload_opts_precision) */
    const char *engine;      /* --engine NAME of the engine table (default: follows --backend's memory) */
    int threads;             /* --threads: BLAS threads per rank */
    uint64_t seed;           /* --seed */
} pb_workload_opts;

void pb_workload_opts_defaults(pb_workload_opts *o, const char *preset);

/* The option group: --model --model-file --layers --hidden --heads --kv-heads
 * --ffn --mlp --seq --micro-batch --attn-scores --recompute --compute-dtype
 * --grad-dtype --engine --threads --seed. */
pb_options_group pb_workload_opts_group(pb_workload_opts *o);

/* Apply the overrides to the preset (or model file) and check the shape
 * (exit 2 naming the option: zero layers, hidden not divisible by heads, ...).
 * A --hidden without --ffn scales the model's MLP width with it, and --heads
 * without --kv-heads keeps the query heads per KV head where it can. */
int pb_workload_opts_resolve(pb_workload_opts *o);

/* The layer shape of the resolved model at hidden size h and sequence length
 * s (a sweep point; the model's own: model.hidden, model.seq), for rank
 * tp_rank of a TP group of tp_size: the MLP width scales with h as above. */
pb_layer_shape pb_workload_opts_layer_shape(const pb_workload_opts *o, int64_t h, int64_t s, int tp_size, int tp_rank);

/* The precision training uses where the user gave none: bf16 GEMMs and
 * gradients on a GPU engine (mem PB_MEM_DEVICE), fp32 on the host. */
void pb_workload_opts_precision(pb_workload_opts *o, pb_mem_kind engine_mem);

/* Engine by name, initialised with the thread count (and the precision above); "" or NULL picks cublas
 * when the backend's buffers are on a GPU and blas otherwise. A cuBLAS engine
 * next to a host-memory backend binds this rank's GPU itself (local rank +
 * gpu_offset), since the backend did not. */
int pb_workload_opts_engine(pb_workload_opts *o, const pb_comm_backend *be, int local_rank, int gpu_offset,
                       const pb_compute **out);

/* `meta` (or a new object) with what every workload's results depend on
 * beyond the model: its recomputation ("recompute"). */
cJSON *pb_workload_opts_meta(const pb_workload_opts *o, cJSON *meta);

/* A workload benchmark's start once its options are valid: its metadata
 * (pb_workload_opts_meta, the model preset added) and report opened
 * (pb_bench_open), then its engine (pb_workload_opts_engine), each agreed by
 * every rank. *eng stays NULL where no engine was made. */
int pb_workload_opts_open(pb_bench *b, pb_workload_opts *o, const pb_options *common, const pb_report_column *cols,
                          int ncols, cJSON *meta, const pb_compute **eng);

#endif
