/* Stream-dependency planning (ordering.h): which engine/backend pairs are
 * ordered on the streams, what each ordering call does in each mode, and the
 * side timer's bookkeeping. Fake tables record the calls, so no GPU is needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend/comm.h"
#include "compute/compute.h"
#include "core/error.h"
#include "workload/ordering.h"
#include "workload/tp.h"

#include <string.h>

/* What the fakes saw. */
static struct {
    int eng_sync, be_sync, after, before, eng_begin, eng_end, be_begin, be_end;
    void *after_queue_arg, *before_queue_arg;
} seen;

static int fake_queue_token;
static pb_comm *const fake_comm = (pb_comm *)&fake_queue_token; /* never dereferenced */

static int eng_synchronize(void) { return seen.eng_sync++, PB_OK; }
static void *eng_queue(void) { return &fake_queue_token; }
static int eng_span_begin(void) { return seen.eng_begin++, PB_OK; }
static int eng_span_end(void) { return seen.eng_end++, PB_OK; }
static int eng_span_take(double *us, int *count)
{
    *us += 7.5 * seen.eng_end, *count += seen.eng_end;
    return PB_OK;
}

static int be_sync(pb_comm *c) { return seen.be_sync++, PB_OK; }
static int be_after(pb_comm *c, void *q) { return seen.after++, seen.after_queue_arg = q, PB_OK; }
static int be_before(pb_comm *c, void *q) { return seen.before++, seen.before_queue_arg = q, PB_OK; }
static int be_span_begin(pb_comm *c) { return seen.be_begin++, PB_OK; }
static int be_span_end(pb_comm *c) { return seen.be_end++, PB_OK; }
static int be_span_take(pb_comm *c, double *us, int *count)
{
    *us += 2.0 * seen.be_end, *count += seen.be_end;
    return PB_OK;
}

static const pb_compute host_engine = {.name = "fake-host", .synchronize = eng_synchronize};
static const pb_compute queued_engine = {.name = "fake-gpu", .mem = PB_MEM_DEVICE, .synchronize = eng_synchronize,
                                         .queue = eng_queue,
                                         .span_begin = eng_span_begin, .span_end = eng_span_end,
                                         .span_take = eng_span_take};
static const pb_comm_backend host_backend = {.name = "fake-mpi", .mem = PB_MEM_HOST, .sync = be_sync};
static const pb_comm_backend staged_backend = {.name = "fake-mpi", .mem = PB_MEM_DEVICE, .sync = be_sync};
static const pb_comm_backend stream_backend = {.name = "fake-nccl", .mem = PB_MEM_DEVICE, .sync = be_sync,
                                          .after_queue = be_after, .before_queue = be_before,
                                          .span_begin = be_span_begin, .span_end = be_span_end,
                                          .span_take = be_span_take};

static int reset(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    return 0;
}

static void test_plan_needs_both_sides(void **state)
{
    assert_int_equal(pb_ordering_plan(&queued_engine, &stream_backend), PB_ORDERING_STREAM);
    assert_int_equal(pb_ordering_plan(&host_engine, &stream_backend), PB_ORDERING_HOST);   /* BLAS with NCCL */
    assert_int_equal(pb_ordering_plan(&queued_engine, &host_backend), PB_ORDERING_HOST);   /* cuBLAS with MPI */
    assert_int_equal(pb_ordering_plan(&queued_engine, &staged_backend), PB_ORDERING_HOST); /* --mem device */
    assert_int_equal(pb_ordering_plan(pb_compute_blas(), pb_comm_backend_mpi()), PB_ORDERING_HOST);
    /* A stream backend whose memory is the host's cannot be ordered against a device queue. */
    pb_comm_backend odd = stream_backend;
    odd.mem = PB_MEM_HOST;
    assert_int_equal(pb_ordering_plan(&queued_engine, &odd), PB_ORDERING_HOST);
    /* Any missing hook falls back to host order. */
    pb_comm_backend partial = stream_backend;
    partial.span_take = NULL;
    assert_int_equal(pb_ordering_plan(&queued_engine, &partial), PB_ORDERING_HOST);
    pb_compute no_spans = queued_engine;
    no_spans.span_end = NULL;
    assert_int_equal(pb_ordering_plan(&no_spans, &stream_backend), PB_ORDERING_HOST);
    /* A TP group of one issues no collective: nothing to order against. */
    assert_int_equal(pb_tp_ordering(&queued_engine, &stream_backend, 2), PB_ORDERING_STREAM);
    assert_int_equal(pb_tp_ordering(&queued_engine, &stream_backend, 1), PB_ORDERING_HOST);
    assert_int_equal(pb_tp_ordering(&queued_engine, NULL, 1), PB_ORDERING_HOST);
    assert_int_equal(pb_tp_ordering(&queued_engine, &host_backend, 4), PB_ORDERING_HOST);
    assert_string_equal(pb_ordering_name(PB_ORDERING_HOST), "host");
    assert_string_equal(pb_ordering_name(PB_ORDERING_STREAM), "stream");
}

