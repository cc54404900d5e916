/* Tensor parallelism: shape constraints, group placement, volumes, and the
 * t = 1 stack (no communicator) against the plain layer stack. Sharded runs
 * over real ranks are in tests/integration/test_tp_layer.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "plan/model.h"
#include "workload/tp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const pb_compute *E;

static int setup(void **state)
{
    (void)state;
    pb_error_set_quiet_usage(1); /* the usage errors below are expected */
    E = pb_compute_blas();
    return E->init(NULL);
}

static pb_layer_shape shape(int64_t h, int64_t heads, int64_t s, int t)
{
    return (pb_layer_shape){.b = 2, .s = s, .h = h, .heads = heads, .tp_size = t, .tp_rank = 0,
                            .attn_scores = 1, .dtype = PB_FLOAT32};
}

static void test_modes(void **state)
{
    (void)state;
    pb_tp_mode m;
    assert_int_equal(pb_tp_mode_parse("--tp-comm", "sp", &m), PB_OK);
    assert_int_equal(m, PB_TP_SP);
    assert_int_equal(pb_tp_mode_parse("--tp-comm", "allreduce", &m), PB_OK);
    assert_int_equal(m, PB_TP_ALLREDUCE);
    assert_int_equal(pb_tp_mode_parse("--tp-comm", "ring", &m), PB_ERR_USAGE);
    assert_string_equal(pb_tp_mode_name(PB_TP_SP), "sp");
}

static void test_shape_constraints(void **state)
{
    (void)state;
    pb_layer_shape ok = shape(64, 4, 16, 4);
    assert_int_equal(pb_tp_shape_check(&ok, PB_TP_ALLREDUCE), PB_OK);
    assert_int_equal(pb_tp_shape_check(&ok, PB_TP_SP), PB_OK);
    pb_layer_shape h3 = shape(64, 4, 16, 3); /* t does not divide h */
    assert_int_equal(pb_tp_shape_check(&h3, PB_TP_ALLREDUCE), PB_ERR_USAGE);
    pb_layer_shape heads = shape(64, 4, 16, 8); /* t | h but not the head count */
    assert_int_equal(pb_tp_shape_check(&heads, PB_TP_ALLREDUCE), PB_ERR_USAGE);
    pb_layer_shape seq = shape(64, 4, 10, 4); /* sp needs t | s; allreduce does not */
    assert_int_equal(pb_tp_shape_check(&seq, PB_TP_ALLREDUCE), PB_OK);
    assert_int_equal(pb_tp_shape_check(&seq, PB_TP_SP), PB_ERR_USAGE);
    pb_layer_shape none = shape(64, 4, 16, 0), neg = shape(64, 4, 16, -2); /* no tensor-parallel size */
    assert_int_equal(pb_tp_shape_check(&none, PB_TP_ALLREDUCE), PB_ERR_USAGE);
    assert_int_equal(pb_tp_shape_check(&neg, PB_TP_ALLREDUCE), PB_ERR_USAGE);
}

/* Every rank lands in exactly one group, and pb_tp_group_ranks agrees. */
static void check_partition(int world, int t, int stride)
{
    int *seen = calloc((size_t)world, sizeof *seen), ranks[64];
    for (int g = 0; g < world / t; g++) {
        pb_tp_group_ranks(world, t, stride, g, ranks);
        for (int k = 0; k < t; k++) {
            int grp, idx;
            assert_int_equal(pb_tp_group_of(world, t, stride, ranks[k], &grp, &idx), PB_OK);
            assert_int_equal(grp, g);
            assert_int_equal(idx, k);
            seen[ranks[k]]++;
        }
    }
    for (int r = 0; r < world; r++) assert_int_equal(seen[r], 1);
    free(seen);
}

static void test_groups(void **state)
{
    (void)state;
    int g, i, ranks[4];
    assert_int_equal(pb_tp_group_of(8, 2, 1, 5, &g, &i), PB_OK);
    assert_int_equal(g, 2);
    assert_int_equal(i, 1);
    /* stride 2 on 4 ranks: {0,2} and {1,3}, the inter-node layout of a 2x2 cluster */
    pb_tp_group_ranks(4, 2, 2, 1, ranks);
    assert_int_equal(ranks[0], 1);
    assert_int_equal(ranks[1], 3);
    check_partition(8, 2, 1);
    check_partition(8, 2, 2);
    check_partition(8, 2, 4);
    check_partition(12, 3, 2);
    check_partition(4, 4, 1);
    assert_int_equal(pb_tp_group_of(6, 4, 1, 0, &g, &i), PB_ERR_USAGE);
    assert_int_equal(pb_tp_group_of(4, 2, 3, 0, &g, &i), PB_ERR_USAGE);
    assert_int_equal(pb_tp_group_of(4, 8, 1, 0, &g, &i), PB_ERR_USAGE);
    assert_int_equal(pb_tp_group_of(4, 2, 0, 0, &g, &i), PB_ERR_USAGE); /* a stride of 0 divides nothing */
    assert_int_equal(pb_tp_group_of(4, 2, -1, 0, &g, &i), PB_ERR_USAGE);
}

