/* core/watchdog.c: when an operation stays armed past --timeout, the watchdog
 * says so to the threads that poll a communicator (pb_watchdog_fired) at once,
 * and ends the job (MPI_Abort, exit 4) only about 2 s later, so that such a
 * thread has time to abort its communicator itself. The NCCL backend relies on
 * this: NCCL's communicators are not thread-safe, and an abort from the
 * watchdog's own thread while the rank polled the same communicator was a
 * use after free. Between its looks it sleeps: a rank waiting on a slow
 * operation shares no core with a spinning watchdog. Each case runs in a child process (an MPI singleton), since
 * the watchdog ends the process it watches. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "core/watchdog.h"
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What a child does after starting the watchdog with a 0.3 s timeout. */
enum { ARM, ARM_DISARM, STOP_ARM, ARM_PROGRESS };

/* Child: arm (ARM), arm and disarm (ARM_DISARM), or stop the watchdog and then
 * arm (STOP_ARM: a stopped watchdog has no thread left to fire), then poll
 * pb_watchdog_fired for up to 2 s as the NCCL stream sync does. Writes to
 * FD the seconds from arming to the first time the flag was seen (-1: never);
 * the flag is reported as soon as it is seen, since the job may end any moment
 * after it. Exit 0 when it was never seen; the watchdog's exit code when it ends
 * the process. */
static void child(int fd, int mode)
{
    MPI_Init(NULL, NULL);
    if (pb_watchdog_start(0.3, 0, "localhost", "test_watchdog") != PB_OK) _exit(10);
    if (mode == STOP_ARM) pb_watchdog_stop();
    double t0 = now_s();
    pb_watchdog_arm(0, "operation");
    if (mode == ARM_DISARM) pb_watchdog_disarm();
    double seen = -1;
    for (int i = 1; now_s() - t0 < 2 && seen < 0; i++) {
        if (pb_watchdog_fired()) seen = now_s() - t0;
        if (mode == ARM_PROGRESS) pb_watchdog_progress(i); /* an operation completes every millisecond */
        usleep(1000);
    }
    dprintf(fd, "%.3f\n", seen);
    close(fd);
    if (seen >= 0) pause(); /* the watchdog ends the process */
    pb_watchdog_stop();
    MPI_Finalize();
    _exit(0);
}

/* Run body(fd, arg) in a child; *value: the number it wrote to fd (-2: none);
 * *after: seconds from reading it until the child ended; returns its exit status. */
static int run_child(void (*body)(int fd, int arg), int arg, double *value, double *after)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        body(p[1], arg);
        _exit(99); /* a body ends its process itself */
    }
    close(p[1]);
    FILE *f = fdopen(p[0], "r");
    assert_non_null(f);
    if (fscanf(f, "%lf", value) != 1) *value = -2;
    double t_read = now_s();
    fclose(f);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    *after = now_s() - t_read;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void fired_before_the_job_ends(void **state)
{
    (void)state;
    double seen, grace;
    int rc = run_child(child, ARM, &seen, &grace);
    /* Seen right after the 0.3 s timeout (the watchdog looks every 50 ms),
     * and the job goes down about 2 s later: time to abort a communicator. */
    assert_true(seen >= 0.3);
    assert_true(seen < 1.5);
    assert_true(grace > 1.0);
    assert_int_equal(rc, PB_ERR_TIMEOUT);
}

static void disarmed_never_fires(void **state)
{
    (void)state;
    double seen, grace;
    assert_int_equal(run_child(child, ARM_DISARM, &seen, &grace), 0);
    assert_true(seen == -1);
}

/* A loop of back-to-back operations that reports progress without re-arming stays armed past
 * the 0.3 s timeout for as long as its iteration moves (the whole loop of runner.c). */
static void progress_keeps_it_armed(void **state)
{
    (void)state;
    double seen, grace;
    assert_int_equal(run_child(child, ARM_PROGRESS, &seen, &grace), 0);
    assert_true(seen == -1);
}

static void stopped_never_fires(void **state)
{
    (void)state;
    double seen, after;
    assert_int_equal(run_child(child, STOP_ARM, &seen, &after), 0);
    assert_true(seen == -1);
}

