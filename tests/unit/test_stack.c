/* Layer stacks: activation accounting, gradient callbacks and layout,
 * accumulation, gradient types, numerical stability through many layers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "compute/compute.h"
#include "core/error.h"
#include "core/timing.h"
#include "compute/layer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const pb_compute *E;

enum { B = 1, S = 16, H = 64, HEADS = 4, N = B * S };

static int setup(void **state)
{
    (void)state;
    E = pb_compute_blas();
    return E->init(NULL);
}

static pb_layer_stack_config config(int64_t layer0, int64_t nlayers, int scores, pb_dtype gt)
{
    pb_layer_shape sh = {.b = B, .s = S, .h = H, .heads = HEADS, .tp_size = 1, .attn_scores = scores,
                         .dtype = PB_FLOAT32};
    return (pb_layer_stack_config){.eng = E, .shape = sh, .layer0 = layer0, .nlayers = nlayers, .seed = 11,
                             .grad_dtype = gt};
}

static pb_layer_stack *make(pb_layer_stack_config cfg)
{
    pb_layer_stack *st = NULL;
    assert_int_equal(pb_layer_stack_create(&cfg, &st), PB_OK);
    return st;
}

static void *input(uint64_t index)
{
    void *x;
    assert_int_equal(E->alloc(&x, (size_t)N * H * 4), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, x, N, H, 1, index), PB_OK);
    return x;
}

static float *host(const void *dev, size_t bytes)
{
    float *h = malloc(bytes);
    assert_int_equal(E->to_host(h, dev, bytes), PB_OK);
    return h;
}

static void test_pool_counts(void **state)
{
    (void)state;
    pb_layer_act_pool *p;
    void *a, *b, *c, *d;
    assert_int_equal(pb_layer_act_pool_create(E, &p), PB_OK);
    assert_int_equal(pb_layer_act_alloc(p, 100, &a), PB_OK);
    assert_int_equal(pb_layer_act_alloc(p, 200, &b), PB_OK);
    assert_true(pb_layer_act_held(p) == 300 && pb_layer_act_peak(p) == 300);
    pb_layer_act_free(p, a);
    assert_true(pb_layer_act_held(p) == 200 && pb_layer_act_peak(p) == 300);
    assert_int_equal(pb_layer_act_alloc(p, 100, &c), PB_OK);
    assert_ptr_equal(c, a); /* recycled */
    assert_int_equal(pb_layer_act_alloc(p, 50, &d), PB_OK);
    assert_true(pb_layer_act_held(p) == 350 && pb_layer_act_peak(p) == 350);
    pb_layer_act_free(p, b);
    pb_layer_act_free(p, b); /* double free is ignored, not double counted */
    assert_true(pb_layer_act_held(p) == 150);
    pb_layer_act_reset_peak(p);
    assert_true(pb_layer_act_peak(p) == 150);
    pb_layer_act_free(p, c);
    pb_layer_act_free(p, d);
    assert_true(pb_layer_act_held(p) == 0 && pb_layer_act_peak(p) == 150);
    pb_layer_act_pool_destroy(p);
}

/* One pipeline stage's schedule, forward allocating a micro-batch's
 * activations and backward freeing them: the MEASURED peak is m micro-batches
 * for GPipe and min(m, p - stage) for 1F1B. */
static uint64_t run_schedule(int gpipe, int m, int p, int stage)
{
    pb_layer_stack *st = make(config(0, 2, 1, PB_FLOAT32));
    void *x = input(0), *y = input(1);
    pb_layer_saved **acts = calloc((size_t)m, sizeof *acts);
    int warm = gpipe ? m : (p - stage - 1 < m ? p - stage - 1 : m), f = 0, b = 0;
    for (; f < warm; f++) {
        assert_int_equal(pb_layer_saved_alloc(st, &acts[f]), PB_OK);
        assert_int_equal(pb_layer_stack_forward(st, acts[f], x, y), PB_OK);
    }
    while (b < m) {
        if (f < m) { /* 1F1B steady state: one forward, then one backward */
            assert_int_equal(pb_layer_saved_alloc(st, &acts[f]), PB_OK);
            assert_int_equal(pb_layer_stack_forward(st, acts[f], x, y), PB_OK);
            f++;
        }
        assert_int_equal(pb_layer_stack_backward(st, acts[b], y, NULL, b > 0, NULL, NULL), PB_OK);
        pb_layer_saved_free(st, acts[b++]);
    }
    assert_true(pb_layer_act_held(pb_layer_stack_pool(st)) == 0);
    uint64_t peak = pb_layer_act_peak(pb_layer_stack_pool(st));
    free(acts);
    E->free(x), E->free(y);
    pb_layer_stack_destroy(st);
    return peak;
}

