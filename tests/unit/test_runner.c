/* harness/runner.c's timing loops on one rank (an MPI singleton). The
 * per-iteration loop: every iteration timed, and an iteration's failure ends
 * the loop at the next alignment with that very status, its time not counted.
 * The whole loop (coll_sweep's time): after warm-up, one alignment, the timed
 * iterations issued back to back, one wait, the time divided by the count; then
 * the sample pass, aligned iteration by iteration. A trace of the alignments
 * (every MPI_Iallreduce, intercepted below), issues and waits pins the order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "harness/runner.h"

#include <mpi.h>
#include <string.h>
#include <time.h>

static char trace[4096]; /* A: alignment (MPI_Iallreduce), B: MPI_Barrier, I: issue, W: wait */

static void mark(char c)
{
    size_t n = strlen(trace);
    if (n + 1 < sizeof trace) trace[n] = c, trace[n + 1] = '\0';
}

/* The runner's alignments go through these: the test's definitions take the
 * library's place and count them (the profiling interface does the work). */
int MPI_Iallreduce(const void *send, void *recv, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
    mark('A');
    return PMPI_Iallreduce(send, recv, count, t, op, comm, req);
}

int MPI_Barrier(MPI_Comm comm)
{
    mark('B');
    return PMPI_Barrier(comm);
}

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

/* A fake collective: issuing costs nothing, each wait takes wait_us (the
 * completion of everything issued so far, as a stream synchronization). */
typedef struct {
    int issues, waits;
    long wait_us;
} fake_op;

static int fake_issue(void *p, int iter)
{
    (void)iter;
    ((fake_op *)p)->issues++;
    mark('I');
    return PB_OK;
}

static int fake_wait(void *p)
{
    fake_op *f = p;
    f->waits++;
    mark('W');
    if (f->wait_us) nanosleep(&(struct timespec){0, f->wait_us * 1000}, NULL);
    return PB_OK;
}

static void repeat(char *out, const char *unit, int n)
{
    for (int i = 0; i < n; i++) strcat(out, unit);
}

static void whole_loop_then_sample_pass(void **state)
{
    (void)state;
    fake_op f = {0};
    pb_runner_op op = {fake_issue, fake_wait, &f};
    pb_runner_cfg cfg = {.iters = 40, .warmup = 2, .max_seconds = 0};
    double samples[40];
    pb_runner_whole w;
    trace[0] = '\0';
    assert_int_equal(pb_runner_time_whole(MPI_COMM_WORLD, &cfg, &op, samples, &w), PB_OK);
    assert_int_equal(w.iters, 40);
    assert_int_equal(w.samples, 16); /* a quarter of 40 is 10: the minimum, 16 */
    char want[4096] = "";
    repeat(want, "AIW", 2);  /* warm-up, aligned */
    strcat(want, "A");       /* one alignment, which also agrees on the count */
    repeat(want, "I", 40);   /* the whole loop: issues back to back... */
    strcat(want, "W");       /* ...and one wait */
    repeat(want, "AIW", 16); /* the sample pass, aligned iteration by iteration */
    strcat(want, "A");       /* the last alignment */
    assert_string_equal(trace, want);
    assert_int_equal(f.waits, 2 + 1 + 16);
}

static void time_is_the_whole_loop_over_its_count(void **state)
{
    (void)state;
    fake_op f = {.wait_us = 2000}; /* one wait in the loop: 2 ms over 20 iterations is 100 us each */
    pb_runner_op op = {fake_issue, fake_wait, &f};
    pb_runner_cfg cfg = {.iters = 20, .warmup = 1, .max_seconds = 0};
    double samples[20];
    pb_runner_whole w;
    assert_int_equal(pb_runner_time_whole(MPI_COMM_WORLD, &cfg, &op, samples, &w), PB_OK);
    assert_true(w.loop_us >= 2000.0 / 20 && w.loop_us < 1000); /* per-iteration timing would give 2000 or more */
    for (int i = 0; i < w.samples; i++) assert_true(samples[i] >= 2000); /* each sample waits */
    double mean = 0, max = 0;
    pb_runner_whole_across(MPI_COMM_WORLD, w.loop_us, &mean, &max);
    assert_true(mean == w.loop_us && max == w.loop_us); /* one rank: its own */
}

static void sample_pass_is_a_quarter_at_least_16(void **state)
{
    (void)state;
    const int iters[] = {1, 10, 16, 40, 64, 100, 1000}, want[] = {1, 10, 16, 16, 16, 25, 250};
    for (int k = 0; k < 7; k++) assert_int_equal(pb_runner_sample_iters(iters[k]), want[k]);
}

static void whole_loop_count_fits_the_cap(void **state)
{
    (void)state;
    assert_int_equal(pb_runner_whole_iters(0, 5e6, 10, 1000), 1000);         /* no cap */
    assert_int_equal(pb_runner_whole_iters(1e4, 2e3, 10, 1000), 640);        /* 800 fit, a fifth left to samples */
    assert_int_equal(pb_runner_whole_iters(1e4, 2e3, 10, 100), 100);         /* the count asked for */
    assert_int_equal(pb_runner_whole_iters(1e4, 9999, 10, 100), 1);          /* at least one */
    assert_int_equal(pb_runner_whole_iters(1e4, 2e3, 0, 100), 100);          /* no rate: no warm-up ran */
}

static void a_cap_without_warmup_times_one(void **state)
{
    (void)state;
    fake_op f = {0};
    pb_runner_op op = {fake_issue, fake_wait, &f};
    pb_runner_cfg cfg = {.iters = 4, .warmup = 0, .max_seconds = 10};
    double samples[4];
    pb_runner_whole w;
    trace[0] = '\0';
    assert_int_equal(pb_runner_time_whole(MPI_COMM_WORLD, &cfg, &op, samples, &w), PB_OK);
    assert_string_equal(trace, "AIW" "AIIIIW" "AIWAIWAIWAIW" "A"); /* one warm-up gives the rate */
    assert_int_equal(w.iters, 4);
    assert_int_equal(w.samples, 4);
}

int main(void)
{
    MPI_Init(NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_iteration_timed),
        cmocka_unit_test(a_failure_ends_the_loop_with_its_status),
        cmocka_unit_test(whole_loop_then_sample_pass),
        cmocka_unit_test(time_is_the_whole_loop_over_its_count),
        cmocka_unit_test(sample_pass_is_a_quarter_at_least_16),
        cmocka_unit_test(whole_loop_count_fits_the_cap),
        cmocka_unit_test(a_cap_without_warmup_times_one),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return failed;
}
