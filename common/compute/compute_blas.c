/* The OpenBLAS compute engine: host memory, cblas_sgemm in fp32, and
 * cblas_sbgemm for bf16 when both the CPU (avx512_bf16) and the OpenBLAS
 * build (BUILD_BFLOAT16; Debian's lacks it) support it. sbgemm is looked up
 * with dlsym, so a library without it still links and runs: bf16 then runs
 * in fp32 and describe() says so. */
#include "compute/compute.h"
#include "compute/gelu.h"
#include "compute/silu.h"

#include "core/devsync.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/rng.h"

#include <cblas.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*sbgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, blasint, blasint,
                          blasint, float, const bfloat16 *, blasint, const bfloat16 *, blasint, float, float *,
                          blasint);

static struct {
    int threads;
    int cpu_bf16;     /* avx512_bf16 in /proc/cpuinfo */
    sbgemm_fn sbgemm; /* NULL when this OpenBLAS has no sbgemm */
    char desc[256];
} blas = {.threads = 1};

/* True when the "flags" line of /proc/cpuinfo lists `flag` as a whole word. */
static int cpu_has_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int found = 0;
    size_t n = strlen(flag);
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        for (char *p = strstr(line, flag); p && !found; p = strstr(p + 1, flag))
            found = p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0');
        break; /* every core lists the same flags */
    }
    fclose(f);
    return found;
}

static int bf16_native(void) { return blas.cpu_bf16 && blas.sbgemm; }

static void build_description(void)
{
    const char *cfg = openblas_get_config(); /* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..." */
    char version[32] = "?";
    if (cfg) sscanf(cfg, "OpenBLAS %31s", version);
    const char *why = blas.cpu_bf16 ? "this OpenBLAS has no sbgemm" : "no avx512_bf16 on this CPU";
    char bf16[96];
    if (bf16_native()) snprintf(bf16, sizeof bf16, "bf16 via sbgemm");
    else snprintf(bf16, sizeof bf16, "bf16 runs in fp32 (%s)", why);
    snprintf(blas.desc, sizeof blas.desc, "OpenBLAS %s (%s), %d thread%s; fp32 via sgemm; %s", version,
             openblas_get_corename(), blas.threads, blas.threads == 1 ? "" : "s", bf16);
}

static int blas_init(const pb_compute_opts *opts)
{
    int threads = opts && opts->threads > 0 ? opts->threads : 1;
    blas.threads = threads;
    openblas_set_num_threads(threads);
    blas.cpu_bf16 = cpu_has_flag("avx512_bf16");
    void *sym = dlsym(RTLD_DEFAULT, "cblas_sbgemm"); /* POSIX: object pointer to function pointer */
    memcpy(&blas.sbgemm, &sym, sizeof sym);
    build_description();
    return PB_OK;
}

static void blas_finalize(void) {}

static const char *blas_describe(void)
{
    if (!blas.desc[0]) build_description();
    return blas.desc;
}

static pb_dtype blas_gemm_dtype(pb_dtype requested)
{
    return requested == PB_BFLOAT16 && bf16_native() ? PB_BFLOAT16 : PB_FLOAT32;
}

static int blas_mem_info(uint64_t *free_bytes, uint64_t *total_bytes)
{
    return pb_mem_host(free_bytes, total_bytes);
}

/* Rehearsing NCCL (core/devsync.h), the host engine stands for the GPU
 * engine, whose cudaMalloc and cudaFree synchronise the device. */
static int blas_alloc(void **ptr, size_t bytes)
{
    PB_TRY(pb_devsync_wait("the compute engine's allocation (cudaMalloc)"));
    /* 64-byte alignment: whole cache lines, and AVX-512 friendly. */
    size_t rounded = (bytes + 63) & ~(size_t)63;
    *ptr = aligned_alloc(64, rounded ? rounded : 64);
    PB_CHECK(*ptr, PB_ERR_ENV, "allocating %zu bytes of host memory: out of memory", bytes);
    return PB_OK;
}

static void blas_free(void *ptr)
{
    /* After a timeout the job is ending: leak rather than free under a stuck peer. */
    if (ptr && pb_devsync_wait("the compute engine's free (cudaFree)") != PB_ERR_TIMEOUT) free(ptr);
}

