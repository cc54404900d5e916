/* hybrid_3d: a training step on a TP x PP x DP grid (common/workload/hybrid.h) with a
 * placement policy: per-axis time, bytes and link class, and the same step
 * under the other placements with --compare-placements. See docs/placement.md. */
#include "harness/bench.h"
#include "backend/comm_count.h"
#include "harness/comm_report.h"
#include "core/error.h"
#include "core/outpath.h"
#include "workload/hybrid.h"
#include "core/mem.h"
#include "core/parse.h"
#include "harness/runner.h"
#include "workload/workload_opts.h"

#include <stdlib.h>
#include <string.h>

typedef struct hy_opts {
    pb_options common;
    pb_workload_opts work;
    int tp, pp, dp, micro_batches, compare, placement_given;
    pb_placement placement;
    const char *rankmap;
    pb_pp_sched sched;
    pb_tp_mode tp_mode;
} hy_opts;

enum { O_TP, O_PP, O_DP, O_PLACEMENT, O_RANKMAP, O_COMPARE, O_MB, O_SCHED, O_TP_COMM };

static const pb_options_opt own_opts[] = {
    {"tp", 0, "T", "tensor-parallel size (default 1)", O_TP},
    {"pp", 0, "P", "pipeline stages (default 1)", O_PP},
    {"dp", 0, "D", "data-parallel replicas (default: world / (T*P)); T*P*D must equal the world size", O_DP},
    {"placement", 0, "NAME", "tp-inner (TP inside a node, default), dp-inner, or naive (rank order)", O_PLACEMENT},
    {"rankmap", 0, "FILE", "explicit placement: lines 'RANK T P D'", O_RANKMAP},
    {"compare-placements", 0, NULL, "run the step under tp-inner, dp-inner and naive, one row each", O_COMPARE},
    {"micro-batches", 0, "M", "micro-batches per step (default 2*P)", O_MB},
    {"schedule", 0, "NAME", "pipeline schedule: 1f1b (default) or gpipe", O_SCHED},
    {"tp-comm", 0, "MODE", "allreduce (default) or sp (sequence parallel)", O_TP_COMM},
};

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    hy_opts *o = ctx;
    long long v = 0;
    switch (id) {
    case O_TP: PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v)); o->tp = (int)v; return PB_OK;
    case O_PP: PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v)); o->pp = (int)v; return PB_OK;
    case O_DP: PB_TRY(pb_parse_int(option, arg, 1, 1 << 20, &v)); o->dp = (int)v; return PB_OK;
    case O_PLACEMENT: o->placement_given = 1; return pb_placement_parse(option, arg, &o->placement);
    case O_RANKMAP: o->rankmap = arg; return pb_outpath_add_input(option, arg);
    case O_COMPARE: o->compare = 1; return PB_OK;
    case O_MB: PB_TRY(pb_parse_int(option, arg, 1, 1 << 16, &v)); o->micro_batches = (int)v; return PB_OK;
    case O_SCHED:
        PB_TRY(pb_pp_sched_parse(option, arg, &o->sched));
        return o->sched == PB_PP_INTERLEAVED ? pb_error_usage(option, "'%s' is not available here; expected 1f1b or gpipe", arg)
                                             : PB_OK;
    case O_TP_COMM: return pb_tp_mode_parse(option, arg, &o->tp_mode);
    default: return pb_error_usage(option, "not handled");
    }
}

