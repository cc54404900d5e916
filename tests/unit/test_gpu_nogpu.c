/* GPU code paths that can be checked without a GPU, and, when one is visible,
 * the cuBLAS engine against the BLAS engine and naive references.
 *
 * Every build: the row-major -> column-major GEMM mapping (gemm_map.h) applied
 * to a naive column-major GEMM equals a naive row-major GEMM, bit for bit; the
 * engine selection answers as the build allows.
 * CUDA=1 without a GPU: the cublas engine's init fails with PB_ERR_ENV (exit
 * code 3) and a message, and every primitive refuses cleanly afterwards; the
 * device-staged MPI backend's table is complete and its alloc refuses.
 * CUDA=1 with a GPU: those two check the GPU-present side instead (init
 * succeeds, alloc works), so no case skips on a GPU node (scripts/gpu-check.sh
 * requires that), and the engine tests run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compute/compute.h"
#include "core/dtype.h"
#include "core/error.h"
#include "compute/gemm_map.h"
#include "backend/gpu.h"
#include "core/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef PB_HAVE_CUDA
#include "backend/comm.h"
#include "compute/lib_cublas.h"
/* Weak, as in compute.c, so this test links whatever the Makefile does. A
 * linker does not pull an archive member in for a weak reference, so until
 * compute.c refers to the engine strongly in CUDA builds (and the link adds
 * libstdc++ for the nvcc object, see docs/gpu.md) the engine is not in the
 * binary: its tests then skip, saying why. Force it in with
 * -Wl,-u,pb_compute_cublas (LDFLAGS_SAN) to run them anyway. */
extern const pb_compute *pb_compute_cublas(void) __attribute__((weak));

static void need_engine(void)
{
    if (pb_compute_cublas) return;
    fprintf(stderr, "SKIP: the cublas engine is not linked into this binary (compute.c's weak reference; "
                    "see docs/gpu.md)\n");
    skip();
}
#endif

/* ---- the mapping, on the host ------------------------------------------------ */

/* Column-major reference GEMM: C(i, j) at c[i + j * ldc]. Products are summed
 * in p order in double, like row_major() below, so results are bit-identical. */
static void col_major(pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                      int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc)
{
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            double acc = 0;
            for (int64_t p = 0; p < k; p++) {
                double av = ta == PB_NOTRANS ? a[i + p * lda] : a[p + i * lda];
                double bv = tb == PB_NOTRANS ? b[p + j * ldb] : b[j + p * ldb];
                acc += bv * av; /* same product as row_major's av * bv: swapped operands */
            }
            c[i + j * ldc] = alpha * acc + beta * c[i + j * ldc];
        }
}

static void row_major(pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
                      int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t p = 0; p < k; p++) {
                double av = ta == PB_NOTRANS ? a[i * lda + p] : a[p * lda + i];
                double bv = tb == PB_NOTRANS ? b[p * ldb + j] : b[j * ldb + p];
                acc += av * bv;
            }
            c[i * ldc + j] = alpha * acc + beta * c[i * ldc + j];
        }
}

