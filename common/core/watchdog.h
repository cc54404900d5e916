/* Hang watchdog (--timeout). A thread per rank watches the operation the rank
 * is in; when one has not completed within the timeout it prints what is
 * stuck (benchmark, operation, size, iteration, phase, rank, host), waits a
 * moment so the other stuck ranks print too and the threads polling a
 * communicator abort it (pb_watchdog_fired), then ends the job with exit
 * code 4: under the MPI backends by MPI_Abort; once a stream-ordered backend
 * (NCCL, its rehearsal) has registered its abort hook, never by an MPI call
 * from the watchdog's thread (the rank's own thread may be inside MPI or
 * NCCL): the hook runs, stdout and stderr are flushed and the process ends
 * itself (_exit(4)); the launcher then ends the others. Rows already written
 * stay on disk (the CSV is flushed per row; the JSON keeps its last
 * rewrite, marked incomplete). Ranks that print nothing are not inside a
 * watched operation: they are the ones the others wait for.
 *
 * Arming costs two relaxed atomic stores, so it may sit next to timed code. */
#ifndef PB_WATCHDOG_H
#define PB_WATCHDOG_H

#include <stdint.h>

#define PB_DEFAULT_TIMEOUT_S 300.0

/* Start the thread; timeout_s <= 0 disables the watchdog. */
int pb_watchdog_start(double timeout_s, int rank, const char *host, const char *benchmark);
void pb_watchdog_stop(void);

/* What the rank is about to do (not on the hot path): operation and size. */
void pb_watchdog_what(const char *operation, uint64_t bytes);

/* Arm for iteration `iter` (negative: warm-up) in `phase` (a static string,
 * e.g. "align", "operation", "validate"); disarm when it completed. */
void pb_watchdog_arm(int iter, const char *phase);

/* The same, with the time (pb_timing_now_us: CLOCK_MONOTONIC in microseconds) the
 * caller has just read: a timed loop that reads the clock once per iteration
 * re-arms without a second read inside its measured interval. */
void pb_watchdog_arm_at(int iter, const char *phase, double now_us);
void pb_watchdog_disarm(void);

/* Progress inside an armed loop without reading the clock (a store): the
 * watchdog counts time from the last moment it saw `iter` change, so a loop of
 * back-to-back operations stays armed however slow its operations turn out. */
void pb_watchdog_progress(int iter);

/* A blocking wait in `phase` (ncclCommInitRank, a stream sync, a group end):
 * arms unless the caller has armed already (whose iteration and phase then
 * stand); pass what it returns to pb_watchdog_leave. */
int pb_watchdog_enter(const char *phase);
void pb_watchdog_leave(int entered);

/* What ends the job instead of MPI_Abort, registered by a stream-ordered
 * backend when it creates a communicator: called on the watchdog's thread
 * after the grace, just before _exit(4). It must call neither MPI nor a
 * communicator another thread may be using. */
typedef void (*pb_watchdog_abort_fn)(void);
void pb_watchdog_on_timeout(pb_watchdog_abort_fn abort_fn);

/* 1 while armed (a wait that arms only when its caller has not). */
int pb_watchdog_armed(void);

/* 1 once the timeout has passed: the job ends about 2 s later. A thread that
 * polls a communicator (the NCCL stream sync) aborts it then, itself: NCCL's
 * communicators are not thread-safe, so the watchdog's thread never touches one. */
int pb_watchdog_fired(void);

#endif
