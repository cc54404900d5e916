/* Validation of a data-parallel all-reduce: every rank's known contribution,
 * summed on the control plane in double, against the reduced buffer. Works in
 * chunks so the host side needs a few MiB beyond the caller's copy. */
#include "workload/dp.h"

#include "core/error.h"
#include "core/hash.h"

#include <math.h>
#include <stdlib.h>

#define CHUNK ((uint64_t)1 << 20) /* elements per control-plane allreduce */

int pb_dp_fill_known(const pb_compute *eng, void *grads, pb_dtype t, uint64_t from, uint64_t to, int rank)
{
    size_t es = pb_dtype_size(t);
    if (to <= from) return PB_OK;
    char *host = malloc((size_t)CHUNK * es);
    PB_CHECK(host, PB_ERR_ENV, "dp validation: out of host memory");
    int status = PB_OK;
    for (uint64_t i = from; i < to && status == PB_OK; i += CHUNK) {
        uint64_t n = to - i < CHUNK ? to - i : CHUNK;
        for (uint64_t j = 0; j < n; j++) pb_dtype_set(t, host, (size_t)j, 1.0 + (double)((rank + i + j) % 8));
        status = eng->from_host((char *)grads + i * es, host, (size_t)(n * es));
    }
    free(host);
    return status;
}

double pb_dp_tolerance(pb_dtype t, int nranks)
{
    /* n-1 reduction steps, each rounding at most half an ulp of a partial sum
     * bounded by sum|c|; doubled for margin. */
    return (double)nranks * (t == PB_BFLOAT16 ? ldexp(1.0, -7) : ldexp(1.0, -23));
}

/* Count wrong elements of one chunk: got[j] against sums[j] within tol * sums[n + j]. */
static long long count_chunk(pb_dtype t, const void *got, const double *sums, size_t n, double tol)
{
    long long wrong = 0;
    for (size_t j = 0; j < n; j++) {
        double g = pb_dtype_get(t, got, j);
        if (!isfinite(g) || fabs(g - sums[j]) > tol * sums[n + j] + 1e-30) wrong++;
    }
    return wrong;
}

/* Sum, copy back and count chunk by chunk. Every rank runs every chunk's
 * allreduce (it is collective), even after its own copy to the host failed. */
static int check_chunks(MPI_Comm group, const pb_compute *eng, const void *result, const void *local,
                        uint64_t total, pb_dtype t, int corrupt, char *got, double *sums, long long *wrong,
                        uint64_t *hash)
{
    size_t es = pb_dtype_size(t);
    int nranks = 1;
    MPI_Comm_size(group, &nranks);
    double tol = pb_dp_tolerance(t, nranks);
    int status = PB_OK;
    for (uint64_t i = 0; i < total; i += CHUNK) {
        size_t n = (size_t)(total - i < CHUNK ? total - i : CHUNK);
        const char *mine = (const char *)local + i * es;
        for (size_t j = 0; j < n; j++) {
            double v = pb_dtype_get(t, mine, j);
            sums[j] = v;
            sums[n + j] = fabs(v);
        }
        MPI_Allreduce(MPI_IN_PLACE, sums, (int)(2 * n), MPI_DOUBLE, MPI_SUM, group);
        if (status == PB_OK) status = eng->to_host(got, (const char *)result + i * es, n * es);
        if (status != PB_OK) continue;
        if (corrupt && i == 0) pb_dtype_set(t, got, 0, pb_dtype_get(t, got, 0) + 12345.0);
        *hash = pb_hash_fnv1a(*hash, got, n * es);
        *wrong += count_chunk(t, got, sums, n, tol);
    }
    return status;
}

int pb_dp_check(MPI_Comm group, const pb_compute *eng, const void *result, const void *local, uint64_t bytes,
                pb_dtype t, int corrupt, long long *wrong, uint64_t *hash)
{
    char *got = malloc((size_t)CHUNK * pb_dtype_size(t));
    double *sums = malloc(sizeof(double) * 2 * (size_t)CHUNK);
    int have = got && sums;
    int status = have ? PB_OK : pb_fail(PB_ERR_ENV, "dp validation: out of host memory");
    /* Agree first: a rank short of memory must not leave the others in the chunks' allreduce. */
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, group);
    *wrong = 0;
    *hash = PB_HASH_FNV1A_START;
    if (have && status == PB_OK)
        status = check_chunks(group, eng, result, local, bytes / pb_dtype_size(t), t, corrupt, got, sums, wrong,
                              hash);
    free(got);
    free(sums);
    return status;
}