/* 4 all-reduces of N*h, or 4 all-gathers + 4 reduce-scatters of N*h/t per
 * rank, both equal the planner's 8*b*s*h*(t-1)/t. */
static void test_volumes(void **state)
{
    (void)state;
    for (int t = 1; t <= 8; t *= 2) {
        pb_layer_shape sh = shape(256, 8, 64, t);
        uint64_t full = (uint64_t)(sh.b * sh.s * sh.h);
        double want = pb_tp_expected_bytes_layer(&sh, 4);
        assert_true(4 * pb_tp_allreduce_bytes(full, t, 4) == (uint64_t)want);
        assert_true(8 * pb_tp_shard_coll_bytes(full / (uint64_t)t, t, 4) == (uint64_t)want);
        assert_true(want == 4 * pb_model_tp_elems_per_rank_layer(2, 64, 256, t));
    }
    assert_true(pb_tp_tolerance(PB_BFLOAT16) > pb_tp_tolerance(PB_FLOAT32));
}

typedef struct ready_log {
    int64_t layers[8];
    uint64_t offsets[8];
    int n;
} ready_log;

static int on_ready(void *user, int64_t layer, uint64_t offset, uint64_t bytes)
{
    ready_log *l = user;
    assert_true(bytes > 0);
    l->layers[l->n] = layer;
    l->offsets[l->n++] = offset;
    return PB_OK;
}

static pb_tp_config config(pb_tp_mode mode)
{
    return (pb_tp_config){.eng = E, .shape = shape(64, 4, 16, 1), .layer0 = 5, .nlayers = 3, .model_layers = 12,
                          .seed = 99, .mode = mode, .grad_dtype = PB_FLOAT32};
}

static float *to_host(const void *p, size_t n)
{
    float *h = malloc(n * sizeof *h);
    assert_int_equal(E->to_host(h, p, n * sizeof *h), PB_OK);
    return h;
}

/* With t = 1 the TP stack is the plain stack with copies for collectives:
 * results are bit-identical, nothing is sent, and grads arrive last first. */
static void run_t1(pb_tp_mode mode)
{
    pb_tp_config cfg = config(mode);
    pb_tp *tp = NULL;
    assert_int_equal(pb_tp_create(&cfg, &tp), PB_OK);
    pb_layer_stack_config rc = pb_tp_reference_config(&cfg);
    pb_layer_stack *ref = NULL;
    assert_int_equal(pb_layer_stack_create(&rc, &ref), PB_OK);
    size_t n = (size_t)(2 * 16 * 64), bytes = n * sizeof(float);
    assert_int_equal(pb_tp_io_bytes(&cfg), bytes);
    void *x, *dy, *y[2], *dx[2];
    pb_layer_saved *a[2];
    assert_int_equal(E->alloc(&x, bytes), PB_OK);
    assert_int_equal(E->alloc(&dy, bytes), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, x, 32, 64, 1, 0), PB_OK);
    assert_int_equal(pb_layer_fill_input(E, PB_FLOAT32, dy, 32, 64, 1, 1), PB_OK);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(E->alloc(&y[i], bytes), PB_OK);
        assert_int_equal(E->alloc(&dx[i], bytes), PB_OK);
    }
    assert_int_equal(pb_tp_acts_alloc(tp, &a[0]), PB_OK);
    assert_int_equal(pb_layer_saved_alloc(ref, &a[1]), PB_OK);
    ready_log log = {.n = 0};
    assert_int_equal(pb_tp_forward(tp, a[0], x, y[0]), PB_OK);
    assert_int_equal(pb_tp_backward(tp, a[0], dy, dx[0], 0, on_ready, &log), PB_OK);
    assert_int_equal(pb_layer_stack_forward(ref, a[1], x, y[1]), PB_OK);
    assert_int_equal(pb_layer_stack_backward(ref, a[1], dy, dx[1], 0, NULL, NULL), PB_OK);
    for (int i = 0; i < 2; i++) {
        float *got = to_host(i ? dx[0] : y[0], n), *want = to_host(i ? dx[1] : y[1], n);
        assert_memory_equal(got, want, bytes);
        free(got);
        free(want);
    }
    assert_int_equal(log.n, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(log.layers[i], 5 + 2 - i);
        assert_int_equal(log.offsets[i], pb_layer_stack_grad_offset(pb_tp_stack(tp), 2 - i));
    }
    pb_tp_acct acct;
    pb_tp_acct_get(tp, &acct);
    assert_int_equal(acct.comm_bytes, 0);
    assert_int_equal(acct.colls, 0);
    assert_true(acct.compute_us > 0);
    pb_tp_acct_reset(tp);
    pb_tp_acct_get(tp, &acct);
    assert_true(acct.compute_us == 0);

    long long wrong = -1;
    double err = -1;
    assert_int_equal(pb_tp_validate(tp, ref, MPI_COMM_NULL, 0, &wrong, &err), PB_OK);
    assert_int_equal(wrong, 0);
    assert_true(err == 0);
    assert_int_equal(pb_tp_validate(tp, ref, MPI_COMM_NULL, 1, &wrong, &err), PB_OK);
    assert_int_equal(wrong, 1);
    assert_int_equal(pb_tp_validate(tp, ref, MPI_COMM_NULL, 2, &wrong, &err), PB_OK);
    assert_int_equal(wrong, 1); /* the input gradient is checked too, on its own */
    assert_int_equal(pb_tp_validate(tp, ref, MPI_COMM_NULL, 3, &wrong, &err), PB_OK);
    assert_int_equal(wrong, 2);

    pb_tp_acts_free(tp, a[0]);
    pb_layer_saved_free(ref, a[1]);
    void *bufs[] = {x, dy, y[0], y[1], dx[0], dx[1]};
    for (size_t i = 0; i < 6; i++) E->free(bufs[i]);
    pb_layer_stack_destroy(ref);
    pb_tp_destroy(tp);
}

