/* Row-major GEMM requests mapped onto column-major BLAS (cuBLAS).
 *
 * A row-major matrix with leading dimension ld, read as column-major with the
 * same ld, is its transpose. So the row-major request
 *     C = alpha op(A) op(B) + beta C          (C m x n)
 * is the column-major product
 *     C^T = alpha op(B)^T op(A)^T + beta C^T   (C^T n x m)
 * with the operands swapped (the first column-major operand is the caller's
 * B), m and n swapped, k and every leading dimension unchanged, and each
 * operand keeping its own transpose flag (B^T viewed column-major is just B's
 * buffer: no transpose when tb == NOTRANS). Pure and header-only so that it is
 * unit tested on the host (tests/unit/test_gpu_nogpu.c) without a GPU. */
#ifndef PB_GEMM_MAP_H
#define PB_GEMM_MAP_H

#include "compute/compute.h"

#include <limits.h>
#include <stdint.h>

typedef struct pb_gemm_map_colmajor {
    /* Column-major call: C' (m x n, ldc) = alpha op'(A') op'(B') + beta C',
     * with A' = the caller's B buffer and B' = the caller's A buffer. */
    pb_compute_trans transa, transb;
    int64_t m, n, k;
    int64_t lda, ldb, ldc;
} pb_gemm_map_colmajor;

static inline pb_gemm_map_colmajor pb_gemm_map(pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k, int64_t lda,
                                           int64_t ldb, int64_t ldc)
{
    pb_gemm_map_colmajor g;
    g.transa = tb; /* A' is B */
    g.transb = ta; /* B' is A */
    g.m = n;
    g.n = m;
    g.k = k;
    g.lda = ldb;
    g.ldb = lda;
    g.ldc = ldc;
    return g;
}

static inline int64_t pb_gemm_map_max1(int64_t v) { return v > 1 ? v : 1; }

/* 1 when the mapped call is one column-major BLAS accepts with 32-bit ints:
 * shapes non-negative, every value <= INT_MAX, and each leading dimension at
 * least the column-major row count of its matrix (at least 1). These are the
 * row-major requirements too: lda >= columns of A as stored, and so on. */
static inline int pb_gemm_map_colmajor_valid(const pb_gemm_map_colmajor *g)
{
    if (g->m < 0 || g->n < 0 || g->k < 0) return 0;
    const int64_t v[6] = {g->m, g->n, g->k, g->lda, g->ldb, g->ldc};
    for (int i = 0; i < 6; i++)
        if (v[i] > INT_MAX) return 0;
    int64_t arows = g->transa == PB_NOTRANS ? g->m : g->k; /* A' is m x k, or k x m transposed */
    int64_t brows = g->transb == PB_NOTRANS ? g->k : g->n; /* B' is k x n, or n x k transposed */
    return g->lda >= pb_gemm_map_max1(arows) && g->ldb >= pb_gemm_map_max1(brows) && g->ldc >= pb_gemm_map_max1(g->m);
}

#endif
