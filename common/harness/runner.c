#include "harness/runner.h"

#include "core/devsync.h"
#include "core/error.h"
#include "core/faults.h"
#include "core/options.h"
#include "core/timing.h"
#include "core/watchdog.h"
#include "core/world.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The alignment runs on its own duplicate of the group, so it can never
 * match a collective the benchmark issues on the group itself. The duplicate
 * is made by the group's first timed loop and kept as an attribute of the
 * group, which frees it when the group is freed. The attribute holds the
 * handle's Fortran number, not a pointer: nothing to allocate, nothing to fail. */
static int align_key = MPI_KEYVAL_INVALID;

static int free_align(MPI_Comm group, int key, void *value, void *extra)
{
    (void)group, (void)key, (void)extra;
    MPI_Comm dup = MPI_Comm_f2c((MPI_Fint)(intptr_t)value);
    return MPI_Comm_free(&dup);
}

static MPI_Comm align_comm(MPI_Comm group)
{
    if (align_key == MPI_KEYVAL_INVALID) MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_align, &align_key, NULL);
    void *kept = NULL;
    int found = 0;
    MPI_Comm_get_attr(group, align_key, &kept, &found);
    if (found) return MPI_Comm_f2c((MPI_Fint)(intptr_t)kept);
    MPI_Comm dup;
    MPI_Comm_dup(group, &dup);
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): a handle's number, never dereferenced */
    MPI_Comm_set_attr(group, align_key, (void *)(intptr_t)MPI_Comm_c2f(dup));
    return dup;
}

/* Decision shared by all ranks before each iteration: MAX over ranks of
 * 0 (go on), 1 (time cap reached) or 2 + status (an iteration failed). A
 * rank whose iteration failed may have left the others inside it, waiting
 * for its messages: it waits grace_s for them, then ends the job. */
static int agree(MPI_Comm group, int status, int over, double grace_s)
{
    int mine = status != PB_OK ? 2 + status : over;
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MAX, group, &req);
    pb_world_wait_after_step(&req, status, grace_s);
    return mine;
}

/* How long a rank whose iteration failed waits for the others: twice the
 * slowest iteration so far (the failed one included), at least PB_STEP_GRACE_S. */
static double step_grace_s(double slowest_us)
{
    double twice = 2 * slowest_us * 1e-6;
    return twice > PB_STEP_GRACE_S ? twice : PB_STEP_GRACE_S;
}

/* 1 when this rank wants to end the current phase under the cap. */
static int past_cap(const pb_runner_cfg *cfg, int warming, double elapsed_us, int done, double timed_sum_us)
{
    double cap_us = cfg->max_seconds * 1e6;
    if (cap_us <= 0 || done == 0) return 0;
    if (warming) return elapsed_us > cap_us * PB_WARMUP_SHARE;
    return elapsed_us + timed_sum_us / done > cap_us;
}

/* One size's timing, carried across its phases (warm-up, timed, samples). */
typedef struct run_state {
    MPI_Comm align;
    const pb_runner_cfg *cfg;
    double start_us;   /* the size's start: the cap counts from here */
    double slowest_us; /* the slowest iteration so far: the grace of a failure */
    int status;        /* this rank's, until an agreement makes it everyone's */
    int inject_step;   /* the test fault "step" fails the phase's iteration 0 */
} run_state;

/* Aligned iterations first .. first + count - 1 (negative: warm-up), each
 * started by an agreement that carries the cap decision and any failure, so
 * every rank runs as many. Returns how many succeeded; samples_us (NULL: not
 * kept) gets their times and *sum_us their sum. */
