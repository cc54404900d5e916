#include "harness/runner.h"

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

int pb_runner_time_loop(MPI_Comm group, const pb_runner_cfg *cfg, pb_runner_iter_fn fn, void *ctx, double *samples_us, int *done)
{
    MPI_Comm align = align_comm(group);
    double start = pb_timing_now_us(), timed_sum = 0, slowest_us = 0;
    int status = PB_OK, timed = 0, warm_done = 0;
    for (int i = -cfg->warmup; i < cfg->iters; i++) {
        int warming = i < 0;
        int over = past_cap(cfg, warming, pb_timing_now_us() - start, warming ? warm_done : timed, timed_sum);
        pb_watchdog_arm(i, "align");
        int decision = agree(align, status, over, step_grace_s(slowest_us));
        if (decision >= 2) {
            status = decision - 2;
            break;
        }
        if (decision == 1 && i >= 0) break;
        if (decision == 1) { /* warm-up has had its share of the cap: go on with the timed iterations */
            i = -1;
            continue;
        }
        int injected = i == 0 && pb_faults_fail("step");
        pb_watchdog_arm(i, "operation");
        double t0 = pb_timing_now_us();
        status = injected ? pb_fail(PB_ERR_ENV, "out of memory inside the step (test fault)") : fn(ctx, i);
        double t1 = pb_timing_now_us();
        if (t1 - t0 > slowest_us) slowest_us = t1 - t0;
        if (i < 0) warm_done++;
        else if (status == PB_OK) {
            samples_us[timed++] = t1 - t0;
            timed_sum += t1 - t0;
        }
    }
    /* A last alignment: no rank runs ahead, and a failure in the last iteration reaches everyone. */
    pb_watchdog_arm(cfg->iters, "align");
    int last = agree(align, status, 0, step_grace_s(slowest_us));
    pb_watchdog_disarm();
    if (last >= 2) status = last - 2;
    *done = timed;
    return status;
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
