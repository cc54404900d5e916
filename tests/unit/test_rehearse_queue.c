/* The NCCL rehearsal's in-order executor (backend/rehearse_queue.h): a
 * stream runs its units in push order after push has returned, a drain waits
 * for what was queued, the device-wide drain waits for every stream, and a
 * failed unit leaves the stream in error with the units behind it dropped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend/rehearse_queue.h"
#include "core/error.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

typedef struct task {
    int index, fail;
    int *log; /* where the unit writes its index, in run order */
    atomic_int *ran;
} task;

static atomic_int dropped;

static void nap_ms(int ms)
{
    struct timespec t = {0, ms * 1000L * 1000L};
    nanosleep(&t, NULL);
}

static int run_task(void *unit)
{
    task *t = unit;
    nap_ms(5); /* slower than the host, so a drain that did not wait would be seen */
    int n = atomic_fetch_add(t->ran, 1);
    if (t->log) t->log[n] = t->index;
    int status = t->fail ? PB_ERR_ENV : PB_OK;
    free(t);
    return status;
}

static void drop_task(void *unit)
{
    atomic_fetch_add(&dropped, 1);
    free(unit);
}

static void push(pb_rehearse_queue *q, int index, int fail, int *log, atomic_int *ran)
{
    task *t = malloc(sizeof *t);
    assert_non_null(t);
    *t = (task){index, fail, log, ran};
    assert_int_equal(pb_rehearse_queue_push(q, t), PB_OK);
}

static void test_push_returns_before_the_unit_runs_and_drain_waits(void **state)
{
    (void)state;
    pb_rehearse_queue *q = NULL;
    atomic_int ran = 0;
    int log[8] = {0};
    assert_int_equal(pb_rehearse_queue_create(run_task, drop_task, &q), PB_OK);
    for (int i = 0; i < 8; i++) push(q, i, 0, log, &ran);
    assert_true(atomic_load(&ran) < 8); /* asynchronous: the host only queued */
    assert_int_equal(pb_rehearse_queue_drain(q, "test"), PB_OK);
    assert_int_equal(atomic_load(&ran), 8);
    assert_int_equal(pb_rehearse_queue_pending(q), 0);
    for (int i = 0; i < 8; i++) assert_int_equal(log[i], i); /* in issue order */
    assert_int_equal(pb_rehearse_queue_destroy(q), PB_OK);
}

static void test_device_wide_drain_waits_for_every_stream(void **state)
{
    (void)state;
    pb_rehearse_queue *a = NULL, *b = NULL;
    atomic_int ran_a = 0, ran_b = 0;
    assert_int_equal(pb_rehearse_queue_create(run_task, drop_task, &a), PB_OK);
    assert_int_equal(pb_rehearse_queue_create(run_task, drop_task, &b), PB_OK);
    for (int i = 0; i < 4; i++) push(a, i, 0, NULL, &ran_a), push(b, i, 0, NULL, &ran_b);
    assert_int_equal(pb_rehearse_queue_drain_all("test"), PB_OK);
    assert_int_equal(atomic_load(&ran_a), 4);
    assert_int_equal(atomic_load(&ran_b), 4);
    assert_int_equal(pb_rehearse_queue_destroy(a), PB_OK);
    assert_int_equal(pb_rehearse_queue_destroy(b), PB_OK);
}

static void test_a_failed_unit_leaves_the_stream_in_error(void **state)
{
    (void)state;
    pb_rehearse_queue *q = NULL, *other = NULL;
    atomic_int ran = 0, ran_other = 0;
    atomic_store(&dropped, 0);
    assert_int_equal(pb_rehearse_queue_create(run_task, drop_task, &q), PB_OK);
    assert_int_equal(pb_rehearse_queue_create(run_task, drop_task, &other), PB_OK);
    push(q, 0, 0, NULL, &ran);
    push(q, 1, 1, NULL, &ran);
    push(q, 2, 0, NULL, &ran);
    push(other, 0, 0, NULL, &ran_other);
    /* The device-wide wait does not report a stream's own error (cudaMalloc does not). */
    assert_int_equal(pb_rehearse_queue_drain_all("test"), PB_OK);
    assert_int_equal(pb_rehearse_queue_drain(q, "test"), PB_ERR_ENV);
    assert_int_equal(pb_rehearse_queue_drain(q, "test"), PB_ERR_ENV); /* sticky */
    assert_int_equal(atomic_load(&ran), 2);
    assert_int_equal(atomic_load(&dropped), 1);
    assert_int_equal(pb_rehearse_queue_drain(other, "test"), PB_OK);
    assert_int_equal(pb_rehearse_queue_destroy(q), PB_ERR_ENV);
    assert_int_equal(pb_rehearse_queue_destroy(other), PB_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_returns_before_the_unit_runs_and_drain_waits),
        cmocka_unit_test(test_device_wide_drain_waits_for_every_stream),
        cmocka_unit_test(test_a_failed_unit_leaves_the_stream_in_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
