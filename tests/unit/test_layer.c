/* Transformer layer: formulas, and tensor-parallel shards against the
 * unsharded layer (stacks and activation accounting: test_stack.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compute/compute.h"
#include "core/error.h"
#include "core/flops.h"
#include "compute/layer.h"
#include "plan/presets.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pb_compute *E;

/* Relative tolerance of sharded vs unsharded fp32 results (the sums run in a
 * different order; observed errors are ~1e-6). */
#define TOL 1e-4

enum { B = 2, S = 16, H = 64, HEADS = 4, N = B * S };

static int setup(void **state)
{
    (void)state;
    E = pb_compute_blas();
    return E->init(NULL);
}

/* The layer's form: GPT's (multi-head, GELU of 4h: all zero) or LLaMA's
 * (grouped-query attention, SwiGLU); the tests of each form set it. */
typedef struct layer_form {
    int64_t kv_heads, ffn;
    int gated;
} layer_form;
static const layer_form gpt_form = {0, 0, 0}, llama_form = {2, 96, 1}; /* 2 query heads a KV head */
static layer_form form;

static pb_layer_shape shape(int t, int r, int scores)
{
    return (pb_layer_shape){.b = B, .s = S, .h = H, .heads = HEADS, .kv_heads = form.kv_heads, .ffn = form.ffn,
                            .gated = form.gated, .tp_size = t, .tp_rank = r, .attn_scores = scores,
                            .dtype = PB_FLOAT32};
}

/* Elements of one layer's weights on rank 0 of t. */
static size_t params_of(int t)
{
    pb_layer_shape sh = shape(t, 0, 0);
    return (size_t)pb_layer_params_local(&sh);
}

static pb_layer_stack *make_stack(pb_layer_shape sh, int64_t nlayers, pb_dtype gt)
{
    pb_layer_stack_config cfg = {.eng = E, .shape = sh, .layer0 = 3, .nlayers = nlayers, .seed = 77, .grad_dtype = gt};
    pb_layer_stack *st = NULL;
    assert_int_equal(pb_layer_stack_create(&cfg, &st), PB_OK);
    return st;
}

static float *host_copy(const void *dev, size_t n)
{
    float *h = malloc(n * sizeof *h);
    assert_int_equal(E->to_host(h, dev, n * sizeof *h), PB_OK);
    return h;
}

static double max_abs(const float *a, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
    return m;
}

static void assert_close(const float *got, const float *ref, size_t n)
{
    double scale = max_abs(ref, n), err = 0;
    for (size_t i = 0; i < n; i++) err = fmax(err, fabs((double)got[i] - ref[i]));
    assert_true(scale > 0.01);
    if (err > TOL * scale) fprintf(stderr, "max error %g vs scale %g\n", err, scale);
    assert_true(err <= TOL * scale);
}

static void test_flop_formulas(void **state)
{
    (void)state;
    pb_layer_shape sh = {.b = 1, .s = 128, .h = 256, .heads = 4, .tp_size = 1, .dtype = PB_FLOAT32};
    double lin = 2.0 * 128 * 12 * 256.0 * 256.0;
    /* forward, then backward at twice forward */
    assert_true(pb_layer_step_flops(&sh) == 3 * lin);
    assert_true(pb_flops_layer_fwd(1, 128, 256, 12 * 256.0 * 256.0, 1, 0) == lin);
    assert_true(pb_flops_layer_bwd(1, 128, 256, 12 * 256.0 * 256.0, 1, 0) == 2 * lin);
    sh.attn_scores = 1;
    assert_true(pb_layer_step_flops(&sh) == 3 * (lin + 4.0 * 1 * 128 * 128 * 256));
    sh.tp_size = 4;
    sh.b = 3;
    assert_true(pb_layer_step_flops(&sh) == 3 * (3 * lin + 4.0 * 3 * 128 * 128 * 256) / 4);
}

