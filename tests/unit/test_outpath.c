/* The output-path registry and the strict number parser: two options naming
 * one file are refused however the file is spelled (same string, ./, a hard
 * link); a directory is refused; the last value of an option replaces its
 * entry. The JSON writer leaves no temporary file when it fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "core/outpath.h"
#include "core/parse.h"
#include "core/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/pb-outpath.XXXXXX";

static void same_file_refused(void **state)
{
    char a[128], b[128], c[128];
    snprintf(a, sizeof a, "%s/r.csv", dir);
    snprintf(b, sizeof b, "%s/./r.csv", dir);
    snprintf(c, sizeof c, "%s/s.csv", dir);
    pb_outpath_reset();
    assert_int_equal(pb_outpath_add("--csv", a), PB_OK);
    assert_int_equal(pb_outpath_add("--json", a), PB_ERR_USAGE);
    assert_int_equal(pb_outpath_add("--json", b), PB_ERR_USAGE);
    assert_int_equal(pb_outpath_add("--json", c), PB_OK);
    assert_int_equal(pb_outpath_add("--csv", c), PB_ERR_USAGE); /* --csv's new value is --json's file */
    assert_int_equal(pb_outpath_add("--csv", b), PB_OK);        /* replaces --csv's entry, no clash with itself */
}

static void link_and_directory_refused(void **state)
{
    char a[128], l[128];
    snprintf(a, sizeof a, "%s/in.txt", dir);
    snprintf(l, sizeof l, "%s/link.txt", dir);
    FILE *f = fopen(a, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(link(a, l), 0);
    pb_outpath_reset();
    assert_int_equal(pb_outpath_add_input("--rankmap", a), PB_OK);
    assert_int_equal(pb_outpath_add("--csv", l), PB_ERR_USAGE);
    assert_int_equal(pb_outpath_add("--json", dir), PB_ERR_USAGE);
    unlink(l);
    unlink(a);
}

static void atomic_write_cleans_up(void **state)
{
    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s.tmp", dir);
    cJSON *j = cJSON_CreateObject();
    assert_int_equal(pb_report_json_write_atomic(dir, j), PB_ERR_ENV); /* rename onto a directory fails */
    assert_int_not_equal(access(tmp, F_OK), 0);
    cJSON_Delete(j);
}

static void decimal_strict(void **state)
{
    const char *bad[] = {"0x10", "+5", "010", "inf", "nan", "5s", " 5", "1.", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_non_null(pb_parse_decimal_problem(bad[i], 1));
    const char *good[] = {"0", "10", "-3", "0.5", "1e3", "2.5E-2"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) assert_null(pb_parse_decimal_problem(good[i], 1));
    assert_non_null(pb_parse_decimal_problem("1.5", 0));
    int r = -1;
    pb_error_set_quiet_usage(1);
    assert_int_equal(pb_parse_rank("--pair", "99999999999999999999", 4, &r), PB_ERR_USAGE);
    assert_int_equal(pb_parse_rank("--pair", "4", 4, &r), PB_ERR_USAGE);
    assert_int_equal(pb_parse_rank("--pair", "3", 4, &r), PB_OK);
    assert_int_equal(r, 3);
    double d = 0;
    assert_int_equal(pb_parse_count("--params", "1.3B", 1, 1e13, &d), PB_OK);
    assert_true(d == 1.3e9);
    /* Every suffix, either case, is its power of 1000. */
    const char *counts[] = {"2K", "2k", "2M", "2m", "2B", "2b", "2G", "2g", "2T", "2t", "2"};
    const double want[] = {2e3, 2e3, 2e6, 2e6, 2e9, 2e9, 2e9, 2e9, 2e12, 2e12, 2};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        assert_int_equal(pb_parse_count("--params", counts[i], 1, 1e13, &d), PB_OK);
        assert_true(d == want[i]);
    }
    assert_int_equal(pb_parse_count("--params", "0x10M", 1, 1e13, &d), PB_ERR_USAGE);
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(same_file_refused), cmocka_unit_test(link_and_directory_refused),
                                       cmocka_unit_test(atomic_write_cleans_up), cmocka_unit_test(decimal_strict)};
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return failed;
}
