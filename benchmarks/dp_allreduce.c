/* dp_allreduce: one data-parallel training step per iteration (forward and
 * backward through L real layers, then the gradient all-reduce, optionally
 * overlapped with backward in DDP buckets). Per configuration: compute alone,
 * communication alone, the step, exposed communication and the overhead
 * exposed/compute. The workload lives in common/dp*.c (hybrid_3d reuses it). */
#include "harness/bench.h"
#include "coll/coll.h"
#include "workload/dp.h"
#include "workload/dp_target.h"
#include "core/error.h"
#include "core/mem.h"
#include "plan/model.h"
#include "workload/ordering.h"
#include "core/parse.h"
#include "core/stats.h"
#include "harness/runner.h"
#include "core/timing.h"
#include "core/watchdog.h"
#include "workload/workload_opts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GRADS 64

typedef struct dp_opts {
    pb_options common;
    pb_workload_opts work;
    int overlap[PB_DP_OVERLAP_COUNT], noverlap; /* modes, in the order given */
    double bucket_mb;
    uint64_t grad_bytes[MAX_GRADS];
    double params[MAX_GRADS];
    double target[MAX_GRADS]; /* --target-ratio: comm/compute sought, one row set each */
    size_t ngrad, nparams, ntarget;
    int params_preset; /* --params preset */
    int bucket_given;  /* --bucket-mb was set */
} dp_opts;

enum { O_OVERLAP, O_BUCKET, O_GRAD, O_PARAMS, O_TARGET };

static const pb_options_opt own_opts[] = {
    {"overlap", 0, "MODE", "none (all-reduce after backward), bucket (DDP buckets during backward), or "
                           "none,bucket (default none)", O_OVERLAP},
    {"bucket-mb", 0, "MB", "bucket size in MiB for --overlap bucket (default 25, PyTorch DDP's)", O_BUCKET},
    {"grad-bytes", 0, "LIST", "gradient bytes all-reduced per step, e.g. 1M,4M,16M,64M (default: the layers' "
                              "real gradients); one row per size", O_GRAD},
    {"params", 0, "LIST", "gradient as parameter counts, e.g. 125M,1.3B,7B (x grad dtype size), or 'preset': "
                          "the parameters of the --model preset or --model-file, counted from its shape", O_PARAMS},
    {"target-ratio", 0, "LIST", "comm/compute sought, e.g. 0.112,0.2: for each, the gradient size is searched in "
                                "this run by probing the no-overlap step (from --grad-bytes, one start per ratio, "
                                "else the real gradients); the nearest probe is the overlap=none row", O_TARGET},
};

static const char *const overlap_names[] = {"none", "bucket", NULL}; /* pb_dp_overlap order */

static int handle(void *ctx, int id, const char *option, const char *arg)
{
    dp_opts *o = ctx;
    switch (id) {
    case O_OVERLAP: return pb_parse_choice_list(option, arg, overlap_names, 0, o->overlap, &o->noverlap);
    case O_BUCKET: o->bucket_given = 1; return pb_parse_double(option, arg, 1.0 / 1024, 4096, &o->bucket_mb);
    case O_GRAD: return pb_parse_size_list(option, arg, PB_SIZE_MAX, o->grad_bytes, MAX_GRADS, &o->ngrad);
    case O_TARGET: return pb_parse_double_list(option, arg, 1e-3, 100, o->target, MAX_GRADS, &o->ntarget);
    default: break;
    }
    o->nparams = 0;
    o->params_preset = strcmp(arg, "preset") == 0;
    if (o->params_preset) return PB_OK;
    for (const char *p = arg;;) { /* empty items refused, as every list option */
        const char *comma = strchr(p, ',');
        char tok[64];
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) return pb_error_usage(option, "'%s' has an empty item; expected counts separated by commas", arg);
        if (o->nparams == MAX_GRADS) return pb_error_usage(option, "at most %d entries", MAX_GRADS);
        snprintf(tok, sizeof tok, "%.*s", (int)len, p);
        PB_TRY(pb_parse_count(option, tok, 1, 1e13, &o->params[o->nparams++]));
        if (!comma) return PB_OK;
        p = comma + 1;
    }
}