static void test_params_and_shards(void **state)
{
    (void)state;
    pb_layer_shape sh = shape(1, 0, 0);
    assert_true((double)pb_layer_params_local(&sh) == 12.0 * H * H);
    assert_true((double)pb_layer_params_local(&sh) == pb_flops_layer_linear_params(H, HEADS, HEADS, 4 * H, 0));
    static const int64_t full_rows[4] = {H, H, H, 4 * H}, full_cols[4] = {3 * H, H, 4 * H, H};
    for (int t = 1; t <= 4; t *= 2) {
        for (int w = 0; w < PB_W_COUNT; w++) {
            int64_t sum = 0, r, c;
            for (int rank = 0; rank < t; rank++) {
                pb_layer_shape s = shape(t, rank, 0);
                pb_layer_weight_dims(&s, (enum pb_weight)w, &r, &c);
                /* column-parallel keeps all rows, row-parallel all columns */
                assert_true(r == full_rows[w] || c == full_cols[w]);
                sum += r * c;
            }
            assert_true(sum == full_rows[w] * full_cols[w]);
        }
        pb_layer_shape s = shape(t, 0, 0);
        assert_true(pb_layer_params_local(&s) * t == 12 * H * H);
        pb_layer_stack_config cfg = {.eng = E, .shape = s, .nlayers = 5, .grad_dtype = PB_BFLOAT16};
        assert_true(pb_layer_stack_grad_bytes(&cfg) == (uint64_t)5 * 12 * H * H / t * 2);
    }
}

static void test_act_bytes(void **state)
{
    (void)state;
    pb_layer_shape sh = shape(2, 1, 0);
    uint64_t hl = H / 2, es = 4;
    /* x_attn, qkv, x_mlp, hmlp; every size here is already a multiple of 256 */
    uint64_t per = (N * H + N * 3 * hl + N * H + N * 4 * hl) * es;
    assert_true(pb_layer_act_bytes(&sh, 3) == 3 * per);
    sh.attn_scores = 1;
    per += ((uint64_t)B * (HEADS / 2) * S * S + N * hl) * es;
    assert_true(pb_layer_act_bytes(&sh, 3) == 3 * per);
}

static void test_shape_check(void **state)
{
    (void)state;
    pb_layer_shape sh = shape(1, 0, 0);
    assert_int_equal(pb_layer_shape_check(&sh), PB_OK);
    sh.tp_size = 3; /* does not divide 4 heads */
    assert_int_equal(pb_layer_shape_check(&sh), PB_ERR_USAGE);
    sh = shape(2, 2, 0);
    assert_int_equal(pb_layer_shape_check(&sh), PB_ERR_USAGE);
    sh = shape(1, 0, 0);
    sh.heads = 5;
    assert_int_equal(pb_layer_shape_check(&sh), PB_ERR_USAGE);
    sh = shape(1, 0, 0);
    sh.dtype = PB_INT32;
    assert_int_equal(pb_layer_shape_check(&sh), PB_ERR_USAGE);
    sh = shape(1, 0, 0);
    sh.tp_size = 0; /* refused, not divided by */
    assert_int_equal(pb_layer_shape_check(&sh), PB_ERR_USAGE);
}

/* Full-matrix index of element `i` of rank r's shard of weight w (row-major
 * shard), in the unsharded layer's weight block, from Megatron's split. */
