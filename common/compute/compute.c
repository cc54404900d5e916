/* Engine-independent helpers: the engine table, timing, a GEMM rate probe. */
#include "compute/compute.h"

#include "core/error.h"
#include "core/parse.h"
#include "core/timing.h"

#include <string.h>

/* The engine table: everything that chooses an engine by name (option
 * checks, help, defaults, selection) reads it, so a new engine is its own
 * file plus one row here (docs/ARCHITECTURE.md). Files ending in _cublas.c or
 * _cuda.c exist only in CUDA builds: their rows hold NULL elsewhere. */
#ifdef PB_HAVE_CUDA
const pb_compute *pb_compute_cublas(void);
#define CUDA_ONLY(getter) getter
#else
#define CUDA_ONLY(getter) NULL
#endif

typedef struct engine_row {
    const char *name; /* --engine NAME, as the engine's table names itself */
    pb_mem_kind mem;  /* where its buffers live; the first row of a kind is that memory's default */
    const pb_compute *(*get)(void); /* NULL: not in this build */
} engine_row;

static const engine_row engines[] = {
    {"blas", PB_MEM_HOST, pb_compute_blas},
    {"cublas", PB_MEM_DEVICE, CUDA_ONLY(pb_compute_cublas)},
};
#define NENGINES (sizeof engines / sizeof engines[0])

const char *const *pb_compute_names(void)
{
    static const char *names[NENGINES + 1];
    for (size_t i = 0; i < NENGINES; i++) names[i] = engines[i].name;
    return names;
}

static const engine_row *row_of(const char *name)
{
    for (size_t i = 0; name && i < NENGINES; i++)
        if (strcmp(name, engines[i].name) == 0) return &engines[i];
    return NULL;
}

int pb_compute_check_name(const char *option, const char *name)
{
    if (row_of(name)) return PB_OK;
    char list[256];
    return pb_error_usage(option, "'%s' is not an engine; expected %s", name,
                          pb_parse_join_names(pb_compute_names(), list, sizeof list));
}

const char *pb_compute_default(pb_mem_kind mem)
{
    for (size_t i = 0; i < NENGINES; i++)
        if (engines[i].mem == mem) return engines[i].name;
    return engines[0].name;
}

int pb_compute_select(const char *option, const char *name, const pb_compute **out)
{
    const engine_row *r = row_of(name);
    if (!r) {
        char list[256];
        return pb_error_usage(option, "unknown compute engine '%s'; accepted: %s", name,
                              pb_parse_join_names(pb_compute_names(), list, sizeof list));
    }
    if (!r->get)
        return pb_fail(PB_ERR_ENV, "compute engine %s: this build has no CUDA support (rebuild where nvcc, "
                                   "cuBLAS and NCCL are found, or with `make CUDA=1`)", name);
    *out = r->get();
    return PB_OK;
}

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
