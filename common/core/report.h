/* Result writers: the human table on stdout (nccl-tests style), CSV and JSON.
 * Only rank 0 reports. Every row is on disk as soon as it is measured: the
 * CSV is appended and flushed per row, the JSON rewritten to a temporary file
 * and renamed per row, so a crash or a kill never loses a finished row and
 * never leaves a half-written JSON file. A run that did not finish is marked:
 * the JSON has "complete": false and the CSV lacks its "# complete" line. */
#ifndef PB_REPORT_H
#define PB_REPORT_H

#include <cjson/cJSON.h>
#include <stdio.h>

/* Nonzero: a value with no type (0) is one that was never set. */
typedef enum { PB_COL_INT = 1, PB_COL_FLOAT, PB_COL_STR } pb_report_col_type;

/* One result column. A benchmark declares its columns once, as a table indexed
 * by an enum of column indexes; the CSV header, the JSON keys and the JSON
 * "columns" schema all come from it. */
typedef struct pb_report_column {
    const char *key;      /* CSV header and JSON key */
    const char *title;    /* table header; NULL: not shown in the table */
    const char *subtitle; /* second table header line, e.g. "(us)" */
    pb_report_col_type type;
    int width, precision; /* table formatting */
    const char *unit;     /* the values' unit in the schema, e.g. "us", "B", "GB/s"; "" when none */
} pb_report_column;

/* A float value that is NaN means "not measured" (e.g. device time on a host
 * backend): "-" in the table, an empty CSV cell, null in JSON. `type` is the
 * column type the value was made for; 0 (a value left out of a row's
 * initializer) makes the writer refuse the row. */
typedef struct pb_report_value {
    pb_report_col_type type;
    long long i;
    double f;
    const char *s;
} pb_report_value;

#define PB_I(x) ((pb_report_value){.type = PB_COL_INT, .i = (long long)(x)})
#define PB_F(x) ((pb_report_value){.type = PB_COL_FLOAT, .f = (double)(x)})
#define PB_S(x) ((pb_report_value){.type = PB_COL_STR, .s = (x)})

typedef struct pb_report pb_report;

/* Open the writers. `meta` (owned by the report afterwards) goes in the JSON
 * and as "# key: value" lines at the top of the CSV. The JSON also has
 * "columns": the key, unit and type of every column. table may be NULL.
 * Refuses (PB_ERR_CHECK) a column without a key: an index missing from the
 * benchmark's table. */
int pb_report_open(const char *benchmark, const pb_report_column *cols, int ncols, cJSON *meta, FILE *table,
                   const char *csv_path, const char *json_path, pb_report **out);

/* Print the table header (again, e.g. before each collective). */
void pb_report_header(pb_report *r);

/* Write one row of ncols values, indexed by column, to all writers. A row
 * with a value not set, or set for another type than its column's, is
 * refused whole (nothing written): PB_ERR_CHECK and a message naming the
 * column. */
int pb_report_row(pb_report *r, const pb_report_value *values);

/* A summary figure: a table line "# title: value unit", a JSON summary entry
 * and a CSV comment line. */
int pb_report_summary(pb_report *r, const char *key, const char *title, double value, const char *unit);

/* Metadata known only once the run has set up (its communicators, say):
 * `item` (owned by the report afterwards) under `key` in the JSON's "meta",
 * replacing one of that key, and a "# key: value" comment line in the CSV
 * where it has got to. */
int pb_report_meta_add(pb_report *r, const char *key, cJSON *item);

/* A free-form note: table line "# text", JSON "notes" array, CSV comment. */
int pb_report_note(pb_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Finish: mark the files complete (if complete != 0) and free everything. */
int pb_report_close(pb_report *r, int complete);

/* Write a cJSON tree to path through a temporary file and a rename. */
int pb_report_json_write_atomic(const char *path, const cJSON *json);

#endif