static void check_map(pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k)
{
    int64_t ac = ta ? m : k, ar = ta ? k : m, bc = tb ? k : n, br = tb ? n : k;
    int64_t lda = ac + 2, ldb = bc + 3, ldc = n + 1;
    size_t na = (size_t)(ar * lda), nb = (size_t)(br * ldb), nc = (size_t)(m * ldc);
    double *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b);
    double *c1 = malloc(nc * sizeof *c1), *c2 = malloc(nc * sizeof *c2);
    assert_non_null(a), assert_non_null(b), assert_non_null(c1), assert_non_null(c2);
    for (size_t i = 0; i < na; i++) a[i] = pb_rng_hash_uniform(3, 1, i, 0);
    for (size_t i = 0; i < nb; i++) b[i] = pb_rng_hash_uniform(3, 2, i, 0);
    for (size_t i = 0; i < nc; i++) c1[i] = c2[i] = pb_rng_hash_uniform(3, 3, i, 0);
    row_major(ta, tb, m, n, k, 0.75, a, lda, b, ldb, -0.5, c1, ldc);
    pb_gemm_map_colmajor g = pb_gemm_map(ta, tb, m, n, k, lda, ldb, ldc);
    assert_true(pb_gemm_map_colmajor_valid(&g));
    /* As compute_cublas.c calls cuBLAS: the caller's B first, then A. */
    col_major(g.transa, g.transb, g.m, g.n, g.k, 0.75, b, g.lda, a, g.ldb, -0.5, c2, g.ldc);
    assert_memory_equal(c1, c2, nc * sizeof *c1); /* padding untouched by both, values identical */
    /* A leading dimension one too small is refused, for each operand. */
    pb_gemm_map_colmajor bad = pb_gemm_map(ta, tb, m, n, k, ac - 1, ldb, ldc);
    assert_false(pb_gemm_map_colmajor_valid(&bad));
    bad = pb_gemm_map(ta, tb, m, n, k, lda, bc - 1, ldc);
    assert_false(pb_gemm_map_colmajor_valid(&bad));
    bad = pb_gemm_map(ta, tb, m, n, k, lda, ldb, n - 1);
    assert_false(pb_gemm_map_colmajor_valid(&bad));
    free(a), free(b), free(c1), free(c2);
}

static void test_gemm_map(void **state)
{
    (void)state;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_map((pb_compute_trans)ta, (pb_compute_trans)tb, 7, 5, 3);
            check_map((pb_compute_trans)ta, (pb_compute_trans)tb, 4, 9, 13);
            check_map((pb_compute_trans)ta, (pb_compute_trans)tb, 1, 6, 2);
        }
    pb_gemm_map_colmajor g = pb_gemm_map(PB_NOTRANS, PB_TRANS, 2, 3, 4, 4, 4, 3);
    assert_int_equal(g.transa, PB_TRANS), assert_int_equal(g.transb, PB_NOTRANS);
    assert_true(g.m == 3 && g.n == 2 && g.k == 4 && g.lda == 4 && g.ldb == 4 && g.ldc == 3);
    g = pb_gemm_map(PB_NOTRANS, PB_NOTRANS, (int64_t)INT_MAX + 1, 2, 2, 2, 2, 2);
    assert_false(pb_gemm_map_colmajor_valid(&g)); /* beyond cuBLAS's 32-bit ints */
}

#ifdef PB_HAVE_CUDA
/* Whether a library whose file name holds NAME is mapped into this process. */
static int mapped(const char *name)
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

/* cuBLAS is not loaded at start (no process pays for it that does not use
 * it), and loads on demand with every entry point the engine calls. Runs
 * first: the other tests load it. */
static void test_cublas_loads_on_demand(void **state)
{
    (void)state;
    assert_false(mapped("libcublas"));
    const char *why = NULL;
    const pb_lib_cublas *lib = pb_lib_cublas_get(&why);
    if (!lib) fail_msg("%s", why);
    assert_true(mapped(pb_lib_cublas_name()));
    int major = -1;
    assert_int_equal(lib->GetProperty(MAJOR_VERSION, &major), CUBLAS_STATUS_SUCCESS);
    assert_int_equal(major, CUBLAS_VER_MAJOR);
    assert_non_null(lib->GetStatusString(CUBLAS_STATUS_NOT_INITIALIZED));
    assert_true(lib->Create && lib->Destroy && lib->SetStream && lib->SetMathMode && lib->GemmEx &&
                lib->GemmStridedBatchedEx);
    assert_ptr_equal(pb_lib_cublas_get(NULL), lib); /* once */
}
#endif

