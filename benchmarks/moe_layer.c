/* moe_layer: L mixture-of-experts layers with expert parallelism per
 * iteration, forward and backward through real compute: per layer a router
 * GEMM, the dispatch all-to-all(v) of the tokens to their top-k experts, the
 * experts' MLPs, and the combine all-to-all(v) back (common/workload/moe.h).
 * Per EP group and load skew: the dispatch and combine times, their share of
 * the layer, their bandwidth against a uniform all-to-all of the same bytes
 * timed in the same iterations, the slowest rank, and the planner's step.
 * See docs/moe_layer.md. */
#include "harness/bench.h"
#include "coll/coll.h"
#include "core/error.h"
#include "core/parse.h"
#include "core/stats.h"
#include "core/timing.h"
#include "core/watchdog.h"
#include "harness/runner.h"
#include "plan/model.h"
#include "workload/moe.h"
#include "workload/workload_opts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { GROUP_WORLD = -1, GROUP_NODE = -2, MAX_LIST = 8 };

typedef struct moe_opts {
    pb_options common;
    pb_workload_opts work;
    int64_t experts, top_k;   /* 0: the model's */
    double skews[MAX_LIST];   /* --skew, in the order given */
    int nskews;
    int groups[MAX_LIST];     /* --ep-group: GROUP_WORLD, GROUP_NODE, or a size */
    int ngroups;
} moe_opts;

enum { O_EXPERTS, O_TOP_K, O_SKEW, O_GROUP };

static const pb_options_opt own_opts[] = {
    {"experts", 0, "E", "experts per layer (default: the model's; tiny-moe 8)", O_EXPERTS},
    {"top-k", 0, "K", "experts each token is routed to, 1 <= K <= E (default: the model's)", O_TOP_K},
    {"skew", 0, "F", "the load: uniform, or F >= 1, the most loaded expert getting F times the mean; a list runs "
                     "each (default uniform,2)", O_SKEW},
    {"ep-group", 0, "G", "ranks the experts are spread over: world (default), node, or N consecutive ranks; a list "
                         "runs each (node,world compares EP inside a node with EP across nodes)", O_GROUP},
};

/* One item of --skew or --ep-group, comma-separated. */
static int parse_item(const char *option, int id, const char *item, moe_opts *o)
{
    long long v = 0;
    if (id == O_SKEW) {
        if (strcmp(item, "uniform") == 0) return o->skews[o->nskews++] = 1.0, PB_OK;
        return pb_parse_double(option, item, 1.0, 65536.0, &o->skews[o->nskews++]);
    }
    if (strcmp(item, "world") == 0) return o->groups[o->ngroups++] = GROUP_WORLD, PB_OK;
    if (strcmp(item, "node") == 0) return o->groups[o->ngroups++] = GROUP_NODE, PB_OK;
    if (*item < '0' || *item > '9')
        return pb_error_usage(option, "'%s' is not an EP group; expected world, node, or a rank count", item);
    PB_TRY(pb_parse_int(option, item, 1, 1 << 20, &v));
    o->groups[o->ngroups++] = (int)v;
    return PB_OK;
}

static int parse_list(const char *option, int id, const char *arg, moe_opts *o)
{
    char buf[256];
    size_t len = strlen(arg);
    if (!len || len >= sizeof buf || arg[0] == ',' || arg[len - 1] == ',' || strstr(arg, ",,"))
        return pb_error_usage(option, "'%s': expected a comma-separated list without empty items, at most 255 characters",
                              arg);
    snprintf(buf, sizeof buf, "%s", arg);
    int *n = id == O_SKEW ? &o->nskews : &o->ngroups;
    *n = 0;
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        if (*n == MAX_LIST) return pb_error_usage(option, "at most %d items", MAX_LIST);
        PB_TRY(parse_item(option, id, item, o));
    }
    return PB_OK;
}

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    moe_opts *o = ctx;
    long long v = 0;
    switch (id) {
    case O_EXPERTS: PB_TRY(pb_parse_int(option, arg, 1, 1 << 16, &v)); o->experts = v; return PB_OK;
    case O_TOP_K: PB_TRY(pb_parse_int(option, arg, 1, 1 << 16, &v)); o->top_k = v; return PB_OK;
    case O_SKEW:
    case O_GROUP: return parse_list(option, id, arg, o);
    default: return pb_error_usage(option, "not handled");
    }
}