static int blas_memset(void *ptr, int byte, size_t bytes)
{
    memset(ptr, byte, bytes);
    return PB_OK;
}

static int blas_copy(void *dst, const void *src, size_t bytes)
{
    if (dst != src) memmove(dst, src, bytes);
    return PB_OK;
}

/* Copy rows x cols of a bf16 matrix (leading dimension ld) to a dense fp32 one. */
static void bf16_to_f32_matrix(float *dst, const uint16_t *src, int64_t rows, int64_t cols, int64_t ld)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) dst[i * cols + j] = pb_dtype_bf16_to_float(src[i * ld + j]);
}

/* bf16 GEMM: A and B go to sbgemm as they are when it is native; otherwise they
 * are widened to fp32 first (correct, slow: only reached when a caller asks
 * for bf16 despite gemm_dtype). C is accumulated in fp32 and rounded once. */
static int gemm_bf16(pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k, float alpha, const void *a,
                     int64_t lda, const void *b, int64_t ldb, float beta, void *c, int64_t ldc)
{
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    size_t need = (size_t)(m * n) + (bf16_native() ? 0 : (size_t)(ar * ac + br * bc));
    float *cf = calloc(need, sizeof(float));
    PB_CHECK(cf, PB_ERR_ENV, "bf16 gemm scratch of %zu floats: out of memory", need);
    uint16_t *cb = c;
    if (beta != 0.0f) bf16_to_f32_matrix(cf, cb, m, n, ldc);
    enum CBLAS_TRANSPOSE cta = ta ? CblasTrans : CblasNoTrans, ctb = tb ? CblasTrans : CblasNoTrans;
    if (bf16_native()) {
        blas.sbgemm(CblasRowMajor, cta, ctb, (blasint)m, (blasint)n, (blasint)k, alpha, a, (blasint)lda, b,
                    (blasint)ldb, beta, cf, (blasint)n);
    } else {
        float *af = cf + m * n, *bf = af + ar * ac;
        bf16_to_f32_matrix(af, a, ar, ac, lda);
        bf16_to_f32_matrix(bf, b, br, bc, ldb);
        cblas_sgemm(CblasRowMajor, cta, ctb, (blasint)m, (blasint)n, (blasint)k, alpha, af, (blasint)ac, bf,
                    (blasint)bc, beta, cf, (blasint)n);
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) cb[i * ldc + j] = pb_dtype_float_to_bf16(cf[i * n + j]);
    free(cf);
    return PB_OK;
}

static int blas_gemm(pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k, float alpha, const void *a,
                     int64_t lda, const void *b, int64_t ldb, float beta, void *c, int64_t ldc, pb_dtype t)
{
    PB_CHECK(m >= 0 && n >= 0 && k >= 0, PB_ERR_USAGE, "gemm: negative shape %lldx%lldx%lld", (long long)m,
             (long long)n, (long long)k);
    if (m == 0 || n == 0) return PB_OK;
    if (t == PB_BFLOAT16) return gemm_bf16(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    PB_CHECK(t == PB_FLOAT32, PB_ERR_USAGE, "gemm: type %s not supported (float or bfloat16)", pb_dtype_name(t));
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (blasint)m,
                (blasint)n, (blasint)k, alpha, a, (blasint)lda, b, (blasint)ldb, beta, c, (blasint)ldc);
    return PB_OK;
}

/* OpenBLAS 0.3.21 (Debian 12) has no batched GEMM: a loop of blas_gemm. */
static int blas_gemm_batched(const pb_compute_gemm_batch *g) { return pb_compute_gemm_batch_loop(pb_compute_blas(), g); }