static size_t full_index(int w, int t, int r, size_t i)
{
    pb_layer_shape full = shape(1, 0, 0);
    int64_t h = H, hl = H / t, kv = pb_layer_kv_heads(&full) * (H / HEADS), kvl = kv / t;
    int64_t f = pb_layer_ffn(&full), fl = f / t, off = pb_layer_weight_offset(&full, (enum pb_weight)w), fr, fc;
    pb_layer_weight_dims(&full, (enum pb_weight)w, &fr, &fc);
    if (w == PB_W_QKV) { /* h x (h + 2kv): Q | K | V, each split by columns */
        int64_t wl = hl + 2 * kvl, row = (int64_t)i / wl, col = (int64_t)i % wl;
        int64_t fcol = col < hl ? r * hl + col : col < hl + kvl ? h + r * kvl + col - hl : h + kv + r * kvl + col - hl - kvl;
        return (size_t)(off + row * fc + fcol);
    }
    if (w == PB_W_UP) { /* h x ffn, or gate | up of ffn each: columns split */
        int64_t wl = form.gated ? 2 * fl : fl, row = (int64_t)i / wl, col = (int64_t)i % wl;
        int64_t fcol = col < fl ? r * fl + col : f + r * fl + col - fl;
        return (size_t)(off + row * fc + fcol);
    }
    /* Wo (h x h) and W2 (ffn x h): rows split, whole rows contiguous */
    int64_t rows_per = w == PB_W_O ? hl : fl;
    return (size_t)(off + r * rows_per * h + (int64_t)i);
}

/* Each shard's weights and (after backward) gradients are exactly the
 * corresponding slice of the unsharded layer's. */
static void check_slices(pb_layer_stack *full, pb_layer_stack **shards, int t, int grads, double tol)
{
    size_t nfull = params_of(1), nloc = params_of(t);
    pb_layer *fl = pb_layer_stack_layer(full, 0);
    float *f = host_copy(grads ? pb_layer_grads(fl) : pb_layer_weights(fl), nfull);
    double scale = max_abs(f, nfull);
    for (int r = 0; r < t; r++) {
        pb_layer *ly = pb_layer_stack_layer(shards[r], 0);
        float *p = host_copy(grads ? pb_layer_grads(ly) : pb_layer_weights(ly), nloc);
        const pb_layer_shape *sh = pb_layer_stack_shape(shards[r]);
        for (int w = 0; w < PB_W_COUNT; w++) {
            int64_t rows, cols, off = pb_layer_weight_offset(sh, (enum pb_weight)w);
            pb_layer_weight_dims(sh, (enum pb_weight)w, &rows, &cols);
            for (size_t i = 0; i < (size_t)(rows * cols); i++)
                assert_true(fabs(p[off + (int64_t)i] - f[full_index(w, t, r, i)]) <= tol * scale);
        }
        free(p);
    }
    free(f);
}

typedef int (*fwd_fn)(pb_layer *, pb_layer_acts *, const void *, void *);
typedef int (*bwd_fn)(pb_layer *, pb_layer_acts *, const void *, void *, int);

/* Run one block on the unsharded layer and on t shards; the sum of the
 * shards' partial outputs / input gradients must equal the unsharded ones. */
static void check_block(int t, int scores, fwd_fn fwd, bwd_fn bwd)
{
    size_t nx = (size_t)N * H;
    pb_layer_stack *full = make_stack(shape(1, 0, scores), 1, PB_FLOAT32), *shards[4];
    void *x, *dy, *y, *dx;
    assert_int_equal(E->alloc(&x, nx * 4), PB_OK);
    assert_int_equal(E->alloc(&dy, nx * 4), PB_OK);
    assert_int_equal(E->alloc(&y, nx * 4), PB_OK);
    assert_int_equal(E->alloc(&dx, nx * 4), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, x, N, H, 5, 0), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, dy, N, H, 5, 1), PB_OK);
    pb_layer_saved *a;
    assert_int_equal(pb_layer_saved_alloc(full, &a), PB_OK);
    assert_int_equal(fwd(pb_layer_stack_layer(full, 0), pb_layer_saved_layer(a, 0), x, y), PB_OK);
    assert_int_equal(bwd(pb_layer_stack_layer(full, 0), pb_layer_saved_layer(a, 0), dy, dx, 0), PB_OK);
    float *yref = host_copy(y, nx), *dxref = host_copy(dx, nx);
    float *ysum = calloc(nx, sizeof *ysum), *dxsum = calloc(nx, sizeof *dxsum);
    for (int r = 0; r < t; r++) {
        shards[r] = make_stack(shape(t, r, scores), 1, PB_FLOAT32);
        pb_layer_saved *ar;
        assert_int_equal(pb_layer_saved_alloc(shards[r], &ar), PB_OK);
        assert_int_equal(fwd(pb_layer_stack_layer(shards[r], 0), pb_layer_saved_layer(ar, 0), x, y), PB_OK);
        assert_int_equal(bwd(pb_layer_stack_layer(shards[r], 0), pb_layer_saved_layer(ar, 0), dy, dx, 0), PB_OK);
        float *yp = host_copy(y, nx), *dxp = host_copy(dx, nx);
        for (size_t i = 0; i < nx; i++) ysum[i] += yp[i], dxsum[i] += dxp[i];
        free(yp), free(dxp);
        pb_layer_saved_free(shards[r], ar);
    }
    assert_close(ysum, yref, nx);
    assert_close(dxsum, dxref, nx);
    check_slices(full, shards, t, 0, 0.0); /* weights: bit-exact slices */
    check_slices(full, shards, t, 1, TOL); /* gradients: this block's, others stay 0 */
    for (int r = 0; r < t; r++) pb_layer_stack_destroy(shards[r]);
    pb_layer_saved_free(full, a);
    pb_layer_stack_destroy(full);
    E->free(x), E->free(dy), E->free(y), E->free(dx);
    free(yref), free(dxref), free(ysum), free(dxsum);
}

