/* The report writer: the CSV has every row as soon as it is written; the JSON
 * is rewritten whole (always a valid document) once the rows have doubled
 * since the last write, or a second has passed, and completely at close. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "core/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const pb_column cols[] = {
    {"bytes", "size", "(B)", PB_COL_INT, 8, 0},
    {"time_us", "time", "(us)", PB_COL_FLOAT, 8, 2},
};

static int json_rows(const char *path, int *complete)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *doc = cJSON_Parse(buf);
    assert_non_null(doc); /* always a valid document */
    *complete = cJSON_IsTrue(cJSON_GetObjectItem(doc, "complete"));
    int rows = cJSON_GetArraySize(cJSON_GetObjectItem(doc, "rows"));
    cJSON_Delete(doc);
    return rows;
}

static int csv_rows(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256];
    int n = -1; /* the header */
    while (fgets(line, sizeof line, f))
        if (line[0] != '#') n++;
    fclose(f);
    return n;
}

static void json_written_at_doublings(void **state)
{
    (void)state;
    char dir[] = "/tmp/pb-report.XXXXXX", csv[64], json[64];
    assert_non_null(mkdtemp(dir));
    snprintf(csv, sizeof csv, "%s/r.csv", dir);
    snprintf(json, sizeof json, "%s/r.json", dir);
    pb_report *r;
    assert_int_equal(pb_report_open("test", cols, 2, cJSON_CreateObject(), NULL, csv, json, &r), PB_OK);
    int complete = 1;
    assert_int_equal(json_rows(json, &complete), 0);
    assert_false(complete);
    for (int i = 1; i <= 9; i++) {
        pb_value v[2] = {PB_I(i), PB_F(i * 0.5)};
        assert_int_equal(pb_report_row(r, v), PB_OK);
        assert_int_equal(csv_rows(csv), i); /* the CSV never lags */
        int in_json = json_rows(json, &complete);
        if (i == 1 || i == 2 || i == 4 || i == 8) assert_int_equal(in_json, i); /* doublings */
        else assert_true(in_json >= i / 2 && in_json < i); /* not rewritten per row; at most half behind */
    }
    assert_int_equal(pb_report_close(r, 1), PB_OK);
    assert_int_equal(json_rows(json, &complete), 9);
    assert_true(complete);
    unlink(csv);
    unlink(json);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(json_written_at_doublings)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