static float load(pb_dtype t, const void *p, size_t i)
{
    return t == PB_BFLOAT16 ? pb_dtype_bf16_to_float(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

static void store(pb_dtype t, void *p, size_t i, float v)
{
    if (t == PB_BFLOAT16) ((uint16_t *)p)[i] = pb_dtype_float_to_bf16(v);
    else ((float *)p)[i] = v;
}

static int check_float_type(pb_dtype t, const char *what)
{
    PB_CHECK(t == PB_FLOAT32 || t == PB_BFLOAT16, PB_ERR_USAGE, "%s: type %s not supported (float or bfloat16)",
             what, pb_dtype_name(t));
    return PB_OK;
}

static int blas_gelu_fwd(pb_dtype t, size_t n, const void *x, void *y)
{
    PB_TRY(check_float_type(t, "gelu"));
    for (size_t i = 0; i < n; i++) store(t, y, i, pb_gelu(load(t, x, i)));
    return PB_OK;
}

static int blas_gelu_bwd(pb_dtype t, size_t n, const void *x, const void *dy, void *dx)
{
    PB_TRY(check_float_type(t, "gelu backward"));
    for (size_t i = 0; i < n; i++) store(t, dx, i, pb_gelu_grad(load(t, x, i)) * load(t, dy, i));
    return PB_OK;
}

static int blas_swiglu_fwd(pb_dtype t, int64_t rows, int64_t f, const void *z, void *y)
{
    PB_TRY(check_float_type(t, "swiglu"));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < f; j++) {
            size_t g = (size_t)(r * 2 * f + j);
            store(t, y, (size_t)(r * f + j), pb_silu(load(t, z, g)) * load(t, z, g + (size_t)f));
        }
    return PB_OK;
}

/* In place: (row, j) reads dY at the gate's position before writing both halves. */
static int blas_swiglu_bwd(pb_dtype t, int64_t rows, int64_t f, const void *z, void *d)
{
    PB_TRY(check_float_type(t, "swiglu backward"));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < f; j++) {
            size_t g = (size_t)(r * 2 * f + j);
            float gate = load(t, z, g), up = load(t, z, g + (size_t)f), dy = load(t, d, g);
            store(t, d, g, dy * up * pb_silu_grad(gate));
            store(t, d, g + (size_t)f, dy * pb_silu(gate));
        }
    return PB_OK;
}

static int blas_softmax_fwd(pb_dtype t, int64_t rows, int64_t cols, const void *x, void *y)
{
    PB_TRY(check_float_type(t, "softmax"));
    for (int64_t r = 0; r < rows; r++) {
        size_t o = (size_t)(r * cols);
        float mx = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < cols; j++) mx = fmaxf(mx, load(t, x, o + (size_t)j));
        for (int64_t j = 0; j < cols; j++) {
            float e = expf(load(t, x, o + (size_t)j) - mx);
            store(t, y, o + (size_t)j, e); /* y may be x: read before write, element by element */
            sum += e;
        }
        for (int64_t j = 0; j < cols; j++) store(t, y, o + (size_t)j, load(t, y, o + (size_t)j) / sum);
    }
    return PB_OK;
}

static int blas_softmax_bwd(pb_dtype t, int64_t rows, int64_t cols, const void *y, const void *dy, void *dx)
{
    PB_TRY(check_float_type(t, "softmax backward"));
    for (int64_t r = 0; r < rows; r++) {
        size_t o = (size_t)(r * cols);
        float dot = 0.0f;
        for (int64_t j = 0; j < cols; j++) dot += load(t, y, o + (size_t)j) * load(t, dy, o + (size_t)j);
        for (int64_t j = 0; j < cols; j++) {
            float yv = load(t, y, o + (size_t)j);
            store(t, dx, o + (size_t)j, yv * (load(t, dy, o + (size_t)j) - dot));
        }
    }
    return PB_OK;
}

static int blas_softmax_online(pb_dtype t, int64_t rows, int64_t cols, void *s, void *o, int64_t ocols, float *stats)
{
    PB_TRY(check_float_type(t, "online softmax"));
    for (int64_t r = 0; r < rows; r++) {
        size_t so = (size_t)(r * cols), oo = (size_t)(r * ocols);
        float m = stats[2 * r], l = stats[2 * r + 1], mx = -INFINITY, sum = 0.0f;
        for (int64_t j = 0; j < cols; j++) mx = fmaxf(mx, load(t, s, so + (size_t)j));
        float m_new = l > 0.0f ? fmaxf(m, mx) : mx, corr = l > 0.0f ? expf(m - m_new) : 0.0f;
        for (int64_t j = 0; j < cols; j++) {
            float e = expf(load(t, s, so + (size_t)j) - m_new);
            store(t, s, so + (size_t)j, e);
            sum += e;
        }
        /* The first block overwrites o: its old contents may be anything. */
        for (int64_t j = 0; j < ocols; j++)
            store(t, o, oo + (size_t)j, l > 0.0f ? load(t, o, oo + (size_t)j) * corr : 0.0f);
        stats[2 * r] = m_new;
        stats[2 * r + 1] = l * corr + sum;
    }
    return PB_OK;
}