static void test_tp_attention(void **state)
{
    (void)state;
    for (int t = 2; t <= 4; t *= 2) {
        check_block(t, 0, pb_layer_attn_forward, pb_layer_attn_backward);
        check_block(t, 1, pb_layer_attn_forward, pb_layer_attn_backward);
    }
}

static void test_tp_mlp(void **state)
{
    (void)state;
    for (int t = 2; t <= 4; t *= 2) check_block(t, 0, pb_layer_mlp_forward, pb_layer_mlp_backward);
}

/* Attention scores against a direct host computation of
 * O = softmax(Q K^T / sqrt(hd)) V: catches wrong head/sequence views. */
static void test_attention_scores_direct(void **state)
{
    (void)state;
    pb_layer_stack *st = make_stack(shape(1, 0, 1), 1, PB_FLOAT32);
    pb_layer_saved *a;
    void *x, *y;
    assert_int_equal(E->alloc(&x, (size_t)N * H * 4), PB_OK);
    assert_int_equal(E->alloc(&y, (size_t)N * H * 4), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, x, N, H, 1, 0), PB_OK);
    assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
    pb_layer *ly = pb_layer_stack_layer(st, 0);
    assert_int_equal(pb_layer_attn_forward(ly, pb_layer_saved_layer(a, 0), x, y), PB_OK);
    /* Recompute QKV and O on the host, then Y = X + O Wo, and compare Y. */
    /* Q | K | V columns: query head hh reads KV head hh / group (grouped-query attention). */
    const pb_layer_shape *sh = pb_layer_stack_shape(st);
    const int hd = H / HEADS, kv = (int)pb_layer_kv_heads(sh) * hd, W = H + 2 * kv, group = HEADS / (kv / hd);
    float *xh = host_copy(x, (size_t)N * H), *w = host_copy(pb_layer_weights(ly), (size_t)(W + H) * H);
    float *yh = host_copy(y, (size_t)N * H);
    const double c = 1.0 / sqrt((double)hd);
    double *qkv = calloc((size_t)N * W, sizeof *qkv), *o = calloc((size_t)N * H, sizeof *o), p[S];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < W; j++)
            for (int k = 0; k < H; k++) qkv[i * W + j] += (double)xh[i * H + k] * w[k * W + j];
    for (int bi = 0; bi < B; bi++)
        for (int hh = 0; hh < HEADS; hh++)
            for (int i = 0; i < S; i++) {
                double sum = 0; /* softmax over j of c q_i . k_j (values are small: no max needed) */
                int kh = hh / group;
                for (int j = 0; j < S; j++) {
                    const double *q = &qkv[(bi * S + i) * W + hh * hd], *k = &qkv[(bi * S + j) * W + H + kh * hd];
                    double sc = 0;
                    for (int d = 0; d < hd; d++) sc += q[d] * k[d];
                    sum += p[j] = exp(c * sc);
                }
                for (int j = 0; j < S; j++)
                    for (int d = 0; d < hd; d++)
                        o[(bi * S + i) * H + hh * hd + d] += p[j] / sum * qkv[(bi * S + j) * W + H + kv + kh * hd + d];
            }
    float *yref = calloc((size_t)N * H, sizeof *yref);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < H; j++) {
            double acc = xh[i * H + j]; /* residual */
            for (int k = 0; k < H; k++) acc += o[i * H + k] * w[W * H + k * H + j];
            yref[i * H + j] = (float)acc;
        }
    assert_close(yh, yref, (size_t)N * H);
    free(xh), free(w), free(yh), free(qkv), free(o), free(yref);
    pb_layer_saved_free(st, a);
    pb_layer_stack_destroy(st);
    E->free(x), E->free(y);
}

