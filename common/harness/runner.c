#include "harness/runner.h"

#include "core/error.h"
#include "core/faults.h"
#include "core/options.h"
#include "core/timing.h"
#include "core/watchdog.h"
#include "core/world.h"

#include <stdlib.h>

/* The alignment runs on its own duplicate of the group, so it can never
 * match a collective the benchmark issues on the group itself. The duplicate
 * is made by the group's first timed loop and kept as an attribute of the
 * group, which frees it when the group is freed. */
static int align_key = MPI_KEYVAL_INVALID;

static int free_align(MPI_Comm group, int key, void *value, void *extra)
{
    (void)group, (void)key, (void)extra;
    MPI_Comm_free(value);
    free(value);
    return MPI_SUCCESS;
}

static MPI_Comm align_comm(MPI_Comm group)
{
    if (align_key == MPI_KEYVAL_INVALID) MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_align, &align_key, NULL);
    MPI_Comm *kept = NULL;
    int found = 0;
    MPI_Comm_get_attr(group, align_key, &kept, &found);
    if (found) return *kept;
    MPI_Comm dup;
    MPI_Comm_dup(group, &dup); /* collective first: a failed malloc below stays local */
    kept = malloc(sizeof *kept); /* NOLINT(bugprone-sizeof-expression): MPI_Comm is a handle */
    if (!kept) return dup;     /* not kept: leaks one handle, still correct */
    *kept = dup;
    MPI_Comm_set_attr(group, align_key, kept);
    return dup;
}

/* Decision shared by all ranks before each iteration: MAX over ranks of
 * 0 (go on), 1 (time cap reached) or 2 + status (an iteration failed). */
static int agree(MPI_Comm group, int mine)
{
    MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_MAX, group);
    return mine;
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
    double start = pb_timing_now_us(), timed_sum = 0;
    int status = PB_OK, timed = 0, warm_done = 0;
    for (int i = -cfg->warmup; i < cfg->iters; i++) {
        int warming = i < 0;
        int over = past_cap(cfg, warming, pb_timing_now_us() - start, warming ? warm_done : timed, timed_sum);
        pb_watchdog_arm(i, "align");
        int decision = agree(align, status != PB_OK ? 2 + status : over);
        if (decision >= 2) {
            status = decision - 2;
            break;
        }
        if (decision == 1 && i >= 0) break;
        if (decision == 1) { /* warm-up has had its share of the cap: go on with the timed iterations */
            i = -1;
            continue;
        }
        pb_watchdog_arm(i, "operation");
        double t0 = pb_timing_now_us();
        status = fn(ctx, i);
        double t1 = pb_timing_now_us();
        if (i < 0) warm_done++;
        else if (status == PB_OK) {
            samples_us[timed++] = t1 - t0;
            timed_sum += t1 - t0;
        }
    }
    /* A last alignment: no rank runs ahead, and a failure in the last iteration reaches everyone. */
    pb_watchdog_arm(cfg->iters, "align");
    int last = agree(align, status != PB_OK ? 2 + status : 0);
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
    double *all = NULL;
    int status = PB_OK;
    if (rank == 0) {
        all = pb_faults_fail("gather") ? NULL : malloc(sizeof(double) * (size_t)n * (size_t)size + 1);
        if (!all) status = pb_fail(PB_ERR_ENV, "out of memory gathering %d x %d samples", size, n);
    }
    status = pb_world_agree_at(group, status, "gather"); /* the others would wait in the gather */
    if (status != PB_OK) {
        free(all);
        return status;
    }
    MPI_Gather(samples_us, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0, group);
    if (rank == 0) pb_stats_across(all, (size_t)n, size, out);
    else pb_stats_of(samples_us, (size_t)n, out);
    free(all);
    return PB_OK;
}
