/* coll_exec.h: in-place pointers, and devtime: a batch of back-to-back operations between one pair
 * of CUDA events, against a fake stream whose spans cost the host's launch
 * once per span (the start event of a span on an idle stream is timestamped
 * before the first operation is queued) plus the operations' device time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "assert_near.h"

#include "coll/coll_exec.h"
#include "coll/coll_op.h"
#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { OP_US = 10, LAUNCH_US = 5 };

static char trace[512]; /* B: span begin, o: operation, E: span end, S: sync, T: take */
static int spans_open, spans_done, ops_in_spans, fail_at = -1;
static int dummy;
static pb_comm *const fake_comm = (pb_comm *)&dummy; /* never dereferenced */

static void mark(char c)
{
    size_t n = strlen(trace);
    if (n + 1 < sizeof trace) trace[n] = c, trace[n + 1] = '\0';
}

static int span_begin(pb_comm *c) { return mark('B'), spans_open = 1, PB_OK; }
static int span_end(pb_comm *c) { return mark('E'), spans_open = 0, spans_done++, PB_OK; }
static int be_sync(pb_comm *c) { return mark('S'), PB_OK; }
static int span_take(pb_comm *c, double *us, int *count)
{
    mark('T');
    *us += (double)spans_done * LAUNCH_US + (double)ops_in_spans * OP_US;
    *count += spans_done;
    spans_done = ops_in_spans = 0;
    return PB_OK;
}
static int op(void *ctx, int i)
{
    (void)ctx;
    if (i == fail_at) return PB_ERR_CHECK;
    mark('o');
    ops_in_spans += spans_open;
    return PB_OK;
}

static const pb_comm_backend events_backend = {.name = "fake-nccl", .sync = be_sync, .span_begin = span_begin,
                                               .span_end = span_end, .span_take = span_take};
static const pb_comm_backend host_backend = {.name = "fake-mpi", .sync = be_sync};

static int reset(void **state)
{
    (void)state;
    trace[0] = '\0';
    spans_open = spans_done = ops_in_spans = 0;
    fail_at = -1;
    unsetenv("PARABENCH_DEVTIME_BATCH");
    return 0;
}

static void test_one_batch_amortises_the_launch(void **state)
{
    double us;
    assert_int_equal(pb_coll_exec_device_time(&events_backend, fake_comm, 20, op, NULL, &us), PB_OK);
    assert_string_equal(trace, "BooooooooooooooooooooEST"); /* one span around all 20, one sync */
    assert_near(us, OP_US + (double)LAUNCH_US / 20, 1e-9);
}

static void test_batch_of_one_is_the_old_measure(void **state)
{
    setenv("PARABENCH_DEVTIME_BATCH", "1", 1);
    double us;
    assert_int_equal(pb_coll_exec_device_time(&events_backend, fake_comm, 3, op, NULL, &us), PB_OK);
    assert_string_equal(trace, "BoESBoESBoEST"); /* each operation alone on an idle stream */
    assert_near(us, OP_US + LAUNCH_US, 1e-9);
}

static void test_partial_last_batch(void **state)
{
    setenv("PARABENCH_DEVTIME_BATCH", "2", 1);
    double us;
    assert_int_equal(pb_coll_exec_device_time(&events_backend, fake_comm, 5, op, NULL, &us), PB_OK);
    assert_string_equal(trace, "BooESBooESBoEST");
    assert_near(us, OP_US + 3.0 * LAUNCH_US / 5, 1e-9);
}

static void test_batch_setting(void **state)
{
    assert_int_equal(pb_coll_exec_devtime_batch(20), 20);
    const char *whole[] = {"", "0", "-3", "x", "4x", "20", "99"};
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++) {
        setenv("PARABENCH_DEVTIME_BATCH", whole[i], 1);
        assert_int_equal(pb_coll_exec_devtime_batch(20), 20);
    }
    setenv("PARABENCH_DEVTIME_BATCH", "7", 1);
    assert_int_equal(pb_coll_exec_devtime_batch(20), 7);
}

/* The devtime batch is a quarter of the timed iterations, at least 4. */
static void test_devtime_ops(void **state)
{
    (void)state;
    assert_int_equal(pb_coll_exec_devtime_ops(0), 0);
    assert_int_equal(pb_coll_exec_devtime_ops(3), 3);
    assert_int_equal(pb_coll_exec_devtime_ops(10), 4);
    assert_int_equal(pb_coll_exec_devtime_ops(20), 5);
    assert_int_equal(pb_coll_exec_devtime_ops(1000), 250);
}

static void test_no_events_or_no_operations(void **state)
{
    double us = 0;
    assert_int_equal(pb_coll_exec_device_time(&host_backend, fake_comm, 20, op, NULL, &us), PB_OK);
    assert_true(isnan(us));
    assert_string_equal(trace, "");
    assert_int_equal(pb_coll_exec_device_time(&events_backend, fake_comm, 0, op, NULL, &us), PB_OK);
    assert_true(isnan(us));
    assert_string_equal(trace, "");
}

