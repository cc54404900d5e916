#include "core/watchdog.h"

#include "core/error.h"

#include <mpi.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


static struct {
    pthread_t thread;
    int running;
    atomic_int stop;
    double timeout_s;
    int rank;
    char host[64], benchmark[32];
    pthread_mutex_t lock; /* guards `what`, written rarely */
    char what[96];
    atomic_uint_fast64_t armed_ns; /* 0: disarmed */
    atomic_int iter;
    _Atomic(const char *) phase;
    atomic_int fired; /* set first when the timeout passes: owners of communicators abort them */
    _Atomic(pb_watchdog_abort_fn) abort_fn; /* a stream-ordered backend's: no MPI_Abort from this thread */
} wd = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void pb_watchdog_what(const char *operation, uint64_t bytes)
{
    pthread_mutex_lock(&wd.lock);
    snprintf(wd.what, sizeof wd.what, "%s of %llu bytes", operation, (unsigned long long)bytes);
    pthread_mutex_unlock(&wd.lock);
}

void pb_watchdog_arm_at(int iter, const char *phase, double now_us)
{
    atomic_store_explicit(&wd.iter, iter, memory_order_relaxed);
    atomic_store_explicit(&wd.phase, phase, memory_order_relaxed);
    atomic_store_explicit(&wd.armed_ns, (uint64_t)(now_us * 1e3), memory_order_release);
}

void pb_watchdog_arm(int iter, const char *phase) { pb_watchdog_arm_at(iter, phase, (double)now_ns() * 1e-3); }

void pb_watchdog_disarm(void) { atomic_store_explicit(&wd.armed_ns, 0, memory_order_release); }

void pb_watchdog_progress(int iter) { atomic_store_explicit(&wd.iter, iter, memory_order_relaxed); }

int pb_watchdog_enter(const char *phase)
{
    if (pb_watchdog_armed()) return 0;
    pb_watchdog_arm(0, phase);
    return 1;
}

void pb_watchdog_leave(int entered)
{
    if (entered) pb_watchdog_disarm();
}

void pb_watchdog_on_timeout(pb_watchdog_abort_fn abort_fn) { atomic_store(&wd.abort_fn, abort_fn); }

int pb_watchdog_armed(void) { return atomic_load_explicit(&wd.armed_ns, memory_order_relaxed) != 0; }

int pb_watchdog_fired(void) { return atomic_load_explicit(&wd.fired, memory_order_acquire); }

static void fire(double waited_s)
{
    atomic_store_explicit(&wd.fired, 1, memory_order_release);
    char what[96];
    pthread_mutex_lock(&wd.lock);
    memcpy(what, wd.what, sizeof what);
    pthread_mutex_unlock(&wd.lock);
    int iter = atomic_load(&wd.iter);
    const char *phase = atomic_load(&wd.phase);
    fprintf(stderr,
            "%s: TIMEOUT: rank %d on %s stuck for %.1f s (--timeout %g) in %s, %s iteration %d, phase %s. "
            "The rank whose line differs (another phase or iteration), or that prints none, is where the hang "
            "starts.\n",
            wd.benchmark, wd.rank, wd.host, waited_s, wd.timeout_s, what[0] ? what : "an operation",
            iter < 0 ? "warm-up" : "timed", iter < 0 ? -iter : iter, phase ? phase : "?");
    fflush(stderr);
    /* The other stuck ranks report, and a thread polling a communicator
     * (pb_watchdog_fired) aborts it on its own thread: a communicator is never
     * aborted here, under a thread that may be using it. */
    sleep(2);
    pb_watchdog_abort_fn abort_fn = atomic_load(&wd.abort_fn);
    if (abort_fn) { /* NCCL or its rehearsal: the rank's own thread may be inside MPI or NCCL */
        abort_fn();
        fflush(stdout);
        fflush(stderr);
        _exit(PB_ERR_TIMEOUT);
    }
    MPI_Abort(MPI_COMM_WORLD, PB_ERR_TIMEOUT);
    _exit(PB_ERR_TIMEOUT); /* if MPI_Abort ever returns */
}

static void *watch(void *unused)
{
    (void)unused;
    struct timespec nap = {0, 50 * 1000 * 1000};
    uint64_t progress_ns = 0; /* when this thread last saw the iteration move (pb_watchdog_progress) */
    int seen = INT_MIN;
    while (!atomic_load(&wd.stop)) {
        nanosleep(&nap, NULL);
        uint64_t armed = atomic_load_explicit(&wd.armed_ns, memory_order_acquire);
        if (armed == 0) continue;
        int iter = atomic_load_explicit(&wd.iter, memory_order_relaxed);
        uint64_t now = now_ns();
        if (iter != seen) seen = iter, progress_ns = now;
        uint64_t since = progress_ns > armed ? progress_ns : armed;
        double waited = (double)(now - since) * 1e-9;
        if (waited > wd.timeout_s) fire(waited);
    }
    return NULL;
}

int pb_watchdog_start(double timeout_s, int rank, const char *host, const char *benchmark)
{
    if (timeout_s <= 0 || wd.running) return PB_OK;
    wd.timeout_s = timeout_s;
    wd.rank = rank;
    snprintf(wd.host, sizeof wd.host, "%s", host);
    snprintf(wd.benchmark, sizeof wd.benchmark, "%s", benchmark);
    atomic_store(&wd.stop, 0);
    if (pthread_create(&wd.thread, NULL, watch, NULL) != 0)
        return pb_fail(PB_ERR_ENV, "cannot start the watchdog thread");
    wd.running = 1;
    return PB_OK;
}

void pb_watchdog_stop(void)
{
    if (!wd.running) return;
    atomic_store(&wd.stop, 1);
    pthread_join(wd.thread, NULL);
    wd.running = 0;
}