enum {
    COL_NRANKS,
    COL_LINK_CLASS,
    COL_MODEL,
    COL_LAYERS,
    COL_HIDDEN,
    COL_HEADS,
    COL_SEQ,
    COL_MICRO_BATCH,
    COL_COMPUTE_DTYPE,
    COL_DTYPE,
    COL_GRAD_BYTES,
    COL_REAL_GRAD_BYTES,
    COL_OVERLAP,
    COL_BUCKET_BYTES,
    COL_BUCKETS,
    COL_ITERS,
    COL_COMPUTE_US,
    COL_COMM_US,
    COL_STEP_US,
    COL_EXPOSED_US,
    COL_OVERHEAD,
    COL_PREDICTED_OVERHEAD,
    COL_HIDDEN_FRACTION,
    COL_COMM_BUSY_US,
    COL_WAIT_US,
    COL_COMPUTE_US_MEAN,
    COL_COMM_US_MEAN,
    COL_STEP_US_MEAN,
    COL_BUSBW_GBPS,
    COL_GFLOPS,
    COL_WRONG,
    COL_GRAD_HASH,
    COL_TARGET_RATIO,
    COL_COMPUTE_US_SLOWEST,
    COL_OVERHEAD_PAIRED,
    COL_OVERHEAD_INSTEP,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_NRANKS] = {"nranks", "ranks", "", PB_COL_INT, 5, 0, ""},
    [COL_LINK_CLASS] = {"link_class", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_MODEL] = {"model", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_LAYERS] = {"layers", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HIDDEN] = {"hidden", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_HEADS] = {"heads", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_SEQ] = {"seq", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_MICRO_BATCH] = {"micro_batch", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_COMPUTE_DTYPE] = {"compute_dtype", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_DTYPE] = {"dtype", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_GRAD_BYTES] = {"grad_bytes", "grad size", "(B)", PB_COL_INT, 11, 0, "B"},
    [COL_REAL_GRAD_BYTES] = {"real_grad_bytes", NULL, NULL, PB_COL_INT, 0, 0, "B"},
    [COL_OVERLAP] = {"overlap", "overlap", "", PB_COL_STR, 7, 0, ""},
    [COL_BUCKET_BYTES] = {"bucket_bytes", NULL, NULL, PB_COL_INT, 0, 0, "B"},
    [COL_BUCKETS] = {"buckets", "bkts", "", PB_COL_INT, 5, 0, ""},
    [COL_ITERS] = {"iters", NULL, NULL, PB_COL_INT, 0, 0, ""},
    [COL_COMPUTE_US] = {"compute_us", "compute", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_COMM_US] = {"comm_us", "comm", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_STEP_US] = {"step_us", "step", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_EXPOSED_US] = {"exposed_us", "exposed", "(us)", PB_COL_FLOAT, 10, 0, "us"},
    [COL_OVERHEAD] = {"overhead", "overhead", "", PB_COL_FLOAT, 8, 3, ""},
    [COL_PREDICTED_OVERHEAD] = {"predicted_overhead", "predict", "(no ovl)", PB_COL_FLOAT, 8, 3, ""},
    [COL_HIDDEN_FRACTION] = {"hidden_fraction", "hidden", "", PB_COL_FLOAT, 6, 2, ""},
    [COL_COMM_BUSY_US] = {"comm_busy_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_WAIT_US] = {"wait_us", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_COMPUTE_US_MEAN] = {"compute_us_mean", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_COMM_US_MEAN] = {"comm_us_mean", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_STEP_US_MEAN] = {"step_us_mean", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_BUSBW_GBPS] = {"busbw_GBps", "busbw", "(GB/s)", PB_COL_FLOAT, 7, 3, "GB/s"},
    [COL_GFLOPS] = {"gflops", "GFLOP/s", "", PB_COL_FLOAT, 7, 1, "GFLOP/s"},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 6, 0, ""},
    [COL_GRAD_HASH] = {"grad_hash", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_TARGET_RATIO] = {"target_ratio", NULL, NULL, PB_COL_FLOAT, 0, 0, ""},
    [COL_COMPUTE_US_SLOWEST] = {"compute_us_slowest", NULL, NULL, PB_COL_FLOAT, 0, 0, "us"},
    [COL_OVERHEAD_PAIRED] = {"overhead_paired", NULL, NULL, PB_COL_FLOAT, 0, 0, ""},
    [COL_OVERHEAD_INSTEP] = {"overhead_instep", NULL, NULL, PB_COL_FLOAT, 0, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

/* One configuration's measurements, reduced over ranks. */
typedef struct row {
    uint64_t grad_bytes, real_bytes, bucket_bytes;
    pb_dp_overlap overlap;
    size_t buckets;
    int iters;
    pb_stats compute, comm, step;
    double busy_us, wait_us; /* in the step, max over ranks of the per-rank mean */
    double compute_slowest;  /* mean over iterations of the slowest rank's compute in each */
    double overhead_paired;  /* median over iterations of step - compute, each the slowest rank's, over the median compute */
    double overhead_instep;  /* the same within the step: its slowest rank minus the slowest rank's time to the end of backward */
    double flops;
    long long wrong;
    uint64_t hash;
    double target; /* --target-ratio this size was searched for; NAN without */
} row;

typedef struct run_ctx {
    pb_bench *b;
    dp_opts *o;
    const pb_compute *eng;
    pb_comm *comm;
    double *samples;           /* pb_runner_time_loop's whole-iteration times (unused; then scratch) */
    double *t[4];              /* per timed iteration: compute, comm, step, and the step's time to the end of backward */
    double busy_sum, wait_sum; /* step phase, timed iterations */
    pb_dp_step *s;
    double target;             /* --target-ratio being searched */
    row best;                  /* its probe nearest the target: the no-overlap row reported */
    double best_err;           /* |ratio/target - 1| of that probe */
    long long probes_wrong;    /* wrong values the probes found */
} run_ctx;

/* Time one sub-phase from an aligned start (the barrier is outside the timed region). */
static int timed(run_ctx *r, int (*fn)(pb_dp_step *), double *us)
{
    MPI_Barrier(r->b->w.comm);
    double t0 = pb_timing_now_us();
    int status = fn(r->s);
    *us = pb_timing_now_us() - t0;
    return status;
}

/* One iteration measures all three back to back, so load drift on a shared
 * machine hits compute, comm and step alike and exposed = step - compute is
 * a paired difference. */
static int it_all(void *a, int iter)
{
    run_ctx *r = a;
    double us[3];
    PB_TRY(timed(r, pb_dp_step_compute, &us[0]));
    PB_TRY(timed(r, pb_dp_step_comm, &us[1]));
    PB_TRY(timed(r, pb_dp_step_full, &us[2]));
    if (iter < 0) return PB_OK;
    for (int k = 0; k < 3; k++) r->t[k][iter] = us[k];
    pb_dp_timing t;
    pb_dp_last_timing(pb_dp_step_sync(r->s), &t);
    r->t[3][iter] = us[2] - t.wait_us; /* wait_us: from the end of backward to the last bucket reduced */
    r->busy_sum += t.busy_us;
    r->wait_sum += t.wait_us;
    return PB_OK;
}

/* Refuse before allocating: every rank of a node draws on the same host memory. */
static int memory_check(const run_ctx *r, const pb_dp_step_config *sc)
{
    uint64_t eng_bytes = 0, host_bytes = 0;
    pb_dp_step_bytes(sc, &eng_bytes, &host_bytes);
    char what[160];
    snprintf(what, sizeof what, "dp_allreduce (%d ranks on this node x (layers, activations, %llu-byte gradient%s))",
             r->b->w.local_size, (unsigned long long)(sc->grad_bytes ? sc->grad_bytes : pb_dp_step_real_bytes(sc)),
             sc->check ? ", validation copy" : "");
    pb_mem_need need = {r->eng->mem, r->eng->mem_info, eng_bytes, host_bytes};
    return pb_bench_mem_require(r->b, &need, what);
}

/* The mean over iterations of each iteration's slowest rank: what a step
 * without overlap waits for before its all-reduce can finish. At least the
 * slowest rank's mean (compute_us); the difference is the ranks' skew.
 * Leaves each iteration's slowest time in scratch. */
static double slowest_mean(const pb_world *w, const double *us, double *scratch, int n)
{
    double sum = 0;
    if (n <= 0) return 0;
    MPI_Allreduce(us, scratch, n, MPI_DOUBLE, MPI_MAX, w->comm);
    for (int i = 0; i < n; i++) sum += scratch[i];
    return sum / n;
}

static int measure(run_ctx *r, pb_dp_step *s, row *out)
{
    const pb_options *c = &r->o->common;
    pb_runner_cfg loop = {c->iters, c->warmup, c->max_seconds};
    int done = 0;
    r->s = s;
    r->busy_sum = r->wait_sum = 0;
    pb_watchdog_what("dp step", out->grad_bytes);
    PB_TRY(pb_runner_time_loop(r->b->w.comm, &loop, it_all, r, r->samples, &done));
    PB_TRY(pb_runner_gather_stats(r->b->w.comm, r->t[0], done, &out->compute));
    PB_TRY(pb_runner_gather_stats(r->b->w.comm, r->t[1], done, &out->comm));
    PB_TRY(pb_runner_gather_stats(r->b->w.comm, r->t[2], done, &out->step));
    out->iters = done;
    /* The loop's own times are spent: samples gets each iteration's slowest compute, t[2] its slowest step. */
    out->compute_slowest = slowest_mean(&r->b->w, r->t[0], r->samples, done);
    if (done > 0) MPI_Allreduce(MPI_IN_PLACE, r->t[2], done, MPI_DOUBLE, MPI_MAX, r->b->w.comm);
    out->overhead_paired = pb_dp_paired_overhead(r->samples, r->t[2], done, r->t[1]);
    /* In-step: the step's own compute is subtracted, so the phases' separate
     * noise (a few % of compute, i.e. tens of % of the overhead) cancels. */
    if (done > 0) MPI_Allreduce(MPI_IN_PLACE, r->t[3], done, MPI_DOUBLE, MPI_MAX, r->b->w.comm);
    out->overhead_instep = pb_dp_paired_overhead(r->t[3], r->t[2], done, r->t[1]);
    out->busy_us = pb_world_max(&r->b->w, done ? r->busy_sum / done : 0);
    out->wait_us = pb_world_max(&r->b->w, done ? r->wait_sum / done : 0);
    out->flops = pb_dp_step_flops(s);
    if (!r->o->common.check) return PB_OK;
    int me = r->b->w.rank;
    pb_watchdog_arm(0, "validate");
    int status = pb_dp_step_validate(s, r->b->w.comm, pb_faults_corrupt_rank() == me, &out->wrong, &out->hash);
    pb_watchdog_disarm();
    MPI_Allreduce(MPI_IN_PLACE, &out->wrong, 1, MPI_LONG_LONG, MPI_SUM, r->b->w.comm);
    return status;
}

static int report(run_ctx *r, const row *w)
{
    const pb_workload_opts *wo = &r->o->work;
    const pb_presets_model *m = &wo->model;
    int n = r->b->w.size;
    pb_dp_metrics mt;
    pb_dp_metrics_of(w->compute.rankmax, w->comm.rankmax, w->step.rankmax, &mt);
    double busbw = w->comm.rankmax > 0
                       ? (double)w->grad_bytes / w->comm.rankmax / 1e3 * pb_coll_busbw_factor(PB_COLL_ALLREDUCE, n)
                       : 0;
    double gflops = w->compute.rankmax > 0 ? w->flops / w->compute.rankmax / 1e3 : 0;
    char hash[24];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)w->hash);
    int check = r->o->common.check;
    pb_report_value v[NCOLS] = {
        [COL_NRANKS] = PB_I(n),
        [COL_LINK_CLASS] = PB_S(pb_link_name(pb_world_link(&r->b->w, NULL, n))),
        [COL_MODEL] = PB_S(wo->preset),
        [COL_LAYERS] = PB_I(m->layers),
        [COL_HIDDEN] = PB_I(m->hidden),
        [COL_HEADS] = PB_I(m->heads),
        [COL_SEQ] = PB_I(m->seq),
        [COL_MICRO_BATCH] = PB_I(m->micro_batch),
        [COL_COMPUTE_DTYPE] = PB_S(pb_dtype_name(r->eng->gemm_dtype(wo->compute_dtype))),
        [COL_DTYPE] = PB_S(pb_dtype_name(wo->grad_dtype)),
        [COL_GRAD_BYTES] = PB_I(w->grad_bytes),
        [COL_REAL_GRAD_BYTES] = PB_I(w->real_bytes),
        [COL_OVERLAP] = PB_S(pb_dp_overlap_name(w->overlap)),
        [COL_BUCKET_BYTES] = PB_I(w->bucket_bytes),
        [COL_BUCKETS] = PB_I(w->buckets),
        [COL_ITERS] = PB_I(w->iters),
        [COL_COMPUTE_US] = PB_F(w->compute.rankmax),
        [COL_COMM_US] = PB_F(w->comm.rankmax),
        [COL_STEP_US] = PB_F(w->step.rankmax),
        [COL_EXPOSED_US] = PB_F(mt.exposed_us),
        [COL_OVERHEAD] = PB_F(mt.overhead),
        [COL_PREDICTED_OVERHEAD] = PB_F(mt.predicted_overhead),
        [COL_HIDDEN_FRACTION] = PB_F(mt.hidden_fraction),
        [COL_COMM_BUSY_US] = PB_F(w->busy_us),
        [COL_WAIT_US] = PB_F(w->wait_us),
        [COL_COMPUTE_US_MEAN] = PB_F(w->compute.mean),
        [COL_COMM_US_MEAN] = PB_F(w->comm.mean),
        [COL_STEP_US_MEAN] = PB_F(w->step.mean),
        [COL_BUSBW_GBPS] = PB_F(busbw),
        [COL_GFLOPS] = PB_F(gflops),
        [COL_WRONG] = PB_I(check ? w->wrong : -1),
        [COL_GRAD_HASH] = PB_S(check ? hash : ""),
        [COL_TARGET_RATIO] = PB_F(w->target),
        [COL_COMPUTE_US_SLOWEST] = PB_F(w->compute_slowest),
        [COL_OVERHEAD_PAIRED] = PB_F(w->overhead_paired),
        [COL_OVERHEAD_INSTEP] = PB_F(w->overhead_instep),
    };
    return r->b->rep ? pb_report_row(r->b->rep, v) : PB_OK;
}