/* ---- attention's batched GEMMs ------------------------------------------ */

/* An engine that is the BLAS engine except for gemm_batched: that issues the
 * members one by one, last first, and counts batches and members. Attention
 * must send its per-head GEMMs through it as one batch per sequence, and the
 * results must not depend on how a batch is carried out. */
static pb_compute counting_engine;
static int batches, members;

static int reversed_batch(const pb_compute_gemm_batch *g)
{
    batches++;
    members += (int)g->count;
    for (int64_t i = g->count - 1; i >= 0; i--) {
        pb_compute_gemm_batch one = *g;
        one.a = (const float *)g->a + i * g->stride_a;
        one.b = (const float *)g->b + i * g->stride_b;
        one.c = (float *)g->c + i * g->stride_c;
        one.count = 1;
        assert_int_equal(pb_compute_gemm_batch_loop(E, &one), PB_OK);
    }
    return PB_OK;
}

/* Attention forward and backward on `eng` (tp_size t, rank 0): Y, dX and the
 * layer's gradients on the host. */
static void run_attention(const pb_compute *eng, int t, float **y_out, float **dx_out, float **g_out)
{
    size_t nx = (size_t)N * H;
    pb_layer_stack_config cfg = {.eng = eng, .shape = shape(t, 0, 1), .layer0 = 3, .nlayers = 1, .seed = 77,
                                 .grad_dtype = PB_FLOAT32};
    pb_layer_stack *st = NULL;
    assert_int_equal(pb_layer_stack_create(&cfg, &st), PB_OK);
    void *x, *dy, *y, *dx;
    assert_int_equal(eng->alloc(&x, nx * 4), PB_OK);
    assert_int_equal(eng->alloc(&dy, nx * 4), PB_OK);
    assert_int_equal(eng->alloc(&y, nx * 4), PB_OK);
    assert_int_equal(eng->alloc(&dx, nx * 4), PB_OK);
    assert_int_equal(pb_layer_fill_input(eng, PB_FLOAT32, x, N, H, 9, 0), PB_OK);
    assert_int_equal(pb_layer_fill_input(eng, PB_FLOAT32, dy, N, H, 9, 1), PB_OK);
    pb_layer_saved *a;
    assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
    pb_layer *ly = pb_layer_stack_layer(st, 0);
    assert_int_equal(pb_layer_attn_forward(ly, pb_layer_saved_layer(a, 0), x, y), PB_OK);
    assert_int_equal(pb_layer_attn_backward(ly, pb_layer_saved_layer(a, 0), dy, dx, 0), PB_OK);
    *y_out = host_copy(y, nx), *dx_out = host_copy(dx, nx);
    *g_out = host_copy(pb_layer_grads(ly), params_of(t));
    pb_layer_saved_free(st, a);
    pb_layer_stack_destroy(st);
    eng->free(x), eng->free(dy), eng->free(y), eng->free(dx);
}

