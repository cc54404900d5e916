/* The BLAS compute engine against naive reference loops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compute/compute.h"
#include "core/error.h"
#include "core/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pb_compute *E;

static int setup(void **state)
{
    (void)state;
    E = pb_compute_blas();
    pb_compute_opts o = {.threads = 1};
    return E->init(&o);
}

/* Element (i, j) of op(M), M row-major with leading dimension ld. */
static double elem(const float *m, int64_t ld, int trans, int64_t i, int64_t j)
{
    return trans ? m[j * ld + i] : m[i * ld + j];
}

static void fill_host(float *p, size_t n, uint64_t stream)
{
    for (size_t i = 0; i < n; i++) p[i] = pb_rng_hash_uniform(42, stream, i, 0);
}

/* One GEMM with padded leading dimensions, alpha/beta != 1/0, vs a double loop. */
static void check_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k)
{
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int64_t lda = ac + 3, ldb = bc + 5, ldc = n + 2;
    float *a = malloc(sizeof(float) * (size_t)(ar * lda)), *b = malloc(sizeof(float) * (size_t)(br * ldb));
    float *c = malloc(sizeof(float) * (size_t)(m * ldc)), *c0 = malloc(sizeof(float) * (size_t)(m * ldc));
    fill_host(a, (size_t)(ar * lda), 1);
    fill_host(b, (size_t)(br * ldb), 2);
    fill_host(c, (size_t)(m * ldc), 3);
    memcpy(c0, c, sizeof(float) * (size_t)(m * ldc));
    const float alpha = 0.75f, beta = -0.5f;
    assert_int_equal(E->gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, PB_FLOAT32), PB_OK);
    double maxerr = 0;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double ref = beta * c0[i * ldc + j];
            for (int64_t p = 0; p < k; p++) ref += alpha * elem(a, lda, ta, i, p) * elem(b, ldb, tb, p, j);
            maxerr = fmax(maxerr, fabs(ref - c[i * ldc + j]));
        }
        /* Padding columns of C must be untouched. */
        for (int64_t j = n; j < ldc; j++) assert_true(c[i * ldc + j] == c0[i * ldc + j]);
    }
    assert_true(maxerr <= 1e-5 * (double)k);
    free(a), free(b), free(c), free(c0);
}

static void test_gemm_fp32_all_transposes(void **state)
{
    (void)state;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_gemm(ta, tb, 7, 5, 3);
            check_gemm(ta, tb, 33, 17, 65);
        }
}

/* bf16 storage, fp32 accumulate: inputs are exact bf16 values, so the only
 * error is fp32 summation plus one rounding of C to bf16 (2^-8 relative). */
static void test_gemm_bf16(void **state)
{
    (void)state;
    const int64_t m = 9, n = 11, k = 40;
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            uint16_t a[9 * 40], b[40 * 11], c[9 * 11];
            for (int i = 0; i < m * k; i++) a[i] = pb_dtype_float_to_bf16(pb_rng_hash_uniform(1, 7, (uint64_t)i, 0));
            for (int i = 0; i < k * n; i++) b[i] = pb_dtype_float_to_bf16(pb_rng_hash_uniform(1, 8, (uint64_t)i, 0));
            assert_int_equal(E->gemm(ta, tb, m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n, 0.0f, c, n, PB_BFLOAT16),
                             PB_OK);
            for (int64_t i = 0; i < m; i++) {
                for (int64_t j = 0; j < n; j++) {
                    double ref = 0;
                    for (int64_t p = 0; p < k; p++) {
                        double av = pb_dtype_bf16_to_float(ta ? a[p * m + i] : a[i * k + p]);
                        double bv = pb_dtype_bf16_to_float(tb ? b[j * k + p] : b[p * n + j]);
                        ref += av * bv;
                    }
                    assert_true(fabs(ref - pb_dtype_bf16_to_float(c[i * n + j])) <= fabs(ref) / 256.0 + 1e-5 * k);
                }
            }
        }
    }
}