static int aligned_phase(run_state *s, int warming, int first, int count, pb_runner_iter_fn fn, void *ctx,
                         double *samples_us, double *sum_us)
{
    int done = 0;
    for (int i = first; i < first + count; i++) {
        int over = past_cap(s->cfg, warming, pb_timing_now_us() - s->start_us, done, *sum_us);
        pb_watchdog_arm(i, "align");
        int decision = agree(s->align, s->status, over, step_grace_s(s->slowest_us));
        if (decision >= 2) s->status = decision - 2;
        if (decision != 0) break;
        int injected = s->inject_step && i == 0 && pb_faults_fail("step");
        pb_watchdog_arm(i, "operation");
        pb_devsync_timed(!warming); /* no allocation inside a timed iteration (the NCCL rehearsal refuses one) */
        double t0 = pb_timing_now_us();
        s->status = injected ? pb_fail(PB_ERR_ENV, "out of memory inside the step (test fault)") : fn(ctx, i);
        double t1 = pb_timing_now_us();
        pb_devsync_timed(0);
        if (t1 - t0 > s->slowest_us) s->slowest_us = t1 - t0;
        if (s->status != PB_OK) continue; /* the next agreement ends the phase */
        if (samples_us) samples_us[done] = t1 - t0;
        *sum_us += t1 - t0;
        done++;
    }
    return done;
}

/* A last alignment: no rank runs ahead, and a failure in the last iteration reaches everyone. */
static int finish_phases(run_state *s, int iter)
{
    pb_watchdog_arm(iter, "align");
    int last = agree(s->align, s->status, 0, step_grace_s(s->slowest_us));
    pb_watchdog_disarm();
    if (last >= 2) s->status = last - 2;
    return s->status;
}

int pb_runner_time_loop(MPI_Comm group, const pb_runner_cfg *cfg, pb_runner_iter_fn fn, void *ctx, double *samples_us, int *done)
{
    run_state s = {align_comm(group), cfg, pb_timing_now_us(), 0, PB_OK, 1};
    double warm_sum = 0, timed_sum = 0;
    aligned_phase(&s, 1, -cfg->warmup, cfg->warmup, fn, ctx, NULL, &warm_sum);
    *done = aligned_phase(&s, 0, 0, cfg->iters, fn, ctx, samples_us, &timed_sum);
    return finish_phases(&s, cfg->iters);
}

int pb_runner_sample_iters(int iters)
{
    int least = iters < PB_RUNNER_MIN_SAMPLES ? iters : PB_RUNNER_MIN_SAMPLES;
    return iters / 4 > least ? iters / 4 : least;
}

int pb_runner_whole_iters(double cap_us, double spent_us, double per_us, int iters)
{
    if (cap_us <= 0 || per_us <= 0) return iters;
    double fit = (cap_us - spent_us) / per_us / 1.25; /* the sample pass takes a quarter more */
    return fit < 1 ? 1 : fit > iters ? iters : (int)fit;
}

/* The whole loop's count, agreed with any failure in one allreduce: each rank
 * offers its count, or minus its failed status; the minimum is the smallest
 * count, or the worst failure (as agree's maximum). Aligns the ranks. */
static int agree_count(run_state *s, int mine)
{
    int offer = s->status != PB_OK ? -s->status : mine;
    MPI_Request req;
    pb_watchdog_arm(0, "align");
    MPI_Iallreduce(MPI_IN_PLACE, &offer, 1, MPI_INT, MPI_MIN, s->align, &req);
    pb_world_wait_after_step(&req, s->status, step_grace_s(s->slowest_us));
    if (offer < 0) s->status = -offer;
    return offer;
}

enum { WHOLE_LOOP_TRIES = 3 }; /* loops that may follow the first, each at the rate of the one before */

/* The whole loop: n issues back to back, one wait. Returns this rank's time per iteration. */
static double whole_loop(run_state *s, const pb_runner_op *op, int n)
{
    int status = pb_faults_fail("step") ? pb_fail(PB_ERR_ENV, "out of memory inside the step (test fault)") : PB_OK;
    pb_devsync_timed(1);
    double t0 = pb_timing_now_us();
    pb_watchdog_arm_at(0, "operation", t0);
    /* progress is a store, not a clock read: the loop stays armed however slow its operations are
     * (a count of iterations between re-arms, from the warm-up's rate, once let a loaded machine's
     * slow stretch pass --timeout while every operation completed) */
    for (int i = 0; i < n && status == PB_OK; i++) {
        pb_watchdog_progress(i);
        status = op->issue(op->ctx, i);
    }
    if (status == PB_OK) {
        pb_watchdog_arm(n, "wait");
        status = op->wait(op->ctx);
    }
    double t1 = pb_timing_now_us();
    pb_devsync_timed(0);
    s->status = status;
    return (t1 - t0) / n;
}

