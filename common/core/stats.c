#include "core/stats.h"

#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double pb_stats_percentile_sorted(const double *sorted, size_t n, double p)
{
    if (n == 0) return 0;
    double pos = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n) return sorted[n - 1];
    double frac = pos - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

static double mean_of(const double *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    return n ? s / (double)n : 0;
}

/* min/max/median/p99 of a pool of samples, sorted in place: no copy, so
 * nothing to allocate and nothing that can fail. */
static void pooled(double *x, size_t n, pb_stats *out)
{
    qsort(x, n, sizeof(double), cmp_double);
    out->min = x[0];
    out->max = x[n - 1];
    out->median = pb_stats_percentile_sorted(x, n, 50);
    out->p99 = pb_stats_percentile_sorted(x, n, 99);
}

void pb_stats_of(double *samples, size_t n, pb_stats *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0) return;
    out->samples = n;
    out->mean = mean_of(samples, n);
    out->rankmax = out->mean;
    pooled(samples, n, out);
}

void pb_stats_across(double *all, size_t per_rank, int nranks, pb_stats *out)
{
    memset(out, 0, sizeof *out);
    if (per_rank == 0 || nranks <= 0) return;
    double sum = 0, worst = 0;
    for (int r = 0; r < nranks; r++) {
        double m = mean_of(all + (size_t)r * per_rank, per_rank);
        sum += m;
        if (r == 0 || m > worst) worst = m;
    }
    out->samples = per_rank * (size_t)nranks;
    out->mean = sum / nranks;
    out->rankmax = worst;
    pooled(all, out->samples, out);
}

int pb_stats_groups_of(const double *us, const int *group_of, int nranks, int ngroups, pb_stats_groups *out)
{
    memset(out, 0, sizeof *out);
    if (ngroups <= 0 || nranks < ngroups) return PB_ERR_USAGE;
    double *t = malloc(sizeof(double) * (size_t)ngroups);
    if (!t) return PB_ERR_ENV;
    for (int g = 0; g < ngroups; g++) t[g] = -1;
    for (int r = 0; r < nranks; r++) {
        int g = group_of[r];
        if (g < 0 || g >= ngroups) return free(t), PB_ERR_USAGE;
        if (us[r] > t[g]) t[g] = us[r];
    }
    for (int g = 0; g < ngroups; g++) {
        if (t[g] < 0) return free(t), PB_ERR_USAGE; /* an empty group */
        if (t[g] > t[out->slowest]) out->slowest = g;
    }
    out->slowest_us = t[out->slowest];
    qsort(t, (size_t)ngroups, sizeof *t, cmp_double);
    out->median_us = pb_stats_percentile_sorted(t, (size_t)ngroups, 50);
    free(t);
    return PB_OK;
}

const char *pb_stats_diff_noise(const pb_stats *a, const pb_stats *b, double diff, long long iters,
                                double resolution_us)
{
    double d = fabs(diff);
    if (iters < 2 || a->samples < 2 || b->samples < 2) return "fewer than 2 iterations: no spread to tell it from noise";
    if (d < resolution_us) return "below the timer's resolution";
    if (d <= a->max - a->min || d <= b->max - b->min) return "within the spread (max - min) of the times it is taken from";
    return NULL;
}
