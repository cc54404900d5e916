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

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* At most 32 files a run: the 33rd (another option) is refused, and the registry still works after a reset. */
static void too_many_files(void **state)
{
    (void)state;
    char path[128], opt[16];
    pb_outpath_reset();
    for (int i = 0; i <= 32; i++) {
        snprintf(path, sizeof path, "%s/f%d.csv", dir, i);
        snprintf(opt, sizeof opt, "--o%d", i);
        assert_int_equal(pb_outpath_add(opt, path), i < 32 ? PB_OK : PB_ERR_USAGE);
    }
    pb_outpath_reset();
    assert_int_equal(pb_outpath_add("--csv", path), PB_OK);
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
    char cmd[200];
    cJSON *j = cJSON_CreateObject();
    assert_int_equal(pb_report_json_write_atomic(dir, j), PB_ERR_ENV); /* rename onto a directory fails */
    snprintf(cmd, sizeof cmd, "ls -a /tmp | grep -q '^\\.%s\\.'", strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir);
    assert_int_not_equal(system(cmd), 0); /* no temporary ".pb-outpath.XXXXXX.*" is left */
    cJSON_Delete(j);
}

static void decimal_strict(void **state)
{
    const char *bad[] = {"0x10", "+5", "010", "inf", "nan", "5s", " 5", "1.", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_non_null(pb_parse_decimal_problem(bad[i], 1));
    const char *good[] = {"0", "10", "-3", "0.5", "1e3", "2.5E-2"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) assert_null(pb_parse_decimal_problem(good[i], 1));
    assert_non_null(pb_parse_decimal_problem("1.5", 0));
    /* each refusal's reason, as the messages print it; infinity and NaN in any spelling strtod reads */
    const char *why[][3] = {{"", "1", "is empty"}, {"+5", "1", "starts with '+'"}, {" 5", "1", "starts with a blank"},
                            {"0x10", "1", "is hexadecimal"}, {"infinity", "1", "is not finite"},
                            {"-Inf", "1", "is not finite"}, {"NaN(1)", "1", "is not finite"},
                            {"x", "1", "is not a number"}, {"x", "0", "is not an integer"},
                            {"010", "1", "has a leading zero (octal-looking)"}, {"1.", "1", "has no digits after the '.'"}};
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
        assert_string_equal(pb_parse_decimal_problem(why[i][0], why[i][1][0] == '1'), why[i][2]);
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

static int reads_csv(const char *name) { return strcmp(name, "in.csv") == 0; }

/* Make `d` a run's results folder (it holds steps.tsv), or no longer one. */
static void mark_run(const char *d, int on)
{
    char f[160];
    snprintf(f, sizeof f, "%s/steps.tsv", d);
    if (!on) {
        assert_int_equal(remove(f), 0);
        return;
    }
    FILE *fp = fopen(f, "w");
    assert_non_null(fp);
    fclose(fp);
}

/* A file an input directory's reader takes is refused as an output there,
 * whichever is registered first; other names in the directory are not (the
 * run's own step: PARABENCH_RUN names it). A folder that is not a run is
 * refused as an input directory. */
static void input_dir_files_refused(void **state)
{
    char in[128], other[128], sub[128];
    snprintf(in, sizeof in, "%s/./in.csv", dir);
    snprintf(other, sizeof other, "%s/out.csv", dir);
    snprintf(sub, sizeof sub, "%s/in", dir);
    pb_error_set_quiet_usage(1);
    pb_outpath_reset();
    assert_int_equal(pb_outpath_add_input_dir("--fit", dir, reads_csv), PB_ERR_USAGE); /* not a run */
    mark_run(dir, 1);
    setenv("PARABENCH_RUN", dir, 1);
    assert_int_equal(pb_outpath_add_input_dir("--fit", dir, reads_csv), PB_OK);
    assert_int_equal(pb_outpath_add("--csv", in), PB_ERR_USAGE);
    assert_int_equal(pb_outpath_add("--csv", other), PB_OK);
    pb_outpath_reset();
    assert_int_equal(pb_outpath_add("--csv", in), PB_OK);
    assert_int_equal(pb_outpath_add_input_dir("--fit", dir, reads_csv), PB_ERR_USAGE);
    assert_int_equal(pb_outpath_add_input_dir("--fit", sub, reads_csv), PB_ERR_USAGE); /* not a directory */
    FILE *fp = fopen(other, "w"); /* a file that exists is no directory either */
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(pb_outpath_add_input_dir("--fit", other, reads_csv), PB_ERR_USAGE);
    remove(other);
    pb_outpath_reset();
    unsetenv("PARABENCH_RUN");
    mark_run(dir, 0);
}

/* What the registry holds. */
static void register_some(const char *sub)
{
    char out[128];
    snprintf(out, sizeof out, "%s/o.csv", dir);
    assert_int_equal(pb_outpath_add_input_dir("--fit", dir, reads_csv), PB_OK);
    assert_int_equal(pb_outpath_add_input_dir("--calibrate", sub, reads_csv), PB_OK);
    assert_int_equal(pb_outpath_add("--csv", out), PB_OK);
}

/* A reset frees every entry, paths and directories alike: the heap in use
 * after a second round is what it was before it (the first round leaves the
 * C library's caches filled; a chunk it caches counts as in use, so a leaked
 * one shows as a new allocation). */
static void reset_frees_everything(void **state)
{
    (void)state;
    char sub[128];
    snprintf(sub, sizeof sub, "%s/d", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    mark_run(dir, 1); /* both input directories are runs; o.csv is the run's own output */
    mark_run(sub, 1);
    setenv("PARABENCH_RUN", dir, 1);
    pb_outpath_reset();
    register_some(sub);
    pb_outpath_reset();
    size_t before = mallinfo2().uordblks;
    register_some(sub);
    pb_outpath_reset();
    assert_int_equal(mallinfo2().uordblks, before);
    unsetenv("PARABENCH_RUN");
    mark_run(sub, 0);
    mark_run(dir, 0);
    rmdir(sub);
}

/* Lists of numbers through the one parser: no nan, inf or overflow. */
static void double_lists(void **state)
{
    double v[5];
    size_t n = 0;
    pb_error_set_quiet_usage(1);
    assert_int_equal(pb_parse_double_list("--pp-simulate", "4,8,1.5,1,0", 0, 1e9, v, 5, &n), PB_OK);
    assert_true(n == 5 && v[2] == 1.5 && v[4] == 0);
    const char *bad[] = {"4,8,nan,1,0", "4,8,1,1,nan", "4,8,inf,1,0", "4,8,1e308,1,0", "4,,1", "1,2,3,4,5,6", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(pb_parse_double_list("--pp-simulate", bad[i], 0, 1e9, v, 5, &n), PB_ERR_USAGE);
}

int main(void)
{
    if (!mkdtemp(dir)) return 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(same_file_refused), cmocka_unit_test(link_and_directory_refused),
                                       cmocka_unit_test(atomic_write_cleans_up), cmocka_unit_test(decimal_strict),
                                       cmocka_unit_test(input_dir_files_refused), cmocka_unit_test(double_lists),
                                       cmocka_unit_test(too_many_files), cmocka_unit_test(reset_frees_everything)};
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return failed;
}
