/* pp_pipeline: p pipeline stages x m micro-batches of real transformer layers,
 * GPipe, 1F1B or interleaved 1F1B, activations and gradients moved by backend
 * point-to-point. Reports step time, measured efficiency next to m/(m+p-1),
 * p2p wait, and the measured peak activation memory per stage. docs/pp_pipeline.md. */
#include "harness/bench.h"
#include "backend/comm_count.h"
#include "harness/comm_report.h"
#include "core/error.h"
#include "core/outpath.h"
#include "core/mem.h"
#include "plan/model.h"
#include "core/parse.h"
#include "workload/pp.h"
#include "harness/runner.h"
#include "core/timing.h"
#include "workload/workload_opts.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LIST 32
#define MAX_STAGES 1024

typedef struct pp_opts {
    pb_options common;
    pb_workload_opts work;
    int stages;                      /* 0: world size */
    int stride;                      /* --pp-stride: rank distance between consecutive stages */
    int64_t mbs[MAX_LIST];
    size_t nmbs;
    int scheds[PB_PP_SCHED_COUNT], nscheds;
    int virt, virt_given;            /* chunks per rank for interleaved */
    const char *trace;
} pp_opts;

enum { OPT_STAGES, OPT_STRIDE, OPT_MB, OPT_SCHED, OPT_VIRT, OPT_TRACE };

static const pb_options_opt own_opts[] = {
    {"stages", 0, "P", "pipeline stages (default: the number of ranks; more ranks make replicas)", OPT_STAGES},
    {"pp-stride", 0, "S", "rank distance between consecutive stages (default 1: a pipeline is consecutive ranks; "
                          "S = ranks per node puts stage k on node k, S pipelines side by side)", OPT_STRIDE},
    {"micro-batches", 0, "LIST", "micro-batches per step, e.g. 1,2,4,8 (default 8)", OPT_MB},
    {"schedule", 0, "LIST", "gpipe, 1f1b, interleaved or all (comma-separated; default gpipe,1f1b)", OPT_SCHED},
    {"virtual-stages", 0, "V", "model chunks per rank for interleaved (default 2)", OPT_VIRT},
    {"trace", 0, "FILE", "write the timeline of the last step of each configuration (CSV)", OPT_TRACE},
};

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    pp_opts *o = ctx;
    long long v;
    switch (id) {
    case OPT_STAGES: PB_TRY(pb_parse_int(option, arg, 1, MAX_STAGES, &v)); o->stages = (int)v; return PB_OK;
    case OPT_STRIDE: PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v)); o->stride = (int)v; return PB_OK;
    case OPT_MB: return pb_parse_int_list(option, arg, 1, 1 << 16, o->mbs, MAX_LIST, &o->nmbs);
    case OPT_SCHED: return pb_parse_choice_list(option, arg, pb_pp_sched_names(), 1, o->scheds, &o->nscheds);
    case OPT_VIRT: PB_TRY(pb_parse_int(option, arg, 2, 64, &v)); o->virt = (int)v, o->virt_given = 1; return PB_OK;
    case OPT_TRACE: o->trace = arg; return pb_outpath_add(option, arg);
    default: return pb_error_usage(option, "not handled");
    }
}

