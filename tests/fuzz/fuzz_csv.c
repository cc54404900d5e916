/* libFuzzer target: the CSV reader acceptance trusts (core/csv.h) on any
 * bytes. It either refuses the text or returns rows of the header's width
 * with line numbers in order, a garbled line inside the file, and numbers
 * that are finite. */
#include "core/csv.h"
#include "core/error.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *fp = fmemopen((void *)data, size, "r");
    if (!fp) return 0;
    pb_csv t;
    int rc = pb_csv_read_stream(fp, &t);
    fclose(fp);
    if (rc != PB_OK) {
        if (t.header || t.rows || t.nrows) abort();
        return 0;
    }
    if (t.ncols < 1 || !t.header) abort();
    if (t.bad_line < 0 || t.bad_line > t.nlines) abort();
    for (int r = 0; r < t.nrows; r++) {
        if (t.line[r] < 1 || t.line[r] > t.nlines || (r && t.line[r] <= t.line[r - 1])) abort();
        for (int c = 0; c < t.ncols; c++) {
            double v;
            if (!t.rows[r][c]) abort();
            if (pb_csv_num(&t, r, t.header[c], &v) == PB_OK && !isfinite(v)) abort();
        }
    }
    pb_csv_free(&t);
    return 0;
}