/* gelu's tanh form in double, the reference of the engine's fp32 one. */
static double gelu_ref(double x)
{
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* gelu against its tanh form in double and within 1e-3 of the exact x Phi(x)
 * (what the tanh form approximates); its backward against central differences
 * of that form; in place, and in bf16. */
static void test_gelu(void **state)
{
    (void)state;
    enum { n = 9 };
    float x[n] = {-6.0f, -2.0f, -0.7f, -0.0f, 0.0f, 0.3f, 1.0f, 3.0f, 8.0f}, y[n], dx[n];
    float dy[n] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    assert_int_equal(E->gelu_fwd(PB_FLOAT32, n, x, y), PB_OK);
    assert_int_equal(E->gelu_bwd(PB_FLOAT32, n, x, dy, dx), PB_OK);
    for (int i = 0; i < n; i++) {
        double want = gelu_ref(x[i]), exact = 0.5 * x[i] * erfc(-x[i] / sqrt(2));
        assert_true(fabs(y[i] - want) <= 1e-6 * (1 + fabs(want)));
        assert_true(fabs(want - exact) <= 1e-3);
        double e = 1e-4, slope = (gelu_ref(x[i] + e) - gelu_ref(x[i] - e)) / (2 * e);
        assert_true(fabs(dx[i] - slope * dy[i]) <= 1e-5 * fabs(dy[i]) * (1 + fabs(slope)));
    }
    assert_true(y[4] == 0.0f && dx[4] == 0.5f * dy[4]); /* gelu(0) = 0, gelu'(0) = 1/2 */
    /* bf16, dx aliasing dy: the fp32 results on the bf16 inputs, rounded */
    uint16_t xb[n], db[n];
    float xr[n], dyr[n], yr[n], dxr[n];
    for (int i = 0; i < n; i++) {
        xb[i] = pb_dtype_float_to_bf16(x[i]), db[i] = pb_dtype_float_to_bf16(dy[i]);
        xr[i] = pb_dtype_bf16_to_float(xb[i]), dyr[i] = pb_dtype_bf16_to_float(db[i]);
    }
    assert_int_equal(E->gelu_fwd(PB_FLOAT32, n, xr, yr), PB_OK);
    assert_int_equal(E->gelu_bwd(PB_FLOAT32, n, xr, dyr, dxr), PB_OK);
    assert_int_equal(E->gelu_bwd(PB_BFLOAT16, n, xb, db, db), PB_OK);
    assert_int_equal(E->gelu_fwd(PB_BFLOAT16, n, xb, xb), PB_OK);
    for (int i = 0; i < n; i++) {
        assert_true(xb[i] == pb_dtype_float_to_bf16(yr[i]));
        assert_true(db[i] == pb_dtype_float_to_bf16(dxr[i]));
    }
    float same[n];
    memcpy(same, x, sizeof x);
    assert_int_equal(E->gelu_fwd(PB_FLOAT32, n, same, same), PB_OK);
    assert_memory_equal(same, y, sizeof y);
    assert_int_equal(E->gelu_fwd(PB_INT32, n, x, y), PB_ERR_USAGE);
    assert_int_equal(E->gelu_bwd(PB_INT32, n, x, dy, dx), PB_ERR_USAGE);
}

/* softmax rows against exp/sum in double; backward against finite differences
 * of L = <softmax(x), g> (its gradient is exactly what softmax_bwd returns). */
static void test_softmax(void **state)
{
    (void)state;
    enum { R = 3, C = 7 };
    float x[R * C], y[R * C], g[R * C], dx[R * C], xp[R * C], yp[R * C];
    for (int i = 0; i < R * C; i++) x[i] = 4 * pb_rng_hash_uniform(5, 1, (uint64_t)i, 0), g[i] = pb_rng_hash_uniform(5, 2, (uint64_t)i, 0);
    x[0] = 80.0f; /* exp(80) overflows fp32 unless the row maximum is subtracted */
    assert_int_equal(E->softmax_fwd(PB_FLOAT32, R, C, x, y), PB_OK);
    for (int r = 0; r < R; r++) {
        double sum = 0, mx = -1e30;
        for (int j = 0; j < C; j++) mx = fmax(mx, x[r * C + j]);
        for (int j = 0; j < C; j++) sum += exp(x[r * C + j] - mx);
        for (int j = 0; j < C; j++) assert_true(fabs(y[r * C + j] - exp(x[r * C + j] - mx) / sum) <= 1e-6);
    }
    assert_int_equal(E->softmax_bwd(PB_FLOAT32, R, C, y, g, dx), PB_OK);
    const float e = 1e-2f;
    for (int i = 1; i < R * C; i++) {
        double lp, lm;
        memcpy(xp, x, sizeof x), xp[i] += e;
        E->softmax_fwd(PB_FLOAT32, R, C, xp, yp);
        lp = 0;
        for (int j = 0; j < R * C; j++) lp += (double)yp[j] * g[j];
        memcpy(xp, x, sizeof x), xp[i] -= e;
        E->softmax_fwd(PB_FLOAT32, R, C, xp, yp);
        lm = 0;
        for (int j = 0; j < R * C; j++) lm += (double)yp[j] * g[j];
        assert_true(fabs((lp - lm) / (2 * e) - dx[i]) <= 1e-3);
    }
    assert_int_equal(E->softmax_fwd(PB_FLOAT32, R, C, x, x), PB_OK); /* in place */
    assert_memory_equal(x, y, sizeof x);
}

/* The online softmax over two column blocks of a row (ring attention's
 * combination) against softmax over the whole row: O = P V, the stats' log-sum-exp,
 * and the backward's P and dS against softmax_bwd of the whole row with
 * dy = dO V^T. Row 1's largest value sits in the second block, so the first
 * block's partial O is rescaled; O starts as NaN, which the first block overwrites. */
static void test_softmax_online(void **state)
{
    (void)state;
    enum { R = 3, C1 = 4, C2 = 5, C = C1 + C2, D = 2 };
    float x[R * C], v[C * D], o[R * D], st[2 * R] = {0}, blk[R * C2], y[R * C], dO[R * D], dy[R * C], dx[R * C];
    for (int i = 0; i < R * C; i++) x[i] = 4 * pb_rng_hash_uniform(6, 1, (uint64_t)i, 0);
    for (int i = 0; i < C * D; i++) v[i] = pb_rng_hash_uniform(6, 2, (uint64_t)i, 0);
    for (int i = 0; i < R * D; i++) o[i] = NAN, dO[i] = pb_rng_hash_uniform(6, 3, (uint64_t)i, 0);
    x[0] = 80.0f, x[C + C1 + 2] = 60.0f;
    for (int b = 0; b < 2; b++) {
        int c0 = b ? C1 : 0, w = b ? C2 : C1;
        for (int r = 0; r < R; r++) memcpy(blk + r * w, x + r * C + c0, sizeof(float) * (size_t)w);
        assert_int_equal(E->softmax_online(PB_FLOAT32, R, w, blk, o, D, st), PB_OK);
        for (int r = 0; r < R; r++)
            for (int d = 0; d < D; d++)
                for (int j = 0; j < w; j++) o[r * D + d] += blk[r * w + j] * v[(c0 + j) * D + d];
    }
    assert_int_equal(E->softmax_online_end(PB_FLOAT32, R, D, o, st), PB_OK);
    assert_int_equal(E->softmax_fwd(PB_FLOAT32, R, C, x, y), PB_OK);
    for (int r = 0; r < R; r++) {
        double mx = -1e30, sum = 0;
        for (int j = 0; j < C; j++) mx = fmax(mx, x[r * C + j]);
        for (int j = 0; j < C; j++) sum += exp(x[r * C + j] - mx);
        assert_true(fabs(st[2 * r] - (mx + log(sum))) <= 1e-4 * fabs(mx + log(sum)));
        for (int d = 0; d < D; d++) {
            double want = 0;
            for (int j = 0; j < C; j++) want += (double)y[r * C + j] * v[j * D + d];
            assert_true(fabs(o[r * D + d] - want) <= 1e-5);
        }
    }
    /* Backward, block 2: dP = dO V^T over its columns. */
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C; j++) {
            dy[r * C + j] = 0;
            for (int d = 0; d < D; d++) dy[r * C + j] += dO[r * D + d] * v[j * D + d];
        }
    assert_int_equal(E->softmax_bwd(PB_FLOAT32, R, C, y, dy, dx), PB_OK);
    float s2[R * C2], dp2[R * C2];
    for (int r = 0; r < R; r++) {
        memcpy(s2 + r * C2, x + r * C + C1, sizeof(float) * C2);
        memcpy(dp2 + r * C2, dy + r * C + C1, sizeof(float) * C2);
    }
    assert_int_equal(E->softmax_online_bwd(PB_FLOAT32, R, C2, s2, dp2, o, dO, D, st), PB_OK);
    for (int r = 0; r < R; r++)
        for (int j = 0; j < C2; j++) {
            assert_true(fabs(s2[r * C2 + j] - y[r * C + C1 + j]) <= 1e-5);
            assert_true(fabs(dp2[r * C2 + j] - dx[r * C + C1 + j]) <= 1e-5);
        }
    float a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50};
    assert_int_equal(E->add(PB_FLOAT32, 4, a, b), PB_OK);
    assert_true(b[0] == 11 && b[3] == 44 && b[4] == 50); /* n elements, no more */
}