static void test_attention_batched_gemms(void **state)
{
    (void)state;
    counting_engine = *E;
    counting_engine.gemm_batched = reversed_batch;
    for (int t = 1; t <= 2; t++) {
        size_t nx = (size_t)N * H, ng = params_of(t);
        pb_layer_shape sh = shape(t, 0, 1);
        int group = HEADS / (int)pb_layer_kv_heads(&sh);
        float *y0, *dx0, *g0, *y1, *dx1, *g1;
        run_attention(E, t, &y0, &dx0, &g0);
        batches = members = 0;
        run_attention(&counting_engine, t, &y1, &dx1, &g1);
        /* forward: S and O per sequence, one batch over the KV heads for each query
         * head sharing them; backward: dP, dV, dQ, dK per sequence and KV head (its
         * dS alone in the scratch), a batch of one for each query head of the group */
        int kv_local = (int)pb_layer_kv_heads(&sh) / t;
        assert_int_equal(batches, 2 * B * group + 4 * B * group * kv_local);
        assert_int_equal(members, 6 * B * (HEADS / t));
        assert_memory_equal(y0, y1, nx * sizeof *y0);
        assert_memory_equal(dx0, dx1, nx * sizeof *dx0);
        assert_memory_equal(g0, g1, ng * sizeof *g0);
        free(y0), free(dx0), free(g0), free(y1), free(dx1), free(g1);
    }
}

/* ---- gradient checks: backward against finite differences -------------- */

typedef struct probe {
    pb_layer *ly;
    pb_layer_acts *sv;
    fwd_fn fwd;
    void *x, *y, *g; /* input, output, fixed output weights: f = <y, g> */
} probe;

static double dot_host(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* f(base + e*dir) with `target` (engine memory of n floats) set to it. */
static double f_at(probe *p, void *target, const float *base, const float *dir, size_t n, double e)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (float)(base[i] + e * dir[i]);
    assert_int_equal(E->from_host(target, v, n * sizeof *v), PB_OK);
    assert_int_equal(p->fwd(p->ly, p->sv, p->x, p->y), PB_OK);
    float *y = host_copy(p->y, (size_t)N * H), *g = host_copy(p->g, (size_t)N * H);
    double f = dot_host(y, g, (size_t)N * H);
    free(v), free(y), free(g);
    return f;
}

/* Directional derivative of f along dir at `target`, by central differences
 * with one Richardson step (error O(e^4): both blocks are smooth, softmax and
 * gelu alike). Restores `target`. */
static double directional(probe *p, void *target, const float *dir, size_t n, double e)
{
    float *base = host_copy(target, n);
    double d1 = (f_at(p, target, base, dir, n, e) - f_at(p, target, base, dir, n, -e)) / (2 * e);
    double d2 = (f_at(p, target, base, dir, n, 2 * e) - f_at(p, target, base, dir, n, -2 * e)) / (4 * e);
    assert_int_equal(E->from_host(target, base, n * sizeof *base), PB_OK);
    free(base);
    return (4 * d1 - d2) / 3;
}

static float *random_dir(size_t n, uint64_t stream)
{
    float *d = malloc(n * sizeof *d);
    pb_compute_fill_spec spec = {.seed = 123, .stream = stream, .scale = 1.0f};
    assert_int_equal(E->fill(d, PB_FLOAT32, 1, (int64_t)n, (int64_t)n, &spec), PB_OK);
    return d;
}