static void test_select(void **state)
{
    (void)state;
    const pb_compute *e = NULL;
    assert_int_equal(pb_compute_select("--engine", "cudnn", &e), PB_ERR_USAGE);
#ifdef PB_HAVE_CUDA
    need_engine();
    assert_int_equal(pb_compute_select("--engine", "cublas", &e), PB_OK);
    assert_non_null(e);
    assert_string_equal(e->name, "cublas");
    assert_int_equal(e->gemm_dtype(PB_BFLOAT16), PB_BFLOAT16);
    assert_int_equal(e->gemm_dtype(PB_FLOAT32), PB_FLOAT32);
    assert_non_null(strstr(e->describe(), "cuBLAS"));
#else
    assert_int_equal(pb_compute_select("--engine", "cublas", &e), PB_ERR_ENV);
#endif
}

#ifdef PB_HAVE_CUDA
/* ---- CUDA build, no GPU ------------------------------------------------------ */

static void test_init_without_gpu(void **state)
{
    (void)state;
    need_engine();
    const pb_compute *e = NULL;
    assert_int_equal(pb_compute_select("--engine", "cublas", &e), PB_OK);
    if (pb_gpu_count() > 0) { /* a GPU is visible: the other side of the same contract */
        pb_compute_opts go = {.threads = 1};
        assert_int_equal(e->init(&go), PB_OK);
        assert_null(strstr(e->describe(), "not initialised"));
        void *d = NULL;
        assert_int_equal(e->alloc(&d, 64), PB_OK);
        assert_non_null(d);
        e->free(d);
        e->finalize(); /* the engine tests below initialise it again */
        return;
    }
    /* In a child, as a benchmark's main would: exit code 3 and a message. */
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 2);
        close(fd[0]);
        pb_compute_opts o = {.device = 0};
        _exit(e->init(&o));
    }
    close(fd[1]);
    char msg[1024] = "";
    ssize_t got = 0, r;
    while ((r = read(fd[0], msg + got, sizeof msg - 1 - (size_t)got)) > 0) got += r;
    msg[got > 0 ? got : 0] = '\0';
    close(fd[0]);
    int st = 0;
    assert_true(waitpid(pid, &st, 0) == pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), PB_ERR_ENV);
    fprintf(stderr, "child said: %s", msg);
    assert_non_null(strstr(msg, "no usable GPU"));
    /* In this process: every primitive refuses with a status, none crashes. */
    pb_compute_opts o = {0};
    assert_int_equal(e->init(&o), PB_ERR_ENV);
    assert_non_null(strstr(e->describe(), "not initialised"));
    void *p = (void *)1;
    assert_int_equal(e->alloc(&p, 64), PB_ERR_ENV);
    assert_null(p);
    float h[4] = {0};
    assert_int_equal(e->gemm(PB_NOTRANS, PB_NOTRANS, 2, 2, 2, 1.0f, h, 2, h, 2, 0.0f, h, 2, PB_FLOAT32), PB_ERR_ENV);
    pb_compute_gemm_batch gb = {.m = 2, .n = 2, .k = 2, .a = h, .lda = 2, .b = h, .ldb = 2, .c = h, .ldc = 2,
                                .count = 1, .t = PB_FLOAT32};
    assert_int_equal(e->gemm_batched(&gb), PB_ERR_ENV);
    assert_int_equal(e->gelu_fwd(PB_FLOAT32, 4, h, h), PB_ERR_ENV);
    assert_int_equal(e->to_host(h, h, sizeof h), PB_ERR_ENV);
    assert_int_equal(e->synchronize(), PB_ERR_ENV);
    assert_int_equal(e->mem_info(NULL, NULL), PB_ERR_ENV);
    e->free(NULL);
    e->finalize();
}