enum {
    COL_PLACEMENT,
    COL_TP,
    COL_PP,
    COL_DP,
    COL_NRANKS,
    COL_MICRO_BATCHES,
    COL_SCHEDULE,
    COL_TP_MODE,
    COL_LAYERS,
    COL_HIDDEN,
    COL_SEQ,
    COL_TP_LINK,
    COL_PP_LINK,
    COL_DP_LINK,
    COL_ITERS,
    COL_STEP_US,
    COL_STEP_US_MAX,
    COL_COMPUTE_US,
    COL_TP_COMM_US,
    COL_PP_WAIT_US,
    COL_DP_COMM_US,
    COL_TP_BYTES,
    COL_PP_BYTES,
    COL_DP_BYTES,
    COL_WRONG,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_PLACEMENT] = {"placement", "placement", "", PB_COL_STR, 9, 0, ""},
    [COL_TP] = {"tp", "T", "", PB_COL_INT, 3, 0, ""},
    [COL_PP] = {"pp", "P", "", PB_COL_INT, 3, 0, ""},
    [COL_DP] = {"dp", "D", "", PB_COL_INT, 3, 0, ""},
    [COL_NRANKS] = {"nranks", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_MICRO_BATCHES] = {"micro_batches", "m", "", PB_COL_INT, 3, 0, ""},
    [COL_SCHEDULE] = {"schedule", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_TP_MODE] = {"tp_mode", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_LAYERS] = {"layers", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HIDDEN] = {"hidden", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_SEQ] = {"seq", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_TP_LINK] = {"tp_link", "tp link", "", PB_COL_STR, 7, 0, ""},
    [COL_PP_LINK] = {"pp_link", "pp link", "", PB_COL_STR, 7, 0, ""},
    [COL_DP_LINK] = {"dp_link", "dp link", "", PB_COL_STR, 7, 0, ""},
    [COL_ITERS] = {"iters", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_STEP_US] = {"step_us", "step", "(us)", PB_COL_FLOAT, 11, 1, "us"},
    [COL_STEP_US_MAX] = {"step_us_max", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_COMPUTE_US] = {"compute_us", "compute", "(us)", PB_COL_FLOAT, 11, 1, "us"},
    [COL_TP_COMM_US] = {"tp_comm_us", "tp comm", "(us)", PB_COL_FLOAT, 10, 1, "us"},
    [COL_PP_WAIT_US] = {"pp_wait_us", "pp wait", "(us)", PB_COL_FLOAT, 10, 1, "us"},
    [COL_DP_COMM_US] = {"dp_comm_us", "dp comm", "(us)", PB_COL_FLOAT, 10, 1, "us"},
    [COL_TP_BYTES] = {"tp_bytes", "tp bytes", "(B)", PB_COL_FLOAT, 11, 0, "B"},
    [COL_PP_BYTES] = {"pp_bytes", "pp bytes", "(B)", PB_COL_FLOAT, 11, 0, "B"},
    [COL_DP_BYTES] = {"dp_bytes", "dp bytes", "(B)", PB_COL_FLOAT, 11, 0, "B"},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 6, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

#define LIFETIME "created for each placement and freed before the next"

/* The per-axis sums: compute, TP comm, PP wait, DP comm (us), TP, PP, DP bytes. */
enum { NSUMS = 7 };

typedef struct run {
    pb_bench *b;
    hy_opts *o;
    pb_hybrid *h;
    double sums[NSUMS]; /* per-axis accounting summed over the timed iterations */
} run;

static int one_step(void *arg, int iter)
{
    run *r = arg;
    pb_hybrid_stats s;
    PB_TRY(pb_hybrid_step(r->h, &s));
    if (iter >= 0) {
        double v[NSUMS] = {s.compute_us, s.tp_comm_us, s.pp_wait_us, s.dp_comm_us, s.tp_bytes, s.pp_bytes, s.dp_bytes};
        for (int i = 0; i < NSUMS; i++) r->sums[i] += v[i];
    }
    return PB_OK;
}

static int report(run *r, pb_placement pol, const pb_hybrid_coords *at, const pb_stats *st, int iters, long long wrong)
{
    /* means over ranks of the per-iteration means */
    double mean[NSUMS];
    for (int i = 0; i < NSUMS; i++) mean[i] = r->sums[i] / (iters > 0 ? iters : 1);
    MPI_Allreduce(MPI_IN_PLACE, mean, NSUMS, MPI_DOUBLE, MPI_SUM, r->b->w.comm);
    if (!r->b->rep) return PB_OK;
    for (int i = 0; i < NSUMS; i++) mean[i] /= r->b->w.size;
    const hy_opts *o = r->o;
    pb_report_value v[NCOLS] = {
        [COL_PLACEMENT] = PB_S(pb_placement_name(pol)),
        [COL_TP] = PB_I(o->tp),
        [COL_PP] = PB_I(o->pp),
        [COL_DP] = PB_I(o->dp),
        [COL_NRANKS] = PB_I(r->b->w.size),
        [COL_MICRO_BATCHES] = PB_I(o->micro_batches),
        [COL_SCHEDULE] = PB_S(pb_pp_sched_name(o->sched)),
        [COL_TP_MODE] = PB_S(pb_tp_mode_name(o->tp_mode)),
        [COL_LAYERS] = PB_I(o->work.model.layers),
        [COL_HIDDEN] = PB_I(o->work.model.hidden),
        [COL_SEQ] = PB_I(o->work.model.seq),
        [COL_TP_LINK] = PB_S(at->tp_link),
        [COL_PP_LINK] = PB_S(at->pp_link),
        [COL_DP_LINK] = PB_S(at->dp_link),
        [COL_ITERS] = PB_I(iters),
        [COL_STEP_US] = PB_F(st->mean),
        [COL_STEP_US_MAX] = PB_F(st->rankmax),
        [COL_COMPUTE_US] = PB_F(mean[0]),
        [COL_TP_COMM_US] = PB_F(mean[1]),
        [COL_PP_WAIT_US] = PB_F(mean[2]),
        [COL_DP_COMM_US] = PB_F(mean[3]),
        [COL_TP_BYTES] = PB_F(mean[4]),
        [COL_PP_BYTES] = PB_F(mean[5]),
        [COL_DP_BYTES] = PB_F(mean[6]),
        [COL_WRONG] = PB_I(o->common.check ? wrong : -1),
    };
    return pb_report_row(r->b->rep, v);
}