enum {
    COL_SCHEDULE,
    COL_STAGES,
    COL_VIRTUAL_STAGES,
    COL_MICRO_BATCHES,
    COL_REPLICAS,
    COL_LAYERS,
    COL_HIDDEN,
    COL_SEQ,
    COL_MICRO_BATCH,
    COL_DTYPE,
    COL_LINK_CLASS,
    COL_ITERS,
    COL_ACT_BYTES,
    COL_T_FWD_US,
    COL_T_BWD_US,
    COL_STEP_US,
    COL_STEP_US_MEDIAN,
    COL_IDEAL_US,
    COL_EFFICIENCY,
    COL_EFFICIENCY_THEORY,
    COL_BUBBLE_FRACTION,
    COL_P2P_WAIT_US,
    COL_P2P_BYTES_PER_MB,
    COL_PEAK_ACT_BYTES,
    COL_PEAK_ACT_MB,
    COL_STAGE_BUSY_US,
    COL_STAGE_WAIT_US,
    COL_STAGE_PEAK_ACT_BYTES,
    COL_OVERSUBSCRIBED,
    COL_WRONG,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_SCHEDULE] = {"schedule", "schedule", "", PB_COL_STR, 11, 0, ""},
    [COL_STAGES] = {"stages", "p", "", PB_COL_INT, 3, 0, ""},
    [COL_VIRTUAL_STAGES] = {"virtual_stages", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_MICRO_BATCHES] = {"micro_batches", "m", "", PB_COL_INT, 4, 0, ""},
    [COL_REPLICAS] = {"replicas", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_LAYERS] = {"layers", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HIDDEN] = {"hidden", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_SEQ] = {"seq", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_MICRO_BATCH] = {"micro_batch", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_DTYPE] = {"dtype", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_LINK_CLASS] = {"link_class", "link", "", PB_COL_STR, 6, 0, ""},
    [COL_ITERS] = {"iters", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_ACT_BYTES] = {"act_bytes", "act", "(B)", PB_COL_INT, 9, 0, "B"},
    [COL_T_FWD_US] = {"t_fwd_us", "t_fwd", "(us)", PB_COL_FLOAT, 9, 1, "us"},
    [COL_T_BWD_US] = {"t_bwd_us", "t_bwd", "(us)", PB_COL_FLOAT, 9, 1, "us"},
    [COL_STEP_US] = {"step_us", "step", "(us)", PB_COL_FLOAT, 11, 1, "us"},
    [COL_STEP_US_MEDIAN] = {"step_us_median", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_IDEAL_US] = {"ideal_us", "ideal", "(us)", PB_COL_FLOAT, 11, 1, "us"},
    [COL_EFFICIENCY] = {"efficiency", "eff", "", PB_COL_FLOAT, 6, 3, ""},
    [COL_EFFICIENCY_THEORY] = {"efficiency_theory", "theory", "", PB_COL_FLOAT, 6, 3, ""},
    [COL_BUBBLE_FRACTION] = {"bubble_fraction", "bubble", "", PB_COL_FLOAT, 6, 3, ""},
    [COL_P2P_WAIT_US] = {"p2p_wait_us", "p2p_wait", "(us)", PB_COL_FLOAT, 10, 1, "us"},
    [COL_P2P_BYTES_PER_MB] = {"p2p_bytes_per_mb", NULL, NULL, PB_COL_INT, 0, 0, "B"},
    [COL_PEAK_ACT_BYTES] = {"peak_act_bytes", "peak_act", "(B)", PB_COL_INT, 11, 0, "B"},
    [COL_PEAK_ACT_MB] = {"peak_act_mb", "held", "(mb)", PB_COL_FLOAT, 5, 1, "micro-batches"},
    [COL_STAGE_BUSY_US] = {"stage_busy_us", NULL, NULL, PB_COL_STR, 0, 0, "us"},
    [COL_STAGE_WAIT_US] = {"stage_wait_us", NULL, NULL, PB_COL_STR, 0, 0, "us"},
    [COL_STAGE_PEAK_ACT_BYTES] = {"stage_peak_act_bytes", NULL, NULL, PB_COL_STR, 0, 0, "B"},
    [COL_OVERSUBSCRIBED] = {"oversubscribed", "ovs", "", PB_COL_INT, 3, 0, ""},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 6, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

/* Everything one rank needs to run steps. */
typedef struct pp_run {
    pb_bench *b;
    pp_opts *o; /* the engine sets the default precision (pb_workload_opts_precision) */
    MPI_Comm pipe;            /* this rank's pipeline (rank = stage) */
    int p, v, stage, replica, replicas;
    int comms;                /* communicators per rank: the executor's, once for every configuration */
    pb_pp_exec *ex;
    pb_pp_stack *stk[2];          /* [0] gpipe/1f1b placement, [1] interleaved (NULL if unused) */
    pb_pp_stack_config scf[2];
    pb_pp_stack *st;              /* the current configuration's */
    pb_pp_stack_config scfg;
    pb_pp_schedule_plan plan;
    pb_pp_trace trace;
    double fwd, bwd, wait, bytes; /* sums over timed iterations */
    uint64_t peak;
    int traced;
    FILE *trace_file;         /* rank 0 */
    char tmp[4096];           /* the trace's temporary name */
    long long wrong;
    int check_as;           /* how -c validates: a CHECK_* below */
    uint64_t ref_bytes;     /* the reference's need at its least */
} pp_run;