static void check_gradients(int scores, fwd_fn fwd, bwd_fn bwd, double e, double tol)
{
    pb_layer_stack *st = make_stack(shape(1, 0, scores), 1, PB_FLOAT32);
    pb_layer_saved *a;
    assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
    size_t nx = (size_t)N * H, nw = params_of(1);
    probe p = {.ly = pb_layer_stack_layer(st, 0), .sv = pb_layer_saved_layer(a, 0), .fwd = fwd};
    void *dx;
    assert_int_equal(E->alloc(&p.x, nx * 4), PB_OK);
    assert_int_equal(E->alloc(&p.y, nx * 4), PB_OK);
    assert_int_equal(E->alloc(&p.g, nx * 4), PB_OK);
    assert_int_equal(E->alloc(&dx, nx * 4), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, p.x, N, H, 3, 0), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, p.g, N, H, 3, 1), PB_OK);
    assert_int_equal(fwd(p.ly, p.sv, p.x, p.y), PB_OK);
    /* Another micro-batch's forward in between, as a pipeline runs them: the
     * backward must need only its own saved activations, not the scratch. */
    pb_layer_saved *other;
    assert_int_equal(pb_layer_saved_alloc(st, &other), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, dx, N, H, 3, 2), PB_OK);
    assert_int_equal(fwd(p.ly, pb_layer_saved_layer(other, 0), dx, p.y), PB_OK);
    pb_layer_saved_free(st, other);
    assert_int_equal(bwd(p.ly, p.sv, p.g, dx, 0), PB_OK);
    float *dxh = host_copy(dx, nx), *dwh = host_copy(pb_layer_grads(p.ly), nw);
    float *vx = random_dir(nx, 1), *vw = random_dir(nw, 2);
    double want_x = dot_host(dxh, vx, nx), want_w = dot_host(dwh, vw, nw);
    double got_x = directional(&p, p.x, vx, nx, e);
    double got_w = directional(&p, (void *)pb_layer_weights(p.ly), vw, nw, e / 8); /* weights ~ 1/sqrt(h) */
    fprintf(stderr, "gradcheck scores=%d: dX %.6g vs %.6g, dW %.6g vs %.6g\n", scores, want_x, got_x, want_w, got_w);
    /* A random direction's projection is typically |g| |v| / sqrt(n): errors
     * are judged against that, so a lucky near-cancellation is not fragile. */
    double sx = fmax(fabs(want_x), sqrt(dot_host(dxh, dxh, nx) * dot_host(vx, vx, nx) / (double)nx));
    double sw = fmax(fabs(want_w), sqrt(dot_host(dwh, dwh, nw) * dot_host(vw, vw, nw) / (double)nw));
    assert_true(fabs(want_x - got_x) <= tol * sx);
    assert_true(fabs(want_w - got_w) <= tol * sw);
    free(dxh), free(dwh), free(vx), free(vw);
    E->free(p.x), E->free(p.y), E->free(p.g), E->free(dx);
    pb_layer_saved_free(st, a);
    pb_layer_stack_destroy(st);
}

static void test_gradcheck_attention(void **state)
{
    (void)state;
    check_gradients(0, pb_layer_attn_forward, pb_layer_attn_backward, 0.05, 1e-4);
    check_gradients(1, pb_layer_attn_forward, pb_layer_attn_backward, 0.05, 1e-4);
}

/* gelu is smooth, so the MLP takes the attention block's step and tolerance
 * (a relu, with its kinks, needed a 50x smaller step and 100x the tolerance). */
static void test_gradcheck_mlp(void **state)
{
    (void)state;
    check_gradients(0, pb_layer_mlp_forward, pb_layer_mlp_backward, 0.05, 1e-4);
}

/* The LLaMA form: grouped-query attention (2 query heads a KV head) and a
 * SwiGLU MLP of its own width, through every check above at t = 2 (t must
 * divide the KV heads). */
