/* fsdp_step: one sharded data-parallel (ZeRO-3 / PyTorch FSDP) training step
 * per iteration through L real layers: per layer an all-gather of its
 * parameter shards before forward and again before backward, a
 * reduce-scatter of its gradient after backward, with or without prefetch
 * (common/workload/fsdp.h). Per configuration: compute alone, communication
 * alone, the step, exposed communication, the planner's step beside it, and
 * DP's all-reduce of the same gradient, timed in this binary. See
 * docs/fsdp_step.md. */
#include "harness/bench.h"
#include "coll/coll.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/parse.h"
#include "core/stats.h"
#include "core/timing.h"
#include "core/watchdog.h"
#include "harness/runner.h"
#include "plan/model.h"
#include "workload/dp.h"
#include "workload/fsdp.h"
#include "workload/ordering.h"
#include "workload/workload_opts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { GROUP_WORLD = -1, GROUP_NODE = -2 };

typedef struct fsdp_opts {
    pb_options common;
    pb_workload_opts work;
    int prefetch[PB_FSDP_PREFETCH_COUNT], nprefetch; /* in the order given */
    int group;      /* --shard-group: GROUP_WORLD, GROUP_NODE, or a size */
    int dp;         /* --dp-allreduce 0|1 */
} fsdp_opts;

enum { O_PREFETCH, O_GROUP, O_DP };

static const pb_options_opt own_opts[] = {
    {"prefetch", 0, "MODE", "off (every collective completes before the compute after it), on (the next layer's "
                            "all-gather and the last reduce-scatter run under the current layer's compute), or "
                            "off,on (default)", O_PREFETCH},
    {"shard-group", 0, "G", "ranks a layer is sharded over: world (default), node (hybrid sharding: shard inside "
                            "a node, all-reduce the shards across nodes), or N consecutive ranks", O_GROUP},
    {"dp-allreduce", 0, "0|1", "also time DP's all-reduce of the same gradient over every rank (default 1)", O_DP},
};

static const char *const prefetch_names[] = {"off", "on", NULL}; /* pb_fsdp_prefetch order */

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    fsdp_opts *o = ctx;
    long long v = 0;
    switch (id) {
    case O_PREFETCH: return pb_parse_choice_list(option, arg, prefetch_names, 0, o->prefetch, &o->nprefetch);
    case O_GROUP:
        if (strcmp(arg, "world") == 0) return o->group = GROUP_WORLD, PB_OK;
        if (strcmp(arg, "node") == 0) return o->group = GROUP_NODE, PB_OK;
        if (*arg < '0' || *arg > '9')
            return pb_error_usage(option, "'%s' is not a shard group; expected world, node, or a rank count", arg);
        PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v));
        o->group = (int)v;
        return PB_OK;
    case O_DP: PB_TRY(pb_parse_int(option, arg, 0, 1, &v)); o->dp = (int)v; return PB_OK;
    default: return pb_error_usage(option, "not handled");
    }
}

