/* Data parallelism: the decoupled gradient layout, the overhead arithmetic,
 * parameter and FLOP counts, bucket readiness sequencing in the synchronizer
 * (against a recording backend), staging, validation, and whole DP steps on
 * one rank (MPI_COMM_SELF) through a backend that counts what each all-reduce
 * covers: on one rank the sum changes nothing, so only the count shows that a
 * step all-reduced its whole buffer once. (Sums over real replicas are checked
 * by tests/integration/test_dp_allreduce.sh on 2 and 3 ranks.) The stream
 * order of NCCL with cuBLAS runs here too, on hooks that record. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend/gpu.h"
#include "workload/bucket.h"
#include "workload/dp.h"
#include "workload/ordering.h"
#include "workload/workload_opts.h"
#include "core/error.h"
#include "plan/model.h"
#include "plan/presets.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const pb_compute *E;

/* ---- layout ---- */

/* Shares tile the buffer, are aligned, and every real byte lies in or after its
 * own layer's share (so a bucket never goes out before its real data exists). */
static void check_layout(const uint64_t *real, int64_t n, uint64_t total, uint64_t align)
{
    uint64_t *share = calloc((size_t)n, sizeof *share), sum = 0, rsum = 0, rtot = 0;
    for (int64_t j = 0; j < n; j++) rtot += real[j];
    assert_int_equal(pb_dp_layout(real, n, total, align, share), PB_OK);
    for (int64_t i = 0; i < n; i++) {
        assert_true(sum % align == 0);
        if (total >= rtot) assert_true(sum >= rsum); /* share i starts at or after layer i's real bytes */
        sum += share[i];
        rsum += real[i];
    }
    assert_true(sum == total);
    free(share);
}

static void test_layout_identity_and_scaling(void **state)
{
    (void)state;
    uint64_t real[4] = {1000, 1000, 1000, 1000}, share[4];
    assert_int_equal(pb_dp_layout(real, 4, 4000, 4, share), PB_OK);
    for (int i = 0; i < 4; i++) assert_true(share[i] == 1000);
    assert_int_equal(pb_dp_layout(real, 4, 16000, 4, share), PB_OK); /* 4x: each layer 4x */
    for (int i = 0; i < 4; i++) assert_true(share[i] == 4000);
    assert_int_equal(pb_dp_layout(real, 4, 400, 4, share), PB_OK); /* smaller than the stack */
    for (int i = 0; i < 4; i++) assert_true(share[i] == 100);
    assert_int_equal(pb_dp_layout(real, 4, 12, 4, share), PB_OK); /* fewer elements than layers */
    assert_true(share[0] + share[1] + share[2] + share[3] == 12);
    assert_int_equal(pb_dp_layout(real, 4, 4002, 4, share), PB_ERR_USAGE); /* not whole elements */
    assert_int_equal(pb_dp_layout(real, 0, 4000, 4, share), PB_ERR_USAGE);
    /* Refused before any arithmetic: an element size of 0 would divide by zero,
     * a missing array be read. */
    assert_int_equal(pb_dp_layout(real, 4, 4000, 0, share), PB_ERR_USAGE);
    assert_int_equal(pb_dp_layout(NULL, 4, 4000, 4, share), PB_ERR_USAGE);
    assert_int_equal(pb_dp_layout(real, 4, 4000, 4, NULL), PB_ERR_USAGE);
    /* A 7B bf16 gradient over a 64 GiB-sized stack: needs 128-bit products. */
    uint64_t big[2] = {(uint64_t)32 << 30, (uint64_t)32 << 30}, sb[2];
    assert_int_equal(pb_dp_layout(big, 2, (uint64_t)14e9, 2, sb), PB_OK);
    assert_true(sb[0] == (uint64_t)7e9 && sb[1] == (uint64_t)7e9);
}

static void test_layout_random(void **state)
{
    (void)state;
    srand(7);
    for (int t = 0; t < 300; t++) {
        int64_t n = 1 + rand() % 12;
        uint64_t align = (uint64_t)(rand() % 2 ? 4 : 2), real[12], rtot = 0;
        for (int64_t i = 0; i < n; i++) rtot += real[i] = align * (uint64_t)(1 + rand() % 5000);
        uint64_t total = align * (uint64_t)(1 + rand() % (int)(3 * rtot / align));
        check_layout(real, n, total, align);
    }
}

/* With total >= real, build the bucket plan over the shares: every real
 * layer a bucket touches has completed when the bucket becomes ready. */
static void test_buckets_never_before_real_data(void **state)
{
    (void)state;
    uint64_t real[5] = {4096, 4096, 4096, 4096, 4096}, share[5];
    for (uint64_t total = 20480; total <= 20480 * 9; total += 4 * 1237) {
        assert_int_equal(pb_dp_layout(real, 5, total, 4, share), PB_OK);
        pb_bucket_plan plan;
        assert_int_equal(pb_bucket_plan_build(share, 5, 3000, 4, &plan), PB_OK);
        for (size_t k = 0; k < plan.count; k++) {
            const pb_bucket *b = &plan.buckets[k];
            for (uint64_t off = b->offset; off < b->offset + b->bytes && off < 20480; off += 4)
                assert_true((int64_t)(off / 4096) >= b->ready_layer); /* real owner done before */
        }
        pb_bucket_plan_free(&plan);
    }
}