static void test_failed_operation_closes_the_span(void **state)
{
    fail_at = 2;
    double us = 0;
    assert_int_equal(pb_coll_exec_device_time(&events_backend, fake_comm, 5, op, NULL, &us), PB_ERR_CHECK);
    assert_string_equal(trace, "BooET"); /* ended and taken, not synced or left open */
    assert_true(isnan(us));
}

/* NCCL's in-place forms: allgather sends from this rank's block of the output,
 * reducescatter receives into this rank's block of the input. */
static void test_in_place_pointers(void **state)
{
    static float buf[64];
    const int ranks = 4, rank = 3;
    void *send, *recv;
    pb_coll_exec_shape sh;
    const pb_coll same[] = {PB_COLL_ALLREDUCE, PB_COLL_BROADCAST, PB_COLL_REDUCE};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        pb_coll_exec_shape_of(same[i], sizeof buf, PB_FLOAT32, ranks, &sh);
        assert_int_equal(pb_coll_exec_in_place("--in-place", same[i], &sh, PB_FLOAT32, rank, buf, &send, &recv), PB_OK);
        assert_ptr_equal(send, buf);
        assert_ptr_equal(recv, buf);
    }
    pb_coll_exec_shape_of(PB_COLL_ALLGATHER, sizeof buf, PB_FLOAT32, ranks, &sh);
    assert_int_equal(pb_coll_exec_in_place("--in-place", PB_COLL_ALLGATHER, &sh, PB_FLOAT32, rank, buf, &send, &recv), PB_OK);
    assert_ptr_equal(recv, buf);
    assert_ptr_equal(send, buf + 3 * 16);
    pb_coll_exec_shape_of(PB_COLL_REDUCESCATTER, sizeof buf, PB_FLOAT32, ranks, &sh);
    assert_int_equal(pb_coll_exec_in_place("--in-place", PB_COLL_REDUCESCATTER, &sh, PB_FLOAT32, rank, buf, &send, &recv), PB_OK);
    assert_ptr_equal(send, buf);
    assert_ptr_equal(recv, buf + 3 * 16);
    pb_coll_exec_shape_of(PB_COLL_ALLGATHER, 64, PB_BFLOAT16, ranks, &sh); /* element size counts */
    assert_int_equal(pb_coll_exec_in_place("--in-place", PB_COLL_ALLGATHER, &sh, PB_BFLOAT16, rank, buf, &send, &recv), PB_OK);
    assert_ptr_equal(send, (char *)buf + 3 * 8 * 2);
    assert_int_equal(pb_coll_exec_in_place("--in-place", PB_COLL_ALLTOALL, &sh, PB_FLOAT32, 0, buf, &send, &recv), PB_ERR_USAGE);
    assert_int_equal(pb_coll_exec_in_place("--in-place", PB_COLL_SENDRECV, &sh, PB_FLOAT32, 0, buf, &send, &recv), PB_ERR_USAGE);
}

static int rank_three(const pb_comm *c)
{
    (void)c;
    return 3;
}

/* coll_sweep's pointers for an iteration: its own send and receive slots, or
 * with --in-place both inside the larger of the two (NCCL's forms above); the
 * pointer arithmetic is the same on host memory. */
static void test_op_slots(void **state)
{
    (void)state;
    static float small[16], big[64];
    pb_comm_backend be = {.rank = rank_three};
    pb_coll_op x = {.be = &be, .comm = fake_comm, .coll = PB_COLL_ALLGATHER, .dtype = PB_FLOAT32,
                    .send = {.base = (char *)small, .slots = 1}, .recv = {.base = (char *)big, .slots = 1}};
    pb_coll_exec_shape_of(PB_COLL_ALLGATHER, sizeof big, PB_FLOAT32, 4, &x.shape);
    void *send, *recv;
    pb_coll_op_slots(&x, 5, &send, &recv);
    assert_ptr_equal(send, small);
    assert_ptr_equal(recv, big);
    x.in_place = 1;
    pb_coll_op_slots(&x, 5, &send, &recv);
    assert_ptr_equal(recv, big);
    assert_ptr_equal(send, big + 3 * 16);
    /* reducescatter: the input is the larger, the output rank 3's block of it */
    x.coll = PB_COLL_REDUCESCATTER;
    x.send.base = (char *)big, x.recv.base = (char *)small;
    pb_coll_exec_shape_of(PB_COLL_REDUCESCATTER, sizeof big, PB_FLOAT32, 4, &x.shape);
    pb_coll_op_slots(&x, 5, &send, &recv);
    assert_ptr_equal(send, big);
    assert_ptr_equal(recv, big + 3 * 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_one_batch_amortises_the_launch, reset),
        cmocka_unit_test_setup(test_batch_of_one_is_the_old_measure, reset),
        cmocka_unit_test_setup(test_partial_last_batch, reset),
        cmocka_unit_test_setup(test_batch_setting, reset),
        cmocka_unit_test(test_devtime_ops),
        cmocka_unit_test_setup(test_no_events_or_no_operations, reset),
        cmocka_unit_test_setup(test_failed_operation_closes_the_span, reset),
        cmocka_unit_test(test_in_place_pointers),
        cmocka_unit_test(test_op_slots),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