static void test_mpi_device_table(void **state)
{
    (void)state;
    const pb_comm_backend *b = pb_comm_backend_mpi_device();
    assert_string_equal(b->name, "mpi");
    assert_int_equal(b->mem, PB_MEM_DEVICE);
    assert_true(b->comm_create && b->comm_destroy && b->rank && b->size && b->alloc && b->free && b->to_host &&
                b->from_host && b->allreduce && b->allgather && b->reducescatter && b->broadcast && b->reduce &&
                b->alltoall && b->group_start && b->group_end && b->send && b->recv && b->sync && b->version);
    void *p = (void *)1;
    if (pb_gpu_count() > 0) { /* a GPU is visible: alloc works */
        assert_int_equal(b->alloc(64, &p), PB_OK);
        assert_non_null(p);
        b->free(p);
        return;
    }
    assert_int_equal(b->alloc(64, &p), PB_ERR_ENV);
    assert_null(p);
}

/* ---- CUDA build with a GPU: cublas against blas and naive loops --------------- */

static const pb_compute *G, *B;

static void *up(const void *h, size_t bytes)
{
    void *d = NULL;
    assert_int_equal(G->alloc(&d, bytes), PB_OK);
    assert_int_equal(G->from_host(d, h, bytes), PB_OK);
    return d;
}

static void down(void *h, const void *d, size_t bytes)
{
    assert_int_equal(G->synchronize(), PB_OK);
    assert_int_equal(G->to_host(h, d, bytes), PB_OK);
}

static void gpu_engines(void)
{
    if (pb_gpu_count() == 0) skip();
    need_engine();
    if (G) return;
    pb_compute_opts o = {.threads = 1};
    assert_int_equal(pb_compute_select("--engine", "cublas", &G), PB_OK);
    assert_int_equal(G->init(&o), PB_OK);
    B = pb_compute_blas();
    assert_int_equal(B->init(&o), PB_OK);
    fprintf(stderr, "%s\n", G->describe());
}

/* fp32 or bf16 GEMM with padded leading dimensions and alpha/beta vs a double
 * loop on the same (already rounded) inputs; C's padding must stay intact. */
static void gpu_gemm(pb_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k)
{
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int64_t lda = ac + 3, ldb = bc + 5, ldc = n + 2;
    size_t na = (size_t)(ar * lda), nb = (size_t)(br * ldb), nc = (size_t)(m * ldc), es = pb_dtype_size(t);
    char *a = malloc(na * es), *b = malloc(nb * es), *c = malloc(nc * es), *c0 = malloc(nc * es);
    for (size_t i = 0; i < na; i++) pb_dtype_set(t, a, i, pb_rng_hash_uniform(4, 1, i, 0));
    for (size_t i = 0; i < nb; i++) pb_dtype_set(t, b, i, pb_rng_hash_uniform(4, 2, i, 0));
    for (size_t i = 0; i < nc; i++) pb_dtype_set(t, c0, i, pb_rng_hash_uniform(4, 3, i, 0));
    void *da = up(a, na * es), *db = up(b, nb * es), *dc = up(c0, nc * es);
    const float alpha = 0.75f, beta = -0.5f;
    assert_int_equal(G->gemm(ta, tb, m, n, k, alpha, da, lda, db, ldb, beta, dc, ldc, t), PB_OK);
    down(c, dc, nc * es);
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double ref = beta * pb_dtype_get(t, c0, (size_t)(i * ldc + j));
            for (int64_t p = 0; p < k; p++)
                ref += alpha * pb_dtype_get(t, a, (size_t)(ta ? p * lda + i : i * lda + p)) *
                       pb_dtype_get(t, b, (size_t)(tb ? j * ldb + p : p * ldb + j));
            double got = pb_dtype_get(t, c, (size_t)(i * ldc + j));
            double tol = (t == PB_BFLOAT16 ? fabs(ref) / 256.0 : 0.0) + 1e-5 * (double)k;
            if (fabs(ref - got) > tol)
                fail_msg("%s gemm ta=%d tb=%d %lldx%lldx%lld: C(%lld,%lld) = %g, expected %g", pb_dtype_name(t), ta,
                         tb, (long long)m, (long long)n, (long long)k, (long long)i, (long long)j, got, ref);
        }
        for (int64_t j = n; j < ldc; j++) assert_memory_equal(c + (size_t)(i * ldc + j) * es, c0 + (size_t)(i * ldc + j) * es, es);
    }
    G->free(da), G->free(db), G->free(dc);
    free(a), free(b), free(c), free(c0);
}

