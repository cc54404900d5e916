/* The report writer: the CSV has every row as soon as it is written; the JSON
 * is rewritten whole (always a valid document) once the rows have doubled
 * since the last write, or a second has passed, and completely at close. A
 * row with a value unset is refused naming the column; the JSON carries the
 * column schema. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/csv.h"
#include "core/error.h"
#include "core/report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { COL_BYTES, COL_TIME_US, COL_NAME, NCOLS };

static const pb_report_column cols[] = {
    [COL_BYTES] = {"bytes", "size", "(B)", PB_COL_INT, 8, 0, "B"},
    [COL_TIME_US] = {"time_us", "time", "(us)", PB_COL_FLOAT, 8, 2, "us"},
    [COL_NAME] = {"name", NULL, NULL, PB_COL_STR, 0, 0, ""},
};
_Static_assert(sizeof cols / sizeof cols[0] == NCOLS, "one column per COL_ index");

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cJSON *doc = cJSON_Parse(buf);
    assert_non_null(doc); /* always a valid document */
    return doc;
}

static int json_rows(const char *path, int *complete)
{
    cJSON *doc = read_json(path);
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
    assert_int_equal(pb_report_open("test", cols, NCOLS, cJSON_CreateObject(), NULL, csv, json, &r), PB_OK);
    int complete = 1;
    assert_int_not_equal(access(csv, F_OK), 0); /* nothing in place before the first row: a refused run */
    assert_int_not_equal(access(json, F_OK), 0); /* leaves the previous run's files as they were */
    for (int i = 1; i <= 9; i++) {
        pb_report_value v[NCOLS] = {[COL_BYTES] = PB_I(i), [COL_TIME_US] = PB_F(i * 0.5), [COL_NAME] = PB_S("x")};
        assert_int_equal(pb_report_row(r, v), PB_OK);
        assert_int_equal(csv_rows(csv), i); /* the CSV never lags */
        int in_json = json_rows(json, &complete);
        assert_false(complete);
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

/* Run pb_report_row with stderr going to a file; return its status and what it printed. */
static int row_stderr(pb_report *r, const pb_report_value *v, char *msg, size_t len)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = tmpfile();
    assert_non_null(cap);
    dup2(fileno(cap), 2);
    int status = pb_report_row(r, v);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(cap);
    size_t n = fread(msg, 1, len - 1, cap);
    msg[n] = '\0';
    fclose(cap);
    return status;
}

static void row_missing_value_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/pb-report.XXXXXX", csv[64], msg[1024];
    assert_non_null(mkdtemp(dir));
    snprintf(csv, sizeof csv, "%s/r.csv", dir);
    pb_report *r;
    assert_int_equal(pb_report_open("test", cols, NCOLS, NULL, NULL, csv, NULL, &r), PB_OK);
    pb_report_value full[NCOLS] = {[COL_BYTES] = PB_I(8), [COL_TIME_US] = PB_F(1.5), [COL_NAME] = PB_S("a")};
    assert_int_equal(row_stderr(r, full, msg, sizeof msg), PB_OK);
    assert_string_equal(msg, "");
    /* one value short: the last column would have been a silent 0 */
    pb_report_value shortrow[NCOLS] = {[COL_BYTES] = PB_I(8), [COL_TIME_US] = PB_F(1.5)};
    assert_int_equal(row_stderr(r, shortrow, msg, sizeof msg), PB_ERR_CHECK);
    assert_non_null(strstr(msg, "no value for column 'name'"));
    pb_report_value middle[NCOLS] = {[COL_BYTES] = PB_I(8), [COL_NAME] = PB_S("b")};
    assert_int_equal(row_stderr(r, middle, msg, sizeof msg), PB_ERR_CHECK);
    assert_non_null(strstr(msg, "no value for column 'time_us'"));
    /* an int where the column is float would lose the value */
    pb_report_value typed[NCOLS] = {[COL_BYTES] = PB_I(8), [COL_TIME_US] = PB_I(2), [COL_NAME] = PB_S("c")};
    assert_int_equal(row_stderr(r, typed, msg, sizeof msg), PB_ERR_CHECK);
    assert_non_null(strstr(msg, "column 'time_us' is float"));
    assert_int_equal(csv_rows(csv), 1); /* refused rows leave nothing, not half a line */
    assert_int_equal(pb_report_close(r, 1), PB_OK);
    unlink(csv);
    rmdir(dir);
}

static void json_has_schema(void **state)
{
    (void)state;
    char dir[] = "/tmp/pb-report.XXXXXX", json[64];
    assert_non_null(mkdtemp(dir));
    snprintf(json, sizeof json, "%s/r.json", dir);
    pb_report *r;
    assert_int_equal(pb_report_open("test", cols, NCOLS, NULL, NULL, NULL, json, &r), PB_OK);
    assert_int_equal(pb_report_close(r, 1), PB_OK);
    cJSON *doc = read_json(json);
    const cJSON *schema = cJSON_GetObjectItem(doc, "columns");
    assert_int_equal(cJSON_GetArraySize(schema), NCOLS);
    const char *want[NCOLS][3] = {{"bytes", "B", "int"}, {"time_us", "us", "float"}, {"name", "", "string"}};
    for (int c = 0; c < NCOLS; c++) {
        const cJSON *col = cJSON_GetArrayItem(schema, c);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(col, "key")), want[c][0]);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(col, "unit")), want[c][1]);
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(col, "type")), want[c][2]);
    }
    cJSON_Delete(doc);
    unlink(json);
    rmdir(dir);
}