/* ---- overhead arithmetic, parameter and FLOP counts ---- */

static void test_metrics(void **state)
{
    (void)state;
    pb_dp_metrics m;
    pb_dp_metrics_of(100, 50, 120, &m);
    assert_true(fabs(m.exposed_us - 20) < 1e-12 && fabs(m.overhead - 0.2) < 1e-12);
    assert_true(fabs(m.predicted_overhead - 0.5) < 1e-12 && fabs(m.hidden_fraction - 0.6) < 1e-12);
    pb_dp_metrics_of(100, 50, 150, &m); /* nothing hidden: overhead = prediction */
    assert_true(fabs(m.overhead - m.predicted_overhead) < 1e-12 && m.hidden_fraction == 0);
    pb_dp_metrics_of(100, 50, 95, &m); /* noise: step < compute */
    assert_true(m.exposed_us < 0 && m.hidden_fraction == 1);
    pb_dp_metrics_of(100, 50, 400, &m); /* slowed: exposed > comm */
    assert_true(m.hidden_fraction == 0 && fabs(m.overhead - 3) < 1e-12);
    pb_dp_metrics_of(0, 0, 0, &m);
    assert_true(m.overhead == 0 && m.predicted_overhead == 0 && m.hidden_fraction == 0);
}

/* The paired overhead: one iteration slowed in its step only moves the mean, not the median of the pairs. */
static void test_paired_overhead(void **state)
{
    (void)state;
    double compute[5] = {100, 102, 98, 100, 150}, step[5] = {111, 113, 109, 112, 400}, scratch[5];
    /* pairs 11, 11, 11, 12, 250: median 11 over the median compute 100 */
    assert_true(fabs(pb_dp_paired_overhead(compute, step, 5, scratch) - 0.11) < 1e-12);
    assert_true(compute[4] == 150 && step[4] == 400); /* inputs unchanged */
    double c4[4] = {100, 120, 100, 120}, s4[4] = {110, 134, 112, 136};
    /* pairs 10, 14, 12, 16: median 13; compute median 110 (even counts interpolate) */
    assert_true(fabs(pb_dp_paired_overhead(c4, s4, 4, scratch) - 13.0 / 110) < 1e-12);
    double neg[2] = {100, 100}, fast[2] = {95, 97};
    assert_true(fabs(pb_dp_paired_overhead(neg, fast, 2, scratch) + 0.04) < 1e-12); /* noise stays negative */
    assert_true(pb_dp_paired_overhead(compute, step, 0, scratch) == 0);
    double zero[1] = {0};
    assert_true(pb_dp_paired_overhead(zero, step, 1, scratch) == 0);
}

static void test_preset_params_and_grad_bytes(void **state)
{
    (void)state;
    pb_presets_model m;
    assert_int_equal(pb_presets_preset("tiny", "--model", &m), PB_OK);
    assert_true(pb_presets_params(&m) == 4.0 * 12 * 256 * 256 + 1024.0 * 256); /* 3,407,872 */
    assert_int_equal(pb_presets_preset("llama-7b", "--model", &m), PB_OK);
    /* LLaMA-7B: 4 h x h attention matrices, SwiGLU's 3 of h x 11008, untied input and output embeddings */
    assert_true(pb_presets_params(&m) == 32.0 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008) + 2 * 32000.0 * 4096);
    assert_int_equal(pb_presets_preset("gpt-175b", "--model", &m), PB_OK);
    assert_true(fabs(pb_presets_params(&m) / 175e9 - 1) < 0.02);
    /* The counts published for the LLaMA family (Llama 2: 68.98e9; Llama 3: 8.03e9, 70.55e9, 405.85e9). */
    static const struct { const char *name; double published; } llama[] = {
        {"llama-7b", 6.74e9}, {"llama-70b", 68.98e9}, {"llama3-8b", 8.03e9}, {"llama3-70b", 70.55e9},
        {"llama3-405b", 405.85e9}};
    for (size_t i = 0; i < sizeof llama / sizeof llama[0]; i++) {
        assert_int_equal(pb_presets_preset(llama[i].name, "--model", &m), PB_OK);
        assert_true(fabs(pb_presets_params(&m) / llama[i].published - 1) < 0.002);
    }
    assert_true(pb_model_dp_grad_bytes(7e9, 2) == 14e9); /* the documents' 7B at bf16 */
}

/* ---- the synchronizer against a recording backend ---- */

static struct {
    int64_t completed;   /* lowest layer the test has finished "backward" for */
    uint64_t offset[64]; /* bucket offsets in issue order */
    int64_t seen[64];    /* `completed` when each was issued */
    int n;
    char *base;
    int to_host, from_host; /* the backend's own copies (staging goes through them) */
} rec;