static void test_gpu_gemm(void **state)
{
    (void)state;
    gpu_engines();
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            gpu_gemm(PB_FLOAT32, ta, tb, 7, 5, 3);
            gpu_gemm(PB_FLOAT32, ta, tb, 65, 33, 130);
            gpu_gemm(PB_BFLOAT16, ta, tb, 9, 11, 40);
            gpu_gemm(PB_BFLOAT16, ta, tb, 64, 48, 256);
        }
}

/* One cublasGemmStridedBatchedEx against the same members as single cuBLAS
 * GEMMs (pb_compute_gemm_batch_loop): padded leading dimensions, strides
 * beyond a matrix, a shared B (stride 0), counts 1 and more, all transposes. */
static void gpu_gemm_batched(pb_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t count, int share_b)
{
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int64_t lda = ac + 1, ldb = bc + 2, ldc = n + 3;
    int64_t sa = ar * lda + 7, sb = share_b ? 0 : br * ldb + 5, sc = m * ldc + 4;
    size_t na = (size_t)(sa * count), nb = (size_t)(share_b ? br * ldb : sb * count), nc = (size_t)(sc * count);
    size_t es = pb_dtype_size(t);
    char *a = malloc(na * es), *b = malloc(nb * es), *c0 = malloc(nc * es), *c1 = malloc(nc * es), *c2 = malloc(nc * es);
    for (size_t i = 0; i < na; i++) pb_dtype_set(t, a, i, pb_rng_hash_uniform(8, 1, i, 0));
    for (size_t i = 0; i < nb; i++) pb_dtype_set(t, b, i, pb_rng_hash_uniform(8, 2, i, 0));
    for (size_t i = 0; i < nc; i++) pb_dtype_set(t, c0, i, pb_rng_hash_uniform(8, 3, i, 0));
    void *da = up(a, na * es), *db = up(b, nb * es), *dc1 = up(c0, nc * es), *dc2 = up(c0, nc * es);
    pb_compute_gemm_batch g = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .alpha = 0.75f, .beta = -0.5f,
                               .a = da, .lda = lda, .stride_a = sa, .b = db, .ldb = ldb, .stride_b = sb,
                               .c = dc1, .ldc = ldc, .stride_c = sc, .count = count, .t = t};
    assert_int_equal(G->gemm_batched(&g), PB_OK);
    g.c = dc2;
    assert_int_equal(pb_compute_gemm_batch_loop(G, &g), PB_OK);
    down(c1, dc1, nc * es);
    down(c2, dc2, nc * es);
    for (size_t i = 0; i < nc; i++) {
        double want = pb_dtype_get(t, c2, i), got = pb_dtype_get(t, c1, i);
        double tol = (t == PB_BFLOAT16 ? fabs(want) / 128.0 : 0.0) + 1e-5 * (double)k;
        if (fabs(want - got) > tol)
            fail_msg("%s batched gemm ta=%d tb=%d %lldx%lldx%lld x%lld: element %zu = %g, single GEMMs give %g",
                     pb_dtype_name(t), ta, tb, (long long)m, (long long)n, (long long)k, (long long)count, i, got, want);
    }
    G->free(da), G->free(db), G->free(dc1), G->free(dc2);
    free(a), free(b), free(c0), free(c1), free(c2);
}

static void test_gpu_gemm_batched(void **state)
{
    (void)state;
    gpu_engines();
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            gpu_gemm_batched(PB_FLOAT32, ta, tb, 7, 5, 3, 1, 0);
            gpu_gemm_batched(PB_FLOAT32, ta, tb, 65, 33, 130, 4, 0);
            gpu_gemm_batched(PB_FLOAT32, ta, tb, 16, 16, 64, 3, 1);
            gpu_gemm_batched(PB_BFLOAT16, ta, tb, 64, 48, 256, 5, 0);
        }
}