/* Each stage's reference, in the memory left beside the stage: a chunk's layers keeping
 * every activation (which checks the stages' recomputation too), else recomputing each
 * layer's forward in its backward (the same values in less memory), else no validation. */
enum { CHECK_KEEPING, CHECK_RECOMPUTING, CHECK_NONE };
static const pb_layer_recompute check_recompute[] = {PB_LAYER_RECOMPUTE_NONE, PB_LAYER_RECOMPUTE_FULL};

static int one_step(void *ctx, int iter)
{
    pp_run *r = ctx;
    pb_pp_stats s;
    if (r->traced) pb_pp_trace_clear(&r->trace);
    PB_TRY(pb_pp_exec_step(r->ex, &r->plan, pb_pp_stack_ops(), r->st, &s, r->traced ? &r->trace : NULL));
    if (iter < 0) return PB_OK;
    r->fwd += s.fwd_us;
    r->bwd += s.bwd_us;
    r->wait += s.wait_us;
    r->bytes += (double)s.bytes_sent;
    if (s.peak_act_bytes > r->peak) r->peak = s.peak_act_bytes;
    return PB_OK;
}

#define LIFETIME "created once and kept for every schedule and micro-batch count"

/* Metadata of the whole run (merged into the report's). */
static cJSON *pp_meta(const pp_run *r)
{
    const pb_presets_model *m = &r->o->work.model;
    cJSON *j = pb_workload_opts_meta(&r->o->work, NULL);
    cJSON *pp = cJSON_AddObjectToObject(j, "pipeline");
    cJSON_AddNumberToObject(pp, "stages", r->p);
    cJSON_AddNumberToObject(pp, "replicas", r->replicas);
    cJSON_AddNumberToObject(pp, "virtual_stages_interleaved", r->o->virt);
    int64_t per_stage = m->layers / r->p; /* exact: --stages divides --layers (checked at parse) */
    cJSON_AddNumberToObject(pp, "layers_per_stage", (double)per_stage);
    cJSON_AddNumberToObject(pp, "stride", r->o->stride);
    cJSON_AddStringToObject(pp, "rank_order", r->o->stride == 1 ? "consecutive ranks form a pipeline; stage = rank mod P"
                                                                : "in each block of S*P ranks, pipeline j holds ranks "
                                                                  "j, j+S, ..., j+(P-1)S; stage = (rank mod S*P) / S");
    cJSON_AddStringToObject(pp, "model", r->o->work.preset);
    cJSON_AddItemToObject(j, "communicators", pb_comm_report_design(r->comms, LIFETIME));
    return j;
}

/* Link class of this rank's pipeline, as rank 0 reports it (rank 0's pipeline). */
static const char *pipe_link(const pp_run *r)
{
    int ranks[MAX_STAGES];
    for (int s = 0; s < r->p; s++) ranks[s] = s * r->o->stride;
    return pb_link_name(pb_world_link(&r->b->w, ranks, r->p));
}

static int max_in(const int64_t *v, size_t n)
{
    int64_t m = 0;
    for (size_t i = 0; i < n; i++) m = v[i] > m ? v[i] : m;
    return (int)m; /* micro-batch counts are parsed into [1, 65536] */
}

/* How -c validates (check_recompute): the first reference that fits beside the stage on
 * every stage, with the check's host copies. The largest chunk is r->scfg's (the placement
 * without interleaving, when a schedule asks for it). Collective. */
static int plan_check(pp_run *r, const pb_mem_need *stage, const int need_kind[2])
{
    int level = CHECK_NONE, status = PB_OK;
    for (int k = 0; k < CHECK_NONE && level == CHECK_NONE && status == PB_OK; k++) {
        r->ref_bytes = pb_pp_reference_bytes(&r->scfg, check_recompute[k]);
        pb_mem_need both = *stage;
        both.bytes = pb_mem_add(both.bytes, r->ref_bytes);
        for (int j = 0; j < 2; j++)
            if (need_kind[j]) both.host_bytes = pb_mem_add(both.host_bytes, pb_pp_check_host_bytes(&r->scf[j]));
        int fits = 0;
        status = pb_mem_fits(&both, r->b->w.local_size, &fits);
        if (fits) level = k;
    }
    MPI_Allreduce(&level, &r->check_as, 1, MPI_INT, MPI_MAX, r->b->w.comm);
    for (int j = 0; j < 2; j++) r->scf[j].capture = r->check_as != CHECK_NONE; /* captures only for a check */
    return pb_world_agree(&r->b->w, status);
}

