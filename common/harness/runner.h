/* The timing loops the benchmarks share (docs/METRICS.md "Time"):
 *  - pb_runner_time_loop (the workloads' steps): each rank times each
 *    iteration from an aligned start to completion; the alignment is outside
 *    the timed region;
 *  - pb_runner_time_whole (coll_sweep): the timed iterations issued back to
 *    back after one alignment and completed by one wait, the elapsed time
 *    divided by their count, as nccl-tests times; then a shorter pass of
 *    aligned iterations, timed one by one, for the spread. */
#ifndef PB_RUNNER_H
#define PB_RUNNER_H

#include "core/stats.h"

#include <mpi.h>

typedef struct pb_runner_cfg {
    int iters, warmup;
    double max_seconds; /* cap on the whole size (warm-up included); 0 = none */
} pb_runner_cfg;

/* One iteration: issue the operation and wait for its completion. `iter` is
 * negative during warm-up. Returns a status. */
typedef int (*pb_runner_iter_fn)(void *ctx, int iter);

/* Run up to cfg->warmup untimed and up to cfg->iters timed iterations on
 * every rank of `group`. Before each iteration a one-integer allreduce aligns
 * the ranks and decides for all of them whether to go on (the time cap is
 * reached on a rank, or an iteration failed somewhere), so every rank runs the
 * same number of iterations. samples_us gets one time per timed iteration; *done says how
 * many (at least 1 unless a failure stopped the loop). Returns the worst
 * status seen on any rank. */
int pb_runner_time_loop(MPI_Comm group, const pb_runner_cfg *cfg, pb_runner_iter_fn fn, void *ctx, double *samples_us, int *done);

/* An operation split where the whole loop needs it: issue (not waited for)
 * and the wait for everything issued so far (the backend's sync). */
typedef struct pb_runner_op {
    int (*issue)(void *ctx, int iter);
    int (*wait)(void *ctx);
    void *ctx;
} pb_runner_op;

/* What pb_runner_time_whole measured on this rank. */
typedef struct pb_runner_whole {
    double loop_us; /* the whole loop's time divided by its iterations */
    int iters;      /* the whole loop's iterations: the same on every rank */
    int samples;    /* the sample pass's iterations (samples_us[0..samples-1]) */
} pb_runner_whole;

/* The sample pass after a whole loop of `iters`: a quarter of them, at least
 * PB_RUNNER_MIN_SAMPLES (never more than iters). */
#define PB_RUNNER_MIN_SAMPLES 16
int pb_runner_sample_iters(int iters);

/* The whole loop's count under a cap of cap_us (0: none), chosen before it
 * starts: the iterations of per_us each that fit, with their sample pass, in
 * what spent_us left of the cap; 1 to iters. */
int pb_runner_whole_iters(double cap_us, double spent_us, double per_us, int iters);

/* On every rank of `group`: up to cfg->warmup untimed aligned iterations
 * (issue + wait; at least one under a cap, whose time chooses the count),
 * then one alignment that also agrees on the count (the smallest over the
 * ranks, pb_runner_whole_iters), the whole loop (count issues back to back,
 * one wait), then the sample pass: up to pb_runner_sample_iters(count)
 * iterations timed one by one from aligned starts, as pb_runner_time_loop
 * times them, stopped at the cap. samples_us needs room for
 * pb_runner_sample_iters(cfg->iters). Returns the worst status of any rank. */
int pb_runner_time_whole(MPI_Comm group, const pb_runner_cfg *cfg, const pb_runner_op *op, double *samples_us,
                         pb_runner_whole *out);

/* The whole-loop time over the ranks of `group`, on rank 0: the mean of the
 * ranks' loop_us (the headline) and their max (the slowest rank). */
void pb_runner_whole_across(MPI_Comm group, double loop_us, double *mean_us, double *max_us);

/* Gather every rank's samples to rank 0 of `group` and compute the statistics
 * there (pb_stats_across). All ranks must pass the same n. Other ranks get
 * their local statistics. */
int pb_runner_gather_stats(MPI_Comm group, const double *samples_us, int n, pb_stats *out);

#endif