/* gelu, softmax and convert on the GPU vs the BLAS engine on the same input. */
static void gpu_elementwise(pb_dtype t)
{
    enum { R = 37, C = 1000, N = R * C };
    const size_t es = pb_dtype_size(t), bytes = (size_t)N * es;
    char *x = malloc(bytes), *dy = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes), *ref2 = malloc(bytes);
    for (size_t i = 0; i < N; i++) {
        pb_dtype_set(t, x, i, 4.0 * pb_rng_hash_uniform(6, 1, i, 0));
        pb_dtype_set(t, dy, i, pb_rng_hash_uniform(6, 2, i, 0));
    }
    void *dx = up(x, bytes), *ddy = up(dy, bytes), *dout = NULL;
    assert_int_equal(G->alloc(&dout, bytes), PB_OK);
    /* gelu: the same expression (compute/gelu.h), up to the device tanhf's
     * last bits and one bf16 rounding step; the backward reads x, dx aliases dy.
     * Where tanh is near -1 (x < -3), 1 + tanh cancels, so an ulp of tanh is an
     * absolute error of up to ~4e-7 on either side, however small gelu is:
     * hence the absolute 1e-5 beside the relative bound. */
    const double tol = t == PB_BFLOAT16 ? 1.0 / 64 : 1e-5;
    assert_int_equal(B->gelu_fwd(t, N, x, ref), PB_OK);
    assert_int_equal(G->gelu_fwd(t, N, dx, dout), PB_OK);
    down(got, dout, bytes);
    for (size_t i = 0; i < N; i++)
        assert_true(fabs(pb_dtype_get(t, got, i) - pb_dtype_get(t, ref, i)) <= tol * fabs(pb_dtype_get(t, ref, i)) + 1e-5);
    assert_int_equal(B->gelu_bwd(t, N, x, dy, ref2), PB_OK);
    assert_int_equal(G->gelu_bwd(t, N, dx, ddy, ddy), PB_OK);
    down(got, ddy, bytes);
    for (size_t i = 0; i < N; i++)
        assert_true(fabs(pb_dtype_get(t, got, i) - pb_dtype_get(t, ref2, i)) <= tol * fabs(pb_dtype_get(t, ref2, i)) + 1e-5);
    /* softmax forward and backward, rows longer than a block, dx == dy. */
    for (int cols = 3; cols <= C; cols += C - 3) {
        int rows = N / cols;
        assert_int_equal(B->softmax_fwd(t, rows, cols, x, ref), PB_OK);
        assert_int_equal(G->softmax_fwd(t, rows, cols, dx, dout), PB_OK);
        down(got, dout, bytes);
        for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
            assert_true(fabs(pb_dtype_get(t, got, i) - pb_dtype_get(t, ref, i)) <= tol * (1e-2 + pb_dtype_get(t, ref, i)));
        /* Backward from the CPU's y on both sides, so only the row sums and
         * the final rounding differ. dx aliases dy. */
        memcpy(ref2, dy, bytes);
        assert_int_equal(B->softmax_bwd(t, rows, cols, ref, ref2, ref2), PB_OK);
        void *g = up(dy, bytes), *yc = up(ref, bytes);
        assert_int_equal(G->softmax_bwd(t, rows, cols, yc, g, g), PB_OK);
        down(got, g, bytes);
        G->free(g), G->free(yc);
        for (size_t i = 0; i < (size_t)rows * (size_t)cols; i++)
            assert_true(fabs(pb_dtype_get(t, got, i) - pb_dtype_get(t, ref2, i)) <=
                        tol * (fabs(pb_dtype_get(t, ref2, i)) + pb_dtype_get(t, ref, i)) + 1e-6);
    }
    assert_int_equal(G->softmax_fwd(t, R, C, dx, dx), PB_OK); /* in place */
    down(got, dx, bytes);
    assert_int_equal(B->softmax_fwd(t, R, C, x, ref), PB_OK);
    for (size_t i = 0; i < N; i++) assert_true(fabs(pb_dtype_get(t, got, i) - pb_dtype_get(t, ref, i)) <= tol);
    G->free(dx), G->free(ddy), G->free(dout);
    free(x), free(dy), free(ref), free(got), free(ref2);
}

