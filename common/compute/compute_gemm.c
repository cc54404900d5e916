/* GEMM helpers shared by every engine and its callers: a batch as a loop of
 * single GEMMs, the batched call, and a GEMM rate probe. Engine-independent:
 * they reach an engine only through its table. */
#include "compute/compute.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/timing.h"

static int check_batch(const pb_compute_gemm_batch *g)
{
    PB_CHECK(g->m >= 0 && g->n >= 0 && g->k >= 0 && g->count >= 0, PB_ERR_USAGE,
             "batched gemm: negative shape %lldx%lldx%lld or count %lld", (long long)g->m, (long long)g->n,
             (long long)g->k, (long long)g->count);
    PB_CHECK(g->stride_a >= 0 && g->stride_b >= 0 && g->stride_c >= 0, PB_ERR_USAGE,
             "batched gemm: negative stride (a %lld, b %lld, c %lld)", (long long)g->stride_a,
             (long long)g->stride_b, (long long)g->stride_c);
    return PB_OK;
}

int pb_compute_gemm_batch_loop(const pb_compute *eng, const pb_compute_gemm_batch *g)
{
    PB_TRY(check_batch(g));
    size_t es = pb_dtype_size(g->t);
    const char *a = g->a, *b = g->b;
    char *c = g->c;
    for (int64_t i = 0; i < g->count; i++)
        PB_TRY(eng->gemm(g->ta, g->tb, g->m, g->n, g->k, g->alpha, a + (size_t)(i * g->stride_a) * es, g->lda,
                         b + (size_t)(i * g->stride_b) * es, g->ldb, g->beta, c + (size_t)(i * g->stride_c) * es,
                         g->ldc, g->t));
    return PB_OK;
}

int pb_compute_gemm_batched(const pb_compute *eng, const pb_compute_gemm_batch *g)
{
    PB_TRY(check_batch(g));
    return eng->gemm_batched ? eng->gemm_batched(g) : pb_compute_gemm_batch_loop(eng, g);
}

double pb_compute_gflops(double flops, double seconds) { return seconds > 0 ? flops / seconds * 1e-9 : 0.0; }

static int time_gemms(const pb_compute *eng, int64_t m, int64_t n, int64_t k, pb_dtype t, int iters,
                      void *a, void *b, void *c, double *seconds)
{
    /* One untimed call warms caches and lets the engine pick its kernels. */
    PB_TRY(eng->gemm(PB_NOTRANS, PB_NOTRANS, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n, t));
    PB_TRY(eng->synchronize());
    double t0 = pb_timing_now_us();
    for (int i = 0; i < iters; i++)
        PB_TRY(eng->gemm(PB_NOTRANS, PB_NOTRANS, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n, t));
    PB_TRY(eng->synchronize());
    *seconds = (pb_timing_now_us() - t0) * 1e-6;
    return PB_OK;
}

int pb_compute_gemm_benchmark(const pb_compute *eng, int64_t m, int64_t n, int64_t k, pb_dtype t, int iters,
                      double *gflops)
{
    PB_CHECK(m > 0 && n > 0 && k > 0 && iters > 0, PB_ERR_USAGE, "gemm benchmark: shape and iterations must be positive");
    size_t es = pb_dtype_size(t);
    void *a = NULL, *b = NULL, *c = NULL;
    pb_compute_fill_spec fa = {.seed = 1, .stream = 1, .scale = 1.0f}, fb = {.seed = 1, .stream = 2, .scale = 1.0f};
    int st = eng->alloc(&a, (size_t)(m * k) * es);
    if (st == PB_OK) st = eng->alloc(&b, (size_t)(k * n) * es);
    if (st == PB_OK) st = eng->alloc(&c, (size_t)(m * n) * es);
    if (st == PB_OK) st = eng->fill(a, t, m, k, k, &fa);
    if (st == PB_OK) st = eng->fill(b, t, k, n, n, &fb);
    double sec = 0;
    if (st == PB_OK) st = time_gemms(eng, m, n, k, t, iters, a, b, c, &sec);
    if (st == PB_OK) *gflops = pb_compute_gflops(2.0 * (double)m * (double)n * (double)k * iters, sec);
    if (a) eng->free(a);
    if (b) eng->free(b);
    if (c) eng->free(c);
    return st;
}
