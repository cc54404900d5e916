#include "core/lines.h"

#include "core/error.h"
#include "core/input.h"

#include <errno.h>
#include <string.h>
#include <stdlib.h>

#define BOM "\xEF\xBB\xBF"

int pb_lines_open(pb_lines *r, const char *path, const char *option)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->option = option;
    r->fp = pb_input_open(path); /* a FIFO with no writer is refused after a wait, never waited on forever */
    if (!r->fp) return pb_fail(PB_ERR_ENV, "%s '%s': cannot open: %s", option, path, pb_input_why(errno));
    r->owns = 1;
    r->max = PB_LINES_MAX;
    return PB_OK;
}

void pb_lines_from(pb_lines *r, FILE *fp, const char *path, const char *option, int quiet)
{
    memset(r, 0, sizeof *r);
    r->fp = fp;
    r->path = path;
    r->option = option;
    r->quiet = quiet;
    r->max = PB_LINES_MAX;
}

/* Why the line (without its '\n', `len` bytes) cannot be read as it is, or NULL. */
static const char *line_problem(pb_lines *r, const char *s, size_t len)
{
    if (len > r->max) {
        snprintf(r->too_long, sizeof r->too_long, "is longer than the limit of %zu bytes; expected shorter lines", r->max);
        return r->too_long;
    }
    if (memchr(s, '\0', len)) return "holds a NUL byte; expected a text file";
    const char *cr = memchr(s, '\r', len);
    if (cr && cr != s + len - 1) return "has CR-only line ends (an old Mac text file); expected LF or CRLF";
    const char *rest = r->lineno == 1 && len >= 3 && memcmp(s, BOM, 3) == 0 ? s + 3 : s; /* a leading one is skipped */
    if (strstr(rest, BOM)) return "holds a UTF-8 byte-order mark after the start of the file";
    return NULL;
}

int pb_lines_next(pb_lines *r, char **line)
{
    *line = NULL;
    errno = 0;
    ssize_t got = getline(&r->buf, &r->cap, r->fp);
    if (got < 0) {
        if (ferror(r->fp)) return pb_fail(PB_ERR_ENV, "%s '%s': read error: %s", r->option, r->path, strerror(errno));
        return PB_OK;
    }
    r->lineno++;
    size_t len = (size_t)got;
    r->ended = len && r->buf[len - 1] == '\n';
    if (r->ended) r->buf[--len] = '\0';
    r->why = line_problem(r, r->buf, len);
    if (r->why && r->quiet) return PB_ERR_USAGE;
    if (r->why) return pb_error_usage(r->option, "%s:%d: line %s", r->path, r->lineno, r->why);
    if (len && r->buf[len - 1] == '\r') r->buf[--len] = '\0';
    *line = r->buf;
    if (r->lineno == 1 && len >= 3 && memcmp(r->buf, BOM, 3) == 0) *line += 3; /* editors on Windows */
    return PB_OK;
}

void pb_lines_close(pb_lines *r)
{
    if (r->fp && r->owns) fclose(r->fp);
    free(r->buf);
    memset(r, 0, sizeof *r);
}