/* Overhead and hidden fraction come from step - compute: flag them where that
 * difference is noise or negative, instead of printing them as findings. */
static void note_noise(run_ctx *r, const row *w)
{
    pb_dp_metrics mt;
    pb_dp_metrics_of(w->compute.rankmax, w->comm.rankmax, w->step.rankmax, &mt);
    const char *why = pb_stats_diff_noise(&w->step, &w->compute, mt.exposed_us, w->iters, MPI_Wtick() * 1e6);
    if (!r->b->rep || (!why && mt.overhead >= 0)) return;
    pb_report_note(r->b->rep, "untrustworthy: overhead %.3f (grad %llu B, overlap %s): exposed = step - compute = "
                   "%.3g us: %s%s%s; use more iterations (-n) or a bigger model", mt.overhead,
                   (unsigned long long)w->grad_bytes, pb_dp_overlap_name(w->overlap), mt.exposed_us,
                   mt.overhead < 0 ? "negative (the step measured shorter than its compute)" : "",
                   mt.overhead < 0 && why ? ", " : "", why ? why : "");
}

static void note_layout(run_ctx *r, const row *w)
{
    if (!r->b->rep || (int)w->overlap != r->o->overlap[0]) return; /* once per size */
    const pb_presets_model *m = &r->o->work.model;
    double mib = 1024.0 * 1024.0, g = (double)w->grad_bytes / mib, real = (double)w->real_bytes / mib;
    if (w->grad_bytes == w->real_bytes)
        pb_report_note(r->b->rep, "gradient: %.4g MiB all-reduced per step = the %lld layers' real gradients "
                       "(12*%lld^2 params each)", g, (long long)m->layers, (long long)m->hidden);
    else if (w->real_bytes < w->grad_bytes)
        pb_report_note(r->b->rep, "gradient (decoupled): %.4g MiB all-reduced per step; compute: %lld layers x "
                       "12*%lld^2 params = %.4g MiB of real gradients, placed first; the other %.4g MiB are "
                       "synthetic, spread over the layers in proportion", g, (long long)m->layers,
                       (long long)m->hidden, real, g - real);
    else
        pb_report_note(r->b->rep, "gradient (decoupled): %.4g MiB all-reduced per step, synthetic, spread over "
                       "the layers in proportion; the compute's %.4g MiB of real gradients are larger and kept "
                       "apart (not reduced)", g, real);
}

