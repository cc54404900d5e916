#include "workload/workload_opts.h"

#include "core/error.h"
#include "core/faults.h"
#include "backend/gpu.h"
#include "core/parse.h"

#include <stdio.h>
#include <string.h>

enum { W_MODEL, W_MODEL_FILE, W_LAYERS, W_HIDDEN, W_HEADS, W_KV_HEADS, W_FFN, W_MLP, W_SEQ, W_MB, W_SCORES,
       W_RECOMPUTE, W_CDTYPE, W_GDTYPE, W_ENGINE, W_THREADS, W_SEED };

/* --engine's help names the engines of the table (pb_workload_opts_group). */
static pb_options_opt workload_opts[] = {
    {"model", 0, "NAME", NULL, W_MODEL},
    {"model-file", 0, "FILE", "the model's shape from a file (docs/models.md): key value lines", W_MODEL_FILE},
    {"layers", 0, "L", "transformer layers (overrides the preset)", W_LAYERS},
    {"hidden", 0, "H", "hidden size h (overrides the preset; the MLP width scales with it)", W_HIDDEN},
    {"heads", 0, "N", "attention heads (overrides the preset; must divide h)", W_HEADS},
    {"kv-heads", 0, "N", "key/value heads, grouped-query attention (overrides the preset; must divide the heads)",
     W_KV_HEADS},
    {"ffn", 0, "F", "the MLP's inner width (overrides the preset)", W_FFN},
    {"mlp", 0, "KIND", "the MLP: gelu (two matrices) or swiglu (three) (overrides the preset)", W_MLP},
    {"seq", 0, "S", "sequence length s (overrides the preset)", W_SEQ},
    {"micro-batch", 0, "B", "sequences per micro-batch b (default 1)", W_MB},
    {"attn-scores", 0, "0|1", "also run the attention-score GEMMs, 4*b*s^2*h FLOPs (default 1)", W_SCORES},
    {"recompute", 0, "KIND", "what backward computes again instead of keeping: none (default), selective (the "
     "attention scores) or full (the whole layer; not with tensor parallelism)", W_RECOMPUTE},
    {"compute-dtype", 0, "TYPE", "GEMM storage type: float or bfloat16 (default bfloat16 on a GPU engine, float on the "
     "host; bf16 runs in fp32 where the CPU lacks it)", W_CDTYPE},
    {"grad-dtype", 0, "TYPE", "gradient type: float or bfloat16 (default as --compute-dtype's)", W_GDTYPE},
    {"engine", 0, "NAME", NULL, W_ENGINE},
    {"threads", 0, "N", "BLAS threads per rank (default 1: ranks do not fight over cores)", W_THREADS},
    {"seed", 0, "N", "seed of the weights and inputs", W_SEED},
};

void pb_workload_opts_defaults(pb_workload_opts *o, const char *preset)
{
    memset(o, 0, sizeof *o);
    o->preset = preset;
    o->mlp = -1;
    o->attn_scores = 1;
    o->compute_dtype = PB_FLOAT32;
    o->grad_dtype = PB_FLOAT32;
    o->threads = 1;
    o->seed = 1234;
}

static int float_or_bf16(const char *option, const char *arg, pb_dtype *out)
{
    PB_TRY(pb_dtype_parse(option, arg, out));
    if (*out != PB_FLOAT32 && *out != PB_BFLOAT16)
        return pb_error_usage(option, "'%s' is not accepted here; expected float or bfloat16", arg);
    return PB_OK;
}

/* --recompute KIND, up to what this benchmark runs: moe_layer and cp_attention
 * keep no layer activations, and TP's blocks cannot replay a whole layer. */