enum {
    COL_NRANKS,
    COL_SHARD_GROUP,
    COL_REPLICAS,
    COL_LINK_CLASS,
    COL_MODEL,
    COL_LAYERS,
    COL_HIDDEN,
    COL_HEADS,
    COL_SEQ,
    COL_MICRO_BATCH,
    COL_COMPUTE_DTYPE,
    COL_DTYPE,
    COL_PREFETCH,
    COL_PARAMS_PER_LAYER,
    COL_SHARD_ELEMS,
    COL_PAD_ELEMS,
    COL_ITERS,
    COL_COMPUTE_US,
    COL_COMM_US,
    COL_STEP_US,
    COL_EXPOSED_US,
    COL_OVERHEAD,
    COL_PREDICTED_STEP_US,
    COL_PREDICTED_EXPOSED_US,
    COL_WAIT_US,
    COL_GATHER_US,
    COL_SCATTER_US,
    COL_BYTES_PER_RANK,
    COL_DP_COMM_US,
    COL_DP_OVERHEAD,
    COL_COMM_VS_DP,
    COL_GFLOPS,
    COL_WRONG,
    COL_WRONG_PARAMS,
    COL_WRONG_GRADS,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_NRANKS] = {"nranks", "ranks", "", PB_COL_INT, 5, 0, ""},
    [COL_SHARD_GROUP] = {"shard_group", "shard", "", PB_COL_INT, 5, 0, ""},
    [COL_REPLICAS] = {"replicas", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_LINK_CLASS] = {"link_class", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_MODEL] = {"model", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_LAYERS] = {"layers", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HIDDEN] = {"hidden", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HEADS] = {"heads", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_SEQ] = {"seq", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_MICRO_BATCH] = {"micro_batch", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_COMPUTE_DTYPE] = {"compute_dtype", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_DTYPE] = {"dtype", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_PREFETCH] = {"prefetch", "prefetch", "", PB_COL_STR, 8, 0, ""},
    [COL_PARAMS_PER_LAYER] = {"params_per_layer", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_SHARD_ELEMS] = {"shard_elems", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_PAD_ELEMS] = {"pad_elems", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_ITERS] = {"iters", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_COMPUTE_US] = {"compute_us", "compute", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_COMM_US] = {"comm_us", "comm", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_STEP_US] = {"step_us", "step", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_EXPOSED_US] = {"exposed_us", "exposed", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_OVERHEAD] = {"overhead", "overhead", "", PB_COL_FLOAT, 8, 3, ""},
    [COL_PREDICTED_STEP_US] = {"predicted_step_us", "predict", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_PREDICTED_EXPOSED_US] = {"predicted_exposed_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_WAIT_US] = {"wait_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_GATHER_US] = {"gather_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_SCATTER_US] = {"scatter_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_BYTES_PER_RANK] = {"bytes_per_rank", NULL, NULL, PB_COL_INT, 0, 0, "B"},
    [COL_DP_COMM_US] = {"dp_comm_us", "DP AR", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_DP_OVERHEAD] = {"dp_overhead", "DP ovh", "", PB_COL_FLOAT, 7, 3, ""},
    [COL_COMM_VS_DP] = {"comm_vs_dp", NULL, NULL, PB_COL_FLOAT, 0, 0, ""},
    [COL_GFLOPS] = {"gflops", NULL, NULL, PB_COL_FLOAT, 0, 0, "GFLOP/s"},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 6, 0, ""},
    [COL_WRONG_PARAMS] = {"wrong_params", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_WRONG_GRADS] = {"wrong_grads", NULL, NULL, PB_COL_INT, 0, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

/* The run: the groups and their communicators. */
typedef struct run_ctx {
    pb_bench *b;
    fsdp_opts *o;
    const pb_compute *eng;
    int n, replicas, group, index;  /* shard group size, their count, this rank's group and shard */
    MPI_Comm shard_mpi, replica_mpi;
    pb_comm *shard, *replica, *world; /* world: DP's all-reduce (the shard comm when n is the world) */
    const char *link;
    double *samples, *t[4];           /* per timed iteration: compute, comm, step, DP all-reduce */
    double wait_sum, gather_sum, scatter_sum;
    pb_fsdp *f;
    pb_dp *dp;
} run_ctx;

/* One configuration's measurements, reduced over ranks. */
typedef struct row {
    pb_fsdp_prefetch prefetch;
    int iters;
    pb_stats compute, comm, step, dp;
    double wait_us, gather_us, scatter_us;
    long long wrong_params, wrong_grads;
} row;

/* Time one phase from an aligned start (the barrier is outside the timed region). */
static int timed(run_ctx *r, int (*fn)(void *), void *arg, double *us)
{
    MPI_Barrier(r->b->w.comm);
    double t0 = pb_timing_now_us();
    int status = fn(arg);
    *us = pb_timing_now_us() - t0;
    return status;
}

static int do_compute(void *a) { return pb_fsdp_compute(a); }
static int do_comm(void *a) { return pb_fsdp_comm(a); }
static int do_step(void *a) { return pb_fsdp_step(a); }
static int do_dp(void *a) { return a ? pb_dp_reduce_all(a) : PB_OK; }

/* The phases back to back in each iteration, so load drift on a shared
 * machine hits them alike and exposed = step - compute is a paired difference. */
static int it_all(void *a, int iter)
{
    run_ctx *r = a;
    double us[4];
    pb_fsdp_timing t;
    PB_TRY(timed(r, do_compute, r->f, &us[0]));
    PB_TRY(timed(r, do_comm, r->f, &us[1]));
    pb_fsdp_last_timing(r->f, &t);
    double gather = t.gather_us, scatter = t.scatter_us;
    PB_TRY(timed(r, do_step, r->f, &us[2]));
    pb_fsdp_last_timing(r->f, &t);
    PB_TRY(timed(r, do_dp, r->dp, &us[3]));
    if (iter < 0) return PB_OK;
    for (int k = 0; k < 4; k++) r->t[k][iter] = us[k];
    r->wait_sum += t.wait_us;
    r->gather_sum += gather;
    r->scatter_sum += scatter;
    return PB_OK;
}

static int memory_check(const run_ctx *r, const pb_fsdp_config *fc)
{
    uint64_t eng = 0, host = 0;
    pb_fsdp_bytes(fc, &eng, &host);
    char what[160];
    snprintf(what, sizeof what, "fsdp_step (%d ranks on this node x (layers, activations, shards, two gathered "
             "layers%s))", r->b->w.local_size, r->o->common.check ? ", validation" : "");
    pb_mem_need need = {r->eng->mem, r->eng->mem_info, eng, r->o->common.check ? host : 0};
    return pb_bench_mem_require(r->b, &need, what);
}

static pb_fsdp_config config_of(const run_ctx *r, pb_fsdp_prefetch p)
{
    const pb_workload_opts *w = &r->o->work;
    return (pb_fsdp_config){.eng = r->eng, .be = r->b->be, .shard_comm = r->shard, .replica_comm = r->replica,
                            .shape = pb_workload_opts_layer_shape(w, w->model.hidden, w->model.seq, 1, 0),
                            .nlayers = w->model.layers, .seed = w->seed, .rank = r->b->w.rank,
                            .grad_dtype = w->grad_dtype, .prefetch = p};
}

/* DP's all-reduce of the same gradient bytes, over every rank, in one piece. */
static int make_dp(run_ctx *r, const pb_fsdp_config *fc)
{
    int64_t L = fc->nlayers;
    uint64_t *shares = malloc(sizeof(uint64_t) * (size_t)L);
    PB_CHECK(shares, PB_ERR_ENV, "out of memory");
    uint64_t total = pb_fsdp_grad_bytes(r->f);
    for (int64_t i = 0; i < L; i++) shares[i] = total / (uint64_t)L;
    pb_dp_config dc = {.be = r->b->be, .comm = r->world, .eng = r->eng, .grads = pb_fsdp_grads(r->f),
                       .bytes = total, .dtype = fc->grad_dtype, .overlap = PB_DP_OVERLAP_NONE,
                       .layer_bytes = shares, .nlayers = L};
    int status = pb_dp_create(&dc, &r->dp);
    free(shares);
    return status;
}

static int measure(run_ctx *r, row *out)
{
    const pb_options *c = &r->o->common;
    pb_runner_cfg loop = {c->iters, c->warmup, c->max_seconds};
    int done = 0;
    r->wait_sum = r->gather_sum = r->scatter_sum = 0;
    pb_watchdog_what("fsdp step", pb_fsdp_grad_bytes(r->f));
    PB_TRY(pb_runner_time_loop(r->b->w.comm, &loop, it_all, r, r->samples, &done));
    pb_stats *st[4] = {&out->compute, &out->comm, &out->step, &out->dp};
    for (int k = 0; k < 4; k++) PB_TRY(pb_runner_gather_stats(r->b->w.comm, r->t[k], done, st[k]));
    out->iters = done;
    double per = done > 0 ? done : 1;
    out->wait_us = pb_world_max(&r->b->w, r->wait_sum / per);
    out->gather_us = pb_world_max(&r->b->w, r->gather_sum / per);
    out->scatter_us = pb_world_max(&r->b->w, r->scatter_sum / per);
    if (!c->check) return PB_OK;
    pb_watchdog_arm(0, "validate");
    int status = pb_fsdp_validate(r->f, r->b->w.comm, pb_faults_corrupt_rank() == r->b->w.rank,
                                  &out->wrong_params, &out->wrong_grads);
    pb_watchdog_disarm();
    MPI_Allreduce(MPI_IN_PLACE, &out->wrong_params, 1, MPI_LONG_LONG, MPI_SUM, r->b->w.comm);
    MPI_Allreduce(MPI_IN_PLACE, &out->wrong_grads, 1, MPI_LONG_LONG, MPI_SUM, r->b->w.comm);
    return status;
}

/* The planner's step (plan/model.h) from this run's own compute and
 * collectives: forward a third of the compute, backward two thirds (their
 * FLOPs), a gather and a reduce-scatter each their measured share of the
 * communication alone; where the lane could not time them apart (stream
 * order), split in proportion to their bytes. */
static double predicted_step(const run_ctx *r, const row *w, const pb_fsdp_config *fc)
{
    int64_t L = fc->nlayers;
    double gather = w->gather_us, scatter = w->scatter_us;
    if (gather + scatter <= 0) {
        pb_fsdp_shard sh;
        pb_fsdp_layer_shard(fc, &sh);
        double pb = 2.0 * (double)pb_dtype_size(r->eng->gemm_dtype(fc->shape.dtype));
        double gb = (double)pb_dtype_size(fc->grad_dtype) * (r->replicas > 1 ? 2.0 : 1.0);
        gather = w->comm.rankmax * pb / (pb + gb), scatter = w->comm.rankmax - gather;
    }
    pb_model_fsdp_layer l = {.fwd = w->compute.rankmax / (3.0 * L), .bwd = 2.0 * w->compute.rankmax / (3.0 * L),
                             .gather = gather / (2.0 * L), .scatter = scatter / L};
    return pb_model_fsdp_step(L, &l, w->prefetch == PB_FSDP_PREFETCH_ON);
}

static int report(run_ctx *r, const row *w, const pb_fsdp_config *fc)
{
    if (!r->b->rep) return PB_OK;
    const pb_workload_opts *wo = &r->o->work;
    const pb_presets_model *m = &wo->model;
    pb_fsdp_shard sh;
    pb_fsdp_layer_shard(fc, &sh);
    pb_dtype ct = r->eng->gemm_dtype(wo->compute_dtype);
    double compute = w->compute.rankmax, exposed = w->step.rankmax - compute, pred = predicted_step(r, w, fc);
    double dp = r->o->dp ? w->dp.rankmax : NAN;
    int check = r->o->common.check;
    pb_report_value v[NCOLS] = {
        [COL_NRANKS] = PB_I(r->b->w.size),
        [COL_SHARD_GROUP] = PB_I(r->n),
        [COL_REPLICAS] = PB_I(r->replicas),
        [COL_LINK_CLASS] = PB_S(r->link),
        [COL_MODEL] = PB_S(wo->preset),
        [COL_LAYERS] = PB_I(m->layers),
        [COL_HIDDEN] = PB_I(m->hidden),
        [COL_HEADS] = PB_I(m->heads),
        [COL_SEQ] = PB_I(m->seq),
        [COL_MICRO_BATCH] = PB_I(m->micro_batch),
        [COL_COMPUTE_DTYPE] = PB_S(pb_dtype_name(ct)),
        [COL_DTYPE] = PB_S(pb_dtype_name(wo->grad_dtype)),
        [COL_PREFETCH] = PB_S(pb_fsdp_prefetch_name(w->prefetch)),
        [COL_PARAMS_PER_LAYER] = PB_I(sh.params),
        [COL_SHARD_ELEMS] = PB_I(sh.per_rank),
        [COL_PAD_ELEMS] = PB_I(sh.padded - sh.params),
        [COL_ITERS] = PB_I(w->iters),
        [COL_COMPUTE_US] = PB_F(compute),
        [COL_COMM_US] = PB_F(w->comm.rankmax),
        [COL_STEP_US] = PB_F(w->step.rankmax),
        [COL_EXPOSED_US] = PB_F(exposed),
        [COL_OVERHEAD] = PB_F(compute > 0 ? exposed / compute : 0),
        [COL_PREDICTED_STEP_US] = PB_F(pred),
        [COL_PREDICTED_EXPOSED_US] = PB_F(pred - compute),
        [COL_WAIT_US] = PB_F(w->wait_us),
        [COL_GATHER_US] = PB_F(w->gather_us),
        [COL_SCATTER_US] = PB_F(w->scatter_us),
        [COL_BYTES_PER_RANK] = PB_I(llround(pb_fsdp_step_bytes_sent(&sh, m->layers, pb_dtype_size(ct),
                                                                    pb_dtype_size(wo->grad_dtype), r->replicas))),
        [COL_DP_COMM_US] = PB_F(dp),
        [COL_DP_OVERHEAD] = PB_F(compute > 0 ? dp / compute : NAN),
        [COL_COMM_VS_DP] = PB_F(dp > 0 ? w->comm.rankmax / dp : NAN),
        [COL_GFLOPS] = PB_F(compute > 0 ? pb_fsdp_flops(r->f) / compute / 1e3 : 0),
        [COL_WRONG] = PB_I(check ? w->wrong_params + w->wrong_grads : -1),
        [COL_WRONG_PARAMS] = PB_I(check ? w->wrong_params : -1),
        [COL_WRONG_GRADS] = PB_I(check ? w->wrong_grads : -1),
    };
    PB_TRY(pb_report_row(r->b->rep, v));
    const char *why = pb_stats_diff_noise(&w->step, &w->compute, exposed, w->iters, MPI_Wtick() * 1e6);
    if (why || exposed < 0)
        pb_report_note(r->b->rep, "untrustworthy: overhead %.3f (prefetch %s, shard group %d): exposed = step - "
                       "compute = %.3g us: %s%s%s; use more iterations (-n) or a bigger model",
                       v[COL_OVERHEAD].f, pb_fsdp_prefetch_name(w->prefetch), r->n, exposed,
                       exposed < 0 ? "negative (the step measured shorter than its compute)" : "",
                       exposed < 0 && why ? ", " : "", why ? why : "");
    return PB_OK;
}

/* One configuration: create, measure, validate, report. */
static int run_config(run_ctx *r, pb_fsdp_prefetch p, long long *wrong)
{
    pb_fsdp_config fc = config_of(r, p);
    PB_TRY(memory_check(r, &fc));
    row w = {.prefetch = p};
    int status = pb_world_agree(&r->b->w, pb_fsdp_create(&fc, &r->f));
    if (status == PB_OK && r->o->dp) status = pb_world_agree(&r->b->w, make_dp(r, &fc));
    if (status == PB_OK) status = measure(r, &w);
    status = pb_world_agree(&r->b->w, status);
    if (status == PB_OK) status = report(r, &w, &fc);
    status = pb_world_agree(&r->b->w, status); /* a row rank 0 could not write (a full disk) stops every rank */
    pb_dp_destroy(r->dp);
    pb_fsdp_destroy(r->f);
    r->dp = NULL, r->f = NULL;
    *wrong += w.wrong_params + w.wrong_grads;
    return status;
}

static int validate_opts(pb_bench *b, fsdp_opts *o, run_ctx *r)
{
    PB_TRY(pb_options_validate(&o->common));
    PB_TRY(pb_workload_opts_resolve(&o->work));
    if (o->nprefetch == 0) {
        o->prefetch[o->nprefetch++] = PB_FSDP_PREFETCH_OFF;
        o->prefetch[o->nprefetch++] = PB_FSDP_PREFETCH_ON;
    }
    r->n = b->w.size;
    if (o->group == GROUP_NODE) PB_TRY(pb_world_node_block(&b->w, "--shard-group", &r->n));
    else if (o->group > 0) r->n = o->group;
    PB_TRY(pb_fsdp_group_of(b->w.size, r->n, b->w.rank, &r->group, &r->index));
    r->replicas = b->w.size / r->n;
    pb_layer_shape sh = pb_workload_opts_layer_shape(&o->work, o->work.model.hidden, o->work.model.seq, 1, 0);
    return pb_layer_shape_check(&sh);
}

/* The communicators: the shard group, the replicas of each shard, and the
 * world for DP's all-reduce. */
static int place(run_ctx *r)
{
    pb_bench *b = r->b;
    MPI_Comm_split(b->w.comm, r->group, r->index, &r->shard_mpi);
    PB_TRY(b->be->comm_create(r->shard_mpi, &r->shard));
    if (r->replicas > 1) {
        MPI_Comm_split(b->w.comm, r->index, r->group, &r->replica_mpi);
        PB_TRY(b->be->comm_create(r->replica_mpi, &r->replica));
    }
    if (r->o->dp && r->replicas > 1) PB_TRY(b->be->comm_create(b->w.comm, &r->world));
    if (r->o->dp && r->replicas == 1) r->world = r->shard;
    int *ranks = malloc(sizeof(int) * (size_t)r->n);
    PB_CHECK(ranks, PB_ERR_ENV, "out of memory");
    for (int k = 0; k < r->n; k++) ranks[k] = k; /* the first group: every group is a block alike */
    r->link = r->n == 1 ? "none" : pb_link_name(pb_world_link(&b->w, ranks, r->n));
    free(ranks);
    return PB_OK;
}

static void notes(run_ctx *r)
{
    if (!r->b->rep) return;
    pb_report_note(r->b->rep, "engine: %s", r->eng->describe());
    pb_report_note(r->b->rep, "sharding: %d shard group%s of %d rank%s (%s)%s", r->replicas,
                   r->replicas == 1 ? "" : "s", r->n, r->n == 1 ? "" : "s", r->link,
                   r->replicas > 1 ? "; each reduced shard is then all-reduced over the replicas" : "");
    pb_report_note(r->b->rep, "times: max over ranks of each rank's mean; exposed = step - compute; overhead = "
                              "exposed/compute; predict = the planner's step from this run's compute and "
                              "collectives; DP AR = the all-reduce of the same gradient over every rank, timed "
                              "here; DP ovh = DP AR/compute");
    pb_ordering ord = pb_ordering_plan(r->eng, r->b->be);
    pb_report_note(r->b->rep, "ordering %s: %s", pb_ordering_name(ord),
                   ord == PB_ORDERING_STREAM
                       ? "collectives on the communication stream, ordered against compute by CUDA events"
                       : "prefetch on runs the collectives on a communication thread (MPI_THREAD_MULTIPLE); "
                         "prefetch off runs each one to completion in turn");
    pb_report_header(r->b->rep);
}

int main(int argc, char **argv)
{
    fsdp_opts o = {.group = GROUP_WORLD, .dp = 1};
    pb_options_defaults(&o.common);
    o.common.iters = 10, o.common.warmup = 2;
    pb_workload_opts_defaults(&o.work, "tiny");
    o.work.recompute_max = PB_LAYER_RECOMPUTE_FULL;
    pb_options_group groups[] = {
        {"fsdp_step options", own_opts, (int)(sizeof own_opts / sizeof own_opts[0]), handle, &o},
        pb_workload_opts_group(&o.work),
        pb_options_common_group(&o.common, PB_OPTS_ITERS | PB_OPTS_DATA | PB_OPTS_OUTPUT | PB_OPTS_VALIDATE),
    };
    pb_bench b;
    pb_bench_start(&b, "fsdp_step", &argc, &argv, MPI_THREAD_MULTIPLE,
                   "Usage: mpirun -np N fsdp_step [options]\n"
                   "Sharded data-parallel (ZeRO-3 / FSDP) training step through real layers: per layer an "
                   "all-gather of its\nparameter shards before forward and backward, a reduce-scatter of its "
                   "gradient after backward,\nwith or without prefetch. Reports compute, comm, step, exposed "
                   "comm, the planner's step, and DP's\nall-reduce of the same gradient.",
                   groups, 3);
    run_ctx r = {.b = &b, .o = &o, .shard_mpi = MPI_COMM_NULL, .replica_mpi = MPI_COMM_NULL};
    int status = validate_opts(&b, &o, &r);
    if (status != PB_OK) pb_bench_finish(&b, status);
    status = pb_workload_opts_open(&b, &o.work, &o.common, cols, NCOLS, NULL, &r.eng);
    if (status == PB_OK) status = pb_world_agree_at(b.w.comm, place(&r), "comm");
    r.samples = malloc(sizeof(double) * 5 * (size_t)o.common.iters);
    if (status == PB_OK && !r.samples) status = pb_fail(PB_ERR_ENV, "out of memory for samples");
    status = pb_world_agree_at(b.w.comm, status, "samples");
    for (int k = 0; r.samples && k < 4; k++) r.t[k] = r.samples + (size_t)(k + 1) * (size_t)o.common.iters;
    long long wrong = 0;
    if (status == PB_OK && r.eng) {
        notes(&r);
        pb_load start;
        pb_load_sample(&start);
        for (int k = 0; k < o.nprefetch && status == PB_OK; k++)
            status = run_config(&r, (pb_fsdp_prefetch)o.prefetch[k], &wrong);
        if (status == PB_OK) pb_bench_note_load(&b, &start);
        if (b.rep && status == PB_OK && o.common.check) {
            printf("#\n");
            pb_bench_note_wrong(b.rep, wrong, "gathered parameters bit for bit; reduced gradients within the DP "
                                              "tolerance");
        }
    }
    free(r.samples);
    if (r.world && r.world != r.shard) b.be->comm_destroy(r.world);
    if (r.replica) b.be->comm_destroy(r.replica);
    if (r.shard) b.be->comm_destroy(r.shard);
    if (r.replica_mpi != MPI_COMM_NULL) MPI_Comm_free(&r.replica_mpi);
    if (r.shard_mpi != MPI_COMM_NULL) MPI_Comm_free(&r.shard_mpi);
    if (r.eng) r.eng->finalize();
    pb_bench_finish(&b, status == PB_OK && wrong > 0 ? PB_ERR_CHECK : status);
}