static void test_measured_pipeline_memory(void **state)
{
    (void)state;
    pb_layer_stack_config cfg = config(0, 2, 1, PB_FLOAT32);
    uint64_t one = pb_layer_act_bytes(&cfg.shape, 2);
    assert_true(run_schedule(1, 6, 4, 0) == 6 * one);
    assert_true(run_schedule(0, 6, 4, 0) == 4 * one);
    assert_true(run_schedule(0, 6, 4, 3) == 1 * one);
    assert_true(run_schedule(0, 2, 4, 0) == 2 * one);
}

typedef struct record {
    int64_t layer[16];
    uint64_t offset[16], bytes[16];
    int calls, stop_at;
    pb_layer_stack *st;
    int complete[16]; /* this layer's gradients were non-zero at the call */
} record;

static int on_ready(void *user, int64_t layer, uint64_t offset, uint64_t bytes)
{
    record *r = user;
    float *g = host((const char *)pb_layer_stack_grads(r->st) + offset, bytes);
    int nonzero = 0;
    for (size_t i = 0; i < bytes / 4; i++) nonzero += g[i] != 0.0f;
    free(g);
    r->layer[r->calls] = layer, r->offset[r->calls] = offset, r->bytes[r->calls] = bytes;
    r->complete[r->calls] = nonzero > (int)(bytes / 4 / 2); /* dQ, dK are 0 without scores: > half */
    return ++r->calls == r->stop_at ? PB_ERR_CHECK : PB_OK;
}

static void test_grad_callbacks(void **state)
{
    (void)state;
    const int L = 4;
    pb_layer_stack_config cfg = config(10, L, 1, PB_FLOAT32);
    void *grads;
    assert_int_equal(E->alloc(&grads, (size_t)pb_layer_stack_grad_bytes(&cfg)), PB_OK);
    cfg.grads = grads; /* caller-provided flat buffer */
    pb_layer_stack *st = make(cfg);
    assert_ptr_equal(pb_layer_stack_grads(st), grads);
    pb_layer_saved *a;
    void *x = input(0), *y = input(1);
    assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
    assert_int_equal(pb_layer_stack_forward(st, a, x, y), PB_OK);
    record r = {.st = st};
    assert_int_equal(pb_layer_stack_backward(st, a, y, x, 0, on_ready, &r), PB_OK);
    uint64_t per = 12ull * H * H * 4;
    assert_int_equal(r.calls, L);
    for (int k = 0; k < L; k++) {
        assert_true(r.layer[k] == 10 + L - 1 - k); /* global indices, last layer first */
        assert_true(r.offset[k] == per * (uint64_t)(L - 1 - k));
        assert_true(r.bytes[k] == per);
        assert_true(r.complete[k]);
    }
    /* A failing callback stops backward with its status. */
    record stop = {.st = st, .stop_at = 2};
    assert_int_equal(pb_layer_stack_backward(st, a, y, x, 0, on_ready, &stop), PB_ERR_CHECK);
    assert_int_equal(stop.calls, 2);
    pb_layer_saved_free(st, a);
    pb_layer_stack_destroy(st);
    E->free(grads), E->free(x), E->free(y);
}

/* Forward once, then `times` backwards (the first overwrites, the others add). */
static void backward_grads(pb_layer_stack *st, void *x, int times)
{
    pb_layer_saved *a;
    void *y = input(7);
    assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
    assert_int_equal(pb_layer_stack_forward(st, a, x, y), PB_OK);
    for (int i = 0; i < times; i++) assert_int_equal(pb_layer_stack_backward(st, a, y, NULL, i > 0, NULL, NULL), PB_OK);
    pb_layer_saved_free(st, a);
    E->free(y);
}

