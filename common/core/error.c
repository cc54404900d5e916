#include "core/error.h"

#include <stdarg.h>
#include <string.h>

static const char *progname = "parabench";
static int quiet_usage;
static char last_error[160]; /* the "why" of the last pb_fail, for pb_world_agree_at's note to the peers */

void pb_error_set_quiet_usage(int quiet) { quiet_usage = quiet; }

void pb_error_set_progname(const char *argv0)
{
    const char *slash = argv0 ? strrchr(argv0, '/') : NULL;
    progname = slash ? slash + 1 : (argv0 ? argv0 : "parabench");
}

const char *pb_error_progname(void) { return progname; }

int pb_error_fail_at(const char *file, int line, int status, const char *fmt, ...)
{
    va_list ap, copy;
    va_start(ap, fmt);
    va_copy(copy, ap);
    vsnprintf(last_error, sizeof last_error, fmt, copy);
    va_end(copy);
    fprintf(stderr, "%s: %s:%d: ", progname, file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return status;
}

const char *pb_error_last(void) { return last_error; }

int pb_error_usage(const char *option, const char *fmt, ...)
{
    if (quiet_usage) return PB_ERR_USAGE;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: option %s: ", progname, option);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return PB_ERR_USAGE;
}