static void test_host_order_completes_each_side(void **state)
{
    assert_int_equal(pb_ordering_comm_after_compute(PB_ORDERING_HOST, &host_engine, &host_backend, fake_comm), PB_OK);
    assert_int_equal(seen.eng_sync, 1);
    assert_int_equal(seen.after, 0);
    assert_int_equal(pb_ordering_compute_after_comm(PB_ORDERING_HOST, &host_engine, &host_backend, fake_comm), PB_OK);
    assert_int_equal(seen.be_sync, 1);
    assert_int_equal(seen.before, 0);
}

static void test_stream_order_never_blocks(void **state)
{
    assert_int_equal(pb_ordering_comm_after_compute(PB_ORDERING_STREAM, &queued_engine, &stream_backend, fake_comm),
                     PB_OK);
    assert_int_equal(pb_ordering_compute_after_comm(PB_ORDERING_STREAM, &queued_engine, &stream_backend, fake_comm),
                     PB_OK);
    assert_int_equal(seen.after, 1);
    assert_int_equal(seen.before, 1);
    assert_ptr_equal(seen.after_queue_arg, &fake_queue_token); /* the engine's own queue */
    assert_ptr_equal(seen.before_queue_arg, &fake_queue_token);
    assert_int_equal(seen.eng_sync + seen.be_sync, 0);
}

static void test_host_timer_completes_and_adds(void **state)
{
    pb_ordering_side_timer comm, comp;
    pb_ordering_side_timer_init(&comm, PB_ORDERING_HOST, &host_engine, &host_backend, fake_comm);
    pb_ordering_side_timer_init(&comp, PB_ORDERING_HOST, &host_engine, &host_backend, NULL);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pb_ordering_side_timer_begin(&comm), PB_OK);
        assert_int_equal(pb_ordering_side_timer_end(&comm), PB_OK);
    }
    assert_int_equal(pb_ordering_side_timer_begin(&comp), PB_OK);
    assert_int_equal(pb_ordering_side_timer_end(&comp), PB_OK);
    assert_int_equal(seen.be_sync, 3); /* each end completes the communicator's work */
    assert_int_equal(seen.eng_sync, 1);
    assert_int_equal(comm.spans, 3);
    assert_int_equal(comp.spans, 1);
    assert_true(comm.total_us >= 0 && comp.total_us >= 0);
    double before = comm.total_us;
    assert_int_equal(pb_ordering_side_timer_take(&comm), PB_OK); /* nothing pending in host order */
    assert_true(comm.total_us == before);
    assert_int_equal(seen.be_begin + seen.be_end + seen.eng_begin + seen.eng_end, 0);
}

static void test_stream_timer_uses_spans(void **state)
{
    pb_ordering_side_timer comm, comp;
    pb_ordering_side_timer_init(&comm, PB_ORDERING_STREAM, &queued_engine, &stream_backend, fake_comm);
    pb_ordering_side_timer_init(&comp, PB_ORDERING_STREAM, &queued_engine, &stream_backend, NULL);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(pb_ordering_side_timer_begin(&comm), PB_OK);
        assert_int_equal(pb_ordering_side_timer_end(&comm), PB_OK);
        assert_int_equal(pb_ordering_side_timer_begin(&comp), PB_OK);
        assert_int_equal(pb_ordering_side_timer_end(&comp), PB_OK);
    }
    assert_int_equal(seen.be_begin, 2);
    assert_int_equal(seen.be_end, 2);
    assert_int_equal(seen.eng_begin, 2);
    assert_int_equal(seen.eng_end, 2);
    assert_int_equal(seen.be_sync + seen.eng_sync, 0); /* the host never waits while timing */
    assert_true(comm.total_us == 0 && comp.total_us == 0); /* nothing is known before the take */
    assert_int_equal(pb_ordering_side_timer_take(&comm), PB_OK);
    assert_int_equal(pb_ordering_side_timer_take(&comp), PB_OK);
    assert_true(comm.total_us == 4.0); /* 2 spans x 2.0 us from the fake backend */
    assert_true(comp.total_us == 15.0); /* 2 spans x 7.5 us from the fake engine */
    assert_int_equal(comm.spans, 2);
    assert_int_equal(comp.spans, 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_plan_needs_both_sides, reset),
        cmocka_unit_test_setup(test_host_order_completes_each_side, reset),
        cmocka_unit_test_setup(test_stream_order_never_blocks, reset),
        cmocka_unit_test_setup(test_host_timer_completes_and_adds, reset),
        cmocka_unit_test_setup(test_stream_timer_uses_spans, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