static void test_accumulate_and_grad_types(void **state)
{
    (void)state;
    void *x = input(0);
    pb_layer_stack *f32 = make(config(0, 2, 1, PB_FLOAT32)), *bf = make(config(0, 2, 1, PB_BFLOAT16));
    size_t n = 2 * 12 * H * H;
    backward_grads(f32, x, 1);
    float *g1 = host(pb_layer_stack_grads(f32), n * 4);
    backward_grads(bf, x, 1);
    uint16_t *b1 = (uint16_t *)host(pb_layer_stack_grads(bf), n * 2);
    for (size_t i = 0; i < n; i++) assert_true(b1[i] == pb_dtype_float_to_bf16(g1[i])); /* rounded once */
    backward_grads(f32, x, 2);
    float *g2 = host(pb_layer_stack_grads(f32), n * 4);
    backward_grads(bf, x, 2);
    uint16_t *b2 = (uint16_t *)host(pb_layer_stack_grads(bf), n * 2);
    for (size_t i = 0; i < n; i++) {
        assert_true(fabsf(g2[i] - 2 * g1[i]) <= 1e-6f * fabsf(g1[i]));
        assert_true(fabsf(pb_dtype_bf16_to_float(b2[i]) - 2 * g1[i]) <= fabsf(g1[i]) / 64);
    }
    free(g1), free(g2), free(b1), free(b2);
    pb_layer_stack_destroy(f32), pb_layer_stack_destroy(bf);
    E->free(x);
}

/* Weights depend on the global layer index only: layers 5,6 as one stack or
 * as two single-layer stages give the same output bit for bit. */
static void test_global_layer_seeding(void **state)
{
    (void)state;
    pb_layer_stack_config c2 = config(5, 2, 1, PB_FLOAT32), c5 = config(5, 1, 1, PB_FLOAT32), c6 = config(6, 1, 1, PB_FLOAT32);
    c2.model_layers = c5.model_layers = c6.model_layers = 7; /* the same model for every stage */
    pb_layer_stack *two = make(c2), *s5 = make(c5), *s6 = make(c6);
    pb_layer_saved *a, *a5, *a6;
    void *x = input(0), *y = input(1), *mid = input(2), *y2 = input(3);
    assert_int_equal(pb_layer_saved_alloc(two, &a), PB_OK);
    assert_int_equal(pb_layer_saved_alloc(s5, &a5), PB_OK);
    assert_int_equal(pb_layer_saved_alloc(s6, &a6), PB_OK);
    assert_int_equal(pb_layer_stack_forward(two, a, x, y), PB_OK);
    assert_int_equal(pb_layer_stack_forward(s5, a5, x, mid), PB_OK);
    assert_int_equal(pb_layer_stack_forward(s6, a6, mid, y2), PB_OK);
    float *h1 = host(y, (size_t)N * H * 4), *h2 = host(y2, (size_t)N * H * 4), *hm = host(mid, (size_t)N * H * 4);
    assert_memory_equal(h1, h2, (size_t)N * H * 4);
    assert_memory_not_equal(h1, hm, (size_t)N * H * 4);
    free(h1), free(h2), free(hm);
    pb_layer_saved_free(two, a), pb_layer_saved_free(s5, a5), pb_layer_saved_free(s6, a6);
    pb_layer_stack_destroy(two), pb_layer_stack_destroy(s5), pb_layer_stack_destroy(s6);
    E->free(x), E->free(y), E->free(mid), E->free(y2);
}

static double rms(const float *v, size_t n, int *finite)
{
    double s = 0;
    *finite = 1;
    for (size_t i = 0; i < n; i++) {
        *finite &= isfinite(v[i]) != 0;
        s += (double)v[i] * v[i];
    }
    return sqrt(s / (double)n);
}

/* 48 layers without norms or residuals: activations and gradients stay O(1).
 * (Finite width makes the log-norm drift down by O(1/h) per GEMM, hence a
 * realistic-ish h here: at h=64 48 layers shrink activations ~20x.) */
