#include "coll/p2p_matrix.h"

#include "core/atomic.h"
#include "core/error.h"
#include "core/link.h"
#include "core/stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static void summarize_class(const pb_p2p_matrix_pair_result *r, int n, const char *link, pb_p2p_matrix_class_summary *s)
{
    double *lat = malloc(sizeof(double) * (size_t)n), *bw = malloc(sizeof(double) * (size_t)n);
    int k = 0;
    for (int i = 0; lat && bw && i < n; i++) {
        if (strcmp(r[i].link, link) != 0) continue;
        lat[k] = r[i].lat_us;
        bw[k] = r[i].bw_GBps;
        k++;
    }
    memset(s, 0, sizeof *s);
    s->link = link;
    s->pairs = k;
    if (k > 0) {
        qsort(lat, (size_t)k, sizeof(double), cmp_double);
        qsort(bw, (size_t)k, sizeof(double), cmp_double);
        s->lat_min = lat[0];
        s->lat_max = lat[k - 1];
        s->lat_median = pb_stats_percentile_sorted(lat, (size_t)k, 50);
        s->bw_min = bw[0];
        s->bw_max = bw[k - 1];
        s->bw_median = pb_stats_percentile_sorted(bw, (size_t)k, 50);
    }
    free(lat);
    free(bw);
}

int pb_p2p_matrix_summarize(const pb_p2p_matrix_pair_result *r, int n, pb_p2p_matrix_class_summary out[3])
{
    int count = 0;
    for (int c = 0; c < PB_LINK_NCLASS; c++) {
        summarize_class(r, n, pb_link_name(c), &out[count]);
        if (out[count].pairs > 0) count++;
    }
    return count;
}

/* The median latency and bandwidth of every rail 0..nrails-1 (pairs with rail >= 0),
 * into lat_med[] and bw_med[]: the pairs grouped by rail (a counting sort), each
 * group sorted. Returns a status. */
static int rail_medians(const pb_p2p_matrix_pair_result *r, int n, int nrails, double *lat_med, double *bw_med)
{
    if (nrails <= 0) return PB_OK;
    int *start = calloc((size_t)nrails + 1, sizeof(int)), *fill = calloc((size_t)nrails, sizeof(int));
    double *lat = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1)), *bw = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!start || !fill || !lat || !bw) {
        free(start);
        free(fill);
        free(lat);
        free(bw);
        return pb_fail(PB_ERR_ENV, "out of memory for %d rails", nrails);
    }
    for (int i = 0; i < n; i++)
        if (r[i].rail >= 0) start[r[i].rail + 1]++;
    for (int k = 0; k < nrails; k++) start[k + 1] += start[k];
    for (int i = 0; i < n; i++) {
        if (r[i].rail < 0) continue;
        int at = start[r[i].rail] + fill[r[i].rail]++;
        lat[at] = r[i].lat_us;
        bw[at] = r[i].bw_GBps;
    }
    for (int k = 0; k < nrails; k++) {
        size_t count = (size_t)(start[k + 1] - start[k]);
        lat_med[k] = bw_med[k] = 0;
        if (count == 0) continue;
        qsort(lat + start[k], count, sizeof(double), cmp_double);
        qsort(bw + start[k], count, sizeof(double), cmp_double);
        lat_med[k] = pb_stats_percentile_sorted(lat + start[k], count, 50);
        bw_med[k] = pb_stats_percentile_sorted(bw + start[k], count, 50);
    }
    free(start);
    free(fill);
    free(lat);
    free(bw);
    return PB_OK;
}

static int below(const pb_p2p_matrix_pair_result *p, double lat_med, double bw_med, double bw_frac, double lat_factor)
{
    return p->bw_GBps < bw_frac * bw_med || p->lat_us > lat_factor * lat_med;
}

int pb_p2p_matrix_flag_slow(pb_p2p_matrix_pair_result *r, int n, const pb_p2p_matrix_class_summary *s, int nclasses, double bw_frac,
                        double lat_factor)
{
    int nrails = 0;
    for (int i = 0; i < n; i++)
        if (r[i].rail + 1 > nrails) nrails = r[i].rail + 1;
    double *lat_med = calloc((size_t)nrails + 1, sizeof(double)), *bw_med = calloc((size_t)nrails + 1, sizeof(double));
    /* Without memory for the rails, the class rule still applies. */
    int rails_ok = lat_med && bw_med && rail_medians(r, n, nrails, lat_med, bw_med) == PB_OK;
    int slow = 0;
    for (int i = 0; i < n; i++) {
        r[i].slow = 0;
        for (int c = 0; c < nclasses; c++)
            if (strcmp(s[c].link, r[i].link) == 0 && below(&r[i], s[c].lat_median, s[c].bw_median, bw_frac, lat_factor))
                r[i].slow |= PB_P2P_MATRIX_SLOW_CLASS;
        if (rails_ok && r[i].rail >= 0 && below(&r[i], lat_med[r[i].rail], bw_med[r[i].rail], bw_frac, lat_factor))
            r[i].slow |= PB_P2P_MATRIX_SLOW_RAIL;
        slow += r[i].slow != 0;
    }
    free(lat_med);
    free(bw_med);
    return slow;
}

