/* harness/runner.c's timing loop on one rank (an MPI singleton): every
 * iteration timed, and an iteration's failure ends the loop at the next
 * alignment with that very status, its time not counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "harness/runner.h"

#include <mpi.h>

typedef struct {
    int calls, fail_at, status; /* fail_at: the iteration (negative: warm-up) that returns status */
} loop_ctx;

static int iteration(void *p, int iter)
{
    loop_ctx *c = p;
    c->calls++;
    return iter == c->fail_at ? c->status : PB_OK;
}

static void run(loop_ctx *c, int *status, int *done, double *samples)
{
    pb_runner_cfg cfg = {.iters = 5, .warmup = 2, .max_seconds = 0};
    *status = pb_runner_time_loop(MPI_COMM_WORLD, &cfg, iteration, c, samples, done);
}

static void every_iteration_timed(void **state)
{
    (void)state;
    loop_ctx c = {.fail_at = 99};
    double samples[5] = {-1, -1, -1, -1, -1};
    int status, done;
    run(&c, &status, &done, samples);
    assert_int_equal(status, PB_OK);
    assert_int_equal(done, 5);
    assert_int_equal(c.calls, 7); /* 2 warm-up + 5 timed */
    for (int i = 0; i < 5; i++) assert_true(samples[i] >= 0);
}

static void a_failure_ends_the_loop_with_its_status(void **state)
{
    (void)state;
    const int codes[] = {PB_ERR_CHECK, PB_ERR_USAGE, PB_ERR_ENV};
    for (int k = 0; k < 3; k++) {
        loop_ctx c = {.fail_at = 1, .status = codes[k]};
        double samples[5];
        int status, done;
        run(&c, &status, &done, samples);
        assert_int_equal(status, codes[k]);
        assert_int_equal(done, 1);    /* iteration 0 only: the failed one is not a sample */
        assert_int_equal(c.calls, 4); /* 2 warm-up, 0, and the failed 1: none after it */
    }
    loop_ctx warm = {.fail_at = -1, .status = PB_ERR_ENV};
    double samples[5];
    int status, done;
    run(&warm, &status, &done, samples);
    assert_int_equal(status, PB_ERR_ENV);
    assert_int_equal(done, 0);
    assert_int_equal(warm.calls, 2);
}

int main(void)
{
    MPI_Init(NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_iteration_timed),
        cmocka_unit_test(a_failure_ends_the_loop_with_its_status),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return failed;
}