static void test_gpu_elementwise(void **state)
{
    (void)state;
    gpu_engines();
    gpu_elementwise(PB_FLOAT32);
    gpu_elementwise(PB_BFLOAT16);
}

/* convert rounds exactly as pb_dtype_float_to_bf16; fill is bit-identical to the
 * BLAS engine's, padding untouched; more elements than the kernels' grid. */
static void test_gpu_convert_fill(void **state)
{
    (void)state;
    gpu_engines();
    const size_t n = 3000017;
    float *f = malloc(n * 4), *back = malloc(n * 4);
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++) f[i] = 1e3f * pb_rng_hash_uniform(8, 1, i, 0);
    f[0] = 1.00390625f; /* a tie: rounds to even */
    void *df = up(f, n * 4), *dh = NULL;
    assert_int_equal(G->alloc(&dh, n * 2), PB_OK);
    assert_int_equal(G->convert(dh, PB_BFLOAT16, df, PB_FLOAT32, n), PB_OK);
    down(h, dh, n * 2);
    for (size_t i = 0; i < n; i++) assert_int_equal(h[i], pb_dtype_float_to_bf16(f[i]));
    assert_int_equal(G->convert(df, PB_FLOAT32, dh, PB_BFLOAT16, n), PB_OK);
    down(back, df, n * 4);
    for (size_t i = 0; i < n; i++) assert_true(back[i] == pb_dtype_bf16_to_float(h[i]));
    for (int t = 0; t < 2; t++) {
        pb_dtype dt = t ? PB_BFLOAT16 : PB_FLOAT32;
        const int64_t rows = 1500, cols = 1999, ld = 2001; /* 3M elements */
        size_t bytes = (size_t)(rows * ld) * pb_dtype_size(dt);
        pb_compute_fill_spec s = {.seed = 0xfeedULL << 40, .stream = 7, .row0 = 3, .col0 = 1000000007, .scale = 0.3f};
        char *ref = malloc(bytes), *got = malloc(bytes);
        memset(ref, 0xab, bytes);
        void *d = NULL;
        assert_int_equal(G->alloc(&d, bytes), PB_OK);
        assert_int_equal(G->memset(d, 0xab, bytes), PB_OK);
        assert_int_equal(B->fill(ref, dt, rows, cols, ld, &s), PB_OK);
        assert_int_equal(G->fill(d, dt, rows, cols, ld, &s), PB_OK);
        down(got, d, bytes);
        assert_memory_equal(got, ref, bytes);
        G->free(d);
        free(ref), free(got);
    }
    uint64_t fb = 0, tb = 0;
    assert_int_equal(G->mem_info(&fb, &tb), PB_OK);
    assert_true(fb > 0 && fb <= tb);
    G->free(df), G->free(dh);
    free(f), free(back), free(h);
}
#endif

int main(void)
{
    const struct CMUnitTest tests[] = {
#ifdef PB_HAVE_CUDA
        cmocka_unit_test(test_cublas_loads_on_demand),
#endif
        cmocka_unit_test(test_gemm_map),
        cmocka_unit_test(test_select),
#ifdef PB_HAVE_CUDA
        cmocka_unit_test(test_init_without_gpu),
        cmocka_unit_test(test_mpi_device_table),
        cmocka_unit_test(test_gpu_gemm),
        cmocka_unit_test(test_gpu_gemm_batched),
        cmocka_unit_test(test_gpu_elementwise),
        cmocka_unit_test(test_gpu_convert_fill),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