static void test_deep_stack_is_stable(void **state)
{
    (void)state;
    enum { DH = 256, L = 48 };
    for (int scores = 0; scores < 2; scores++) {
        pb_layer_stack_config cfg = config(0, L, scores, PB_FLOAT32);
        cfg.shape.h = DH;
        pb_layer_stack *st = make(cfg);
        pb_layer_saved *a;
        void *x, *y, *dx;
        size_t nx = (size_t)N * DH, nw = (size_t)L * 12 * DH * DH;
        assert_int_equal(E->alloc(&x, nx * 4), PB_OK);
        assert_int_equal(E->alloc(&y, nx * 4), PB_OK);
        assert_int_equal(E->alloc(&dx, nx * 4), PB_OK);
        assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, x, N, DH, 1, 0), PB_OK);
        assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
        assert_int_equal(pb_layer_stack_forward(st, a, x, y), PB_OK);
        assert_int_equal(pb_layer_stack_backward(st, a, x, dx, 0, NULL, NULL), PB_OK);
        int fin_y, fin_dx, fin_g;
        float *hy = host(y, nx * 4), *hdx = host(dx, nx * 4), *hg = host(pb_layer_stack_grads(st), nw * 4);
        double ry = rms(hy, nx, &fin_y), rdx = rms(hdx, nx, &fin_dx), rg = rms(hg, nw, &fin_g);
        fprintf(stderr, "%d layers h=%d, scores=%d: rms y %.3g, dx %.3g, grads %.3g\n", L, DH, scores, ry, rdx, rg);
        assert_true(fin_y && fin_dx && fin_g);
        assert_true(ry > 0.1 && ry < 10 && rdx > 0.1 && rdx < 10 && rg > 1e-3 && rg < 100);
        free(hy), free(hdx), free(hg);
        pb_layer_saved_free(st, a);
        pb_layer_stack_destroy(st);
        E->free(x), E->free(y), E->free(dx);
    }
}

/* A stack's backward is its layers' backwards chained, each from its own
 * buffer: the same dX, bit for bit, as the layers run one by one into
 * buffers of their own (the stack's ping-pong scratch must never hand a
 * layer its own input as its output). */
static void test_backward_is_the_layers_chained(void **state)
{
    (void)state;
    enum { L = 4 };
    const size_t nx = (size_t)N * H;
    pb_layer_stack *st = make(config(0, L, 1, PB_FLOAT32));
    pb_layer_saved *a;
    void *x = input(0), *y = input(1), *dy = input(2), *dx, *buf[L + 1];
    assert_int_equal(E->alloc(&dx, nx * 4), PB_OK);
    assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
    assert_int_equal(pb_layer_stack_forward(st, a, x, y), PB_OK);
    assert_int_equal(pb_layer_stack_backward(st, a, dy, dx, 0, NULL, NULL), PB_OK);
    buf[L] = dy;
    for (int i = L - 1; i >= 0; i--) {
        assert_int_equal(E->alloc(&buf[i], nx * 4), PB_OK);
        assert_int_equal(pb_layer_backward(pb_layer_stack_layer(st, i), pb_layer_saved_layer(a, i), buf[i + 1], buf[i], 0),
                         PB_OK);
    }
    float *got = host(dx, nx * 4), *want = host(buf[0], nx * 4);
    assert_memory_equal(got, want, nx * 4);
    free(got), free(want);
    for (int i = 0; i < L; i++) E->free(buf[i]);
    pb_layer_saved_free(st, a);
    pb_layer_stack_destroy(st);
    E->free(x), E->free(y), E->free(dy), E->free(dx);
}

static void test_refusals_and_sizes(void **state)
{
    (void)state;
    pb_layer_stack_config cfg = config(0, 3, 0, PB_FLOAT32);
    cfg.shape.tp_size = 2;
    pb_layer_stack *st = make(cfg);
    pb_layer_saved *a;
    void *x = input(0), *y = input(1);
    assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
    assert_int_equal(pb_layer_stack_forward(st, a, x, y), PB_ERR_USAGE); /* blocks need a reduce between */
    pb_layer_saved_free(st, a);
    pb_layer_stack_destroy(st);
    cfg.nlayers = 0;
    assert_int_equal(pb_layer_stack_create(&cfg, &st), PB_ERR_USAGE);
    cfg = config(0, 3, 0, PB_FLOAT32);
    uint64_t with = pb_layer_stack_bytes(&cfg);
    cfg.grads = x; /* any non-NULL: provided by the caller */
    assert_true(pb_layer_stack_bytes(&cfg) == with - pb_layer_stack_grad_bytes(&cfg));
    assert_true(with > 2 * pb_layer_stack_grad_bytes(&cfg)); /* weights + grads + scratch */
    E->free(x), E->free(y);
}

/* A stack's memory, as the memory pre-checks count it: weights and gradients
 * (layers x parameters x 4 B each) and the scratch: the MLP's n x 4h/t, three
 * activations of n x h, and with attention scores dO (n x h/t) and dS (one
 * s x s block per query head of one KV head: here, heads without grouping,
 * one block); without scores neither is allocated. */
