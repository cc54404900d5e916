/* A small CSV reader for result files: the first non-comment line is the
 * header, columns are found by name (their order may vary), lines starting
 * with '#' and blank lines are skipped. Fields may be double-quoted (no
 * embedded newlines). Enough for the files parabench itself writes. */
#ifndef PB_CSV_H
#define PB_CSV_H

typedef struct pb_csv {
    int ncols;
    char **header;
    int nrows;
    char ***rows; /* rows[r][c]; short rows are padded with "" */
} pb_csv;

/* Read `path`. PB_OK; PB_ERR_ENV if it cannot be opened or memory runs out;
 * PB_ERR_CHECK if it has no header line. On error *out is empty. */
int pb_csv_read(const char *path, pb_csv *out);

/* Column index of `name`, or -1. */
int pb_csv_col(const pb_csv *t, const char *name);

/* Field text ("" when the column is absent). */
const char *pb_csv_get(const pb_csv *t, int row, const char *name);

/* Field as a finite number: PB_OK, or PB_ERR_CHECK when the column is absent
 * or the text is not a number. */
int pb_csv_num(const pb_csv *t, int row, const char *name, double *out);

void pb_csv_free(pb_csv *t);

#endif