static void test_t1_allreduce(void **state)
{
    (void)state;
    run_t1(PB_TP_ALLREDUCE);
}

static void test_t1_sp(void **state)
{
    (void)state;
    run_t1(PB_TP_SP);
}

/* The tolerance is relative to the largest |reference| over every value, the
 * first one included; the rows compared start at `off`. */
static void test_compare(void **state)
{
    (void)state;
    const float ref[] = {-8, 1, 2, 3, 4, 5}, ok[] = {3.0005f, 4, 5}, off1[] = {1, 2.002f};
    long long wrong = 0;
    double err = 0;
    /* 0.0005 / 8 is within 1e-4; over max|ref[1..]| = 5 it would not be. */
    assert_int_equal(pb_tp_compare(PB_FLOAT32, ref, 6, 3, ok, 3, 0, &wrong, &err), PB_OK);
    assert_int_equal(wrong, 0);
    assert_float_equal(err, (3.0005f - 3.0) / 8, 1e-9);
    /* Rows 1..2: 2.002 is 0.002 / 8 off, wrong; errors and counts accumulate. */
    assert_int_equal(pb_tp_compare(PB_FLOAT32, ref, 6, 1, off1, 2, 0, &wrong, &err), PB_OK);
    assert_int_equal(wrong, 1);
    assert_float_equal(err, (2.002f - 2.0) / 8, 1e-9);
    /* corrupt falsifies the first element only. */
    wrong = 0;
    err = 0;
    assert_int_equal(pb_tp_compare(PB_FLOAT32, ref, 6, 3, ok, 3, 1, &wrong, &err), PB_OK);
    assert_int_equal(wrong, 1);
    assert_true(err > 999);
    /* Not finite is wrong; an all-zero reference compares absolutely. */
    const float zero[] = {0, 0}, bad[] = {NAN, 5e-5f};
    wrong = 0;
    err = 0;
    assert_int_equal(pb_tp_compare(PB_FLOAT32, zero, 2, 0, bad, 2, 0, &wrong, &err), PB_OK);
    assert_int_equal(wrong, 1);
    assert_float_equal(err, 5e-5, 1e-9);
    /* Rows past the reference's end are refused. */
    assert_int_equal(pb_tp_compare(PB_FLOAT32, ref, 6, 5, ok, 2, 0, &wrong, &err), PB_ERR_CHECK);
}

/* Memory accounting covers what create allocates, and a given gradient
 * buffer is used instead of a new one. */
static void test_bytes_and_grads(void **state)
{
    (void)state;
    pb_tp_config cfg = config(PB_TP_ALLREDUCE);
    uint64_t own = pb_tp_bytes(&cfg), g = pb_tp_grad_bytes(&cfg);
    assert_int_equal(g, 3 * 12 * 64 * 64 * sizeof(float));
    void *grads = NULL;
    assert_int_equal(E->alloc(&grads, (size_t)g), PB_OK);
    cfg.grads = grads;
    assert_int_equal(pb_tp_bytes(&cfg), own - g);
    pb_tp *tp = NULL;
    assert_int_equal(pb_tp_create(&cfg, &tp), PB_OK);
    assert_ptr_equal(pb_tp_grads(tp), grads);
    assert_int_equal(pb_tp_act_bytes(&cfg), pb_layer_act_bytes(pb_tp_shape(tp), 3));
    pb_tp_destroy(tp);
    E->free(grads);
    /* t > 1 without a communicator is refused. */
    cfg = config(PB_TP_ALLREDUCE);
    cfg.shape.tp_size = 2;
    assert_int_equal(pb_tp_create(&cfg, &tp), PB_ERR_USAGE);
    assert_null(tp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes),           cmocka_unit_test(test_shape_constraints),
        cmocka_unit_test(test_groups),          cmocka_unit_test(test_volumes),
        cmocka_unit_test(test_t1_allreduce),    cmocka_unit_test(test_t1_sp),
        cmocka_unit_test(test_bytes_and_grads), cmocka_unit_test(test_compare),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