static void check_note(const pp_run *r)
{
    if (!r->o->common.check || r->check_as == CHECK_KEEPING) return;
    if (r->check_as == CHECK_RECOMPUTING)
        pb_report_note(r->b->rep, "validation: each stage runs its chunks again recomputing each layer's forward in "
                                  "its backward: keeping every activation they do not fit next to the stage");
    else
        pb_report_note(r->b->rep, "NOT validated: a chunk's layers run again, even recomputing, need %.2f GiB, which "
                       "does not fit next to the stage; wrong is -1", (double)r->ref_bytes / 1073741824.0);
}

/* Engine, stages, executor and the memory check before any of it is allocated. */
static int pp_setup(pp_run *r)
{
    pb_bench *b = r->b;
    pp_opts *o = r->o;
    const pb_compute *eng = NULL;
    int status = pb_workload_opts_engine(&o->work, b->be, b->w.local_rank, o->common.gpu_offset, &eng);
    if (status == PB_OK && b->be->mem != eng->mem)
        status = pb_error_usage("--engine", "%s computes in %s memory but backend %s sends from %s memory; expected "
                          "--engine %s with it", eng->name, pb_mem_kind_name(eng->mem),
                          b->be->name, pb_mem_kind_name(b->be->mem), pb_compute_default(b->be->mem));
    status = pb_world_agree_at(b->w.comm, status, "engine");
    if (status != PB_OK) return status;
    int need_kind[2] = {0, 0}, mmax = max_in(o->mbs, o->nmbs), in_flight[2] = {0, 0};
    for (int s = 0; s < o->nscheds; s++) need_kind[o->scheds[s] == PB_PP_INTERLEAVED] = 1;
    r->v = need_kind[1] ? o->virt : 1;
    const pb_presets_model *m = &o->work.model;
    /* Interleaved places other layers on a rank than gpipe/1f1b do: one stage stack per placement. */
    for (int k = 0; k < 2; k++)
        r->scf[k] = (pb_pp_stack_config){
            .eng = eng, .shape = pb_workload_opts_layer_shape(&o->work, m->hidden, m->seq, 1, 0),
            .layers = m->layers, .p = r->p, .v = k ? r->v : 1, .stage = r->stage, .seed = o->work.seed,
            .grad_dtype = o->work.grad_dtype, .max_mb = mmax}; /* capture: plan_check */
    r->scfg = r->scf[need_kind[0] ? 0 : 1];
    for (int s = 0; s < o->nscheds; s++) {
        pb_pp_schedule_plan pl;
        int k = o->scheds[s] == PB_PP_INTERLEAVED;
        for (size_t j = 0; j < o->nmbs && status == PB_OK; j++) {
            if (k && o->mbs[j] % r->p) continue;
            status = pb_pp_schedule_plan_build((pb_pp_sched)o->scheds[s], r->p, (int)o->mbs[j], r->v, r->stage, &pl);
            if (status != PB_OK) break;
            int held = pb_pp_schedule_plan_max_in_flight(&pl);
            in_flight[k] = held > in_flight[k] ? held : in_flight[k];
            pb_pp_schedule_plan_free(&pl);
        }
    }
    pb_layer_shape sh = r->scfg.shape;
    sh.dtype = eng->gemm_dtype(sh.dtype);
    pb_pp_config xc = {.be = b->be, .act_count = pb_mem_mul((uint64_t)(sh.b * sh.s), (uint64_t)sh.h), .act_dtype = sh.dtype,
                       .ring = need_kind[1], .max_sends = mmax * r->v};
    uint64_t need = pb_pp_exec_bytes(&xc);
    for (int k = 0; k < 2; k++) need = pb_mem_add(need, need_kind[k] ? pb_pp_stack_bytes(&r->scf[k], in_flight[k]) : 0);
    pb_mem_need mn = {eng->mem, eng->mem_info, need, 0};
    status = pb_world_agree(&b->w, status);
    if (status == PB_OK) status = pb_bench_mem_require(b, &mn, "pp_pipeline stage (weights, activations, buffers)");
    if (status == PB_OK && o->common.check) status = plan_check(r, &mn, need_kind);
    if (status != PB_OK) return status;
    MPI_Comm_split(b->w.comm, r->replica, r->stage, &r->pipe);
    xc.group = r->pipe;
    for (int k = 0; k < 2 && status == PB_OK; k++)
        if (need_kind[k]) status = pb_pp_stack_create(&r->scf[k], &r->stk[k]);
    status = pb_world_agree(&b->w, status);
    if (status == PB_OK) status = pb_world_agree_at(b->w.comm, pb_pp_exec_create(&xc, &r->ex), "pipeline");
    r->traced = o->trace != NULL;
    if (status == PB_OK && r->traced) pb_pp_trace_origin(b->w.comm, &r->trace);
    if (status == PB_OK && b->rep) {
        if (b->info.oversubscribed)
            pb_report_note(b->rep, "warning: oversubscribed: %d ranks on a node with %d cores; stages share cores, "
                           "so compute times and efficiency are distorted", b->info.max_ranks_per_node,
                           b->info.min_cores_per_node);
        printf("# pipeline: %d stages x %d replicas, %lld layers (%lld per stage), %s link, recompute %s, engine %s\n",
               r->p, r->replicas, (long long)m->layers, (long long)(m->layers / r->p), pipe_link(r),
               pb_layer_recompute_names()[o->work.recompute], eng->describe());
        pb_comm_report_line(b->rep, r->comms, "activations and gradients, a communicator per link colour", LIFETIME);
        check_note(r);
        pb_report_header(b->rep);
    }
    if (status == PB_OK && b->rep && r->traced) r->trace_file = pb_pp_trace_open(o->trace, r->tmp, sizeof r->tmp);
    if (status == PB_OK && b->rep && r->traced && !r->trace_file) status = PB_ERR_ENV;
    return pb_world_agree(&b->w, status);
}