enum {
    COL_NRANKS,
    COL_EP_GROUP,
    COL_EP_GROUPS,
    COL_LINK_CLASS,
    COL_MODEL,
    COL_LAYERS,
    COL_HIDDEN,
    COL_FFN,
    COL_EXPERTS,
    COL_TOP_K,
    COL_TOKENS,
    COL_COMPUTE_DTYPE,
    COL_SKEW,
    COL_IMBALANCE,
    COL_ITERS,
    COL_STEP_US,
    COL_DISPATCH_US,
    COL_COMBINE_US,
    COL_A2A_SHARE,
    COL_COMPUTE_US,
    COL_SLOWEST_RANK,
    COL_ALONE_DISPATCH_US,
    COL_ALONE_COMBINE_US,
    COL_EVEN_DISPATCH_US,
    COL_EVEN_COMBINE_US,
    COL_DISPATCH_VS_EVEN,
    COL_A2A_VS_EVEN,
    COL_BYTES_PER_A2A,
    COL_A2A_BUSBW,
    COL_EVEN_BUSBW,
    COL_BW_VS_EVEN,
    COL_GEMM_GFLOPS,
    COL_PREDICTED_A2A_US,
    COL_PREDICTED_STEP_US,
    COL_WRONG,
    COL_WRONG_ROWS,
    COL_WRONG_COUNTS,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_NRANKS] = {"nranks", "ranks", "", PB_COL_INT, 5, 0, ""},
    [COL_EP_GROUP] = {"ep_group", "ep", "", PB_COL_INT, 4, 0, ""},
    [COL_EP_GROUPS] = {"ep_groups", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_LINK_CLASS] = {"link_class", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_MODEL] = {"model", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_LAYERS] = {"layers", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HIDDEN] = {"hidden", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_FFN] = {"ffn", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_EXPERTS] = {"experts", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_TOP_K] = {"top_k", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_TOKENS] = {"tokens", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_COMPUTE_DTYPE] = {"compute_dtype", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_SKEW] = {"skew", "skew", "", PB_COL_FLOAT, 5, 2, ""},
    [COL_IMBALANCE] = {"imbalance", "imb", "", PB_COL_FLOAT, 5, 2, ""},
    [COL_ITERS] = {"iters", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_STEP_US] = {"step_us", "step", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_DISPATCH_US] = {"dispatch_us", "dispatch", "(us)", PB_COL_FLOAT, 9, 0, "us"},
    [COL_COMBINE_US] = {"combine_us", "combine", "(us)", PB_COL_FLOAT, 9, 0, "us"},
    [COL_A2A_SHARE] = {"a2a_share", "share", "", PB_COL_FLOAT, 6, 3, ""},
    [COL_COMPUTE_US] = {"compute_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_SLOWEST_RANK] = {"slowest_rank", "slowest", "", PB_COL_INT, 7, 0, ""},
    [COL_ALONE_DISPATCH_US] = {"alone_dispatch_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_ALONE_COMBINE_US] = {"alone_combine_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_EVEN_DISPATCH_US] = {"even_dispatch_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_EVEN_COMBINE_US] = {"even_combine_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_DISPATCH_VS_EVEN] = {"dispatch_vs_even", "disp/even", "", PB_COL_FLOAT, 9, 3, ""},
    [COL_A2A_VS_EVEN] = {"a2a_vs_even", NULL, NULL, PB_COL_FLOAT, 0, 0, ""},
    [COL_BYTES_PER_A2A] = {"bytes_per_a2a", NULL, NULL, PB_COL_INT, 0, 0, "B"},
    [COL_A2A_BUSBW] = {"a2a_busbw_GBps", "busbw", "(GB/s)", PB_COL_FLOAT, 8, 3, "GB/s"},
    [COL_EVEN_BUSBW] = {"even_busbw_GBps", "even bw", "(GB/s)", PB_COL_FLOAT, 8, 3, "GB/s"},
    [COL_BW_VS_EVEN] = {"bw_vs_even", NULL, NULL, PB_COL_FLOAT, 0, 0, ""},
    [COL_GEMM_GFLOPS] = {"gemm_gflops", NULL, NULL, PB_COL_FLOAT, 0, 0, "GFLOP/s"},
    [COL_PREDICTED_A2A_US] = {"predicted_a2a_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_PREDICTED_STEP_US] = {"predicted_step_us", "predict", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 6, 0, ""},
    [COL_WRONG_ROWS] = {"wrong_rows", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_WRONG_COUNTS] = {"wrong_counts", NULL, NULL, PB_COL_INT, 0, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

/* The run: one EP group size at a time, and its communicator. */
typedef struct run_ctx {
    pb_bench *b;
    moe_opts *o;
    const pb_compute *eng;
    int ep, groups, group, index;   /* EP group size, their count, this rank's group and index */
    MPI_Comm ep_mpi;
    pb_comm *ep_comm;
    const char *link;
    double *samples;                /* per timed iteration: the step */
    double *a2a_max;                /* one phase's all-to-alls, each the max over ranks (4L) */
    double best[2][2];              /* the fastest all-to-all so far, alone and uniform: dispatches, all */
    double sums[3][2];              /* per phase (step, all-to-alls alone, uniform): dispatch, combine */
    pb_moe *m;
} run_ctx;

/* One configuration's measurements, reduced over ranks. */
typedef struct row {
    double skew;
    int iters;
    pb_stats step;
    double us[3][2];                /* per phase: dispatch, combine (max over ranks) */
    double compute_us;
    double best[2][2];              /* the fastest all-to-all (max over ranks), alone and uniform: dispatches, all */
    int slowest;
    long long wrong_rows, wrong_counts;
} row;

/* Time one phase from an aligned start (the barrier is outside the timed region). */
enum { PHASE_STEP, PHASE_ALONE, PHASE_EVEN, PHASES };

/* A phase's all-to-alls end with their slowest rank's: the fastest of them (the one other load disturbed least)
 * is what the ratios against the uniform load compare. Outside the timed region. */
static void fastest(run_ctx *r, int even, const pb_moe_timing *t)
{
    int n = t->a2as;
    memcpy(r->a2a_max, pb_moe_a2a_times(r->m), sizeof(double) * (size_t)n);
    MPI_Allreduce(MPI_IN_PLACE, r->a2a_max, n, MPI_DOUBLE, MPI_MAX, r->b->w.comm);
    for (int i = 0; i < n; i++) {
        if (i % 2 == 0) r->best[even][0] = fmin(r->best[even][0], r->a2a_max[i]);
        r->best[even][1] = fmin(r->best[even][1], r->a2a_max[i]);
    }
}

static int run_phase(pb_moe *m, int phase) { return phase == PHASE_STEP ? pb_moe_step(m) : pb_moe_a2a_only(m, phase == PHASE_EVEN); }

/* The step, its all-to-alls alone and the uniform ones back to back in each
 * iteration, each from an aligned start, so load drift on a shared machine
 * hits them alike; the two all-to-all phases swap places every other
 * iteration, so neither always follows the step's compute. */
static int it_all(void *a, int iter)
{
    run_ctx *r = a;
    pb_moe_timing t[PHASES];
    double step = 0;
    int swap = iter & 1;
    for (int q = 0; q < PHASES; q++) {
        int p = q == 0 ? PHASE_STEP : swap ? PHASES - q : q;
        MPI_Barrier(r->b->w.comm);
        double t0 = pb_timing_now_us();
        PB_TRY(run_phase(r->m, p));
        if (p == PHASE_STEP) step = pb_timing_now_us() - t0;
        pb_moe_last_timing(r->m, &t[p]);
        if (p != PHASE_STEP && iter >= 0) fastest(r, p == PHASE_EVEN, &t[p]);
    }
    if (iter < 0) return PB_OK;
    r->samples[iter] = step;
    for (int p = 0; p < PHASES; p++) r->sums[p][0] += t[p].dispatch_us, r->sums[p][1] += t[p].combine_us;
    return PB_OK;
}

static pb_moe_config config_of(const run_ctx *r, double skew)
{
    const pb_workload_opts *w = &r->o->work;
    const pb_presets_model *m = &w->model;
    return (pb_moe_config){.eng = r->eng, .be = r->b->be, .ep_comm = r->ep_comm,
                           .tokens = m->micro_batch * m->seq, .hidden = m->hidden, .ffn = m->ffn,
                           .gated = m->mlp == PB_MLP_SWIGLU, .dtype = w->compute_dtype, .nlayers = m->layers,
                           .experts = (int)m->experts, .top_k = (int)m->top_k, .skew = skew, .seed = w->seed,
                           .rank = r->b->w.rank, .group = r->group};
}

static int memory_check(const run_ctx *r, const pb_moe_config *mc)
{
    uint64_t eng = 0, host = 0;
    pb_moe_bytes(mc, &eng, &host);
    char what[160];
    snprintf(what, sizeof what, "moe_layer (%d ranks on this node x (experts, activations, rows%s))",
             r->b->w.local_size, r->o->common.check ? ", validation" : "");
    pb_mem_need need = {r->eng->mem, r->eng->mem_info, eng, r->o->common.check ? host : 0};
    return pb_bench_mem_require(r->b, &need, what);
}

static int measure(run_ctx *r, row *out)
{
    const pb_options *c = &r->o->common;
    pb_runner_cfg loop = {c->iters, c->warmup, c->max_seconds};
    int done = 0;
    memset(r->sums, 0, sizeof r->sums);
    for (int k = 0; k < 2; k++) r->best[k][0] = r->best[k][1] = INFINITY;
    pb_watchdog_what("moe layer", (uint64_t)pb_moe_a2a_bytes(r->m));
    PB_TRY(pb_runner_time_loop(r->b->w.comm, &loop, it_all, r, r->samples + c->iters, &done));
    double mine = 0, per = done > 0 ? done : 1;
    for (int i = 0; i < done; i++) mine += r->samples[i] / per;
    PB_TRY(pb_runner_gather_stats(r->b->w.comm, r->samples, done, &out->step));
    out->iters = done;
    double a2a = (r->sums[PHASE_STEP][0] + r->sums[PHASE_STEP][1]) / per;
    for (int p = 0; p < PHASES; p++)
        for (int d = 0; d < 2; d++) out->us[p][d] = pb_world_max(&r->b->w, r->sums[p][d] / per);
    memcpy(out->best, r->best, sizeof out->best);
    /* The slowest rank: the most time outside the all-to-alls, which the others wait for inside them. */
    struct { double v; int rank; } compute = {mine - a2a, r->b->w.rank};
    MPI_Allreduce(MPI_IN_PLACE, &compute, 1, MPI_DOUBLE_INT, MPI_MAXLOC, r->b->w.comm);
    out->compute_us = compute.v, out->slowest = compute.rank;
    out->wrong_counts = pb_moe_wrong_counts(r->m);
    if (!c->check) return PB_OK;
    pb_watchdog_arm(0, "validate");
    int status = pb_moe_validate(r->m, pb_faults_corrupt_rank() == r->b->w.rank, &out->wrong_rows);
    pb_watchdog_disarm();
    out->wrong_counts = pb_moe_wrong_counts(r->m);
    MPI_Allreduce(MPI_IN_PLACE, &out->wrong_rows, 1, MPI_LONG_LONG, MPI_SUM, r->b->w.comm);
    MPI_Allreduce(MPI_IN_PLACE, &out->wrong_counts, 1, MPI_LONG_LONG, MPI_SUM, r->b->w.comm);
    return status;
}

/* The GEMM rate of an expert's forward at uniform load (its rows from every
 * sender, h x f1), measured here: the rate the step model's compute runs at. */
static double gemm_rate(const run_ctx *r, const pb_moe_config *mc)
{
    int64_t rows = mc->tokens * mc->top_k / mc->experts * r->ep;
    double gflops = 0;
    int64_t f1 = mc->gated ? 2 * mc->ffn : mc->ffn;
    if (pb_compute_gemm_benchmark(r->eng, rows > 0 ? rows : 1, f1, mc->hidden, r->eng->gemm_dtype(mc->dtype), 3,
                                  &gflops) != PB_OK)
        return 0;
    return pb_world_max(&r->b->w, gflops) > 0 ? gflops : 0;
}

/* The planner's step (plan/model.h): the all-to-all's bandwidth from the
 * uniform all-to-alls of this run (latency neglected), the heaviest rank's
 * bytes on it, and the heaviest rank's FLOPs at the measured GEMM rate. */
static void predict(const run_ctx *r, const row *w, const pb_moe_config *mc, double gflops, double *a2a, double *step)
{
    pb_moe_route rt;
    pb_moe_route_of(mc, &rt);
    double S = pb_moe_a2a_bytes(r->m), one = (w->us[PHASE_EVEN][0] + w->us[PHASE_EVEN][1]) / (4.0 * mc->nlayers) * 1e-6;
    pb_model_link link = {0.0, one > 0 ? pb_coll_busbw_factor(PB_COLL_ALLTOALL, r->ep) * S / one : 0.0};
    /* This rank's expert FLOPs are for its own rows: scale them back to the uniform load. */
    double mean_rows = (double)mc->tokens * mc->top_k, mine = (double)pb_moe_recv_rows(&rt, r->index);
    double expert = mine > 0 ? pb_moe_expert_flops(r->m) * mean_rows / mine : 0.0;
    expert = pb_world_max(&r->b->w, expert);
    pb_model_moe_layer l = {.a2a_bytes = S, .imbalance = pb_moe_imbalance(&rt), .n = r->ep,
                            .expert_flops = expert / mc->nlayers, .other_flops = pb_moe_other_flops(r->m) / mc->nlayers};
    *a2a = link.bw_Bps > 0 ? 4.0 * mc->nlayers * pb_model_moe_a2a(&l, link) * 1e6 : NAN;
    *step = link.bw_Bps > 0 ? pb_model_moe_step(mc->nlayers, &l, link, gflops * 1e9) * 1e6 : NAN;
}

static int report(run_ctx *r, const row *w, const pb_moe_config *mc)
{
    double gflops = gemm_rate(r, mc), pa2a = 0, pstep = 0;
    predict(r, w, mc, gflops, &pa2a, &pstep);
    if (!r->b->rep) return PB_OK;
    const pb_workload_opts *wo = &r->o->work;
    pb_moe_route rt;
    pb_moe_route_of(mc, &rt);
    const double *in = w->us[PHASE_STEP], *alone = w->us[PHASE_ALONE], *ev = w->us[PHASE_EVEN];
    double a2a = alone[0] + alone[1], even = ev[0] + ev[1];
    double S = pb_moe_a2a_bytes(r->m), n = 4.0 * mc->nlayers, factor = pb_coll_busbw_factor(PB_COLL_ALLTOALL, r->ep);
    double busbw = a2a > 0 ? n * S / (a2a * 1e3) * factor : 0, even_bw = even > 0 ? n * S / (even * 1e3) * factor : 0;
    int check = r->o->common.check;
    pb_report_value v[NCOLS] = {
        [COL_NRANKS] = PB_I(r->b->w.size),
        [COL_EP_GROUP] = PB_I(r->ep),
        [COL_EP_GROUPS] = PB_I(r->groups),
        [COL_LINK_CLASS] = PB_S(r->link),
        [COL_MODEL] = PB_S(wo->preset),
        [COL_LAYERS] = PB_I(mc->nlayers),
        [COL_HIDDEN] = PB_I(mc->hidden),
        [COL_FFN] = PB_I(mc->ffn),
        [COL_EXPERTS] = PB_I(mc->experts),
        [COL_TOP_K] = PB_I(mc->top_k),
        [COL_TOKENS] = PB_I(mc->tokens),
        [COL_COMPUTE_DTYPE] = PB_S(pb_dtype_name(r->eng->gemm_dtype(mc->dtype))),
        [COL_SKEW] = PB_F(w->skew),
        [COL_IMBALANCE] = PB_F(pb_moe_imbalance(&rt)),
        [COL_ITERS] = PB_I(w->iters),
        [COL_STEP_US] = PB_F(w->step.rankmax),
        [COL_DISPATCH_US] = PB_F(in[0]),
        [COL_COMBINE_US] = PB_F(in[1]),
        [COL_A2A_SHARE] = PB_F(w->step.rankmax > 0 ? (in[0] + in[1]) / w->step.rankmax : 0),
        [COL_COMPUTE_US] = PB_F(w->compute_us),
        [COL_SLOWEST_RANK] = PB_I(w->slowest),
        [COL_ALONE_DISPATCH_US] = PB_F(alone[0]),
        [COL_ALONE_COMBINE_US] = PB_F(alone[1]),
        [COL_EVEN_DISPATCH_US] = PB_F(ev[0]),
        [COL_EVEN_COMBINE_US] = PB_F(ev[1]),
        [COL_DISPATCH_VS_EVEN] = PB_F(isfinite(w->best[1][0]) ? w->best[0][0] / w->best[1][0] : NAN),
        [COL_A2A_VS_EVEN] = PB_F(isfinite(w->best[1][1]) ? w->best[0][1] / w->best[1][1] : NAN),
        [COL_BYTES_PER_A2A] = PB_I(llround(S)),
        [COL_A2A_BUSBW] = PB_F(busbw),
        [COL_EVEN_BUSBW] = PB_F(even_bw),
        [COL_BW_VS_EVEN] = PB_F(even_bw > 0 ? busbw / even_bw : NAN),
        [COL_GEMM_GFLOPS] = PB_F(gflops),
        [COL_PREDICTED_A2A_US] = PB_F(pa2a),
        [COL_PREDICTED_STEP_US] = PB_F(pstep),
        [COL_WRONG] = PB_I(check ? w->wrong_rows + w->wrong_counts : -1),
        [COL_WRONG_ROWS] = PB_I(check ? w->wrong_rows : -1),
        [COL_WRONG_COUNTS] = PB_I(check ? w->wrong_counts : -1),
    };
    return pb_report_row(r->b->rep, v);
}

/* One configuration: create, measure, validate, report. */
static int run_config(run_ctx *r, double skew, long long *wrong)
{
    pb_moe_config mc = config_of(r, skew);
    PB_TRY(memory_check(r, &mc));
    row w = {.skew = skew};
    int status = pb_world_agree(&r->b->w, pb_moe_create(&mc, &r->m));
    if (status == PB_OK) status = measure(r, &w);
    status = pb_world_agree(&r->b->w, status);
    if (status == PB_OK) status = report(r, &w, &mc);
    status = pb_world_agree(&r->b->w, status); /* a row rank 0 could not write (a full disk) stops every rank */
    pb_moe_destroy(r->m);
    r->m = NULL;
    *wrong += w.wrong_rows + w.wrong_counts;
    return status;
}

/* The EP group's size for --ep-group item g, its communicator and link class. */
static int place(run_ctx *r, int g)
{
    pb_bench *b = r->b;
    r->ep = g == GROUP_WORLD ? b->w.size : g;
    if (g == GROUP_NODE) PB_TRY(pb_world_node_block(&b->w, "--ep-group", &r->ep));
    PB_TRY(pb_moe_group_of(b->w.size, r->ep, b->w.rank, &r->group, &r->index));
    r->groups = b->w.size / r->ep;
    MPI_Comm_split(b->w.comm, r->group, r->index, &r->ep_mpi);
    PB_TRY(pb_world_agree_at(b->w.comm, b->be->comm_create(r->ep_mpi, &r->ep_comm), "comm"));
    int *ranks = malloc(sizeof(int) * (size_t)r->ep);
    PB_CHECK(ranks, PB_ERR_ENV, "out of memory");
    for (int k = 0; k < r->ep; k++) ranks[k] = k; /* the first group: every group is a block alike */
    r->link = r->ep == 1 ? "none" : pb_link_name(pb_world_link(&b->w, ranks, r->ep));
    free(ranks);
    return PB_OK;
}

static void unplace(run_ctx *r)
{
    if (r->ep_comm) r->b->be->comm_destroy(r->ep_comm);
    if (r->ep_mpi != MPI_COMM_NULL) MPI_Comm_free(&r->ep_mpi);
    r->ep_comm = NULL, r->ep_mpi = MPI_COMM_NULL;
}

/* Every EP group and skew, before anything runs: a refusal names its option at once. */
static int check_all(pb_bench *b, moe_opts *o)
{
    const pb_presets_model *m = &o->work.model;
    for (int gi = 0; gi < o->ngroups; gi++) {
        int ep = o->groups[gi] == GROUP_WORLD ? b->w.size : o->groups[gi], group, index;
        if (o->groups[gi] == GROUP_NODE) PB_TRY(pb_world_node_block(&b->w, "--ep-group", &ep));
        PB_TRY(pb_moe_group_of(b->w.size, ep, b->w.rank, &group, &index));
        for (int si = 0; si < o->nskews; si++) {
            pb_moe_route rt = {.tokens = m->micro_batch * m->seq, .experts = (int)m->experts, .top_k = (int)m->top_k,
                               .ep = ep, .skew = o->skews[si]};
            PB_TRY(pb_moe_route_check(&rt));
        }
    }
    return PB_OK;
}

static int validate_opts(pb_bench *b, moe_opts *o)
{
    PB_TRY(pb_options_validate(&o->common));
    PB_TRY(pb_workload_opts_resolve(&o->work));
    pb_presets_model *m = &o->work.model;
    if (o->experts) m->experts = o->experts;
    if (o->top_k) m->top_k = o->top_k;
    if (m->experts < 1)
        return pb_error_usage("--experts", "model %s is dense (no experts); expected an MoE model (tiny-moe, "
                              "mixtral-8x7b, olmoe-1b-7b) or --experts E with --top-k K", o->work.preset);
    if (m->top_k < 1) return pb_error_usage("--top-k", "model %s routes to no experts; expected --top-k K >= 1",
                                            o->work.preset);
    if (o->nskews == 0) o->skews[o->nskews++] = 1.0, o->skews[o->nskews++] = 2.0;
    if (o->ngroups == 0) o->groups[o->ngroups++] = GROUP_WORLD;
    return check_all(b, o);
}

static void notes(run_ctx *r)
{
    if (!r->b->rep) return;
    pb_report_note(r->b->rep, "engine: %s", r->eng->describe());
    pb_report_note(r->b->rep, "times: max over ranks of each rank's mean per step (L layers, forward and backward); "
                              "dispatch = the token-to-expert all-to-alls in the step (with the counts), combine = the "
                              "way back; share = (dispatch + combine)/step; disp/even = the step's dispatches alone "
                              "over the same at uniform load (the same bytes), both timed in the same iterations, "
                              "their fastest each; "
                              "busbw = 4L x bytes_per_a2a / (their time alone) x (n-1)/n, even bw the same at "
                              "uniform load; slowest = the rank with the most time outside the all-to-alls; "
                              "predict = the planner's step (bandwidth from the even all-to-alls, GEMMs at the "
                              "measured rate)");
    pb_report_header(r->b->rep);
}

int main(int argc, char **argv)
{
    moe_opts o = {0};
    pb_options_defaults(&o.common);
    o.common.iters = 10, o.common.warmup = 2;
    pb_workload_opts_defaults(&o.work, "tiny-moe");
    pb_options_group groups[] = {
        {"moe_layer options", own_opts, (int)(sizeof own_opts / sizeof own_opts[0]), handle, &o},
        pb_workload_opts_group(&o.work),
        pb_options_common_group(&o.common, PB_OPTS_ITERS | PB_OPTS_DATA | PB_OPTS_OUTPUT | PB_OPTS_VALIDATE),
    };
    pb_bench b;
    pb_bench_start(&b, "moe_layer", &argc, &argv, MPI_THREAD_SINGLE,
                   "Usage: mpirun -np N moe_layer [options]\n"
                   "Mixture-of-experts layers with expert parallelism through real compute: per layer a router, "
                   "the dispatch\nall-to-all(v) of the tokens to their top-k experts, the experts' MLPs and the "
                   "combine all-to-all(v),\nforward and backward. Reports the dispatch and combine times, their "
                   "share of the step, their bandwidth\nagainst a uniform all-to-all, the slowest rank and the "
                   "planner's step.",
                   groups, 3);
    run_ctx r = {.b = &b, .o = &o, .ep_mpi = MPI_COMM_NULL};
    int status = validate_opts(&b, &o);
    if (status != PB_OK) pb_bench_finish(&b, status);
    status = pb_workload_opts_open(&b, &o.work, &o.common, cols, NCOLS, NULL, &r.eng);
    r.samples = malloc(sizeof(double) * 2 * (size_t)o.common.iters);
    r.a2a_max = malloc(sizeof(double) * 4 * (size_t)o.work.model.layers);
    if (status == PB_OK && !(r.samples && r.a2a_max)) status = pb_fail(PB_ERR_ENV, "out of memory for samples");
    status = pb_world_agree_at(b.w.comm, status, "samples");
    long long wrong = 0;
    if (status == PB_OK && r.eng) {
        notes(&r);
        pb_load start;
        pb_load_sample(&start);
        for (int gi = 0; gi < o.ngroups && status == PB_OK; gi++) {
            status = place(&r, o.groups[gi]);
            for (int si = 0; si < o.nskews && status == PB_OK; si++) status = run_config(&r, o.skews[si], &wrong);
            unplace(&r);
        }
        if (status == PB_OK) pb_bench_note_load(&b, &start);
        if (b.rep && status == PB_OK && o.common.check) {
            printf("#\n");
            pb_bench_note_wrong(b.rep, wrong, "every row dispatched and combined, and every count exchanged");
        }
    }
    free(r.samples);
    free(r.a2a_max);
    unplace(&r);
    if (r.eng) r.eng->finalize();
    pb_bench_finish(&b, status == PB_OK && wrong > 0 ? PB_ERR_CHECK : status);
}