void pb_p2p_matrix_local_ranks(const int *node_of, int nranks, int *local)
{
    int nnodes = 0;
    for (int i = 0; i < nranks; i++)
        if (node_of[i] + 1 > nnodes) nnodes = node_of[i] + 1;
    int *seen = calloc((size_t)nnodes + 1, sizeof(int));
    for (int i = 0; i < nranks; i++) local[i] = seen ? seen[node_of[i]]++ : -1; /* no memory: no rails */
    free(seen);
}

int pb_p2p_matrix_rail(const int *node_of, const int *local, int a, int b)
{
    return node_of[a] != node_of[b] && local[a] == local[b] ? local[a] : -1;
}

void pb_p2p_matrix_default_pair(const int *node_of, int nranks, int pair[2])
{
    pair[0] = 0, pair[1] = nranks - 1;
    /* the first rank off rank 0's node is the first of its own node: local rank 0 there */
    for (int r = 1; r < nranks; r++)
        if (node_of[r] != node_of[0]) {
            pair[1] = r;
            return;
        }
}

uint64_t pb_p2p_matrix_peer_bytes(void)
{
    const char *v = getenv("NCCL_BUFFSIZE");
    char *end = NULL;
    unsigned long long buff = v && *v ? strtoull(v, &end, 0) : 0;
    if (!v || !*v || *end || buff == 0) buff = PB_P2P_MATRIX_NCCL_BUFFSIZE;
    return (uint64_t)buff * PB_P2P_MATRIX_CHANNELS_PER_PEER * 2;
}

const char *pb_p2p_matrix_slow_name(int slow)
{
    static const char *names[] = {"", "class", "rail", "class+rail"};
    return names[slow & 3];
}

/* A temporary beside path; finish_file renames it into place, so readers never see half a file. */
static FILE *start_file(const char *path, char *tmp, size_t len)
{
    return pb_atomic_open(path, tmp, len);
}

static int finish_file(FILE *f, const char *tmp, const char *path)
{
    return pb_atomic_commit(f, tmp, path, !ferror(f));
}

int pb_p2p_matrix_write_pairs(const char *path, const pb_p2p_matrix_pair_result *r, int n)
{
    char tmp[4096];
    FILE *f = start_file(path, tmp, sizeof tmp);
    if (!f) return PB_ERR_ENV;
    fprintf(f, "a,b,link_class,latency_us,bw_GBps,slow,rail,slow_against\n");
    for (int i = 0; i < n; i++)
        fprintf(f, "%d,%d,%s,%.6g,%.6g,%d,%d,%s\n", r[i].a, r[i].b, r[i].link, r[i].lat_us, r[i].bw_GBps, r[i].slow != 0,
                r[i].rail, pb_p2p_matrix_slow_name(r[i].slow));
    return finish_file(f, tmp, path);
}

int pb_p2p_matrix_write_csv(const char *path, int nranks, const pb_p2p_matrix_pair_result *r, int n, int which)
{
    char tmp[4096];
    FILE *f = start_file(path, tmp, sizeof tmp);
    if (!f) return PB_ERR_ENV;
    double *m = calloc((size_t)nranks * (size_t)nranks, sizeof(double));
    unsigned char *have = calloc((size_t)nranks * (size_t)nranks, 1); /* a pair not measured (sampled): empty */
    if (!m || !have) {
        free(m);
        free(have);
        fclose(f);
        return pb_fail(PB_ERR_ENV, "out of memory for a %d x %d matrix", nranks, nranks);
    }
    for (int i = 0; i < n; i++) {
        double v = which ? r[i].bw_GBps : r[i].lat_us;
        m[r[i].a * nranks + r[i].b] = m[r[i].b * nranks + r[i].a] = v;
        have[r[i].a * nranks + r[i].b] = have[r[i].b * nranks + r[i].a] = 1;
    }
    fprintf(f, "# %s between every pair of ranks (rows and columns are ranks)\nrank", which ? "bw_GBps" : "latency_us");
    for (int j = 0; j < nranks; j++) fprintf(f, ",%d", j);
    fputc('\n', f);
    for (int i = 0; i < nranks; i++) {
        fprintf(f, "%d", i);
        for (int j = 0; j < nranks; j++) {
            if (!have[i * nranks + j]) fputs(",", f); /* the diagonal too */
            else fprintf(f, ",%.6g", m[i * nranks + j]);
        }
        fputc('\n', f);
    }
    free(m);
    free(have);
    return finish_file(f, tmp, path);
}