static int mock_allreduce(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, pb_dtype_redop op)
{
    (void)c, (void)s, (void)t, (void)op;
    int k = rec.n;
    rec.offset[k] = (uint64_t)((char *)r - rec.base);
    rec.seen[k] = __atomic_load_n(&rec.completed, __ATOMIC_SEQ_CST);
    for (size_t i = 0; i < count; i++) ((float *)r)[i] += 1.0f; /* visible through staging */
    __atomic_store_n(&rec.n, k + 1, __ATOMIC_RELEASE); /* the test may watch it from the main thread */
    return PB_OK;
}

/* Wait (up to 5 s) for the communication thread to have reduced `want` buckets. */
static int reduced(int want)
{
    struct timespec nap = {0, 1000 * 1000};
    for (int i = 0; i < 5000 && __atomic_load_n(&rec.n, __ATOMIC_ACQUIRE) < want; i++) nanosleep(&nap, NULL);
    return __atomic_load_n(&rec.n, __ATOMIC_ACQUIRE);
}
static int mock_ok(pb_comm *c) { (void)c; return PB_OK; }
static int mock_alloc(size_t n, void **p) { *p = malloc(n); return *p ? PB_OK : PB_ERR_ENV; }
static int mock_to_host(void *d, const void *s, size_t n) { rec.to_host++; memcpy(d, s, n); return PB_OK; }
static int mock_from_host(void *d, const void *s, size_t n) { rec.from_host++; memcpy(d, s, n); return PB_OK; }
static pb_comm_backend mock = {.name = "mock", .mem = PB_MEM_HOST, .allreduce = mock_allreduce, .sync = mock_ok,
                          .alloc = mock_alloc, .free = free, .to_host = mock_to_host, .from_host = mock_from_host};

static pb_dp *mock_dp(pb_dp_overlap ov, float *g, uint64_t *layers, int64_t n, uint64_t bytes, uint64_t cap)
{
    memset(&rec, 0, sizeof rec);
    rec.base = (char *)g;
    rec.completed = n;
    pb_dp_config c = {.be = &mock, .comm = (pb_comm *)&rec, .eng = E, .grads = g, .bytes = bytes,
                      .dtype = PB_FLOAT32, .overlap = ov, .bucket_bytes = cap, .layer_bytes = layers,
                      .nlayers = n, .layer0 = 10};
    pb_dp *dp = NULL;
    assert_int_equal(pb_dp_create(&c, &dp), PB_OK);
    return dp;
}

/* Backward over layers 13..10 (global), declaring each done before its callback. */
static void backward(pb_dp *dp, int64_t n)
{
    assert_int_equal(pb_dp_begin(dp), PB_OK);
    for (int64_t i = n - 1; i >= 0; i--) {
        __atomic_store_n(&rec.completed, i, __ATOMIC_SEQ_CST);
        assert_int_equal(pb_dp_grad_ready(dp, 10 + i, 0, 0), PB_OK);
    }
    assert_int_equal(pb_dp_finish(dp), PB_OK);
}

/* ---- the communication thread binds the rank's GPU (a fake GPU layer) ---- */

static _Thread_local int fake_current = -1; /* CUDA's current device is per thread */
static int fake_count(void) { return 4; }
static int fake_set(int dev) { fake_current = dev; return PB_OK; }
static int fake_describe(int dev, int n, char *d, size_t len) { snprintf(d, len, "fake GPU %d of %d", dev, n); return PB_OK; }
static const pb_gpu_ops fake_gpu = {.count = fake_count, .set_device = fake_set, .describe = fake_describe};

static int devices_seen[64], ndevices_seen;
static int device_allreduce(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, pb_dtype_redop op)
{
    devices_seen[ndevices_seen++ % 64] = fake_current; /* the calling thread's device */
    return mock_allreduce(c, s, r, count, t, op);
}

static void test_comm_thread_binds_device(void **state)
{
    (void)state;
    pb_gpu_ops_set(&fake_gpu);
    char desc[64];
    assert_int_equal(pb_gpu_bind(7, 0, desc, sizeof desc), PB_OK); /* local rank 7 of 4 GPUs: GPU 3 */
    assert_int_equal(pb_gpu_bound(), 3);
    assert_int_equal(fake_current, 3); /* this thread */
    mock.allreduce = device_allreduce;
    ndevices_seen = 0;
    uint64_t layers[4] = {4000, 4000, 4000, 4000};
    float *g = calloc(4000, sizeof(float));
    pb_dp *dp = mock_dp(PB_DP_OVERLAP_BUCKET, g, layers, 4, 16000, 2400);
    backward(dp, 4);
    pb_dp_destroy(dp);
    mock.allreduce = mock_allreduce;
    pb_gpu_ops_set(NULL);
    free(g);
    assert_int_equal(ndevices_seen, 7);
    for (int k = 0; k < 7; k++) assert_int_equal(devices_seen[k], 3); /* in the comm thread, not device 0 / unset */
    assert_int_equal(pb_gpu_bound(), -1); /* restoring the real layer forgets the fake binding */
}