/* The step of one configuration (grad_bytes 0: the layers' real gradients). */
static int step_config(const run_ctx *r, uint64_t grad_bytes, pb_dp_overlap ov, pb_dp_step_config *sc)
{
    const dp_opts *o = r->o;
    const pb_presets_model *m = &o->work.model;
    *sc = (pb_dp_step_config){
        .eng = r->eng, .be = r->b->be, .comm = r->comm,
        .shape = pb_workload_opts_layer_shape(&o->work, m->hidden, m->seq, 1, 0),
        .nlayers = m->layers, .seed = o->work.seed, .rank = r->b->w.rank, .grad_dtype = o->work.grad_dtype,
        .grad_bytes = grad_bytes, .overlap = ov, .bucket_bytes = (uint64_t)(o->bucket_mb * 1048576.0),
        .check = o->common.check};
    size_t es = pb_dtype_size(sc->grad_dtype);
    if (grad_bytes % es)
        return pb_error_usage(o->ngrad ? "--grad-bytes" : "--params", "%llu bytes is not a whole number of %zu-byte "
                        "gradient elements", (unsigned long long)grad_bytes, es);
    sc->bucket_bytes -= sc->bucket_bytes % es;
    return memory_check(r, sc);
}

/* Measures one configuration into *w; the caller reports it. */
static int measure_config(run_ctx *r, uint64_t grad_bytes, pb_dp_overlap ov, double target, row *w)
{
    pb_dp_step_config sc;
    PB_TRY(step_config(r, grad_bytes, ov, &sc));
    pb_dp_step *s = NULL;
    int status = pb_world_agree(&r->b->w, pb_dp_step_create(&sc, &s));
    *w = (row){.grad_bytes = grad_bytes ? grad_bytes : pb_dp_step_real_bytes(&sc),
               .real_bytes = pb_dp_step_real_bytes(&sc), .overlap = ov,
               .bucket_bytes = ov == PB_DP_OVERLAP_BUCKET ? sc.bucket_bytes : 0, .target = target};
    if (status == PB_OK) {
        w->buckets = pb_dp_bucket_count(pb_dp_step_sync(s));
        status = measure(r, s, w);
    }
    pb_dp_step_destroy(s);
    return pb_world_agree(&r->b->w, status); /* a rank that failed alone must not leave the others reporting */
}

