/* The rows a benchmark marked untrustworthy in its own results CSV, by a
 * comment line "# note: untrustworthy: ..." (docs/reliability.md): the note
 * names the row by the values of two key columns. acceptance never lets such
 * a row pass a rule. */
#ifndef PB_RESULT_NOTES_H
#define PB_RESULT_NOTES_H

#include "core/csv.h"

#include <stdio.h>

typedef struct pb_result_notes_entry {
    char key[2][64];
    char why[200];
} pb_result_notes_entry;

typedef struct pb_result_notes {
    int format;  /* which benchmark's notes; -1: its notes name no rows */
    int n;
    pb_result_notes_entry *notes;
} pb_result_notes;

/* The notes of `path`, a CSV of benchmark `source` ("dp_allreduce"...).
 * PB_OK (none for a benchmark whose notes name no rows, or a file that cannot
 * be read: the CSV reader reports that), or PB_ERR_ENV when memory runs out. */
int pb_result_notes_read(const char *path, const char *source, pb_result_notes *out);

/* The same from an open stream (not closed here), `name` labelling it: for
 * tables built in memory. */
int pb_result_notes_read_stream(FILE *fp, const char *name, const char *source, pb_result_notes *out);

/* The note that marks row `row` of `csv` (the same file), or NULL. */
const pb_result_notes_entry *pb_result_notes_of_row(const pb_result_notes *notes, const pb_csv *csv, int row);

void pb_result_notes_free(pb_result_notes *notes);

#endif