static void test_convert_and_copies(void **state)
{
    (void)state;
    float src[4] = {1.0f, -2.5f, 1.00390625f /* 1 + 2^-8: a bf16 tie, rounds to even 1.0 */, 3.0e5f};
    uint16_t bf[4];
    float back[4], host[4];
    void *dev = NULL;
    assert_int_equal(E->convert(bf, PB_BFLOAT16, src, PB_FLOAT32, 4), PB_OK);
    assert_int_equal(E->convert(back, PB_FLOAT32, bf, PB_BFLOAT16, 4), PB_OK);
    assert_true(back[0] == 1.0f && back[1] == -2.5f && back[2] == 1.0f);
    assert_true(fabsf(back[3] - 3.0e5f) <= 3.0e5f / 256);
    assert_int_equal(E->alloc(&dev, sizeof src), PB_OK);
    assert_int_equal(E->from_host(dev, src, sizeof src), PB_OK);
    assert_int_equal(E->to_host(host, dev, sizeof src), PB_OK);
    assert_memory_equal(host, src, sizeof src);
    assert_int_equal(E->memset(dev, 0, sizeof src), PB_OK);
    assert_int_equal(E->to_host(host, dev, sizeof src), PB_OK);
    for (int i = 0; i < 4; i++) assert_true(host[i] == 0.0f);
    E->free(dev);
}