static int blas_softmax_online_end(pb_dtype t, int64_t rows, int64_t ocols, void *o, float *stats)
{
    PB_TRY(check_float_type(t, "online softmax end"));
    for (int64_t r = 0; r < rows; r++) {
        float l = stats[2 * r + 1];
        for (int64_t j = 0; j < ocols; j++) {
            size_t i = (size_t)(r * ocols + j);
            store(t, o, i, load(t, o, i) / l);
        }
        stats[2 * r] += logf(l);
    }
    return PB_OK;
}

static int blas_softmax_online_bwd(pb_dtype t, int64_t rows, int64_t cols, void *s, void *dp, const void *o,
                                   const void *d_o, int64_t ocols, const float *stats)
{
    PB_TRY(check_float_type(t, "online softmax backward"));
    for (int64_t r = 0; r < rows; r++) {
        float d = 0.0f, lse = stats[2 * r];
        for (int64_t j = 0; j < ocols; j++) d += load(t, d_o, (size_t)(r * ocols + j)) * load(t, o, (size_t)(r * ocols + j));
        for (int64_t j = 0; j < cols; j++) {
            size_t i = (size_t)(r * cols + j);
            float p = expf(load(t, s, i) - lse);
            store(t, s, i, p);
            store(t, dp, i, p * (load(t, dp, i) - d));
        }
    }
    return PB_OK;
}

static int blas_add(pb_dtype t, size_t n, const void *x, void *y)
{
    PB_TRY(check_float_type(t, "add"));
    for (size_t i = 0; i < n; i++) store(t, y, i, load(t, y, i) + load(t, x, i));
    return PB_OK;
}

static int blas_convert(void *dst, pb_dtype dst_t, const void *src, pb_dtype src_t, size_t n)
{
    PB_TRY(check_float_type(dst_t, "convert"));
    PB_TRY(check_float_type(src_t, "convert"));
    if (dst_t == src_t) return blas_copy(dst, src, n * pb_dtype_size(dst_t));
    for (size_t i = 0; i < n; i++) store(dst_t, dst, i, load(src_t, src, i));
    return PB_OK;
}

static int blas_fill(void *ptr, pb_dtype t, int64_t rows, int64_t cols, int64_t ld, const pb_compute_fill_spec *s)
{
    PB_TRY(check_float_type(t, "fill"));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            store(t, ptr, (size_t)(i * ld + j),
                  s->scale * pb_rng_hash_uniform(s->seed, s->stream, (uint64_t)(s->row0 + i), (uint64_t)(s->col0 + j)));
    return PB_OK;
}

static int blas_synchronize(void) { return PB_OK; }

static const pb_compute blas_engine = {
    .name = "blas",
    .mem = PB_MEM_HOST,
    .init = blas_init,
    .finalize = blas_finalize,
    .describe = blas_describe,
    .gemm_dtype = blas_gemm_dtype,
    .mem_info = blas_mem_info,
    .alloc = blas_alloc,
    .free = blas_free,
    .memset = blas_memset,
    .copy = blas_copy,
    .to_host = blas_copy,
    .from_host = blas_copy,
    .gemm = blas_gemm,
    .gemm_batched = blas_gemm_batched,
    .swiglu_fwd = blas_swiglu_fwd,
    .swiglu_bwd = blas_swiglu_bwd,
    .gelu_fwd = blas_gelu_fwd,
    .gelu_bwd = blas_gelu_bwd,
    .softmax_fwd = blas_softmax_fwd,
    .softmax_bwd = blas_softmax_bwd,
    .softmax_online = blas_softmax_online,
    .softmax_online_end = blas_softmax_online_end,
    .softmax_online_bwd = blas_softmax_online_bwd,
    .add = blas_add,
    .convert = blas_convert,
    .fill = blas_fill,
    .synchronize = blas_synchronize,
};

const pb_compute *pb_compute_blas(void) { return &blas_engine; }