static void test_bucket_sequencing(void **state)
{
    (void)state;
    uint64_t layers[4] = {4000, 4000, 4000, 4000};
    float *g = calloc(4000, sizeof(float));
    pb_dp *dp = mock_dp(PB_DP_OVERLAP_BUCKET, g, layers, 4, 16000, 2400); /* 7 buckets */
    for (int step = 0; step < 3; step++) {
        backward(dp, 4);
        assert_int_equal(rec.n, 7 * (step + 1));
        pb_dp_timing t;
        pb_dp_last_timing(dp, &t);
        assert_true(t.buckets == 7 && t.busy_us >= 0 && t.wait_us >= 0);
    }
    /* Plan order (from the buffer's end) and never before the ready layer. */
    for (int k = 0; k < 7; k++) {
        uint64_t end = 16000 - (uint64_t)k * 2400, lo = end > 2400 ? end - 2400 : 0;
        assert_true(rec.offset[k] == lo);
        assert_true(rec.seen[k] <= (int64_t)(lo / 4000)); /* its lowest layer had completed */
    }
    for (int i = 0; i < 4000; i++) assert_true(g[i] == 3.0f); /* each element reduced once per step */
    pb_dp_destroy(dp);
    free(g);
}

/* Each bucket is handed to the communication thread by the ready callback of
 * the lowest layer it covers, not later: before pb_dp_finish is called, all
 * buckets are reduced, the ones of layer 0 (the last backward reaches)
 * included. Layers are global (layer0 = 10), as on a later pipeline stage. */
static void test_buckets_posted_when_ready(void **state)
{
    (void)state;
    uint64_t layers[4] = {4000, 4000, 4000, 4000};
    float *g = calloc(4000, sizeof(float));
    pb_dp *dp = mock_dp(PB_DP_OVERLAP_BUCKET, g, layers, 4, 16000, 2400); /* 7 buckets */
    assert_int_equal(pb_dp_begin(dp), PB_OK);
    for (int64_t i = 3; i >= 0; i--) {
        __atomic_store_n(&rec.completed, i, __ATOMIC_SEQ_CST);
        assert_int_equal(pb_dp_grad_ready(dp, 10 + i, 0, 0), PB_OK);
        int want = 0; /* buckets [lo, lo + 2400) from the end whose lowest layer, lo / 4000, is done */
        for (int64_t end = 16000; end > 0; end -= 2400)
            want += (end > 2400 ? end - 2400 : 0) / 4000 >= i;
        assert_int_equal(reduced(want), want);
    }
    assert_int_equal(pb_dp_finish(dp), PB_OK);
    assert_int_equal(rec.n, 7);
    pb_dp_destroy(dp);
    free(g);
}

/* Buckets whose layers never reported ready (a backward that stops early, or
 * layers the caller does not announce) are reduced by pb_dp_finish itself. */
static void test_finish_reduces_what_was_not_posted(void **state)
{
    (void)state;
    uint64_t layers[4] = {4000, 4000, 4000, 4000};
    float *g = calloc(4000, sizeof(float));
    pb_dp *dp = mock_dp(PB_DP_OVERLAP_BUCKET, g, layers, 4, 16000, 2400); /* 7 buckets */
    assert_int_equal(pb_dp_begin(dp), PB_OK);
    for (int64_t i = 3; i >= 2; i--) { /* layers 1 and 0 never report */
        __atomic_store_n(&rec.completed, i, __ATOMIC_SEQ_CST);
        assert_int_equal(pb_dp_grad_ready(dp, 10 + i, 0, 0), PB_OK);
    }
    __atomic_store_n(&rec.completed, 0, __ATOMIC_SEQ_CST);
    assert_int_equal(pb_dp_finish(dp), PB_OK);
    assert_int_equal(rec.n, 7);
    for (int i = 0; i < 4000; i++) assert_true(g[i] == 1.0f); /* every element reduced, once */
    pb_dp_destroy(dp);
    free(g);
}

static void test_none_waits_for_finish(void **state)
{
    (void)state;
    uint64_t layers[4] = {4000, 4000, 4000, 4000};
    float *g = calloc(4000, sizeof(float));
    pb_dp *dp = mock_dp(PB_DP_OVERLAP_NONE, g, layers, 4, 16000, 2400);
    assert_true(pb_dp_bucket_count(dp) == 1 && pb_dp_max_bucket(dp) == 16000);
    assert_int_equal(pb_dp_begin(dp), PB_OK);
    for (int64_t i = 3; i >= 0; i--) assert_int_equal(pb_dp_grad_ready(dp, 10 + i, 0, 0), PB_OK);
    assert_int_equal(rec.n, 0); /* nothing during backward */
    rec.completed = -1;
    assert_int_equal(pb_dp_finish(dp), PB_OK);
    assert_true(rec.n == 1 && rec.offset[0] == 0 && g[3999] == 1.0f);
    assert_int_equal(pb_dp_reduce_all(dp), PB_OK); /* comm alone */
    assert_true(rec.n == 2 && g[0] == 2.0f);
    pb_dp_destroy(dp);
    free(g);
}

