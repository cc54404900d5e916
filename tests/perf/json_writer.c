/* How the report's cost grows with its rows: writes N rows of a sweep-like
 * table through pb_report (JSON and CSV on), and prints N and the time per
 * row. Linear writing shows as a flat time per row. Used by
 * tools/dev/json-writer-bench.sh. */
#include "core/report.h"
#include "core/timing.h"

#include <stdio.h>
#include <stdlib.h>

enum {
    COL_COLLECTIVE,
    COL_BYTES,
    COL_ITERS,
    COL_TIME_US,
    COL_BUSBW_GBPS,
    COL_WRONG,
    NCOLS
};

static const pb_report_column cols[] = {
    [COL_COLLECTIVE] = {"collective", NULL, NULL, PB_COL_STR, 0, 0, ""},
    [COL_BYTES] = {"bytes", "size", "(B)", PB_COL_INT, 12, 0, "B"},
    [COL_ITERS] = {"iters", "iters", "", PB_COL_INT, 6, 0, ""},
    [COL_TIME_US] = {"time_us", "time", "(us)", PB_COL_FLOAT, 10, 2, "us"},
    [COL_BUSBW_GBPS] = {"busbw_GBps", "busbw", "(GB/s)", PB_COL_FLOAT, 8, 3, "GB/s"},
    [COL_WRONG] = {"wrong", "#wrong", "", PB_COL_INT, 7, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: json_writer ROWS DIR\n");
        return 2;
    }
    long n = atol(argv[1]);
    char csv[4096], json[4096];
    snprintf(csv, sizeof csv, "%s/bench.csv", argv[2]);
    snprintf(json, sizeof json, "%s/bench.json", argv[2]);
    pb_report *r;
    double t0 = pb_timing_now_us();
    if (pb_report_open("json_writer", cols, 6, cJSON_CreateObject(), NULL, csv, json, &r) != 0) return 3;
    for (long i = 0; i < n; i++) {
        pb_report_value v[6] = {PB_S("allreduce"), PB_I(8 << (i % 20)), PB_I(1000), PB_F(1.5 + (double)i),
                         PB_F(0.25 * (double)(i % 97)), PB_I(0)};
        if (pb_report_row(r, v) != 0) return 3;
    }
    if (pb_report_close(r, 1) != 0) return 3;
    double us = pb_timing_now_us() - t0;
    printf("%8ld rows: %8.1f ms in all, %6.2f us per row\n", n, us / 1e3, us / (double)n);
    return 0;
}