static int report_config(run_ctx *r, const row *w, long long *wrong, double *worst)
{
    note_layout(r, w);
    int status = report(r, w);
    status = pb_world_agree(&r->b->w, status); /* a row rank 0 could not write (a full disk) stops every rank */
    if (status == PB_OK) note_noise(r, w);
    pb_dp_metrics mt;
    pb_dp_metrics_of(w->compute.rankmax, w->comm.rankmax, w->step.rankmax, &mt);
    if (mt.overhead > *worst) *worst = mt.overhead;
    *wrong += w->wrong;
    return status;
}

static int run_config(run_ctx *r, uint64_t grad_bytes, pb_dp_overlap ov, double target, long long *wrong,
                      double *worst)
{
    row w;
    PB_TRY(measure_config(r, grad_bytes, ov, target, &w));
    return report_config(r, &w, wrong, worst);
}

/* The list of gradient sizes: --grad-bytes, --params (x dtype size), or the real one (0). */
static size_t grad_list(const dp_opts *o, uint64_t *out)
{
    int es = (int)pb_dtype_size(o->work.grad_dtype);
    if (o->params_preset) {
        out[0] = (uint64_t)pb_model_dp_grad_bytes(pb_presets_params(&o->work.declared), es);
        return 1;
    }
    for (size_t i = 0; i < o->nparams; i++) out[i] = (uint64_t)llround(pb_model_dp_grad_bytes(o->params[i], es));
    if (o->nparams) return o->nparams;
    for (size_t i = 0; i < o->ngrad; i++) out[i] = o->grad_bytes[i];
    if (o->ngrad) return o->ngrad;
    out[0] = 0;
    return 1;
}