static void test_stack_bytes_formula(void **state)
{
    (void)state;
    for (int scores = 0; scores <= 1; scores++) {
        pb_layer_stack_config cfg = config(0, 3, scores, PB_FLOAT32);
        uint64_t weights = 3 * (uint64_t)pb_layer_params_local(&cfg.shape) * 4;
        uint64_t scratch = (uint64_t)N * 4 * H * 4 + 3 * (uint64_t)N * H * 4 +
                           (scores ? (uint64_t)N * H * 4 + (uint64_t)S * S * 4 : 0);
        assert_int_equal(pb_layer_stack_bytes(&cfg), 2 * weights + scratch);
    }
    /* grouped-query attention: dS holds the 2 query heads of one of the 2 KV heads */
    pb_layer_stack_config gqa = config(0, 3, 1, PB_FLOAT32);
    gqa.shape.kv_heads = 2;
    pb_layer_stack_config mha = config(0, 3, 1, PB_FLOAT32);
    uint64_t dw = 3 * (uint64_t)(pb_layer_params_local(&mha.shape) - pb_layer_params_local(&gqa.shape)) * 4 * 2;
    /* (the MLP's 4h columns stay the widest scratch, whatever QKV's width) */
    assert_int_equal(pb_layer_stack_bytes(&gqa) + dw, pb_layer_stack_bytes(&mha) + (uint64_t)S * S * 4);
}

/* Achieved GFLOP/s of a stack's forward + backward (printed; checked > 0). */
static void test_stack_rate(void **state)
{
    (void)state;
    pb_layer_stack_config cfg = config(0, 2, 1, PB_FLOAT32);
    cfg.shape = (pb_layer_shape){.b = 1, .s = 256, .h = 512, .heads = 8, .tp_size = 1, .attn_scores = 1,
                                 .dtype = PB_FLOAT32};
    pb_layer_stack *st = make(cfg);
    pb_layer_saved *a;
    void *x, *y;
    assert_int_equal(E->alloc(&x, 256 * 512 * 4), PB_OK);
    assert_int_equal(E->alloc(&y, 256 * 512 * 4), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, x, 256, 512, 1, 0), PB_OK);
    assert_int_equal(pb_layer_saved_alloc(st, &a), PB_OK);
    double t0 = pb_timing_now_us();
    assert_int_equal(pb_layer_stack_forward(st, a, x, y), PB_OK);
    assert_int_equal(pb_layer_stack_backward(st, a, y, NULL, 0, NULL, NULL), PB_OK);
    double sec = (pb_timing_now_us() - t0) * 1e-6;
    double flops = 2 * pb_layer_step_flops(&cfg.shape);
    fprintf(stderr, "2 layers b=1 s=256 h=512 with scores: %.3f ms, %.1f GFLOP/s\n", sec * 1e3, pb_compute_gflops(flops, sec));
    assert_true(pb_compute_gflops(flops, sec) > 0);
    pb_layer_saved_free(st, a);
    pb_layer_stack_destroy(st);
    E->free(x), E->free(y);
}

/* Two micro-batches in flight, as a pipeline holds them: forward A, forward B
 * (which overwrites every slot the layers share), backward A, then B adding.
 * Returns the gradients and both input gradients, on the host. */
static float *two_in_flight(pb_layer_stack_config cfg, uint64_t *peak)
{
    enum { L = 2 };
    const size_t nx = (size_t)N * H, ng = (size_t)(pb_layer_stack_grad_bytes(&cfg) / 4);
    pb_layer_stack *st = make(cfg);
    pb_layer_saved *a[2];
    void *x[2] = {input(0), input(1)}, *y = input(2), *dy = input(3), *dx[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(E->alloc(&dx[k], nx * 4), PB_OK);
        assert_int_equal(pb_layer_saved_alloc(st, &a[k]), PB_OK);
        assert_int_equal(pb_layer_stack_forward(st, a[k], x[k], y), PB_OK);
    }
    for (int k = 0; k < 2; k++) assert_int_equal(pb_layer_stack_backward(st, a[k], dy, dx[k], k, NULL, NULL), PB_OK);
    float *out = malloc((ng + 2 * nx) * 4);
    assert_int_equal(E->to_host(out, pb_layer_stack_grads(st), ng * 4), PB_OK);
    for (int k = 0; k < 2; k++) assert_int_equal(E->to_host(out + ng + k * nx, dx[k], nx * 4), PB_OK);
    *peak = pb_layer_act_peak(pb_layer_stack_pool(st));
    for (int k = 0; k < 2; k++) pb_layer_saved_free(st, a[k]), E->free(dx[k]), E->free(x[k]);
    pb_layer_stack_destroy(st);
    E->free(y), E->free(dy);
    return out;
}