static pb_hybrid_config config(const hy_opts *o, const pb_bench *b, const pb_compute *eng, const int *rank_at)
{
    const pb_presets_model *m = &o->work.model;
    pb_layer_shape sh = pb_workload_opts_layer_shape(&o->work, m->hidden, m->seq, 0, 0);
    return (pb_hybrid_config){.eng = eng, .be = b->be, .w = &b->w, .T = o->tp, .P = o->pp, .D = o->dp,
                              .rank_at = rank_at, .shape = sh, .layers = m->layers, .tp_mode = o->tp_mode,
                              .sched = o->sched, .micro_batches = o->micro_batches, .seed = o->work.seed,
                              .grad_dtype = o->work.grad_dtype};
}

/* The step under one placement: build, time, check, report. */
static int run_placement(pb_bench *b, hy_opts *o, const pb_compute *eng, pb_placement pol, long long *wrong_total)
{
    int world = b->w.size, status = PB_OK;
    int *rank_at = malloc(sizeof(int) * (size_t)world);
    PB_CHECK(rank_at, PB_ERR_ENV, "out of memory");
    if (pol == PB_PLACE_RANKMAP) status = pb_placement_rankmap_read(o->rankmap, o->tp, o->pp, o->dp, rank_at);
    else status = pb_placement_grid_place(pol, o->tp, o->pp, o->dp, world, b->w.node_of, rank_at);
    pb_hybrid_config cfg = config(o, b, eng, rank_at);
    pb_mem_need need = {eng->mem, eng->mem_info, pb_hybrid_bytes(&cfg), 0};
    status = pb_world_agree(&b->w, status);
    if (status == PB_OK)
        status = pb_bench_mem_require(b, &need, "hybrid_3d: stage weights, gradients, activations and pipeline buffers");
    run r = {.b = b, .o = o};
    if (status == PB_OK) status = pb_world_agree(&b->w, pb_hybrid_create(&cfg, &r.h));
    double *samples = malloc(sizeof(double) * (size_t)o->common.iters);
    if (status == PB_OK && !samples) status = pb_fail(PB_ERR_ENV, "out of memory");
    pb_runner_cfg loop = {o->common.iters, o->common.warmup, o->common.max_seconds};
    int done = 0;
    pb_stats st = {0};
    long long wrong = 0;
    if (status == PB_OK) status = pb_runner_time_loop(b->w.comm, &loop, one_step, &r, samples, &done);
    if (status == PB_OK) status = pb_runner_gather_stats(b->w.comm, samples, done, &st);
    if (status == PB_OK && o->common.check)
        status = pb_hybrid_check(r.h, pb_faults_corrupt_rank() == b->w.rank, &wrong);
    pb_hybrid_coords at = {0, 0, 0, "?", "?", "?"};
    if (r.h) pb_hybrid_get_coords(r.h, &at);
    if (status == PB_OK) status = report(&r, pol, &at, &st, done, wrong);
    status = pb_world_agree(&b->w, status); /* a row rank 0 could not write (a full disk) stops every rank */
    *wrong_total += wrong;
    pb_hybrid_destroy(r.h);
    free(samples);
    free(rank_at);
    return status;
}

/* The rank map read once before anything starts, so --validate judges it as the run would. */
static int check_rankmap(const hy_opts *o, int world)
{
    int *rank_at = malloc(sizeof(int) * (size_t)world);
    PB_CHECK(rank_at, PB_ERR_ENV, "out of memory");
    int status = pb_placement_rankmap_read(o->rankmap, o->tp, o->pp, o->dp, rank_at);
    free(rank_at);
    return status;
}

static int check_grid(hy_opts *o, const pb_world *w)
{
    if (o->dp == 0) o->dp = w->size % (o->tp * o->pp) == 0 ? w->size / (o->tp * o->pp) : 0;
    if (o->dp == 0 || o->tp * o->pp * o->dp != w->size)
        return pb_error_usage("--tp/--pp/--dp", "T*P*D = %d*%d*%d must equal the world size %d", o->tp, o->pp, o->dp,
                        w->size);
    if (o->work.model.layers % o->pp != 0)
        return pb_error_usage("--pp", "%d stages do not divide the %lld layers", o->pp, (long long)o->work.model.layers);
    if (o->micro_batches == 0) o->micro_batches = 2 * o->pp;
    if (o->compare && o->placement == PB_PLACE_RANKMAP)
        return pb_error_usage("--compare-placements", "compares the built-in placements; do not combine with --rankmap");
    pb_layer_shape sh = pb_workload_opts_layer_shape(&o->work, o->work.model.hidden, o->work.model.seq, o->tp, 0);
    PB_TRY(pb_tp_shape_check(&sh, o->tp_mode));
    PB_TRY(pb_pp_schedule_valid(o->sched, o->pp, o->micro_batches, 1));
    return o->rankmap ? check_rankmap(o, w->size) : PB_OK;
}

