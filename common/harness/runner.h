/* The timing loop every benchmark shares (docs/METRICS.md "Time"): each rank times
 * each iteration from an aligned start to completion; the alignment is
 * outside the timed region. */
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

/* Gather every rank's samples to rank 0 of `group` and compute the statistics
 * there (pb_stats_across). All ranks must pass the same n. Other ranks get
 * their local statistics. */
int pb_runner_gather_stats(MPI_Comm group, const double *samples_us, int n, pb_stats *out);

#endif