static int validate_opts(dp_opts *o)
{
    PB_TRY(pb_options_validate(&o->common));
    PB_TRY(pb_workload_opts_resolve(&o->work));
    if (o->ngrad && (o->nparams || o->params_preset))
        return pb_error_usage("--params", "give either --grad-bytes or --params, not both");
    if (o->ntarget && (o->nparams || o->params_preset))
        return pb_error_usage("--target-ratio", "searches the gradient size itself; give --grad-bytes (one "
                              "starting size per ratio) or nothing, not --params");
    if (o->ntarget && o->ngrad && o->ngrad != o->ntarget)
        return pb_error_usage("--grad-bytes", "with --target-ratio, one starting size per ratio: %zu sizes for %zu "
                              "ratios", o->ngrad, o->ntarget);
    if (o->noverlap == 0) o->overlap[o->noverlap++] = PB_DP_OVERLAP_NONE;
    int bucket = 0;
    for (int k = 0; k < o->noverlap; k++) bucket |= o->overlap[k] == PB_DP_OVERLAP_BUCKET;
    if (o->bucket_given && !bucket)
        return pb_error_usage("--bucket-mb", "does not apply without --overlap bucket; expected --overlap bucket (or "
                                             "none,bucket), or no --bucket-mb");
    return PB_OK;
}