/* One placement: --placement, --rankmap or --compare-placements, never two
 * (the other would be ignored). */
static int check_combinations(hy_opts *o)
{
    if (o->compare && (o->placement_given || o->rankmap))
        return pb_error_usage(o->rankmap ? "--rankmap" : "--placement", "does not apply with --compare-placements, "
                              "which runs tp-inner, dp-inner and naive; expected one or the other");
    if (o->rankmap && o->placement_given)
        return pb_error_usage("--placement", "does not apply with --rankmap, which places every rank; expected one "
                                             "or the other");
    if (o->rankmap) o->placement = PB_PLACE_RANKMAP;
    return PB_OK;
}

int main(int argc, char **argv)
{
    hy_opts o = {.tp = 1, .pp = 1, .placement = PB_PLACE_TP_INNER, .sched = PB_PP_1F1B, .tp_mode = PB_TP_ALLREDUCE};
    pb_options_defaults(&o.common);
    o.common.iters = 10;
    o.common.warmup = 2;
    pb_workload_opts_defaults(&o.work, "tiny");
    o.work.recompute_max = PB_LAYER_RECOMPUTE_SELECTIVE; /* TP's blocks cannot replay a whole layer */
    pb_options_group groups[] = {
        {"hybrid_3d options", own_opts, (int)(sizeof own_opts / sizeof own_opts[0]), handle, &o},
        pb_workload_opts_group(&o.work),
        pb_options_common_group(&o.common, PB_OPTS_ITERS | PB_OPTS_DATA | PB_OPTS_OUTPUT | PB_OPTS_VALIDATE),
    };
    pb_bench b;
    pb_bench_start(&b, "hybrid_3d", &argc, &argv, MPI_THREAD_MULTIPLE,
                   "Usage: mpirun -np N hybrid_3d --tp T --pp P [--dp D] [options]\n"
                   "A training step on a TP x PP x DP grid: TP collectives in every layer, PP send/recv with a 1F1B "
                   "schedule, the DP all-reduce at the end; per-axis time, bytes and link class.",
                   groups, 3);
    int status = check_combinations(&o);
    if (status == PB_OK) status = pb_workload_opts_resolve(&o.work);
    if (status == PB_OK) status = check_grid(&o, &b.w);
    /* TP, DP and the pipeline's: created for each placement, freed before the next */
    int comms = pb_hybrid_comms(o.pp);
    char what[96];
    snprintf(what, sizeof what, "hybrid_3d's grid of %d x %d x %d", o.tp, o.pp, o.dp);
    if (status == PB_OK) status = pb_comm_count_fits(comms, what);
    if (status != PB_OK) pb_bench_finish(&b, status);
    cJSON *meta = pb_workload_opts_meta(&o.work, NULL);
    cJSON_AddItemToObject(meta, "communicators", pb_comm_report_design(comms, LIFETIME));
    status = pb_bench_open(&b, &o.common, cols, NCOLS, meta);
    const pb_compute *eng = NULL;
    if (status == PB_OK)
        status = pb_world_agree_at(b.w.comm, pb_workload_opts_engine(&o.work, b.be, b.w.local_rank, o.common.gpu_offset, &eng),
                          "engine");
    if (b.rep && status == PB_OK) {
        printf("# engine: %s\n", eng->describe());
        pb_comm_report_line(b.rep, comms, "TP group, DP group, and the pipeline's activations and gradients", LIFETIME);
        pb_report_header(b.rep);
    }
    pb_placement list[3] = {o.placement};
    int n = 1;
    if (o.compare) {
        list[0] = PB_PLACE_TP_INNER, list[1] = PB_PLACE_DP_INNER, list[2] = PB_PLACE_NAIVE;
        n = 3;
    }
    long long wrong = 0;
    for (int i = 0; i < n && status == PB_OK; i++) status = run_placement(&b, &o, eng, list[i], &wrong);
    if (status == PB_OK) status = pb_comm_report_measured(&b.w, b.be, b.rep); /* agreed by run_placement */
    if (o.common.check) pb_bench_note_wrong(b.rep, wrong, NULL);
    if (eng) eng->finalize();
    if (status == PB_OK && wrong > 0) status = PB_ERR_CHECK;
    pb_bench_finish(&b, status);
}
