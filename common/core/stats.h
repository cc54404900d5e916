/* Statistics of per-iteration times (microseconds), on one rank and across
 * ranks, as docs/METRICS.md defines them: the headline is the mean across ranks of
 * each rank's mean (what OSU and IMB report); min, max, median and p99 are over
 * every sample of every rank; rankmax is the slowest rank's mean. */
#ifndef PB_STATS_H
#define PB_STATS_H

#include <stddef.h>

typedef struct pb_stats {
    double mean, min, max, median, p99;
    double rankmax; /* max over ranks of the per-rank mean (straggler view) */
    size_t samples;
} pb_stats;

/* Statistics of `n` samples. The samples are sorted in place (a copy would be
 * an allocation that can fail after the measurement). n == 0 gives all zeros. */
void pb_stats_of(double *samples, size_t n, pb_stats *out);

/* Percentile p in [0,100] of sorted data, linear interpolation between ranks; 0 for n == 0. */
double pb_stats_percentile_sorted(const double *sorted, size_t n, double p);

/* Combine per-rank sample arrays laid out back to back (nranks x per_rank):
 * mean of rank means, rankmax, and pooled min/max/median/p99 (`all` is sorted in place). */
void pb_stats_across(double *all, size_t per_rank, int nranks, pb_stats *out);

/* Groups that run at once (TP groups, pipeline replicas), each as slow as
 * its slowest member: from each rank's time us[r] and its group group_of[r]
 * (0 <= group < ngroups, every group non-empty), the slowest group, its time
 * and the median of the group times. */
typedef struct pb_stats_groups {
    int slowest;
    double slowest_us, median_us;
} pb_stats_groups;
int pb_stats_groups_of(const double *us, const int *group_of, int nranks, int ngroups, pb_stats_groups *out);

/* Why `diff`, a difference of two measured times a and b (us) timed over
 * `iters` iterations, is no measurement, or NULL when it is one: fewer than 2
 * iterations (no spread to judge the noise by), |diff| below the timer's
 * resolution, or |diff| within the spread (max - min) of either time.
 * Benchmarks print it in a note next to figures derived from the difference
 * (overheads, fractions). */
const char *pb_stats_diff_noise(const pb_stats *a, const pb_stats *b, double diff, long long iters,
                                double resolution_us);

#endif
