/* tp_layer: a Megatron transformer layer split over t ranks (common/workload/tp.h):
 * per layer, compute, communication and step time, the communication
 * fraction, bytes per rank against 8*b*s*h*(t-1)/t, and the speed-up over
 * the same layer unsharded on one rank. See docs/tp_layer.md. */
#include "harness/bench.h"
#include "core/error.h"
#include "core/mem.h"
#include "workload/ordering.h"
#include "core/parse.h"
#include "harness/runner.h"
#include "core/timing.h"
#include "workload/tp.h"
#include "core/watchdog.h"
#include "workload/workload_opts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LIST 64

typedef struct tp_opts {
    pb_options common;
    pb_workload_opts work;
    int tp, stride, unsharded;
    int modes[PB_TP_MODE_COUNT], nmodes; /* pb_tp_mode values */
    int64_t hidden[MAX_LIST], seq[MAX_LIST];
    size_t nhidden, nseq;
} tp_opts;

enum { O_TP, O_COMM, O_STRIDE, O_HIDDEN_LIST, O_SEQ_LIST, O_UNSHARDED };

static const pb_options_opt own_opts[] = {
    {"tp", 0, "T", "tensor-parallel size t (default: the world size); t must divide h, 3h, 4h, heads and the "
                   "world size", O_TP},
    {"tp-comm", 0, "MODE", "allreduce (Megatron f/g), sp (sequence parallel: all-gather + reduce-scatter), or "
                           "a comma-separated list (default allreduce)", O_COMM},
    {"tp-stride", 0, "S", "rank distance inside a TP group (default 1: consecutive ranks)", O_STRIDE},
    {"hidden-list", 0, "LIST", "sweep the hidden size: comma-separated values, one row each", O_HIDDEN_LIST},
    {"seq-list", 0, "LIST", "sweep the sequence length: comma-separated values, one row each", O_SEQ_LIST},
    {"unsharded", 0, "0|1", "also time the unsharded layer on every rank for the speed-up (default 1, when "
                            "memory allows)", O_UNSHARDED},
};

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    tp_opts *o = ctx;
    long long v = 0;
    switch (id) {
    case O_TP: PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v)); o->tp = (int)v; return PB_OK;
    case O_COMM: return pb_parse_choice_list(option, arg, pb_tp_mode_names(), 0, o->modes, &o->nmodes);
    case O_STRIDE: PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v)); o->stride = (int)v; return PB_OK;
    case O_HIDDEN_LIST: return pb_parse_int_list(option, arg, 1, 1 << 20, o->hidden, MAX_LIST, &o->nhidden);
    case O_SEQ_LIST: return pb_parse_int_list(option, arg, 1, 1 << 24, o->seq, MAX_LIST, &o->nseq);
    case O_UNSHARDED: PB_TRY(pb_parse_int(option, arg, 0, 1, &v)); o->unsharded = (int)v; return PB_OK;
    default: return pb_error_usage(option, "not handled");
    }
}