/* A block filled at (row0, col0) equals that slice of the full matrix's fill. */
static void test_fill_slices(void **state)
{
    (void)state;
    enum { R = 12, C = 10 };
    float full[R * C], part[5 * 4];
    pb_compute_fill_spec s = {.seed = 9, .stream = 3, .scale = 0.5f};
    assert_int_equal(E->fill(full, PB_FLOAT32, R, C, C, &s), PB_OK);
    s.row0 = 6, s.col0 = 4;
    assert_int_equal(E->fill(part, PB_FLOAT32, 5, 4, 4, &s), PB_OK);
    double sum = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) assert_true(part[i * 4 + j] == full[(i + 6) * C + j + 4]);
    for (int i = 0; i < R * C; i++) {
        assert_true(full[i] >= -0.5f && full[i] < 0.5f);
        sum += full[i];
    }
    assert_true(fabs(sum / (R * C)) < 0.1); /* centred */
    assert_true(full[0] != full[1] && full[0] != full[C]);
    s.seed = 10, s.row0 = 0, s.col0 = 0;
    assert_int_equal(E->fill(part, PB_FLOAT32, 1, 1, 1, &s), PB_OK);
    assert_true(part[0] != full[0]);
}

static void test_describe_and_dtype(void **state)
{
    (void)state;
    const char *d = E->describe();
    fprintf(stderr, "engine: %s\n", d);
    assert_non_null(strstr(d, "OpenBLAS"));
    assert_non_null(strstr(d, "1 thread;"));
    assert_int_equal(E->gemm_dtype(PB_FLOAT32), PB_FLOAT32);
    /* bf16 runs natively exactly when the description says so. */
    int native = strstr(d, "bf16 via sbgemm") != NULL;
    assert_int_equal(E->gemm_dtype(PB_BFLOAT16), native ? PB_BFLOAT16 : PB_FLOAT32);
    if (!native) assert_non_null(strstr(d, "bf16 runs in fp32"));
    pb_compute_opts two = {.threads = 2};
    assert_int_equal(E->init(&two), PB_OK);
    assert_non_null(strstr(E->describe(), "2 threads"));
    pb_compute_opts one = {.threads = 0}; /* 0 = default: 1 */
    assert_int_equal(E->init(&one), PB_OK);
    assert_non_null(strstr(E->describe(), "1 thread;"));
}

