#include "core/csv.h"

#include "core/error.h"
#include "core/grow.h"
#include "core/input.h"
#include "core/lines.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Split one line in place into fields; returns a malloc'ed array of `*n`
 * pointers into `line` (quotes removed), or NULL on allocation failure.
 * *open_quote is set when a quoted field is not closed. */
static char **split_line(char *line, int *n, int *open_quote)
{
    int cap = 8, k = 0;
    char **f = malloc((size_t)cap * sizeof *f);
    if (!f) return NULL;
    char *p = line;
    for (;;) {
        char **g = pb_grow(f, &cap, k, sizeof *f, 8);
        if (!g) return free(f), NULL;
        f = g;
        char *out = p;
        f[k++] = out;
        int quoted = *p == '"';
        if (quoted) p++;
        while (*p && (quoted || *p != ',')) {
            if (quoted && *p == '"') {
                if (p[1] == '"') p++; /* "" is a literal quote */
                else { quoted = 0; p++; continue; }
            }
            *out++ = *p++;
        }
        int more = *p == ',';
        if (quoted) *open_quote = 1;
        *out = '\0';
        if (!more) break;
        p++;
    }
    *n = k;
    return f;
}

static char **split(char *line, int *n)
{
    int open_quote = 0;
    return split_line(line, n, &open_quote);
}

static void garbled(pb_csv *t, int line, const char *why)
{
    if (t->bad_line) return;
    t->bad_line = line;
    snprintf(t->bad_why, sizeof t->bad_why, "%s", why);
}

static int is_skipped(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    return *s == '\0' || *s == '#';
}

/* Keep the line and its field array; short rows padded to ncols. */
static int add_row(pb_csv *t, char *line, int lineno, int *cap)
{
    int n, open_quote = 0;
    char **f = split_line(line, &n, &open_quote);
    if (!f) return PB_ERR_ENV;
    if (open_quote) garbled(t, lineno, "a quoted field is not closed");
    else if (n != t->ncols) garbled(t, lineno, n < t->ncols ? "fewer fields than the header" : "more fields than the header");
    if (n < t->ncols) {
        char **g = realloc(f, (size_t)t->ncols * sizeof *f);
        if (!g) return free(f), PB_ERR_ENV;
        f = g;
        for (int i = n; i < t->ncols; i++) f[i] = line + strlen(line); /* "" inside the line */
    }
    int lcap = *cap;
    char ***r = pb_grow(t->rows, cap, t->nrows, sizeof *r, 64);
    if (!r) return free(f), PB_ERR_ENV;
    t->rows = r;
    int *l = pb_grow(t->line, &lcap, t->nrows, sizeof *l, 64);
    if (!l) return free(f), PB_ERR_ENV;
    t->line = l;
    t->line[t->nrows] = lineno;
    t->rows[t->nrows++] = f;
    return PB_OK;
}

/* "# complete", blanks around allowed: the writers' last line. */
static int is_complete_mark(const char *s)
{
    while (isspace((unsigned char)*s)) s++;
    if (*s++ != '#') return 0;
    while (isspace((unsigned char)*s)) s++;
    if (strncmp(s, "complete", 8) != 0) return 0;
    for (s += 8; isspace((unsigned char)*s); s++) {}
    return *s == '\0';
}

/* Lines come from core/lines: a leading BOM skipped, CRLF read as LF; a line
 * it refuses (too long, a NUL byte, CR-only line ends, a BOM inside) makes
 * the file garbled there, and reading stops (what follows cannot be trusted
 * to be split into the lines the writer wrote). */
static int read_lines(pb_lines *lr, pb_csv *out)
{
    int cap = 0, st;
    char *line;
    while ((st = pb_lines_next(lr, &line)) == PB_OK && line) {
        if (!lr->ended && !is_skipped(line)) garbled(out, lr->lineno, "the last line has no end (the file was cut)");
        if (is_complete_mark(line)) out->complete = 1;
        if (is_skipped(line)) continue;
        if (out->complete) garbled(out, lr->lineno, "a row after the '# complete' line");
        char *copy = strdup(line); /* fields point into it; freed with the row */
        if (!copy) return PB_ERR_ENV;
        if (!out->header) {
            out->header = split(copy, &out->ncols);
            if (!out->header) return free(copy), PB_ERR_ENV;
            continue;
        }
        st = add_row(out, copy, lr->lineno, &cap);
        if (st != PB_OK) return free(copy), st;
    }
    if (st == PB_ERR_USAGE && lr->why) {
        char why[sizeof out->bad_why];
        snprintf(why, sizeof why, "line %s", lr->why);
        garbled(out, lr->lineno, why);
        st = PB_OK;
    }
    return st;
}

int pb_csv_read_stream(FILE *fp, pb_csv *out)
{
    memset(out, 0, sizeof *out);
    pb_lines lr;
    pb_lines_from(&lr, fp, "csv", "csv", 1);
    lr.max = PB_CSV_LINE_MAX;
    int st = read_lines(&lr, out);
    out->nlines = lr.lineno;
    pb_lines_close(&lr);
    if (st == PB_OK && !out->header) st = PB_ERR_CHECK;
    if (st != PB_OK) {
        pb_csv kept = *out; /* a line refused before the header: the caller still says which and why */
        pb_csv_free(out);
        out->nlines = kept.nlines;
        out->bad_line = kept.bad_line;
        memcpy(out->bad_why, kept.bad_why, sizeof out->bad_why);
    }
    return st;
}

int pb_csv_read(const char *path, pb_csv *out)
{
    memset(out, 0, sizeof *out);
    FILE *fp = pb_input_open(path); /* a FIFO planted in a run: refused after a wait */
    if (!fp) return PB_ERR_ENV;
    int st = pb_csv_read_stream(fp, out);
    fclose(fp);
    return st;
}

int pb_csv_col(const pb_csv *t, const char *name)
{
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->header[i], name) == 0) return i;
    return -1;
}

const char *pb_csv_get(const pb_csv *t, int row, const char *name)
{
    int c = pb_csv_col(t, name);
    if (c < 0 || row < 0 || row >= t->nrows) return "";
    return t->rows[row][c];
}

int pb_csv_num(const pb_csv *t, int row, const char *name, double *out)
{
    const char *s = pb_csv_get(t, row, name);
    char *end;
    if (!*s || strspn(s, "0123456789+-.eE ") != strlen(s)) return PB_ERR_CHECK; /* no hex, inf, nan */
    double v = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    if (end == s || *end || !isfinite(v)) return PB_ERR_CHECK;
    *out = v;
    return PB_OK;
}

void pb_csv_free(pb_csv *t)
{
    /* Each row's fields (and the header's) live in one strdup'ed line whose
     * start is field 0. */
    for (int r = 0; r < t->nrows; r++) {
        free(t->rows[r][0]);
        free(t->rows[r]);
    }
    if (t->header) free(t->header[0]);
    free(t->header);
    free(t->rows);
    free(t->line);
    memset(t, 0, sizeof *t);
}