static void test_llama_form(void **state)
{
    (void)state;
    form = llama_form;
    pb_layer_shape sh = shape(2, 0, 0);
    assert_int_equal(pb_layer_shape_check(&sh), PB_OK);
    /* Q, O: h x h; K, V: h x h/2; W1: h x 2*96; W2: 96 x h -- split 2 ways */
    assert_true((size_t)pb_layer_params_local(&sh) * 2 == 2 * H * H + 2 * H * (H / 2) + 3 * H * 96);
    assert_true((double)params_of(1) == pb_flops_layer_linear_params(H, HEADS, 2, 96, 1));
    sh = shape(4, 0, 0); /* 4 ranks cannot share 2 KV heads */
    assert_int_equal(pb_layer_shape_check(&sh), PB_ERR_USAGE);
    sh = shape(2, 0, 0);
    sh.kv_heads = 3; /* does not divide the 4 query heads */
    assert_int_equal(pb_layer_shape_check(&sh), PB_ERR_USAGE);
    sh = shape(2, 0, 0);
    sh.ffn = 97; /* does not split in 2 */
    assert_int_equal(pb_layer_shape_check(&sh), PB_ERR_USAGE);
    check_block(2, 0, pb_layer_attn_forward, pb_layer_attn_backward);
    check_block(2, 1, pb_layer_attn_forward, pb_layer_attn_backward);
    check_block(2, 0, pb_layer_mlp_forward, pb_layer_mlp_backward);
    test_attention_scores_direct(state);
    test_attention_batched_gemms(state);
    check_gradients(0, pb_layer_attn_forward, pb_layer_attn_backward, 0.05, 1e-4);
    check_gradients(1, pb_layer_attn_forward, pb_layer_attn_backward, 0.05, 1e-4);
    check_gradients(0, pb_layer_mlp_forward, pb_layer_mlp_backward, 0.05, 1e-4);
    form = gpt_form;
}

/* Inputs come from streams no weight uses: filled with the seed of the weights,
 * input 0 must not repeat the stream of layer 0's first weight (stream 0). */
static void test_inputs_apart_from_weights(void **state)
{
    (void)state;
    size_t nx = (size_t)N * H;
    void *x, *w;
    assert_int_equal(E->alloc(&x, nx * 4), PB_OK);
    assert_int_equal(E->alloc(&w, nx * 4), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, x, N, H, 5, 0), PB_OK);
    pb_compute_fill_spec weight0 = {.seed = 5, .stream = 0, .scale = 1.7320508f};
    assert_int_equal(E->fill(w, PB_FLOAT32, N, H, H, &weight0), PB_OK);
    float *xh = host_copy(x, nx), *wh = host_copy(w, nx);
    size_t same = 0;
    for (size_t i = 0; i < nx; i++) same += xh[i] == wh[i];
    assert_true(same < nx / 100);
    free(xh);
    free(wh);
    E->free(x);
    E->free(w);
}

/* A stack's and a micro-batch's per-layer accessors answer NULL outside
 * [0, n): a caller walking one past the end gets no neighbour's memory. */
static void test_layer_accessors_bounded(void **state)
{
    (void)state;
    pb_layer_stack *st = make_stack(shape(1, 0, 0), 2, PB_FLOAT32);
    pb_layer_saved *a;
    assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
    for (int64_t i = -1; i <= 2; i++) {
        int inside = i >= 0 && i < 2;
        assert_int_equal(pb_layer_stack_layer(st, i) != NULL, inside);
        assert_int_equal(pb_layer_saved_layer(a, i) != NULL, inside);
    }
    assert_ptr_not_equal(pb_layer_saved_layer(a, 0), pb_layer_saved_layer(a, 1));
    pb_layer_saved_free(st, a);
    pb_layer_stack_destroy(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flop_formulas),   cmocka_unit_test(test_params_and_shards),
        cmocka_unit_test(test_act_bytes),       cmocka_unit_test(test_shape_check),
        cmocka_unit_test(test_tp_attention),    cmocka_unit_test(test_tp_mlp),
        cmocka_unit_test(test_attention_scores_direct), cmocka_unit_test(test_attention_batched_gemms),
        cmocka_unit_test(test_gradcheck_attention), cmocka_unit_test(test_gradcheck_mlp),
        cmocka_unit_test(test_inputs_apart_from_weights), cmocka_unit_test(test_layer_accessors_bounded),
        cmocka_unit_test(test_llama_form),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