static int recompute(pb_workload_opts *o, const char *option, const char *arg)
{
    const char *const *names = pb_layer_recompute_names();
    int k;
    PB_TRY(pb_parse_choice(option, arg, names, &k));
    if (k > o->recompute_max)
        return pb_error_usage(option, "'%s' is not run by this benchmark; expected %s%s%s", arg, names[0],
                              o->recompute_max >= 1 ? " or " : "", o->recompute_max >= 1 ? names[1] : "");
    o->recompute = k;
    return PB_OK;
}

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    pb_workload_opts *o = ctx;
    long long v = 0;
    const long long big = 1LL << 40;
    switch (id) {
    case W_MODEL: {
        pb_presets_model m;
        PB_TRY(pb_presets_preset(arg, option, &m));
        o->preset = arg;
        o->model_file = NULL; /* the last of --model and --model-file wins */
        return PB_OK;
    }
    case W_MODEL_FILE: o->model_file = arg; return PB_OK;
    case W_KV_HEADS: PB_TRY(pb_parse_int(option, arg, 1, 1 << 16, &v)); o->kv_heads = v; return PB_OK;
    case W_FFN: PB_TRY(pb_parse_int(option, arg, 1, 1 << 24, &v)); o->ffn = v; return PB_OK;
    case W_MLP: {
        static const char *const kinds[] = {"gelu", "swiglu", NULL};
        int k;
        PB_TRY(pb_parse_choice(option, arg, kinds, &k));
        o->mlp = k;
        return PB_OK;
    }
    case W_LAYERS: PB_TRY(pb_parse_int(option, arg, 1, 100000, &v)); o->layers = v; return PB_OK;
    case W_HIDDEN: PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v)); o->hidden = v; return PB_OK;
    case W_HEADS: PB_TRY(pb_parse_int(option, arg, 1, 1 << 16, &v)); o->heads = v; return PB_OK;
    case W_SEQ: PB_TRY(pb_parse_int(option, arg, 1, 1 << 24, &v)); o->seq = v; return PB_OK;
    case W_MB: PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v)); o->micro_batch = v; return PB_OK;
    case W_SCORES: PB_TRY(pb_parse_int(option, arg, 0, 1, &v)); o->attn_scores = (int)v; return PB_OK;
    case W_RECOMPUTE: return recompute(o, option, arg);
    case W_CDTYPE: o->compute_dtype_given = 1; return float_or_bf16(option, arg, &o->compute_dtype);
    case W_GDTYPE: o->grad_dtype_given = 1; return float_or_bf16(option, arg, &o->grad_dtype);
    case W_ENGINE:
        PB_TRY(pb_compute_check_name(option, arg));
        o->engine = arg;
        return PB_OK;
    case W_THREADS: PB_TRY(pb_parse_int(option, arg, 1, 1024, &v)); o->threads = (int)v; return PB_OK;
    case W_SEED: PB_TRY(pb_parse_int(option, arg, 0, big, &v)); o->seed = (uint64_t)v; return PB_OK;
    default: return pb_error_usage(option, "not handled");
    }
}

pb_options_group pb_workload_opts_group(pb_workload_opts *o)
{
    static char engine_help[256];
    char names[128];
    static char model_help[320];
    snprintf(engine_help, sizeof engine_help, "compute engine: %s (default: %s with host buffers, %s with device "
             "buffers)", pb_parse_join_names(pb_compute_names(), names, sizeof names),
             pb_compute_default(PB_MEM_HOST), pb_compute_default(PB_MEM_DEVICE));
    snprintf(model_help, sizeof model_help, "model preset: %s", pb_presets_preset_names());
    pb_options_add_list("engines", pb_compute_names());
    for (size_t i = 0; i < sizeof workload_opts / sizeof workload_opts[0]; i++) {
        if (workload_opts[i].id == W_ENGINE) workload_opts[i].help = engine_help;
        if (workload_opts[i].id == W_MODEL) workload_opts[i].help = model_help;
    }
    return (pb_options_group){"Model and compute options", workload_opts,
                          (int)(sizeof workload_opts / sizeof workload_opts[0]), handle, o};
}

