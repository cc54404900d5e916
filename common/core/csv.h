/* A small CSV reader for result files: the first non-comment line is the
 * header, columns are found by name (their order may vary), lines starting
 * with '#' and blank lines are skipped. Fields may be double-quoted (no
 * embedded newlines). Enough for the files parabench itself writes.
 *
 * It also says whether the file can be trusted (acceptance refuses one that
 * cannot): `complete` when the writer's "# complete" line is there (a run
 * that was cut short lacks it), and `bad_line` for the first row that is
 * garbled: a field count other than the header's, an unclosed quote, a
 * last line without its end of line (a file cut mid-row), or a line that
 * core/lines refuses (longer than PB_CSV_LINE_MAX, a NUL byte, CR-only line
 * ends, a byte-order mark after the start); reading stops at such a line. */
#ifndef PB_CSV_H
#define PB_CSV_H

#include <stdio.h>

/* Longest line read: the comment lines carry the command line and the host
 * list, which a large cluster makes long; a longer line is a garbled file. */
#define PB_CSV_LINE_MAX (1 << 20)

typedef struct pb_csv {
    int ncols;
    char **header;
    int nrows;
    char ***rows;  /* rows[r][c]; short rows are padded with "" */
    int *line;     /* line[r]: the file line of row r (from 1) */
    int complete;  /* a "# complete" line was read */
    int nlines;    /* lines read */
    int bad_line;  /* first garbled line, 0 when none */
    char bad_why[120];
} pb_csv;

/* Read `path`. PB_OK; PB_ERR_ENV if it cannot be opened or memory runs out;
 * PB_ERR_CHECK if it has no header line. On error *out holds no rows, only
 * bad_line and bad_why when a refused line came before any header. */
int pb_csv_read(const char *path, pb_csv *out);

/* The same from an open stream (not closed here; used by the fuzz target):
 * PB_OK, PB_ERR_ENV (memory) or PB_ERR_CHECK (no header). */
int pb_csv_read_stream(FILE *fp, pb_csv *out);

/* Column index of `name`, or -1. */
int pb_csv_col(const pb_csv *t, const char *name);

/* Field text ("" when the column is absent). */
const char *pb_csv_get(const pb_csv *t, int row, const char *name);

/* Field as a finite decimal number (digits, '.', sign, exponent; no hex, no
 * inf or nan): PB_OK, or PB_ERR_CHECK when the column is absent or the text
 * is not such a number. */
int pb_csv_num(const pb_csv *t, int row, const char *name, double *out);

void pb_csv_free(pb_csv *t);

#endif