/* A probe of --target-ratio: the whole no-overlap configuration at one size
 * (compute alone, the all-reduce alone and the step, each iteration), so the
 * row reported for the size chosen is the loop whose comm/compute was chosen:
 * two loops a second apart differ by tens of percent on a shared machine. The ratio
 * is the rows' predicted_overhead, rank 0's, sent to all so all search alike. */
static int probe(void *ctx, uint64_t grad_bytes, double *ratio)
{
    run_ctx *r = ctx;
    row w;
    pb_watchdog_what("dp probe", grad_bytes);
    PB_TRY(measure_config(r, grad_bytes, PB_DP_OVERLAP_NONE, r->target, &w));
    *ratio = w.compute.rankmax > 0 ? w.comm.rankmax / w.compute.rankmax : INFINITY;
    MPI_Bcast(ratio, 1, MPI_DOUBLE, 0, r->b->w.comm); /* the statistics are rank 0's: every rank must probe alike */
    double err = fabs(*ratio / r->target - 1); /* the search's own measure of nearness */
    if (err < r->best_err) r->best_err = err, r->best = w;
    r->probes_wrong += w.wrong; /* counted whether or not its row is reported */
    return PB_OK;
}

#define TARGET_TOL 0.02   /* a probe within 2% of the ratio ends the search */
#define TARGET_PROBES 12  /* the search's most probes per ratio */
#define TARGET_SPAN 64    /* candidates up to 64x the starting size */

/* The gradient size whose comm/compute is `target` here, searched from `start`. */
static int search_size(run_ctx *r, double target, uint64_t start, uint64_t *out)
{
    uint64_t align = pb_dtype_size(r->o->work.grad_dtype) * 256;
    pb_dp_target_cfg cfg = {.target = target, .tol = TARGET_TOL, .start = start, .align = align,
                            .max_bytes = start > UINT64_MAX / TARGET_SPAN ? UINT64_MAX : start * TARGET_SPAN,
                            .max_probes = TARGET_PROBES};
    pb_dp_target_result res;
    r->target = target, r->best_err = INFINITY;
    PB_TRY(pb_dp_target_search(&cfg, probe, r, &res));
    if (r->best.grad_bytes != res.grad_bytes)
        return pb_fail(PB_ERR_ENV, "target search: chose %llu bytes, but its nearest probe measured %llu",
                       (unsigned long long)res.grad_bytes, (unsigned long long)r->best.grad_bytes);
    *out = res.grad_bytes;
    if (r->b->rep)
        pb_report_note(r->b->rep, "target comm/compute %g: grad_bytes %llu chosen in this run after %d probe%s "
                       "(each the no-overlap step's own loop: compute alone, the all-reduce alone, the step), from "
                       "%llu; there comm/compute %.4f%s; the overlap=none row is that probe's loop",
                       target, (unsigned long long)res.grad_bytes, res.probes, res.probes == 1 ? "" : "s",
                       (unsigned long long)start, res.ratio,
                       res.converged ? "" : " (not within 2% of the target: the nearest probe)");
    return PB_OK;
}

static int run_all(run_ctx *r)
{
    uint64_t sizes[MAX_GRADS];
    size_t n = grad_list(r->o, sizes);
    long long wrong = 0;
    double worst = -INFINITY;
    int status = PB_OK;
    for (size_t i = 0; i < (r->o->ntarget ? r->o->ntarget : n) && status == PB_OK; i++) {
        double target = r->o->ntarget ? r->o->target[i] : NAN;
        uint64_t size = sizes[r->o->ntarget && n == 1 ? 0 : i];
        if (r->o->ntarget) {
            pb_dp_step_config sc;
            status = step_config(r, size, PB_DP_OVERLAP_NONE, &sc);
            if (status == PB_OK) status = search_size(r, target, size ? size : pb_dp_step_real_bytes(&sc), &size);
        }
        long long counted = 0; /* the chosen probe's wrong values are in probes_wrong already */
        for (int k = 0; k < r->o->noverlap && status == PB_OK; k++)
            status = r->o->ntarget && r->o->overlap[k] == PB_DP_OVERLAP_NONE
                         ? report_config(r, &r->best, &counted, &worst)
                         : run_config(r, size, (pb_dp_overlap)r->o->overlap[k], target, &wrong, &worst);
    }
    wrong += r->probes_wrong; /* a probe's wrong data fails the run, reported or not */
    if (r->b->rep && status == PB_OK) {
        printf("#\n");
        pb_report_summary(r->b->rep, "max_overhead", "Largest overhead (exposed/compute)", worst, "");
        if (r->o->common.check) pb_bench_note_wrong(r->b->rep, wrong, NULL);
    }
    return status == PB_OK && wrong > 0 ? PB_ERR_CHECK : status;
}