static void test_select_and_helpers(void **state)
{
    (void)state;
    const pb_compute *e = NULL;
    assert_int_equal(pb_compute_select("--engine", "blas", &e), PB_OK);
    assert_ptr_equal(e, E);
    assert_int_equal(pb_compute_select("--engine", "nope", &e), PB_ERR_USAGE);
    int st = pb_compute_select("--engine", "cublas", &e);
    assert_true(st == PB_OK || st == PB_ERR_ENV);
    assert_true(pb_compute_gflops(3e9, 1.5) == 2.0);
    assert_true(pb_compute_gflops(1e9, 0.0) == 0.0);
    uint64_t freeb = 0, total = 0;
    assert_int_equal(E->mem_info(&freeb, &total), PB_OK);
    assert_true(freeb > 0 && freeb <= total);
}

/* Prints the single-thread sgemm rate; only checks it is positive. */
static void test_gemm_rate(void **state)
{
    (void)state;
    static const int64_t sizes[] = {256, 512, 1024};
    for (size_t i = 0; i < 3; i++) {
        double g = 0;
        int64_t n = sizes[i];
        assert_int_equal(pb_compute_gemm_benchmark(E, n, n, n, PB_FLOAT32, n >= 1024 ? 3 : 10, &g), PB_OK);
        fprintf(stderr, "sgemm %lldx%lldx%lld, 1 thread: %.1f GFLOP/s\n", (long long)n, (long long)n,
                (long long)n, g);
        assert_true(g > 0);
    }
    double g = 0;
    assert_int_equal(pb_compute_gemm_benchmark(E, 0, 4, 4, PB_FLOAT32, 1, &g), PB_ERR_USAGE);
}

/* A strided batch against each member computed alone by the double loop:
 * padded leading dimensions, alpha/beta, operand strides larger than a
 * matrix, a shared (stride 0) operand, and the C gaps between members untouched. */
