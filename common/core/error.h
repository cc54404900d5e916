/* Status codes, exit codes and check macros shared by every parabench module.
 *
 * Every fallible function returns an int status: PB_OK (0) or one of the exit
 * codes below, so that a failure deep in the harness can travel unchanged to
 * main() and become the process exit code (docs/ARCHITECTURE.md, docs/reliability.md). */
#ifndef PB_ERROR_H
#define PB_ERROR_H

#include <stdio.h>

enum pb_status {
    PB_OK = 0,
    PB_ERR_CHECK = 1,   /* wrong data, or an acceptance threshold missed */
    PB_ERR_USAGE = 2,   /* bad option: message names the option and the accepted values */
    PB_ERR_ENV = 3,     /* no GPU, out of memory, too few ranks, library missing */
    PB_ERR_TIMEOUT = 4, /* hang watchdog fired */
};

/* Print "file:line: what: why" to stderr. Returns `status` so callers can
 * write `return pb_fail(PB_ERR_ENV, ...)`. */
int pb_error_fail_at(const char *file, int line, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define pb_fail(status, ...) pb_error_fail_at(__FILE__, __LINE__, (status), __VA_ARGS__)

/* The message of the last pb_fail on this rank (truncated), "" before any. */
const char *pb_error_last(void);

/* Usage errors name the option and what it accepts, e.g.
 *   pb_error_usage("-e", "'%s' is not a size; expected a number with optional K/M/G", arg)
 * prints "parabench: option -e: ..." and returns PB_ERR_USAGE. */
int pb_error_usage(const char *option, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Propagate a non-zero status from a call. */
#define PB_TRY(expr)                                                                               \
    do {                                                                                           \
        int pb_try_status_ = (expr);                                                               \
        if (pb_try_status_ != PB_OK) return pb_try_status_;                                        \
    } while (0)

/* Check a condition; on failure report "file:line: what failed: why" and return status. */
#define PB_CHECK(cond, status, ...)                                                                \
    do {                                                                                           \
        if (!(cond)) return pb_error_fail_at(__FILE__, __LINE__, (status), __VA_ARGS__);                 \
    } while (0)

/* Program name used in messages (set by main through pb_error_set_progname). */
void pb_error_set_progname(const char *argv0);
const char *pb_error_progname(void);

/* Silence pb_error_usage messages (ranks other than 0 set this, so that a usage
 * error every rank detects is printed once). The status is still returned. */
void pb_error_set_quiet_usage(int quiet);

#endif