int pb_workload_opts_resolve(pb_workload_opts *o)
{
    if (o->model_file) {
        PB_TRY(pb_presets_load_file(o->model_file, "--model-file", &o->model, o->file_name, sizeof o->file_name));
        o->preset = o->file_name; /* what the rows and the metadata name: the file's model, not the default preset */
    } else
        PB_TRY(pb_presets_preset(o->preset, "--model", &o->model));
    o->declared = o->model;
    pb_presets_resize(&o->model, o->hidden, o->heads);
    if (o->layers) o->model.layers = o->layers;
    if (o->seq) o->model.seq = o->seq;
    if (o->micro_batch) o->model.micro_batch = o->micro_batch;
    if (o->mlp >= 0) o->model.mlp = (pb_presets_mlp)o->mlp;
    if (o->ffn) o->model.ffn = o->ffn;
    if (o->kv_heads) o->model.kv_heads = o->kv_heads;
    return pb_presets_validate(&o->model);
}

pb_layer_shape pb_workload_opts_layer_shape(const pb_workload_opts *o, int64_t h, int64_t s, int tp_size, int tp_rank)
{
    pb_presets_model m = o->model;
    pb_presets_resize(&m, h, 0);
    return (pb_layer_shape){.b = m.micro_batch, .s = s, .h = h, .heads = m.heads, .kv_heads = m.kv_heads,
                            .ffn = m.ffn, .gated = m.mlp == PB_MLP_SWIGLU, .tp_size = tp_size, .tp_rank = tp_rank,
                            .attn_scores = o->attn_scores, .dtype = o->compute_dtype, .recompute = o->recompute};
}

void pb_workload_opts_precision(pb_workload_opts *o, pb_mem_kind engine_mem)
{
    pb_dtype t = engine_mem == PB_MEM_DEVICE ? PB_BFLOAT16 : PB_FLOAT32;
    if (!o->compute_dtype_given) o->compute_dtype = t;
    if (!o->grad_dtype_given) o->grad_dtype = t;
}

int pb_workload_opts_engine(pb_workload_opts *o, const pb_comm_backend *be, int local_rank, int gpu_offset,
                       const pb_compute **out)
{
    int device_backend = be && be->mem == PB_MEM_DEVICE;
    const char *name = o->engine;
    if (!name || !*name) name = pb_compute_default(device_backend ? PB_MEM_DEVICE : PB_MEM_HOST);
    PB_TRY(pb_compute_select("--engine", name, out));
    pb_workload_opts_precision(o, (*out)->mem);
    if (pb_faults_fail("engine")) return pb_fail(PB_ERR_ENV, "engine %s: initialisation failed", name);
    if ((*out)->mem == PB_MEM_DEVICE && !device_backend) {
        char gpu[160];
        PB_TRY(pb_gpu_bind(local_rank, gpu_offset, gpu, sizeof gpu));
    }
    pb_compute_opts copts = {.threads = o->threads, .device = 0};
    return (*out)->init(&copts);
}

cJSON *pb_workload_opts_meta(const pb_workload_opts *o, cJSON *meta)
{
    if (!meta) meta = cJSON_CreateObject();
    if (meta) cJSON_AddStringToObject(meta, "recompute", pb_layer_recompute_names()[o->recompute]);
    return meta;
}

int pb_workload_opts_open(pb_bench *b, pb_workload_opts *o, const pb_options *common, const pb_report_column *cols,
                          int ncols, cJSON *meta, const pb_compute **eng)
{
    meta = pb_workload_opts_meta(o, meta);
    if (meta) cJSON_AddStringToObject(meta, "model", o->preset);
    int status = pb_bench_open(b, common, cols, ncols, meta);
    if (status != PB_OK) return status;
    return pb_world_agree_at(b->w.comm, pb_workload_opts_engine(o, b->be, b->w.local_rank, common->gpu_offset, eng),
                             "engine");
}