/* Child: a watchdog armed with a long timeout while the rank sleeps 1 s.
 * Writes to FD the CPU seconds the process used over that second: the
 * watchdog looks every 50 ms and sleeps between looks, so a rank waiting on a
 * slow operation is not slowed by a spinning watchdog beside it. */
static void idle_child(int fd, int unused)
{
    (void)unused;
    MPI_Init(NULL, NULL);
    if (pb_watchdog_start(60, 0, "localhost", "test_watchdog") != PB_OK) _exit(10);
    pb_watchdog_arm(0, "operation");
    struct timespec a, b, second = {1, 0};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    nanosleep(&second, NULL);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    dprintf(fd, "%.3f\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9);
    close(fd);
    pb_watchdog_disarm();
    pb_watchdog_stop();
    MPI_Finalize();
    _exit(0);
}

static void sleeps_between_looks(void **state)
{
    (void)state;
    double cpu, after;
    assert_int_equal(run_child(idle_child, 0, &cpu, &after), 0);
    /* A watchdog that spins would use most of the second (half of it even
     * on a machine with twice as many busy threads as cores). */
    assert_true(cpu >= 0);
    assert_true(cpu < 0.2);
}

/* Child: a stream-ordered backend's hook registered, as its comm_create does.
 * Prints a line without a newline to a pipe standing for stdout (to be
 * flushed), sends stderr to another, arms and waits: the watchdog must call
 * the hook and end the process with _exit(4), never MPI_Abort (which says
 * so on stderr). */
static int hook_fd = -1;
static void hook(void) { dprintf(hook_fd, "hook called\n"); }

static void hooked_child(int fd, int err_fd)
{
    MPI_Init(NULL, NULL);
    hook_fd = fd;
    if (dup2(err_fd, STDERR_FILENO) < 0 || dup2(fd, STDOUT_FILENO) < 0) _exit(11);
    pb_watchdog_on_timeout(hook);
    if (pb_watchdog_start(0.3, 0, "localhost", "test_watchdog") != PB_OK) _exit(10);
    printf("a row already measured");
    pb_watchdog_arm(0, "stream sync");
    for (;;) pause(); /* the watchdog ends the process */
}

static void hook_then_exit_without_mpi_abort(void **state)
{
    (void)state;
    int out[2], err[2];
    assert_int_equal(pipe(out), 0);
    assert_int_equal(pipe(err), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(out[0]), close(err[0]);
        hooked_child(out[1], err[1]);
    }
    close(out[1]), close(err[1]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    char text[4096] = "", errs[8192] = "";
    ssize_t n = read(out[0], text, sizeof text - 1), m = 0, k;
    while (m < (ssize_t)sizeof errs - 1 && (k = read(err[0], errs + m, sizeof errs - 1 - (size_t)m)) > 0) m += k;
    close(out[0]), close(err[0]);
    text[n > 0 ? n : 0] = '\0';
    errs[m] = '\0';
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), PB_ERR_TIMEOUT);
    assert_non_null(strstr(errs, "TIMEOUT: rank 0"));
    assert_non_null(strstr(errs, "phase stream sync"));
    assert_null(strstr(errs, "MPI_ABORT")); /* no MPI call from the watchdog's thread */
    assert_non_null(strstr(text, "hook called"));
    assert_non_null(strstr(text, "a row already measured")); /* stdout flushed before _exit */
}

static void enter_keeps_the_callers_arming(void **state)
{
    (void)state;
    assert_int_equal(pb_watchdog_armed(), 0);
    int outer = pb_watchdog_enter("comm init");
    assert_int_equal(outer, 1);
    int inner = pb_watchdog_enter("stream sync"); /* already armed: the caller's phase stands */
    assert_int_equal(inner, 0);
    pb_watchdog_leave(inner);
    assert_int_equal(pb_watchdog_armed(), 1);
    pb_watchdog_leave(outer);
    assert_int_equal(pb_watchdog_armed(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fired_before_the_job_ends),
        cmocka_unit_test(stopped_never_fires),
        cmocka_unit_test(disarmed_never_fires),
        cmocka_unit_test(progress_keeps_it_armed),
        cmocka_unit_test(sleeps_between_looks),
        cmocka_unit_test(hook_then_exit_without_mpi_abort),
        cmocka_unit_test(enter_keeps_the_callers_arming),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