/* Selective and full recomputation give the gradients of keeping everything,
 * bit for bit (the same GEMMs on the same inputs), while a micro-batch keeps
 * less: selective all but the s x s scores, full only each layer's input.
 * The stack holds one shared set of what is not kept, and the FLOPs count the
 * replay: the score GEMMs (4bs^2h) or the whole forward. */
static void test_recompute_matches_keeping(void **state)
{
    (void)state;
    pb_layer_stack_config cfg = config(0, 2, 1, PB_FLOAT32);
    cfg.shape.gated = 1, cfg.shape.kv_heads = 2; /* SwiGLU's slot and grouped-query attention too */
    const size_t n = (size_t)(pb_layer_stack_grad_bytes(&cfg) / 4) + 2 * (size_t)N * H;
    uint64_t peak[3], kept[3], stack[3];
    double flops[3];
    float *want = NULL;
    for (int rc = PB_LAYER_RECOMPUTE_NONE; rc <= PB_LAYER_RECOMPUTE_FULL; rc++) {
        cfg.shape.recompute = rc;
        float *got = two_in_flight(cfg, &peak[rc]);
        kept[rc] = pb_layer_act_bytes(&cfg.shape, 2);
        stack[rc] = pb_layer_stack_bytes(&cfg);
        flops[rc] = pb_layer_step_flops(&cfg.shape);
        if (want) assert_memory_equal(got, want, n * 4);
        if (want) free(got);
        else want = got;
        assert_true(peak[rc] == 2 * kept[rc]);
    }
    free(want);
    uint64_t x = (uint64_t)N * H * 4, scores = (uint64_t)HEADS * S * S * 4; /* multiples of PB_ACT_ALIGN here */
    assert_true(kept[PB_LAYER_RECOMPUTE_SELECTIVE] == kept[PB_LAYER_RECOMPUTE_NONE] - 2 * scores);
    assert_true(kept[PB_LAYER_RECOMPUTE_FULL] == 2 * x);
    assert_true(stack[PB_LAYER_RECOMPUTE_SELECTIVE] == stack[PB_LAYER_RECOMPUTE_NONE] + scores);
    /* full: one layer's slots but its input, and the replayed output (x) */
    assert_true(stack[PB_LAYER_RECOMPUTE_FULL] == stack[PB_LAYER_RECOMPUTE_NONE] + kept[PB_LAYER_RECOMPUTE_NONE] / 2);
    double fwd = flops[PB_LAYER_RECOMPUTE_NONE] / 3;
    assert_true(fabs(flops[PB_LAYER_RECOMPUTE_SELECTIVE] - flops[PB_LAYER_RECOMPUTE_NONE] - 4.0 * B * S * S * H) < 1);
    assert_true(fabs(flops[PB_LAYER_RECOMPUTE_FULL] - flops[PB_LAYER_RECOMPUTE_NONE] - fwd) < 1);
    /* full recomputation needs whole layers: tensor parallelism's blocks are refused, naming the option */
    cfg.shape.tp_size = 2;
    pb_layer_stack *st = NULL;
    assert_int_equal(pb_layer_stack_create(&cfg, &st), PB_ERR_USAGE);
    cfg.shape.recompute = PB_LAYER_RECOMPUTE_SELECTIVE;
    assert_int_equal(pb_layer_stack_create(&cfg, &st), PB_OK);
    pb_layer_stack_destroy(st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_counts),          cmocka_unit_test(test_measured_pipeline_memory),
        cmocka_unit_test(test_grad_callbacks),       cmocka_unit_test(test_accumulate_and_grad_types),
        cmocka_unit_test(test_global_layer_seeding), cmocka_unit_test(test_deep_stack_is_stable),
        cmocka_unit_test(test_refusals_and_sizes),   cmocka_unit_test(test_stack_bytes_formula), cmocka_unit_test(test_backward_is_the_layers_chained),   cmocka_unit_test(test_stack_rate),
        cmocka_unit_test(test_recompute_matches_keeping),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