static int pp_teardown(pp_run *r, int status)
{
    pb_bench *b = r->b;
    if (status == PB_OK && r->o->common.check)
        pb_bench_note_wrong(b->rep, r->wrong, r->check_as == CHECK_NONE ? "NOT validated: the reference does not fit"
                                              : r->check_as == CHECK_RECOMPUTING ? "against a recomputing reference"
                                                                                 : NULL);
    if (status == PB_OK && r->wrong) status = PB_ERR_CHECK;
    pb_pp_exec_destroy(r->ex);
    /* the status is agreed here (rank 0's trace file comes after): every rank counts */
    if (status == PB_OK) status = pb_comm_report_measured(&b->w, b->be, b->rep);
    int s = pb_pp_trace_close(r->trace_file, r->tmp, r->o->trace ? r->o->trace : "", status == PB_OK);
    if (status == PB_OK) status = s;
    pb_pp_stack_destroy(r->stk[0]);
    pb_pp_stack_destroy(r->stk[1]);
    pb_pp_trace_free(&r->trace);
    if (r->pipe != MPI_COMM_NULL && r->pipe) MPI_Comm_free(&r->pipe);
    if (b->rep && status == PB_OK && r->traced) printf("# trace: %s\n", r->o->trace);
    return status;
}

enum { V_FWD, V_BWD, V_WAIT, V_PEAK, V_BYTES, NV };

/* "a;b;c": one per-stage value for the string columns (JSON and CSV keep every stage). */
static const char *join(char *buf, size_t len, const double *v, int p, int stride, const char *fmt)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int s = 0; s < p && at + 32 < len; s++) {
        if (s) buf[at++] = ';';
        at += (size_t)snprintf(buf + at, len - at, fmt, v[s * stride]);
    }
    return buf;
}

/* Efficiency is ideal / step, two measurements: above 1 (a step shorter than
 * the compute it contains) or from a single step it is noise, not a finding. */