/* One aligned sample: issue and wait (pb_runner_iter_fn over a pb_runner_op). */
static int issue_and_wait(void *arg, int iter)
{
    const pb_runner_op *op = arg;
    PB_TRY(op->issue(op->ctx, iter));
    return op->wait(op->ctx);
}

int pb_runner_time_whole(MPI_Comm group, const pb_runner_cfg *cfg, const pb_runner_op *op, double *samples_us,
                         pb_runner_whole *out)
{
    run_state s = {align_comm(group), cfg, pb_timing_now_us(), 0, PB_OK, 0};
    double warm_sum = 0, sample_sum = 0, cap_us = cfg->max_seconds * 1e6;
    int warmup = cfg->warmup > 0 || cap_us <= 0 ? cfg->warmup : 1; /* a cap needs a rate to choose the count */
    void *fn_ctx = (void *)op;
    int warm = aligned_phase(&s, 1, -warmup, warmup, issue_and_wait, fn_ctx, NULL, &warm_sum);
    double per_us = warm > 0 ? warm_sum / warm : 0;
    int n = pb_runner_whole_iters(cap_us, pb_timing_now_us() - s.start_us, per_us, cfg->iters);
    *out = (pb_runner_whole){0, 0, 0};
    n = agree_count(&s, n);
    if (s.status == PB_OK) out->loop_us = whole_loop(&s, op, n), out->iters = n;
    /* A warm-up slower than the steady state (a first call's set-up, one warm-up iteration, a rank
     * descheduled on a loaded machine) gives too small a count: that loop then counts as warm-up,
     * and the loop runs again at its own rate, a few times at most while the count grows. The
     * counts are agreed (agree_count), so every rank takes the same branch. */
    for (int tries = 0; tries < WHOLE_LOOP_TRIES && n < cfg->iters && cap_us > 0; tries++) {
        int again = pb_runner_whole_iters(cap_us, pb_timing_now_us() - s.start_us, out->loop_us, cfg->iters);
        again = agree_count(&s, again);
        if (s.status != PB_OK || again <= 2 * n) break;
        out->loop_us = whole_loop(&s, op, again), out->iters = n = again;
    }
    out->samples = aligned_phase(&s, 0, 0, pb_runner_sample_iters(out->iters), issue_and_wait, fn_ctx, samples_us,
                                 &sample_sum);
    return finish_phases(&s, out->iters);
}

void pb_runner_whole_across(MPI_Comm group, double loop_us, double *mean_us, double *max_us)
{
    int size;
    MPI_Comm_size(group, &size);
    MPI_Reduce(&loop_us, mean_us, 1, MPI_DOUBLE, MPI_SUM, 0, group);
    MPI_Reduce(&loop_us, max_us, 1, MPI_DOUBLE, MPI_MAX, 0, group);
    *mean_us /= size;
}

int pb_runner_gather_stats(MPI_Comm group, const double *samples_us, int n, pb_stats *out)
{
    int rank, size;
    MPI_Comm_rank(group, &rank);
    MPI_Comm_size(group, &size);
    /* Rank 0 gathers everyone's samples, the others copy their own: the
     * statistics sort in place, and the caller's samples stay in order. */
    size_t count = (size_t)n * (size_t)(rank == 0 ? size : 1);
    double *all = pb_faults_fail("gather") ? NULL : malloc(sizeof(double) * count + 1);
    int status = all ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory gathering %d x %d samples", rank == 0 ? size : 1, n);
    status = pb_world_agree_at(group, status, "gather"); /* the others would wait in the gather */
    if (status != PB_OK || !all) { /* !all implies a failure; said for the analyzer */
        free(all);
        return status;
    }
    MPI_Gather(samples_us, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, group);
    if (rank == 0) pb_stats_across(all, (size_t)n, size, out);
    else pb_stats_of(memcpy(all, samples_us, sizeof(double) * (size_t)n), (size_t)n, out);
    free(all);
    return PB_OK;
}