enum {
    COL_TP,
    COL_NRANKS,
    COL_GROUPS,
    COL_NNODES,
    COL_LINK_CLASS,
    COL_MODE,
    COL_LAYERS,
    COL_BATCH,
    COL_SEQ,
    COL_HIDDEN,
    COL_HEADS,
    COL_DTYPE,
    COL_ITERS,
    COL_COMPUTE_US,
    COL_COMM_US,
    COL_STEP_US,
    COL_STEP_US_MEAN,
    COL_COMM_FRACTION,
    COL_COMM_BYTES_PER_RANK,
    COL_EXPECTED_BYTES_PER_RANK,
    COL_COLLS_PER_LAYER,
    COL_UNSHARDED_US,
    COL_SPEEDUP,
    COL_GFLOPS,
    COL_MAX_REL_ERR,
    COL_WRONG,
    COL_SLOWEST_GROUP,
    COL_SLOWEST_GROUP_HOSTS,
    COL_SLOWEST_GROUP_US,
    COL_MEDIAN_GROUP_US,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_TP] = {"tp", "tp", "", PB_COL_INT, 4, 0, ""},
    [COL_NRANKS] = {"nranks", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_GROUPS] = {"groups", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_NNODES] = {"nnodes", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_LINK_CLASS] = {"link_class", "link", "", PB_COL_STR, 6, 0, ""},
    [COL_MODE] = {"mode", "mode", "", PB_COL_STR, 10, 0, ""},
    [COL_LAYERS] = {"layers", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_BATCH] = {"batch", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_SEQ] = {"seq", "seq", "", PB_COL_INT, 6, 0, ""},
    [COL_HIDDEN] = {"hidden", "hidden", "", PB_COL_INT, 7, 0, ""},
    [COL_HEADS] = {"heads", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_DTYPE] = {"dtype", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_ITERS] = {"iters", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_COMPUTE_US] = {"compute_us", "compute", "(us)", PB_COL_FLOAT, 10, 1, "us"},
    [COL_COMM_US] = {"comm_us", "comm", "(us)", PB_COL_FLOAT, 10, 1, "us"},
    [COL_STEP_US] = {"step_us", "step", "(us)", PB_COL_FLOAT, 10, 1, "us"},
    [COL_STEP_US_MEAN] = {"step_us_mean", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_COMM_FRACTION] = {"comm_fraction", "comm", "(frac)", PB_COL_FLOAT, 6, 3, ""},
    [COL_COMM_BYTES_PER_RANK] = {"comm_bytes_per_rank", "bytes/rank", "(B)", PB_COL_INT, 11, 0, "B"},
    [COL_EXPECTED_BYTES_PER_RANK] = {"expected_bytes_per_rank", "expected", "(B)", PB_COL_INT, 11, 0, "B"},
    [COL_COLLS_PER_LAYER] = {"colls_per_layer", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_UNSHARDED_US] = {"unsharded_us", "t=1", "(us)", PB_COL_FLOAT, 10, 1, "us"},
    [COL_SPEEDUP] = {"speedup", "speedup", "", PB_COL_FLOAT, 7, 2, ""},
    [COL_GFLOPS] = {"gflops", "GFLOP/s", "(rank)", PB_COL_FLOAT, 8, 2, "GFLOP/s"},
    [COL_MAX_REL_ERR] = {"max_rel_err", NULL, NULL, PB_COL_FLOAT, 0, 0, ""},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 7, 0, ""},
    [COL_SLOWEST_GROUP] = {"slowest_group", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_SLOWEST_GROUP_HOSTS] = {"slowest_group_hosts", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_SLOWEST_GROUP_US] = {"slowest_group_step_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_MEDIAN_GROUP_US] = {"median_group_step_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

/* The run: placement of this rank, and the TP group's communicator. */
typedef struct tp_run {
    pb_bench *b;
    tp_opts *o;
    const pb_compute *eng;
    int group, index, ngroups;
    int unchecked; /* points that memory left unvalidated */
    MPI_Comm group_comm;
    pb_comm *comm;
    const char *link; /* of the TP groups: intra, inter, or mixed */
    int skip;         /* test-only: PARABENCH_TEST_SKIP */
    int slow;         /* test-only: PARABENCH_TEST_SLOW, this rank's group is the slowest */
} tp_run;

/* One measured point: shape and mode. */
typedef struct point {
    pb_tp_config cfg;
    pb_layer_stack_config ref_cfg;
    double compute_us, comm_us, step_us, step_mean_us, unsharded_us, max_err;
    pb_tp_spread groups; /* rank 0: the TP groups running at once, per layer */
    uint64_t bytes, bytes_min, colls;
    long long wrong;
    int iters, have_ref, timed_ref; /* memory allows the reference; it was timed */
    int ref_recomputes;             /* the reference fits only recomputing each layer's forward */
    uint64_t ref_bytes;             /* what the reference needs at its least */
} point;

typedef struct loop_ctx {
    tp_run *run;
    pb_tp *tp;      /* sharded run, or NULL for the unsharded one */
    pb_layer_stack *ref;
    pb_layer_saved *acts;
    void *x, *y, *dy, *dx;
} loop_ctx;

static int one_iteration(void *arg, int iter)
{
    loop_ctx *c = arg;
    if (c->run->skip) return PB_OK; /* leave the peers waiting: the watchdog must fire */
    if (!c->tp) { /* timed to completion: a GPU engine only queues the work */
        PB_TRY(pb_layer_stack_forward(c->ref, c->acts, c->x, c->y));
        PB_TRY(pb_layer_stack_backward(c->ref, c->acts, c->dy, c->dx, 0, NULL, NULL));
        return c->run->eng->synchronize();
    }
    if (iter == 0) pb_tp_acct_reset(c->tp); /* account the timed iterations only */
    if (c->run->slow) nanosleep(&(struct timespec){0, PB_FAULTS_SLOW_US * 1000L}, NULL);
    PB_TRY(pb_tp_forward(c->tp, c->acts, c->x, c->y));
    return pb_tp_backward(c->tp, c->acts, c->dy, c->dx, 0, NULL, NULL);
}

static int alloc_io(const pb_compute *E, uint64_t bytes, pb_dtype t, int64_t rows, int64_t h, uint64_t seed,
                    int rank, loop_ctx *c)
{
    void **bufs[4] = {&c->x, &c->y, &c->dy, &c->dx};
    for (int i = 0; i < 4; i++) PB_TRY(E->alloc(bufs[i], (size_t)bytes));
    PB_TRY(pb_layer_fill_input(E, t, c->x, rows, h, seed, 2 * (uint64_t)rank));
    return pb_layer_fill_input(E, t, c->dy, rows, h, seed, 2 * (uint64_t)rank + 1);
}

static void free_io(const pb_compute *E, loop_ctx *c)
{
    void *bufs[4] = {c->x, c->y, c->dy, c->dx};
    for (int i = 0; i < 4; i++)
        if (bufs[i]) E->free(bufs[i]);
}

/* --max-seconds-per-size caps one configuration: when the unsharded layer is
 * timed too, each of the two loops gets half of it, so that the point takes
 * no longer than the cap however many iterations were asked for. */
static double loop_cap(const tp_run *r, const point *p)
{
    double cap = r->o->common.max_seconds;
    return p->timed_ref ? cap / 2 : cap;
}

/* Timed loop over the world (all TP groups run at once): the statistics
 * over every rank in *st, this rank's mean time in *mine. */
static int timed(tp_run *r, loop_ctx *c, const char *what, uint64_t bytes, double cap, pb_stats *st, double *mine,
                 int *done)
{
    const pb_options *o = &r->o->common;
    double *samples = malloc(sizeof(double) * (size_t)o->iters);
    int status = pb_world_agree_at(r->b->w.comm, samples ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory for %d samples", o->iters),
                          "samples");
    pb_runner_cfg loop = {o->iters, o->warmup, cap};
    pb_watchdog_what(what, bytes);
    if (status == PB_OK) status = pb_runner_time_loop(r->b->w.comm, &loop, one_iteration, c, samples, done);
    if (status == PB_OK) status = pb_runner_gather_stats(r->b->w.comm, samples, *done, st);
    pb_stats own = {0};
    if (status == PB_OK) pb_stats_of(samples, (size_t)*done, &own);
    *mine = own.mean;
    free(samples);
    return status;
}

/* The sharded stack: per-layer means over ranks of the per-rank sums. */
static int measure_sharded(tp_run *r, pb_tp *tp, point *p)
{
    loop_ctx c = {.run = r, .tp = tp};
    const pb_layer_shape *sh = pb_tp_shape(tp);
    int64_t rows = pb_tp_io_rows(&p->cfg);
    int status = alloc_io(r->eng, pb_tp_io_bytes(&p->cfg), sh->dtype, rows, sh->h, p->cfg.seed, r->b->w.rank, &c);
    if (status == PB_OK) status = pb_tp_acts_alloc(tp, &c.acts);
    pb_stats st = {0};
    double my_us = 0;
    if (status == PB_OK)
        status = timed(r, &c, "tp layer fwd+bwd", pb_tp_io_bytes(&p->cfg), loop_cap(r, p), &st, &my_us, &p->iters);
    if (c.acts) pb_tp_acts_free(tp, c.acts);
    free_io(r->eng, &c);
    PB_TRY(status);
    PB_TRY(pb_tp_group_spread(&r->b->w, r->o->tp, r->o->stride, r->ngroups, my_us, &p->groups));
    p->groups.slowest_us /= (double)p->cfg.nlayers;
    p->groups.median_us /= (double)p->cfg.nlayers;
    pb_tp_acct a;
    pb_tp_acct_get(tp, &a);
    double per = (double)(p->iters > 0 ? p->iters : 1) * (double)p->cfg.nlayers;
    int n = r->b->w.size;
    p->compute_us = pb_world_sum(&r->b->w, a.compute_us / per) / n;
    p->comm_us = pb_world_sum(&r->b->w, a.comm_us / per) / n;
    p->step_us = st.rankmax / (double)p->cfg.nlayers;
    p->step_mean_us = st.mean / (double)p->cfg.nlayers;
    unsigned long long mine = (unsigned long long)((double)a.comm_bytes / per + 0.5), hi = 0, lo = 0;
    MPI_Allreduce(&mine, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, r->b->w.comm);
    MPI_Allreduce(&mine, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, r->b->w.comm);
    p->bytes = hi;
    p->bytes_min = lo;
    p->colls = (uint64_t)((double)a.colls / per + 0.5);
    return PB_OK;
}

/* The same layers unsharded, on every rank at once (each its own copy). */
static int measure_unsharded(tp_run *r, pb_layer_stack *ref, point *p)
{
    loop_ctx c = {.run = r, .ref = ref};
    const pb_layer_shape *sh = pb_layer_stack_shape(ref);
    int64_t n = sh->b * sh->s;
    uint64_t bytes = (uint64_t)(n * sh->h) * pb_dtype_size(sh->dtype);
    int status = alloc_io(r->eng, bytes, sh->dtype, n, sh->h, p->cfg.seed, r->b->w.rank, &c);
    if (status == PB_OK) status = pb_layer_saved_alloc(ref, &c.acts);
    pb_stats st = {0};
    int done = 0;
    double mine = 0;
    if (status == PB_OK) status = timed(r, &c, "unsharded layer fwd+bwd", bytes, loop_cap(r, p), &st, &mine, &done);
    if (c.acts) pb_layer_saved_free(ref, c.acts);
    free_io(r->eng, &c);
    p->unsharded_us = st.rankmax / (double)p->cfg.nlayers;
    return status;
}

/* Whether the reference fits beside the sharded layers on every rank
 * (host memory shared by the node's ranks, a device each rank's own). */
static int reference_fits(tp_run *r, point *p, uint64_t tp, int *all)
{
    p->ref_bytes = pb_tp_reference_bytes(&p->ref_cfg);
    pb_mem_need both = {r->eng->mem, r->eng->mem_info, pb_mem_add(tp, p->ref_bytes), 0};
    int fits = 0;
    int status = pb_mem_fits(&both, r->b->w.local_size, &fits);
    MPI_Allreduce(&fits, all, 1, MPI_INT, MPI_MIN, r->b->w.comm);
    return pb_world_agree(&r->b->w, status);
}

/* The sharded layers must fit. The unsharded reference (validation, the
 * unsharded timing) runs as configured where it fits beside them; for
 * validation alone, else recomputing each layer's forward in its backward
 * (each layer's input kept: the same values in less memory, as at the sizes
 * GPUs train, where its attention scores are heads x s^2); else the point is
 * not validated, and says so. */
static int memory_plan(tp_run *r, point *p, int want_ref)
{
    uint64_t io = pb_tp_io_bytes(&p->cfg);
    uint64_t tp = pb_mem_add(pb_mem_add(pb_tp_bytes(&p->cfg), pb_mem_mul(2, pb_tp_act_bytes(&p->cfg))), pb_mem_mul(6, io));
    pb_mem_need need = {r->eng->mem, r->eng->mem_info, tp, 0};
    PB_TRY(pb_bench_mem_require(r->b, &need, "the sharded layers"));
    if (!want_ref) return PB_OK;
    PB_TRY(reference_fits(r, p, tp, &p->have_ref));
    if (p->have_ref || !r->o->common.check || p->ref_cfg.shape.recompute == PB_LAYER_RECOMPUTE_FULL) return PB_OK;
    p->ref_cfg.shape.recompute = PB_LAYER_RECOMPUTE_FULL;
    PB_TRY(reference_fits(r, p, tp, &p->have_ref));
    p->ref_recomputes = p->have_ref;
    return PB_OK;
}

static int validate(tp_run *r, pb_tp *tp, pb_layer_stack *ref, point *p)
{
    long long wrong = 0;
    double err = 0;
    pb_watchdog_what("tp validate", pb_tp_io_bytes(&p->cfg));
    pb_watchdog_arm(0, "validate");
    int status = pb_tp_validate(tp, ref, r->b->w.comm, pb_faults_corrupt_rank() == r->b->w.rank, &wrong, &err);
    pb_watchdog_disarm();
    MPI_Allreduce(&wrong, &p->wrong, 1, MPI_LONG_LONG, MPI_SUM, r->b->w.comm);
    p->max_err = pb_world_max(&r->b->w, err);
    return status;
}

static int report(tp_run *r, const point *p)
{
    if (!r->b->rep) return PB_OK;
    const pb_layer_shape *sh = &p->cfg.shape;
    size_t es = pb_dtype_size(r->eng->gemm_dtype(sh->dtype));
    double expected = pb_tp_expected_bytes_layer(sh, es), busy = p->compute_us + p->comm_us;
    double flops = pb_layer_step_flops(sh);
    double speedup = p->timed_ref && p->step_us > 0 ? p->unsharded_us / p->step_us : NAN;
    pb_report_value v[NCOLS] = {
        [COL_TP] = PB_I(sh->tp_size),
        [COL_NRANKS] = PB_I(r->b->w.size),
        [COL_GROUPS] = PB_I(r->ngroups),
        [COL_NNODES] = PB_I(r->b->w.nnodes),
        [COL_LINK_CLASS] = PB_S(r->link),
        [COL_MODE] = PB_S(pb_tp_mode_name(p->cfg.mode)),
        [COL_LAYERS] = PB_I(p->cfg.nlayers),
        [COL_BATCH] = PB_I(sh->b),
        [COL_SEQ] = PB_I(sh->s),
        [COL_HIDDEN] = PB_I(sh->h),
        [COL_HEADS] = PB_I(sh->heads),
        [COL_DTYPE] = PB_S(pb_dtype_name(r->eng->gemm_dtype(sh->dtype))),
        [COL_ITERS] = PB_I(p->iters),
        [COL_COMPUTE_US] = PB_F(p->compute_us),
        [COL_COMM_US] = PB_F(p->comm_us),
        [COL_STEP_US] = PB_F(p->step_us),
        [COL_STEP_US_MEAN] = PB_F(p->step_mean_us),
        [COL_COMM_FRACTION] = PB_F(busy > 0 ? p->comm_us / busy : 0),
        [COL_COMM_BYTES_PER_RANK] = PB_I(p->bytes),
        [COL_EXPECTED_BYTES_PER_RANK] = PB_I(llround(expected)),
        [COL_COLLS_PER_LAYER] = PB_I(p->colls),
        [COL_UNSHARDED_US] = PB_F(p->timed_ref ? p->unsharded_us : NAN),
        [COL_SPEEDUP] = PB_F(speedup),
        [COL_GFLOPS] = PB_F(p->step_us > 0 ? flops / (p->step_us * 1e3) : 0),
        [COL_MAX_REL_ERR] = PB_F(r->o->common.check && p->have_ref ? p->max_err : NAN),
        [COL_WRONG] = PB_I(r->o->common.check && p->have_ref ? p->wrong : -1),
        [COL_SLOWEST_GROUP] = PB_I(p->groups.slowest),
        [COL_SLOWEST_GROUP_HOSTS] = PB_S(p->groups.hosts),
        [COL_SLOWEST_GROUP_US] = PB_F(p->groups.slowest_us),
        [COL_MEDIAN_GROUP_US] = PB_F(p->groups.median_us),
    };
    PB_TRY(pb_report_row(r->b->rep, v));
    if (r->o->unsharded && !p->timed_ref)
        pb_report_note(r->b->rep, "h=%lld s=%lld: unsharded layer not timed: it does not fit in memory next to the "
                                  "sharded one", (long long)sh->h, (long long)sh->s);
    if (r->o->common.check && p->ref_recomputes)
        pb_report_note(r->b->rep, "h=%lld s=%lld %s: validated against the unsharded layers recomputing each "
                       "layer's forward in its backward: as configured they do not fit next to the sharded ones",
                       (long long)sh->h, (long long)sh->s, pb_tp_mode_name(p->cfg.mode));
    if (r->o->common.check && !p->have_ref)
        pb_report_note(r->b->rep, "h=%lld s=%lld %s: NOT validated: the unsharded layers, even recomputing, need "
                       "%.2f GiB a rank, which does not fit next to the sharded ones", (long long)sh->h,
                       (long long)sh->s, pb_tp_mode_name(p->cfg.mode), (double)p->ref_bytes / 1073741824.0);
    if (p->bytes != (uint64_t)llround(expected) || p->bytes_min != p->bytes)
        pb_report_note(r->b->rep, "h=%lld s=%lld %s: measured %llu..%llu bytes per rank per layer, formula "
                                  "8*b*s*h*(t-1)/t gives %.0f: they DISAGREE",
                       (long long)sh->h, (long long)sh->s, pb_tp_mode_name(p->cfg.mode),
                       (unsigned long long)p->bytes_min, (unsigned long long)p->bytes, expected);
    return PB_OK;
}

static int run_point(tp_run *r, point *p)
{
    int status = memory_plan(r, p, r->o->unsharded || r->o->common.check);
    if (status != PB_OK) return status;
    pb_tp *tp = NULL;
    pb_layer_stack *ref = NULL;
    p->timed_ref = p->have_ref && !p->ref_recomputes && r->o->unsharded;
    status = pb_world_agree(&r->b->w, pb_tp_create(&p->cfg, &tp));
    if (status == PB_OK) status = measure_sharded(r, tp, p);
    if (status == PB_OK && p->have_ref) status = pb_world_agree(&r->b->w, pb_layer_stack_create(&p->ref_cfg, &ref));
    if (status == PB_OK && p->timed_ref) status = measure_unsharded(r, ref, p);
    if (status == PB_OK && r->o->common.check && ref) status = validate(r, tp, ref, p);
    r->unchecked += r->o->common.check && !p->have_ref;
    status = pb_world_agree(&r->b->w, status);
    if (status == PB_OK) status = report(r, p);
    status = pb_world_agree(&r->b->w, status); /* a row rank 0 could not write (a full disk) stops every rank */
    pb_layer_stack_destroy(ref);
    pb_tp_destroy(tp);
    return status;
}

static point point_of(tp_run *r, int64_t h, int64_t s, pb_tp_mode mode)
{
    const pb_workload_opts *w = &r->o->work;
    pb_layer_shape sh = pb_workload_opts_layer_shape(w, h, s, r->o->tp, r->index);
    point p = {.cfg = {.eng = r->eng, .be = r->b->be, .comm = r->comm, .shape = sh, .layer0 = 0,
                       .nlayers = w->model.layers, .model_layers = w->model.layers, .seed = w->seed,
                       .mode = mode, .grad_dtype = w->grad_dtype}};
    p.ref_cfg = pb_tp_reference_config(&p.cfg);
    return p;
}

/* Placement: TP groups, their link class, this rank's communicator. */
static int place(tp_run *r)
{
    pb_bench *b = r->b;
    int t = r->o->tp;
    PB_TRY(pb_tp_group_of(b->w.size, t, r->o->stride, b->w.rank, &r->group, &r->index));
    r->ngroups = b->w.size / t;
    int *ranks = malloc(sizeof(int) * (size_t)t);
    PB_CHECK(ranks, PB_ERR_ENV, "out of memory");
    pb_link_class all = PB_LINK_INTRA;
    for (int g = 0; g < r->ngroups; g++) {
        pb_tp_group_ranks(b->w.size, t, r->o->stride, g, ranks);
        pb_link_class cls = pb_world_link(&b->w, ranks, t);
        all = g == 0 ? cls : pb_link_join(all, cls);
        if (b->rep) {
            char list[256];
            pb_parse_join_ints(ranks, t, list, sizeof list);
            pb_report_note(b->rep, "TP group %d: ranks {%s}, %s", g, list, pb_link_name(cls));
        }
    }
    free(ranks);
    r->link = t == 1 ? "none" : pb_link_name(all);
    MPI_Comm_split(b->w.comm, r->group, r->index, &r->group_comm);
    return b->be->comm_create(r->group_comm, &r->comm);
}

/* Every point's shape is checked before anything runs: a bad one exits 2. */
static int check_points(tp_run *r)
{
    tp_opts *o = r->o;
    for (size_t i = 0; i < o->nhidden; i++)
        for (size_t j = 0; j < o->nseq; j++)
            for (int m = 0; m < o->nmodes; m++) {
                point p = point_of(r, o->hidden[i], o->seq[j], (pb_tp_mode)o->modes[m]);
                PB_TRY(pb_tp_shape_check(&p.cfg.shape, p.cfg.mode));
            }
    return PB_OK;
}

static int parse_all(pb_bench *b, tp_opts *o, tp_run *r)
{
    PB_TRY(pb_options_validate(&o->common));
    PB_TRY(pb_workload_opts_resolve(&o->work));
    if (o->tp == 0) o->tp = b->w.size;
    PB_TRY(pb_tp_group_of(b->w.size, o->tp, o->stride, b->w.rank, &r->group, &r->index));
    if (!o->nhidden) o->hidden[o->nhidden++] = o->work.model.hidden;
    if (!o->nseq) o->seq[o->nseq++] = o->work.model.seq;
    return check_points(r);
}

static void footer(tp_run *r, double frac_sum, int rows, long long wrong)
{
    if (!r->b->rep || rows == 0) return;
    printf("#\n");
    pb_report_summary(r->b->rep, "avg_comm_fraction", "Avg communication fraction", frac_sum / rows, "");
    if (!r->o->common.check) return;
    pb_dtype t = r->eng->gemm_dtype(r->o->work.compute_dtype);
    char detail[160];
    int n = snprintf(detail, sizeof detail, "tolerance %g of max |unsharded value|, %s", pb_tp_tolerance(t),
                     pb_dtype_name(t));
    if (r->unchecked && n > 0 && (size_t)n < sizeof detail)
        snprintf(detail + n, sizeof detail - (size_t)n, "; %d of %d rows NOT validated: their reference does not fit",
                 r->unchecked, rows);
    pb_bench_note_wrong(r->b->rep, wrong, detail);
}

int main(int argc, char **argv)
{
    tp_opts o = {.stride = 1, .unsharded = 1, .nmodes = 1, .modes = {PB_TP_ALLREDUCE}};
    pb_options_defaults(&o.common);
    o.common.iters = 10;
    o.common.warmup = 2;
    pb_workload_opts_defaults(&o.work, "tiny");
    o.work.recompute_max = PB_LAYER_RECOMPUTE_SELECTIVE; /* TP's blocks cannot replay a whole layer */
    o.work.layers = 1; /* a layer benchmark: --layers or a preset's count only when asked */
    pb_options_group groups[] = {
        {"tp_layer options", own_opts, (int)(sizeof own_opts / sizeof own_opts[0]), handle, &o},
        pb_workload_opts_group(&o.work),
        pb_options_common_group(&o.common, PB_OPTS_ITERS | PB_OPTS_DATA | PB_OPTS_OUTPUT | PB_OPTS_VALIDATE),
    };
    pb_bench b;
    pb_bench_start(&b, "tp_layer", &argc, &argv, MPI_THREAD_SINGLE,
                   "Usage: mpirun -np N tp_layer [options]\n"
                   "A Megatron transformer layer split over t ranks (column/row-parallel GEMMs, all-reduce or\n"
                   "sequence-parallel all-gather + reduce-scatter): compute, communication and step time per\n"
                   "layer, communication fraction, bytes per rank, speed-up over the unsharded layer.",
                   groups, 3);
    tp_run r = {.b = &b, .o = &o, .group_comm = MPI_COMM_NULL, .skip = pb_faults_skip_rank() == b.w.rank,
                .slow = pb_faults_slow_rank() == b.w.rank};
    int status = parse_all(&b, &o, &r);
    if (status != PB_OK) pb_bench_finish(&b, status);

    status = pb_bench_open(&b, &o.common, cols, NCOLS, pb_workload_opts_meta(&o.work, NULL));
    if (status == PB_OK)
        status = pb_world_agree_at(b.w.comm, pb_workload_opts_engine(&o.work, b.be, b.w.local_rank, o.common.gpu_offset, &r.eng),
                          "engine");
    if (status == PB_OK && b.rep) {
        pb_report_note(b.rep, "engine: %s", r.eng->describe());
        pb_ordering ord = pb_tp_ordering(r.eng, b.be, o.tp);
        pb_report_note(b.rep, "ordering %s: %s", pb_ordering_name(ord),
                       ord == PB_ORDERING_STREAM
                           ? "collectives wait on their GEMM and the next GEMM on them through CUDA events; "
                             "compute and comm times are device time from CUDA events"
                           : "each GEMM and collective completes before the next starts; host clock");
    }
    if (status == PB_OK) status = pb_world_agree_at(b.w.comm, place(&r), "comm"); /* agreed in the TP group, then here */
    double frac_sum = 0;
    int rows = 0;
    long long wrong = 0;
    if (b.rep && status == PB_OK) pb_report_header(b.rep);
    for (size_t i = 0; i < o.nhidden && status == PB_OK; i++)
        for (size_t j = 0; j < o.nseq && status == PB_OK; j++)
            for (int m = 0; m < o.nmodes && status == PB_OK; m++) {
                point p = point_of(&r, o.hidden[i], o.seq[j], o.modes[m]);
                status = run_point(&r, &p);
                double busy = p.compute_us + p.comm_us;
                frac_sum += busy > 0 ? p.comm_us / busy : 0;
                wrong += p.wrong;
                rows++;
            }
    footer(&r, frac_sum, rows, wrong);
    if (r.comm) b.be->comm_destroy(r.comm);
    if (r.group_comm != MPI_COMM_NULL) MPI_Comm_free(&r.group_comm);
    if (r.eng) r.eng->finalize();
    if (status == PB_OK && wrong > 0) status = PB_ERR_CHECK;
    pb_bench_finish(&b, status);
}