static void note_efficiency_noise(pp_run *r, pb_pp_sched sched, int m, int iters, double eff)
{
    if (!r->b->rep || (eff <= 1.0 && iters >= 2)) return;
    pb_report_note(r->b->rep, "untrustworthy: efficiency %.3f (%s, m=%d): %s; use more iterations (-n) or a "
                   "bigger model", eff, pb_pp_sched_name(sched), m,
                   eff > 1.0 ? "above 1 (the step measured shorter than the compute it holds)"
                             : "measured over fewer than 2 steps");
}

static int pp_row(pp_run *r, pb_pp_sched sched, int m, int iters, const pb_stats *st, const double *ps,
                  long long wrong)
{
    const pb_presets_model *md = &r->o->work.model;
    int p = r->p, slow = 0, v = sched == PB_PP_INTERLEAVED ? r->v : 1;
    double peak = 0, wait = 0, bytes = 0;
    for (int s = 0; s < p; s++) {
        if (ps[s * NV + V_FWD] + ps[s * NV + V_BWD] > ps[slow * NV + V_FWD] + ps[slow * NV + V_BWD]) slow = s;
        peak = ps[s * NV + V_PEAK] > peak ? ps[s * NV + V_PEAK] : peak;
        wait = ps[s * NV + V_WAIT] > wait ? ps[s * NV + V_WAIT] : wait;
        bytes = ps[s * NV + V_BYTES] > bytes ? ps[s * NV + V_BYTES] : bytes;
    }
    double tf = ps[slow * NV + V_FWD] / m, tb = ps[slow * NV + V_BWD] / m, ideal = m * (tf + tb);
    double eff = st->rankmax > 0 ? ideal / st->rankmax : 0;
    uint64_t act = (uint64_t)(md->micro_batch * md->seq * md->hidden) * pb_dtype_size(pb_pp_stack_dtype(r->st));
    pb_layer_shape sh = r->scfg.shape;
    sh.dtype = pb_pp_stack_dtype(r->st);
    uint64_t per_mb = pb_layer_act_bytes(&sh, md->layers / p); /* one micro-batch through a whole stage */
    char busy[8192], waits[8192], peaks[8192];
    double sum[MAX_STAGES];
    for (int s = 0; s < p; s++) sum[s] = ps[s * NV + V_FWD] + ps[s * NV + V_BWD];
    pb_report_value vals[NCOLS] = {
        [COL_SCHEDULE] = PB_S(pb_pp_sched_name(sched)),
        [COL_STAGES] = PB_I(p),
        [COL_VIRTUAL_STAGES] = PB_I(v),
        [COL_MICRO_BATCHES] = PB_I(m),
        [COL_REPLICAS] = PB_I(r->replicas),
        [COL_LAYERS] = PB_I(md->layers),
        [COL_HIDDEN] = PB_I(md->hidden),
        [COL_SEQ] = PB_I(md->seq),
        [COL_MICRO_BATCH] = PB_I(md->micro_batch),
        [COL_DTYPE] = PB_S(pb_dtype_name(pb_pp_stack_dtype(r->st))),
        [COL_LINK_CLASS] = PB_S(pipe_link(r)),
        [COL_ITERS] = PB_I(iters),
        [COL_ACT_BYTES] = PB_I(act),
        [COL_T_FWD_US] = PB_F(tf),
        [COL_T_BWD_US] = PB_F(tb),
        [COL_STEP_US] = PB_F(st->rankmax),
        [COL_STEP_US_MEDIAN] = PB_F(st->median),
        [COL_IDEAL_US] = PB_F(ideal),
        [COL_EFFICIENCY] = PB_F(eff),
        [COL_EFFICIENCY_THEORY] = PB_F(pb_model_pipe_efficiency(m * v, p)),
        [COL_BUBBLE_FRACTION] = PB_F(1.0 - eff),
        [COL_P2P_WAIT_US] = PB_F(wait),
        [COL_P2P_BYTES_PER_MB] = PB_I((long long)(bytes / m)),
        [COL_PEAK_ACT_BYTES] = PB_I((long long)peak),
        [COL_PEAK_ACT_MB] = PB_F(per_mb ? peak / (double)per_mb : 0),
        [COL_STAGE_BUSY_US] = PB_S(join(busy, sizeof busy, sum, p, 1, "%.1f")),
        [COL_STAGE_WAIT_US] = PB_S(join(waits, sizeof waits, ps + V_WAIT, p, NV, "%.1f")),
        [COL_STAGE_PEAK_ACT_BYTES] = PB_S(join(peaks, sizeof peaks, ps + V_PEAK, p, NV, "%.0f")),
        [COL_OVERSUBSCRIBED] = PB_I(r->b->info.oversubscribed),
        [COL_WRONG] = PB_I(wrong),
    };
    note_efficiency_noise(r, sched, m, iters, eff);
    return pb_report_row(r->b->rep, vals);
}