/* ---- stream order (NCCL with cuBLAS), rehearsed on the CPU: a queued
 * engine and a stream backend whose hooks record what they are asked, in
 * one log: 'q' traffic after the compute queue, '(' ')' a span around an
 * all-reduce 'r', 's' the backend's sync, 't' the span take. ---- */

static struct {
    char log[128];
    int n;
    size_t counts[16]; /* elements of each all-reduce */
    int spans;         /* ended since the last take */
} sq;
static int queue_token;
static void sq_put(char c) { if (sq.n < (int)sizeof sq.log - 1) sq.log[sq.n++] = c; }
static void *sq_queue(void) { return &queue_token; }
static int sq_engine_span(void) { return PB_OK; }
static int sq_engine_take(double *us, int *count) { (void)us, (void)count; return PB_OK; }
static int sq_after(pb_comm *c, void *q) { (void)c; sq_put(q == &queue_token ? 'q' : '?'); return PB_OK; }
static int sq_before(pb_comm *c, void *q) { (void)c, (void)q; sq_put('b'); return PB_OK; }
static int sq_span_begin(pb_comm *c) { (void)c; sq_put('('); return PB_OK; }
static int sq_span_end(pb_comm *c) { (void)c; sq_put(')'); sq.spans++; return PB_OK; }
static int sq_sync(pb_comm *c) { (void)c; sq_put('s'); return PB_OK; }
static int sq_take(pb_comm *c, double *us, int *count) /* each span took 5 us of "device time" */
{
    (void)c;
    sq_put('t');
    if (us) *us += 5.0 * sq.spans;
    if (count) *count += sq.spans;
    sq.spans = 0;
    return PB_OK;
}
static int sq_allreduce(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, pb_dtype_redop op)
{
    sq_put('r');
    sq.counts[(rec.n) % 16] = count;
    return mock_allreduce(c, s, r, count, t, op);
}
static pb_comm_backend streamed = {.name = "streamed", .mem = PB_MEM_DEVICE, .allreduce = sq_allreduce, .sync = sq_sync,
                                   .alloc = mock_alloc, .free = free, .to_host = mock_to_host,
                                   .from_host = mock_from_host, .after_queue = sq_after, .before_queue = sq_before,
                                   .span_begin = sq_span_begin, .span_end = sq_span_end, .span_take = sq_take};

/* Buckets are queued from the ready callback of their lowest layer (no
 * thread), each behind the compute queue and inside a span; finish queues
 * the rest, syncs once and takes the spans' device time as the busy time. */
static void test_stream_order(void **state)
{
    (void)state;
    pb_compute queued = *E;
    queued.mem = PB_MEM_DEVICE; /* the engine's memory is the backend's: no staging */
    queued.queue = sq_queue;
    queued.span_begin = queued.span_end = sq_engine_span;
    queued.span_take = sq_engine_take;
    assert_int_equal(pb_ordering_plan(&queued, &streamed), PB_ORDERING_STREAM);
    uint64_t layers[4] = {4000, 4000, 4000, 4000};
    float *g = calloc(4000, sizeof(float));
    memset(&rec, 0, sizeof rec);
    memset(&sq, 0, sizeof sq);
    rec.base = (char *)g;
    pb_dp_config c = {.be = &streamed, .comm = (pb_comm *)&rec, .eng = &queued, .grads = g, .bytes = 16000,
                      .dtype = PB_FLOAT32, .overlap = PB_DP_OVERLAP_BUCKET, .bucket_bytes = 2400,
                      .layer_bytes = layers, .nlayers = 4, .layer0 = 10};
    pb_dp *dp = NULL;
    assert_int_equal(pb_dp_create(&c, &dp), PB_OK);
    assert_int_equal(pb_dp_begin(dp), PB_OK);
    for (int64_t i = 3; i >= 0; i--) {
        __atomic_store_n(&rec.completed, i, __ATOMIC_SEQ_CST);
        assert_int_equal(pb_dp_grad_ready(dp, 10 + i, 0, 0), PB_OK);
        int want = 0; /* queued in the callback itself: buckets whose lowest layer, lo / 4000, is done */
        for (int64_t end = 16000; end > 0; end -= 2400) want += (end > 2400 ? end - 2400 : 0) / 4000 >= i;
        assert_int_equal(rec.n, want);
    }
    assert_int_equal(pb_dp_finish(dp), PB_OK);
    assert_string_equal(sq.log, "q(r)q(r)q(r)q(r)q(r)q(r)q(r)st");
    for (int k = 0; k < 7; k++) { /* plan order from the buffer's end; each bucket's own element count */
        uint64_t end = 16000 - (uint64_t)k * 2400, lo = end > 2400 ? end - 2400 : 0;
        assert_true(rec.offset[k] == lo);
        assert_true(sq.counts[k] == (end - lo) / sizeof(float));
    }
    for (int i = 0; i < 4000; i++) assert_true(g[i] == 1.0f); /* every element reduced, once */
    pb_dp_timing t;
    pb_dp_last_timing(dp, &t);
    assert_true(t.buckets == 7 && t.busy_us == 35.0); /* the spans' device time, not the host's */

    /* The all-reduce alone: every bucket queued at once, one sync, one take. */
    memset(&sq, 0, sizeof sq);
    rec.n = 0;
    assert_int_equal(pb_dp_reduce_all(dp), PB_OK);
    assert_string_equal(sq.log, "q(r)q(r)q(r)q(r)q(r)q(r)q(r)st");
    for (int i = 0; i < 4000; i++) assert_true(g[i] == 2.0f);
    pb_dp_last_timing(dp, &t);
    assert_true(t.busy_us == 35.0);
    pb_dp_destroy(dp);
    free(g);
}