static void check_gemm_batched(int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t count, int share_b)
{
    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
    int64_t lda = ac + 1, ldb = bc + 2, ldc = n + 3;
    int64_t sa = ar * lda + 7, sb = share_b ? 0 : br * ldb + 5, sc = m * ldc + 4;
    size_t na = (size_t)(sa * count), nb = (size_t)(share_b ? br * ldb : sb * count), nc = (size_t)(sc * count);
    float *a = malloc(sizeof(float) * na), *b = malloc(sizeof(float) * nb);
    float *c = malloc(sizeof(float) * nc), *c0 = malloc(sizeof(float) * nc);
    fill_host(a, na, 11);
    fill_host(b, nb, 12);
    fill_host(c, nc, 13);
    memcpy(c0, c, sizeof(float) * nc);
    const float alpha = -1.25f, beta = 0.5f;
    pb_compute_gemm_batch g = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
                               .a = a, .lda = lda, .stride_a = sa, .b = b, .ldb = ldb, .stride_b = sb,
                               .c = c, .ldc = ldc, .stride_c = sc, .count = count, .t = PB_FLOAT32};
    assert_non_null(E->gemm_batched);
    assert_int_equal(E->gemm_batched(&g), PB_OK);
    double maxerr = 0;
    for (int64_t q = 0; q < count; q++) {
        const float *aq = a + q * sa, *bq = b + q * sb, *c0q = c0 + q * sc;
        const float *cq = c + q * sc;
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                double ref = beta * c0q[i * ldc + j];
                for (int64_t p = 0; p < k; p++) ref += alpha * elem(aq, lda, ta, i, p) * elem(bq, ldb, tb, p, j);
                maxerr = fmax(maxerr, fabs(ref - cq[i * ldc + j]));
            }
            for (int64_t j = n; j < ldc; j++) assert_true(cq[i * ldc + j] == c0q[i * ldc + j]);
        }
        for (int64_t e = m * ldc; e < sc; e++) assert_true(cq[e] == c0q[e]); /* the gap after C_q */
    }
    if (maxerr > 1e-4 * (double)k) fprintf(stderr, "batched ta=%d tb=%d %lldx%lldx%lld x%lld: max error %g\n", ta, tb,
                                            (long long)m, (long long)n, (long long)k, (long long)count, maxerr);
    assert_true(maxerr <= 1e-4 * (double)k);
    free(a), free(b), free(c), free(c0);
}

static void test_gemm_batched(void **state)
{
    (void)state;
    const int64_t shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {16, 16, 8}, {3, 17, 9}};
    const int64_t counts[] = {1, 2, 5};
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                for (size_t q = 0; q < sizeof counts / sizeof counts[0]; q++)
                    check_gemm_batched(ta, tb, shapes[s][0], shapes[s][1], shapes[s][2], counts[q], (int)(q == 2));
    /* count 0 and empty shapes do nothing; negative values are usage errors */
    pb_compute_gemm_batch g = {.m = 2, .n = 2, .k = 2, .lda = 2, .ldb = 2, .ldc = 2, .count = 0, .t = PB_FLOAT32};
    assert_int_equal(pb_compute_gemm_batched(E, &g), PB_OK);
    g.count = -1;
    assert_int_equal(pb_compute_gemm_batched(E, &g), PB_ERR_USAGE);
    g.count = 1, g.stride_c = -4;
    assert_int_equal(pb_compute_gemm_batched(E, &g), PB_ERR_USAGE);
}

/* The mixer is splitmix64's finaliser: its first two outputs from seed 0 are
 * the published 0xe220a8397b1dcdaf and 0x6e789e6aa1b965f4. Weights and inputs
 * are this function of their coordinates on every engine, CPU and GPU alike. */
static void test_rng_known_answers(void **state)
{
    (void)state;
    const uint64_t golden = 0x9e3779b97f4a7c15ULL;
    assert_true(pb_rng_mix64(golden) == 0xe220a8397b1dcdafULL);
    assert_true(pb_rng_mix64(2 * golden) == 0x6e789e6aa1b965f4ULL);
    for (uint64_t i = 0; i < 1000; i++) {
        float u = pb_rng_hash_uniform(42, 1, i, 7);
        assert_true(u >= -1.0f && u < 1.0f);
        assert_true(u * 8388608.0f == floorf(u * 8388608.0f)); /* 24 random bits */
    }
    assert_true(pb_rng_hash_uniform(42, 1, 2, 3) != pb_rng_hash_uniform(42, 1, 3, 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_fp32_all_transposes), cmocka_unit_test(test_gemm_bf16),
        cmocka_unit_test(test_gemm_batched),
        cmocka_unit_test(test_gelu), cmocka_unit_test(test_softmax), cmocka_unit_test(test_softmax_online),           cmocka_unit_test(test_convert_and_copies),
        cmocka_unit_test(test_fill_slices),    cmocka_unit_test(test_describe_and_dtype),
        cmocka_unit_test(test_select_and_helpers), cmocka_unit_test(test_gemm_rate),
        cmocka_unit_test(test_rng_known_answers),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