/* One (schedule, m): timed steps on every pipeline at once, then the row. */
static int pp_config(pp_run *r, pb_pp_sched sched, int m)
{
    pb_bench *b = r->b;
    const pp_opts *o = r->o;
    if (sched == PB_PP_INTERLEAVED && m % r->p) {
        if (b->rep) pb_report_note(b->rep, "interleaved skipped for m=%d: needs a multiple of p=%d", m, r->p);
        return PB_OK;
    }
    r->st = r->stk[sched == PB_PP_INTERLEAVED];
    r->scfg = r->scf[sched == PB_PP_INTERLEAVED];
    /* one agreement for the plan and the samples: every rank then goes down the same path */
    int status = pb_pp_schedule_plan_build(sched, r->p, m, r->v, r->stage, &r->plan);
    r->fwd = r->bwd = r->wait = r->bytes = 0;
    r->peak = 0;
    double *samples = status == PB_OK ? malloc(sizeof(double) * (size_t)o->common.iters) : NULL;
    int done = 0;
    pb_runner_cfg lc = {o->common.iters, o->common.warmup, o->common.max_seconds};
    if (status == PB_OK && !samples) status = pb_fail(PB_ERR_ENV, "out of memory for %d samples", o->common.iters);
    status = pb_world_agree_at(b->w.comm, status, "schedule");
    if (status == PB_OK) status = pb_runner_time_loop(b->w.comm, &lc, one_step, r, samples, &done);
    pb_stats st = {0};
    double ps[MAX_STAGES * NV];
    if (status == PB_OK) {
        double d = done > 0 ? done : 1;
        double mine[NV] = {r->fwd / d, r->bwd / d, r->wait / d, (double)r->peak, r->bytes / d};
        status = pb_runner_gather_stats(b->w.comm, samples, done, &st);
        if (status == PB_OK) status = pb_pp_gather_stages(b->w.comm, r->p, r->stage, mine, NV, ps);
    }
    pb_pp_trace_label lab = {pb_pp_sched_name(sched), r->p, r->plan.v, m};
    if (status == PB_OK && r->traced)
        /* agreed: only rank 0 writes, and a failed write must not leave the others in pb_pp_validate_step */
        status = pb_world_agree(&b->w, pb_pp_trace_gather(b->w.comm, &r->trace, r->stage, r->replica, &lab,
                                                          r->trace_file));
    long long wrong = o->common.check && r->check_as != CHECK_NONE ? 0 : -1;
    if (status == PB_OK && wrong == 0)
        status = pb_pp_validate_step(&r->b->w, r->pipe, r->ex, &r->plan, r->st, &r->scfg,
                                     check_recompute[r->check_as], m, pb_faults_corrupt_rank() == r->b->w.rank, &wrong);
    if (wrong > 0) r->wrong += wrong;
    if (status == PB_OK && b->rep) status = pp_row(r, sched, m, done, &st, ps, wrong);
    free(samples);
    pb_pp_schedule_plan_free(&r->plan);
    return pb_world_agree(&b->w, status);
}