/* Device-memory backend with the host engine: buckets go through a staging buffer. */
static void test_staging(void **state)
{
    (void)state;
    uint64_t layers[2] = {800, 800};
    float *g = calloc(400, sizeof(float));
    mock.mem = PB_MEM_DEVICE;
    pb_dp *dp = mock_dp(PB_DP_OVERLAP_BUCKET, g, layers, 2, 1600, 1000);
    backward(dp, 2);
    for (int k = 0; k < rec.n; k++) assert_true(rec.offset[k] != 600 && rec.offset[k] != 0); /* not in place */
    for (int i = 0; i < 400; i++) assert_true(g[i] == 1.0f);
    /* Only the device-side backend reaches its memory: each bucket in by its
     * from_host, out by its to_host (the host engine's copies cannot). */
    assert_true(rec.from_host == rec.n && rec.to_host == rec.n);
    pb_dp_destroy(dp);
    mock.mem = PB_MEM_HOST;
    free(g);
}

/* ---- validation and whole steps on one rank ---- */

static void test_check_counts_and_corruption(void **state)
{
    (void)state;
    float *g;
    assert_int_equal(E->alloc((void **)&g, 100 * sizeof(float)), PB_OK);
    assert_int_equal(pb_dp_fill_known(E, g, PB_FLOAT32, 0, 100, 3), PB_OK);
    for (int i = 0; i < 100; i++) assert_true(g[i] == (float)(1 + (3 + i) % 8));
    float local[100];
    memcpy(local, g, sizeof local);
    long long wrong = -1;
    uint64_t h1 = 0, h2 = 0;
    assert_int_equal(pb_dp_check(MPI_COMM_SELF, E, g, local, sizeof local, PB_FLOAT32, 0, &wrong, &h1), PB_OK);
    assert_true(wrong == 0);
    assert_int_equal(pb_dp_check(MPI_COMM_SELF, E, g, local, sizeof local, PB_FLOAT32, 1, &wrong, &h2), PB_OK);
    assert_true(wrong == 1 && h1 != h2);
    g[5] = NAN;
    assert_int_equal(pb_dp_check(MPI_COMM_SELF, E, g, local, sizeof local, PB_FLOAT32, 0, &wrong, &h1), PB_OK);
    assert_true(wrong == 1);
    assert_true(pb_dp_tolerance(PB_FLOAT32, 2) == ldexp(1, -22) && pb_dp_tolerance(PB_BFLOAT16, 4) == ldexp(1, -5));
    E->free(g);
}

static uint64_t reduced_elems; /* elements passed through all-reduces (comm thread too) */
static int counting_allreduce(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, pb_dtype_redop op)
{
    __atomic_fetch_add(&reduced_elems, (uint64_t)count, __ATOMIC_SEQ_CST);
    return pb_comm_backend_mpi()->allreduce(c, s, r, count, t, op);
}
static pb_comm_backend counting;

/* Elements all-reduced by one call of `phase`. */
static uint64_t reduced_by(int (*phase)(pb_dp_step *), pb_dp_step *s)
{
    uint64_t before = __atomic_load_n(&reduced_elems, __ATOMIC_SEQ_CST);
    assert_int_equal(phase(s), PB_OK);
    return __atomic_load_n(&reduced_elems, __ATOMIC_SEQ_CST) - before;
}