/* What the CSV holds reads back as what was written: floats to the last bit
 * (as in the JSON), strings with commas and quotes (written "a ""b"" c"). */
static void csv_reads_back_exactly(void **state)
{
    (void)state;
    char dir[] = "/tmp/pb-report.XXXXXX", csv[64], json[64];
    assert_non_null(mkdtemp(dir));
    snprintf(csv, sizeof csv, "%s/r.csv", dir);
    snprintf(json, sizeof json, "%s/r.json", dir);
    static const double f[] = {1.0 / 3.0, 123456.789012345678, 0.1, 2.0 / 3.0 * 1e-7, 1e300 / 7, 42.0};
    static const char *s[] = {"a \"b\" c", "x,y", "\"", "plain", "\"\"", ""};
    enum { N = sizeof f / sizeof *f };
    pb_report *r;
    assert_int_equal(pb_report_open("test", cols, NCOLS, NULL, NULL, csv, json, &r), PB_OK);
    for (int i = 0; i < N; i++) {
        pb_report_value v[NCOLS] = {[COL_BYTES] = PB_I(i), [COL_TIME_US] = PB_F(f[i]), [COL_NAME] = PB_S(s[i])};
        assert_int_equal(pb_report_row(r, v), PB_OK);
    }
    assert_int_equal(pb_report_close(r, 1), PB_OK);
    pb_csv t;
    assert_int_equal(pb_csv_read(csv, &t), PB_OK);
    assert_int_equal(t.nrows, N);
    assert_int_equal(t.bad_line, 0);
    cJSON *doc = read_json(json);
    const cJSON *rows = cJSON_GetObjectItem(doc, "rows");
    for (int i = 0; i < N; i++) {
        double got = NAN;
        assert_int_equal(pb_csv_num(&t, i, "time_us", &got), PB_OK);
        assert_true(got == f[i]);
        double in_json = cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, i), "time_us"));
        assert_true(fabs(in_json - got) <= 4e-16 * fabs(got)); /* cJSON keeps 15 digits when they come within an ulp */
        assert_string_equal(pb_csv_get(&t, i, "name"), s[i]);
    }
    cJSON_Delete(doc);
    pb_csv_free(&t);
    unlink(csv);
    unlink(json);
    rmdir(dir);
}

/* The reader on its own: "" inside a quoted field is one quote, a quoted
 * comma is no separator. */
static void csv_reader_quotes(void **state)
{
    (void)state;
    char dir[] = "/tmp/pb-report.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/q.csv", dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("# a comment\nname,n\n\"a \"\"b\"\" c\",1\n\"x,\"\"y\"\"\",2\n\"\"\"\"\"\",3\n# complete\n", fp);
    fclose(fp);
    pb_csv t;
    assert_int_equal(pb_csv_read(path, &t), PB_OK);
    assert_int_equal(t.nrows, 3);
    assert_int_equal(t.bad_line, 0);
    assert_true(t.complete);
    assert_string_equal(pb_csv_get(&t, 0, "name"), "a \"b\" c");
    assert_string_equal(pb_csv_get(&t, 1, "name"), "x,\"y\"");
    assert_string_equal(pb_csv_get(&t, 2, "name"), "\"\"");
    assert_string_equal(pb_csv_get(&t, 2, "n"), "3");
    pb_csv_free(&t);
    unlink(path);
    rmdir(dir);
}

/* A column index with no table entry has no key: refused at open. */
static void table_gap_refused(void **state)
{
    (void)state;
    static const pb_report_column gap[3] = {
        [0] = {"a", NULL, NULL, PB_COL_INT, 0, 0, ""},
        [2] = {"c", NULL, NULL, PB_COL_INT, 0, 0, ""},
    };
    pb_report *r = NULL;
    assert_int_equal(pb_report_open("test", gap, 3, NULL, NULL, NULL, NULL, &r), PB_ERR_CHECK);
    pb_report_close(r, 0);
}

/* A note in the table is a line of its own: "# " and the note, then the next
 * row starts on a new line (a reader of the table splits it into lines). */
static void table_note_is_a_line(void **state)
{
    (void)state;
    FILE *table = tmpfile();
    assert_non_null(table);
    pb_report *r;
    assert_int_equal(pb_report_open("test", cols, NCOLS, NULL, table, NULL, NULL, &r), PB_OK);
    assert_int_equal(pb_report_note(r, "a note, %d", 7), PB_OK);
    pb_report_value row[NCOLS] = {[COL_BYTES] = PB_I(8), [COL_TIME_US] = PB_F(1.5), [COL_NAME] = PB_S("a")};
    assert_int_equal(pb_report_row(r, row), PB_OK);
    assert_int_equal(pb_report_close(r, 1), PB_OK);
    rewind(table);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, table);
    text[n] = '\0';
    fclose(table);
    const char *note = strstr(text, "# a note, 7\n");
    assert_non_null(note);
    assert_true(note == text || note[-1] == '\n'); /* the note starts a line */
    assert_non_null(strstr(note, "\n         8")); /* and the row starts the next one */
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(json_written_at_doublings),
                                       cmocka_unit_test(row_missing_value_refused), cmocka_unit_test(json_has_schema),
                                       cmocka_unit_test(table_gap_refused), cmocka_unit_test(csv_reads_back_exactly),
                                       cmocka_unit_test(csv_reader_quotes), cmocka_unit_test(table_note_is_a_line)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