/* Parse-time checks that need the world size: exit 2 or 3 before any output. */
static int check_shape(const pp_opts *o, int world, int *p)
{
    *p = o->stages ? o->stages : world;
    if (*p > world)
        return pb_fail(PB_ERR_ENV, "--stages %d needs at least %d ranks, got %d (too few ranks)", *p, *p, world);
    if (world % *p)
        return pb_error_usage("--stages", "%d does not divide the %d ranks; expected a divisor (world/P replicas)", *p,
                        world);
    int64_t L = o->work.model.layers;
    if (L % *p)
        return pb_error_usage("--stages", "%d stages do not divide %lld layers; expected a divisor of --layers", *p,
                        (long long)L);
    if (world % (o->stride * *p))
        return pb_error_usage("--pp-stride", "stride %d x %d stages = %d does not divide the %d ranks", o->stride, *p,
                              o->stride * *p, world);
    for (int s = 0; s < o->nscheds; s++) {
        if (o->scheds[s] != PB_PP_INTERLEAVED) continue;
        if (L % ((int64_t)*p * o->virt))
            return pb_error_usage("--virtual-stages", "%d x %d chunks do not divide %lld layers", *p, o->virt,
                            (long long)L);
        /* m values interleaved cannot run are skipped with a note, but one must remain. */
        int ok = 0;
        for (size_t k = 0; k < o->nmbs; k++) ok |= o->mbs[k] % *p == 0;
        if (!ok) PB_TRY(pb_pp_schedule_valid(PB_PP_INTERLEAVED, *p, o->mbs[0], o->virt));
    }
    return PB_OK;
}

int main(int argc, char **argv)
{
    pp_opts o = {.stride = 1, .mbs = {8}, .nmbs = 1, .scheds = {PB_PP_GPIPE, PB_PP_1F1B}, .nscheds = 2, .virt = 2};
    pb_options_defaults(&o.common);
    o.common.iters = 5;
    o.common.warmup = 1;
    o.common.max_seconds = 30;
    pb_workload_opts_defaults(&o.work, "tiny");
    o.work.recompute_max = PB_LAYER_RECOMPUTE_FULL;
    pb_options_group groups[] = {
        {"pp_pipeline options", own_opts, (int)(sizeof own_opts / sizeof own_opts[0]), handle, &o},
        pb_workload_opts_group(&o.work),
        pb_options_common_group(&o.common, PB_OPTS_ITERS | PB_OPTS_DATA | PB_OPTS_OUTPUT | PB_OPTS_VALIDATE),
    };
    pb_bench b;
    pb_bench_start(&b, "pp_pipeline", &argc, &argv, MPI_THREAD_SINGLE,
                   "Usage: mpirun -np N pp_pipeline [options]\n"
                   "Pipeline parallelism: P stages x M micro-batches of transformer layers, GPipe / 1F1B /\n"
                   "interleaved, activations and gradients sent point-to-point between stages.",
                   groups, 3);
    int status = pb_options_validate(&o.common);
    int interleaved = 0;
    for (int s = 0; s < o.nscheds; s++) interleaved |= o.scheds[s] == PB_PP_INTERLEAVED;
    if (status == PB_OK && o.virt_given && !interleaved)
        status = pb_error_usage("--virtual-stages", "does not apply to --schedule without interleaved; expected "
                                                    "--schedule interleaved (or all), or no --virtual-stages");
    if (status == PB_OK) status = pb_workload_opts_resolve(&o.work);
    int p = 1;
    if (status == PB_OK) status = check_shape(&o, b.w.size, &p);
    if (status != PB_OK) pb_bench_finish(&b, status);
    /* Stage and replica as tp_layer places its groups (--tp-stride): blocks of S*P ranks. */
    int block = b.w.rank / (o.stride * p), within = b.w.rank % (o.stride * p);
    pp_run r = {.b = &b, .o = &o, .p = p, .stage = within / o.stride, .replica = block * o.stride + within % o.stride,
                .replicas = b.w.size / p, .comms = pb_pp_exec_comms(p, interleaved)};
    char what[96];
    snprintf(what, sizeof what, "pp_pipeline's %d-stage pipeline%s", p, interleaved ? " (a ring: interleaved)" : "");
    status = pb_comm_count_fits(r.comms, what);
    if (status != PB_OK) pb_bench_finish(&b, status);
    status = pb_bench_open(&b, &o.common, cols, NCOLS, pp_meta(&r));
    if (status == PB_OK) status = pp_setup(&r);
    for (int s = 0; s < o.nscheds && status == PB_OK; s++)
        for (size_t k = 0; k < o.nmbs && status == PB_OK; k++)
            status = pp_config(&r, (pb_pp_sched)o.scheds[s], (int)o.mbs[k]);
    status = pp_teardown(&r, status);
    pb_bench_finish(&b, status);
}