static long long one_step(pb_comm *comm, uint64_t grad_bytes, pb_dp_overlap ov, pb_dtype gt, uint64_t *hash)
{
    counting = *pb_comm_backend_mpi();
    counting.allreduce = counting_allreduce;
    pb_dp_step_config c = {.eng = E, .be = &counting, .comm = comm,
                           .shape = {.b = 1, .s = 8, .h = 32, .heads = 4, .tp_size = 1, .attn_scores = 1,
                                     .dtype = PB_FLOAT32},
                           .nlayers = 3, .seed = 5, .rank = 0, .grad_dtype = gt, .grad_bytes = grad_bytes,
                           .overlap = ov, .bucket_bytes = 4096, .check = 1};
    assert_true(pb_dp_step_real_bytes(&c) == 3 * 12 * 32 * 32 * pb_dtype_size(gt));
    uint64_t eng = 0, host = 0;
    pb_dp_step_bytes(&c, &eng, &host);
    assert_true(eng >= (grad_bytes ? grad_bytes : pb_dp_step_real_bytes(&c)) && host > 0);
    pb_dp_step *s = NULL;
    assert_int_equal(pb_dp_step_create(&c, &s), PB_OK);
    /* 3 layers x (2*8*12*32^2 + 4*8^2*32) forward, x3 with backward */
    assert_true(pb_dp_step_flops(s) == 3 * 3 * (2.0 * 8 * 12 * 32 * 32 + 4.0 * 8 * 8 * 32));
    uint64_t g = grad_bytes ? grad_bytes : pb_dp_step_real_bytes(&c);
    assert_true(pb_dp_step_real_in_buffer(s) == (pb_dp_step_real_bytes(&c) <= g ? pb_dp_step_real_bytes(&c) : 0));
    uint64_t elems = g / pb_dtype_size(gt);
    assert_true(reduced_by(pb_dp_step_compute, s) == 0);     /* compute alone: no communication */
    assert_true(reduced_by(pb_dp_step_comm, s) == elems);    /* the whole buffer, once */
    assert_true(reduced_by(pb_dp_step_full, s) == elems);
    long long wrong = -1;
    assert_int_equal(pb_dp_step_validate(s, MPI_COMM_SELF, 0, &wrong, hash), PB_OK);
    pb_dp_step_destroy(s);
    return wrong;
}

static void test_steps_none_equals_bucket(void **state)
{
    (void)state;
    pb_comm *comm = NULL;
    assert_int_equal(pb_comm_backend_mpi()->comm_create(MPI_COMM_SELF, &comm), PB_OK);
    uint64_t sizes[] = {0, 200000, 4096}; /* real, decoupled larger, smaller than the stack */
    for (size_t i = 0; i < 3; i++) {
        for (int bf = 0; bf < 2; bf++) {
            pb_dtype gt = bf ? PB_BFLOAT16 : PB_FLOAT32;
            uint64_t h_none = 0, h_bucket = 1;
            assert_true(one_step(comm, sizes[i], PB_DP_OVERLAP_NONE, gt, &h_none) == 0);
            assert_true(one_step(comm, sizes[i], PB_DP_OVERLAP_BUCKET, gt, &h_bucket) == 0);
            assert_true(h_none == h_bucket);
        }
    }
    pb_comm_backend_mpi()->comm_destroy(comm);
}

/* A gradient buffer that is not whole elements has no layout: the step is refused, not built on it. */
static void test_step_refuses_partial_element(void **state)
{
    (void)state;
    pb_comm *comm = NULL;
    assert_int_equal(pb_comm_backend_mpi()->comm_create(MPI_COMM_SELF, &comm), PB_OK);
    pb_dp_step_config c = {.eng = E, .be = pb_comm_backend_mpi(), .comm = comm,
                           .shape = {.b = 1, .s = 8, .h = 32, .heads = 4, .tp_size = 1, .attn_scores = 1,
                                     .dtype = PB_FLOAT32},
                           .nlayers = 3, .seed = 5, .rank = 0, .grad_dtype = PB_FLOAT32, .grad_bytes = 4098,
                           .overlap = PB_DP_OVERLAP_BUCKET, .bucket_bytes = 4096};
    pb_dp_step *s = NULL;
    assert_int_equal(pb_dp_step_create(&c, &s), PB_ERR_USAGE);
    assert_null(s);
    c.grad_bytes = 4096;
    assert_int_equal(pb_dp_step_create(&c, &s), PB_OK);
    long long wrong = 0;
    uint64_t hash = 0;
    /* created without check: no validation copy, so validation is refused, not run on NULL */
    assert_int_equal(pb_dp_step_validate(s, MPI_COMM_SELF, 0, &wrong, &hash), PB_ERR_USAGE);
    pb_dp_step_destroy(s);
    pb_comm_backend_mpi()->comm_destroy(comm);
}

/* Layer shares that do not add up to the buffer, no layers, or an unknown overlap mode:
 * refused before anything is reduced. */
