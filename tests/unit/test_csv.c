/* The results CSV reader (core/csv.h) on the line forms core/lines refuses,
 * and on the writers' own marks: each refusal makes the file garbled at its
 * line, which acceptance reports as FILE:LINE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/csv.h"
#include "core/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Read `len` bytes of text as a CSV file. */
static int read_text(const char *text, size_t len, pb_csv *t)
{
    FILE *fp = fmemopen((void *)(uintptr_t)text, len, "r");
    assert_non_null(fp);
    int rc = pb_csv_read_stream(fp, t);
    fclose(fp);
    return rc;
}

static void read_str(const char *text, pb_csv *t) { assert_int_equal(read_text(text, strlen(text), t), PB_OK); }

/* len 0: strlen(text). A file garbled before its header is refused (no header) but still says why. */
static void expect_garbled(const char *text, size_t len, int line, const char *why)
{
    pb_csv t;
    int rc = read_text(text, len ? len : strlen(text), &t);
    assert_true(rc == PB_OK || (rc == PB_ERR_CHECK && !t.header));
    assert_int_equal(t.bad_line, line);
    assert_non_null(strstr(t.bad_why, why));
    pb_csv_free(&t);
}

static void good_file(void **state)
{
    (void)state;
    pb_csv t;
    read_str("\xEF\xBB\xBF# parabench x\r\nbytes,time_us\r\n8,1.5\r\n# complete\r\n", &t); /* BOM and CRLF */
    assert_int_equal(t.bad_line, 0);
    assert_true(t.complete);
    assert_string_equal(t.header[0], "bytes");
    assert_string_equal(pb_csv_get(&t, 0, "time_us"), "1.5");
    assert_int_equal(t.line[0], 3);
    pb_csv_free(&t);
}

static void refused_lines(void **state)
{
    (void)state;
    expect_garbled("bytes,t\r8,1\r# complete\r", 0, 1, "CR-only line ends");
    const char bom[] = "bytes,t\n\xEF\xBB\xBF" "8,1\n# complete\n";
    expect_garbled(bom, sizeof bom - 1, 2, "byte-order mark");
    const char nul[] = "bytes,t\n8,\0" "1\n# complete\n";
    expect_garbled(nul, sizeof nul - 1, 2, "NUL byte");
    size_t n = PB_CSV_LINE_MAX + 64;
    char *big = malloc(n);
    assert_non_null(big);
    memcpy(big, "bytes,t\n# ", 10);
    memset(big + 10, 'a', n - 11);
    big[n - 1] = '\n';
    expect_garbled(big, n, 2, "longer than the limit");
    free(big);
}

static void writer_marks(void **state)
{
    (void)state;
    expect_garbled("bytes,t\n8,1\n# complete\n16,2\n", 0, 4, "after the '# complete' line");
    expect_garbled("bytes,t\n8,1\n16,", 0, 3, "the file was cut");
    expect_garbled("bytes,t\n8\n# complete\n", 0, 2, "fewer fields");
    pb_csv t;
    read_str("bytes,t\n8,1\n", &t);
    assert_false(t.complete);
    assert_int_equal(t.bad_line, 0);
    pb_csv_free(&t);
    assert_int_equal(read_text("# only a comment\n", 17, &t), PB_ERR_CHECK);
}

/* A file that cannot be opened: PB_ERR_ENV, and the table holds nothing, whatever
 * the caller's struct held before (callers free it, and print bad_line). */
static void missing_file(void **state)
{
    (void)state;
    pb_csv t;
    memset(&t, 0x5a, sizeof t);
    assert_int_equal(pb_csv_read("/nonexistent/parabench/results.csv", &t), PB_ERR_ENV);
    assert_int_equal(t.ncols, 0);
    assert_int_equal(t.nrows, 0);
    assert_null(t.header);
    assert_null(t.rows);
    assert_int_equal(t.bad_line, 0);
    assert_false(t.complete);
    pb_csv_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_file),
        cmocka_unit_test(refused_lines),
        cmocka_unit_test(writer_marks),
        cmocka_unit_test(missing_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