static void notes(run_ctx *r)
{
    if (!r->b->rep) return;
    pb_report_note(r->b->rep, "engine: %s", r->eng->describe());
    pb_report_note(r->b->rep, "times: max over ranks of each rank's mean (step, compute and comm alike); exposed = "
                              "step - compute; overhead = exposed/compute; predict = comm/compute (no overlap); "
                              "hidden = 1 - exposed/comm");
    if (pb_ordering_plan(r->eng, r->b->be) == PB_ORDERING_STREAM)
        pb_report_note(r->b->rep, "ordering stream: each bucket's all-reduce is queued on the communication stream "
                                  "behind a CUDA event on the compute stream (overlap bucket), no host wait until the "
                                  "step ends; comm_busy_us is device time from CUDA events");
    else
        pb_report_note(r->b->rep, "ordering host: overlap bucket runs a dedicated communication thread (pthread, "
                                  "MPI_THREAD_MULTIPLE) that all-reduces each bucket once the engine has produced it");
    pb_report_header(r->b->rep);
}

int main(int argc, char **argv)
{
    dp_opts o = {.bucket_mb = 25};
    pb_options_defaults(&o.common);
    o.common.iters = 10, o.common.warmup = 2;
    pb_workload_opts_defaults(&o.work, "tiny");
    o.work.recompute_max = PB_LAYER_RECOMPUTE_FULL;
    pb_options_group groups[] = {
        {"dp_allreduce options", own_opts, (int)(sizeof own_opts / sizeof own_opts[0]), handle, &o},
        pb_workload_opts_group(&o.work),
        pb_options_common_group(&o.common, PB_OPTS_ITERS | PB_OPTS_DATA | PB_OPTS_OUTPUT | PB_OPTS_VALIDATE),
    };
    pb_bench b;
    pb_bench_start(&b, "dp_allreduce", &argc, &argv, MPI_THREAD_MULTIPLE,
                   "Usage: mpirun -np N dp_allreduce [options]\n"
                   "Data-parallel training step: forward + backward through real layers, then the gradient "
                   "all-reduce,\nalone or overlapped with backward in DDP buckets. Reports compute, comm, step, "
                   "exposed comm and overhead = exposed/compute.",
                   groups, 3);
    int status = validate_opts(&o);
    if (status != PB_OK) pb_bench_finish(&b, status);
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "comm_thread", "host ordering: pthread per rank, MPI_THREAD_MULTIPLE (overlap "
                                                 "bucket); stream ordering (NCCL with cuBLAS): none, CUDA events");
    run_ctx r = {.b = &b, .o = &o};
    status = pb_workload_opts_open(&b, &o.work, &o.common, cols, NCOLS, meta, &r.eng);
    if (status == PB_OK) status = b.be->comm_create(b.w.comm, &r.comm);
    r.samples = malloc(sizeof(double) * 5 * (size_t)o.common.iters);
    if (status == PB_OK && !r.samples) status = pb_fail(PB_ERR_ENV, "out of memory for samples");
    status = pb_world_agree_at(b.w.comm, status, "samples"); /* run_all starts with collectives */
    for (int k = 0; r.samples && k < 4; k++) r.t[k] = r.samples + (size_t)(k + 1) * (size_t)o.common.iters;
    if (status == PB_OK && r.eng) { /* r.eng is set whenever the agreed status is OK */
        notes(&r);
        pb_load start;
        pb_load_sample(&start);
        status = pb_world_agree(&b.w, run_all(&r));
        if (status == PB_OK) pb_bench_note_load(&b, &start);
    }
    free(r.samples);
    if (r.comm) b.be->comm_destroy(r.comm);
    if (r.eng) r.eng->finalize();
    pb_bench_finish(&b, status);
}