static void test_layer_shares_must_cover_the_buffer(void **state)
{
    (void)state;
    float g[16] = {0};
    uint64_t layers[2] = {32, 16};
    pb_dp_config c = {.be = &mock, .comm = (pb_comm *)&rec, .eng = E, .grads = g, .bytes = sizeof g,
                      .dtype = PB_FLOAT32, .overlap = PB_DP_OVERLAP_NONE, .layer_bytes = layers, .nlayers = 2};
    pb_dp *dp = NULL;
    assert_int_equal(pb_dp_create(&c, &dp), PB_ERR_USAGE); /* 48 of 64 bytes */
    assert_null(dp);
    c.nlayers = 0, c.bytes = 0;
    assert_int_equal(pb_dp_create(&c, &dp), PB_ERR_USAGE);
    layers[1] = 32, c.nlayers = 2, c.bytes = sizeof g;
    /* an overlap mode outside the enum (a caller's garbage) is refused, on either side */
    c.overlap = PB_DP_OVERLAP_COUNT;
    assert_int_equal(pb_dp_create(&c, &dp), PB_ERR_USAGE);
    c.overlap = (pb_dp_overlap)-1;
    assert_int_equal(pb_dp_create(&c, &dp), PB_ERR_USAGE);
    assert_null(dp);
    c.overlap = PB_DP_OVERLAP_NONE;
    /* each piece the step needs, missing in turn, and a gradient type DP does not reduce */
    pb_dp_config whole = c;
    c.be = NULL;
    assert_int_equal(pb_dp_create(&c, &dp), PB_ERR_USAGE);
    c = whole, c.comm = NULL;
    assert_int_equal(pb_dp_create(&c, &dp), PB_ERR_USAGE);
    c = whole, c.eng = NULL;
    assert_int_equal(pb_dp_create(&c, &dp), PB_ERR_USAGE);
    c = whole, c.grads = NULL;
    assert_int_equal(pb_dp_create(&c, &dp), PB_ERR_USAGE);
    c = whole, c.dtype = PB_INT32;
    assert_int_equal(pb_dp_create(&c, &dp), PB_ERR_USAGE);
    assert_null(dp);
    c = whole;
    assert_int_equal(pb_dp_create(&c, &dp), PB_OK);
    pb_dp_destroy(dp);
}

/* The model options: a preset resized by --hidden and --heads keeps its form (the MLP's width
 * per h, the query heads per KV head), explicit --ffn and --kv-heads win, and the precision
 * is bf16 on a GPU engine unless given. */
static void test_workload_model_options(void **state)
{
    (void)state;
    pb_workload_opts o;
    pb_workload_opts_defaults(&o, "llama-70b");
    o.hidden = 4096;
    o.heads = 32;
    assert_int_equal(pb_workload_opts_resolve(&o), PB_OK);
    assert_int_equal(o.model.ffn, 28672 / 2);   /* 3.5h */
    assert_int_equal(o.model.kv_heads, 4);      /* 8 query heads a KV head */
    assert_int_equal(o.declared.hidden, 8192);  /* --params preset counts the model as declared */
    pb_layer_shape sh = pb_workload_opts_layer_shape(&o, 2048, 512, 2, 1);
    assert_int_equal(sh.ffn, 7168);             /* a swept hidden size keeps 3.5h */
    assert_true(sh.gated && sh.kv_heads == 4 && sh.s == 512 && sh.tp_rank == 1);
    pb_workload_opts_defaults(&o, "llama-70b");
    o.ffn = 1000;
    o.kv_heads = 16;
    assert_int_equal(pb_workload_opts_resolve(&o), PB_OK);
    assert_true(o.model.ffn == 1000 && o.model.kv_heads == 16);
    o.kv_heads = 3; /* does not divide 64 */
    assert_int_equal(pb_workload_opts_resolve(&o), PB_ERR_USAGE);

    pb_workload_opts_defaults(&o, "tiny");
    pb_workload_opts_precision(&o, PB_MEM_DEVICE);
    assert_true(o.compute_dtype == PB_BFLOAT16 && o.grad_dtype == PB_BFLOAT16);
    pb_workload_opts_defaults(&o, "tiny");
    pb_workload_opts_precision(&o, PB_MEM_HOST);
    assert_true(o.compute_dtype == PB_FLOAT32 && o.grad_dtype == PB_FLOAT32);
    o.grad_dtype = PB_FLOAT32, o.grad_dtype_given = 1; /* what the user asked for stays */
    pb_workload_opts_precision(&o, PB_MEM_DEVICE);
    assert_true(o.compute_dtype == PB_BFLOAT16 && o.grad_dtype == PB_FLOAT32);
}

int main(int argc, char **argv)
{
    int level = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
    E = pb_compute_blas();
    E->init(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_identity_and_scaling),
        cmocka_unit_test(test_workload_model_options),
        cmocka_unit_test(test_layer_shares_must_cover_the_buffer),
        cmocka_unit_test(test_finish_reduces_what_was_not_posted),
        cmocka_unit_test(test_layout_random),
        cmocka_unit_test(test_buckets_never_before_real_data),
        cmocka_unit_test(test_metrics),
        cmocka_unit_test(test_paired_overhead),
        cmocka_unit_test(test_preset_params_and_grad_bytes),
        cmocka_unit_test(test_bucket_sequencing),
        cmocka_unit_test(test_comm_thread_binds_device),
        cmocka_unit_test(test_buckets_posted_when_ready),
        cmocka_unit_test(test_none_waits_for_finish),
        cmocka_unit_test(test_stream_order),
        cmocka_unit_test(test_staging),
        cmocka_unit_test(test_check_counts_and_corruption),
        cmocka_unit_test(test_steps_none_equals_bucket),
        cmocka_unit_test(test_step_refuses_partial_element),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return failed;
}
