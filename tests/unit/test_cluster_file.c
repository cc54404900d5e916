/* Cluster files (plan --calibrate writes them, --cluster FILE reads them):
 * a written file reads back the same, defaults fill what a file leaves out,
 * and each malformed line is refused as a usage error naming its line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/error.h"
#include "plan/cluster.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[64];

static void write_text(const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/pb-cluster-%d.txt", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void test_round_trip(void **state)
{
    (void)state;
    pb_model_cluster c = {.gpus_per_node = 4, .intra = {1.5e-6, 3.25e9}, .inter = {5e-6, 1.25e9}, .flops = 7.3e10,
                          .mem_bytes = 12e9},
                     got;
    snprintf(c.name, sizeof c.name, "calibrated");
    assert_int_equal(pb_cluster_file_write(path, &c, "a note"), PB_OK);
    assert_int_equal(pb_cluster_file_read(path, "--cluster", &got), PB_OK);
    assert_string_equal(got.name, "calibrated");
    assert_int_equal(got.gpus_per_node, 4);
    assert_true(fabs(got.intra.alpha_s - 1.5e-6) < 1e-12 && fabs(got.intra.bw_Bps - 3.25e9) < 1e3);
    assert_true(fabs(got.inter.alpha_s - 5e-6) < 1e-12 && fabs(got.inter.bw_Bps - 1.25e9) < 1e3);
    assert_true(fabs(got.flops - 7.3e10) < 1e3 && fabs(got.mem_bytes - 12e9) < 1e3);
}

static void test_defaults_and_comments(void **state)
{
    (void)state;
    pb_model_cluster got;
    write_text("# a comment\n\n  intra_bw_GBps = 2.5   # trailing comment\ntflops=0.05\nintra_alpha_us = 0\n");
    assert_int_equal(pb_cluster_file_read(path, "--cluster", &got), PB_OK);
    assert_int_equal(got.gpus_per_node, 1);
    assert_true(got.intra.bw_Bps == 2.5e9 && got.inter.bw_Bps == 2.5e9); /* inter defaults to intra */
    assert_true(got.intra.alpha_s == 0 && got.inter.alpha_s == 0);
    assert_true(fabs(got.flops - 5e10) < 1 && got.mem_bytes == 16e9);
    /* Each default stands for its own key only: mem_GB given, hbm_GBps not; then the other way round. */
    write_text("intra_bw_GBps = 1\ntflops = 1\nmem_GB = 40\n");
    assert_int_equal(pb_cluster_file_read(path, "--cluster", &got), PB_OK);
    assert_true(got.mem_bytes == 40e9 && got.mem_bw == 0);
    write_text("intra_bw_GBps = 1\ntflops = 1\nhbm_GBps = 900\n");
    assert_int_equal(pb_cluster_file_read(path, "--cluster", &got), PB_OK);
    assert_true(got.mem_bytes == 16e9 && got.mem_bw == 900e9);
}

/* The file is refused as a usage error whose message (stderr) holds `fragment`. */
static void expect_refused(const char *text, const char *fragment)
{
    pb_model_cluster got;
    char msg[1024] = "";
    write_text(text);
    FILE *err = tmpfile();
    assert_non_null(err);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(err), 2);
    int st = pb_cluster_file_read(path, "--cluster", &got);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(err);
    size_t n = fread(msg, 1, sizeof msg - 1, err);
    msg[n] = '\0';
    fclose(err);
    assert_int_equal(st, PB_ERR_USAGE);
    if (!strstr(msg, fragment)) fail_msg("'%s' not in '%s'", fragment, msg);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_refused("tflops = 1\nintra_bw_GBps\n", ":2: expected 'key = value'");
    expect_refused("tflops = 1\nintra_bw_GBps = fast\n", ":2: intra_bw_GBps 'fast' is not a decimal number");
    expect_refused("intra_bw_GBps = 1\ntflops = 0\n", ":2: tflops '0' is not a positive number");
    expect_refused("intra_bw_GBps = 1\ntflops = 1\nintra_alpha_us = -1\n", ":3: intra_alpha_us '-1'");
    expect_refused("intra_bw_GBps = 1\ntflops = 1\ngpus_per_node = 2.5\n", ":3: gpus_per_node '2.5'");
    expect_refused("intra_bw_GBps = 1\ntflops = 1\nbandwidth = 3\n", ":3: unknown key 'bandwidth'");
    expect_refused("intra_bw_GBps = 1\n", "missing key 'tflops'");
    expect_refused("tflops = 1\n", "missing key 'intra_bw_GBps'");
}

/* Numbers: the one strict form, finite once scaled to the model's unit. */
static void test_numbers(void **state)
{
    (void)state;
    expect_refused("intra_bw_GBps = 1\ntflops = 1e300\n", ":2: tflops '1e300' is not a decimal number that stays finite");
    expect_refused("intra_bw_GBps = 1\ntflops = nan\n", ":2: tflops 'nan'");
    expect_refused("intra_bw_GBps = 1\ntflops = inf\n", ":2: tflops 'inf'");
    expect_refused("intra_bw_GBps = 0x10\ntflops = 1\n", ":1: intra_bw_GBps '0x10'");
    expect_refused("intra_bw_GBps = 1\ntflops = 1\ngpus_per_node = nan\n", ":3: gpus_per_node 'nan'");
    /* gpus_per_node: both ends of 1..1024 */
    expect_refused("intra_bw_GBps = 1\ntflops = 1\ngpus_per_node = 0\n", ":3: gpus_per_node '0' is not an integer from 1 to 1024");
    expect_refused("intra_bw_GBps = 1\ntflops = 1\ngpus_per_node = 1025\n", ":3: gpus_per_node '1025'");
    pb_model_cluster got;
    write_text("intra_bw_GBps = 1\ntflops = 1\ngpus_per_node = 1024\n");
    assert_int_equal(pb_cluster_file_read(path, "--cluster", &got), PB_OK);
    assert_int_equal(got.gpus_per_node, 1024);
}

/* Lines: whole or refused with FILE:LINE; a key given once. */
static void test_lines(void **state)
{
    (void)state;
    char text[6000];
    pb_model_cluster got;
    /* A 2,040-byte comment ending in "tflops = 1": fgets used to read its tail as a key. */
    snprintf(text, sizeof text, "intra_bw_GBps = 1\ntflops = 100\n# %2040s tflops = 1\n", "x");
    write_text(text);
    assert_int_equal(pb_cluster_file_read(path, "--cluster", &got), PB_OK);
    assert_true(got.flops == 100e12);
    snprintf(text, sizeof text, "intra_bw_GBps = 1\ntflops = 100\n# %5000s tflops = 1\n", "x");
    expect_refused(text, ":3: line is longer than the limit");
    expect_refused("intra_bw_GBps = 1\rtflops = 1\r", ":1: line has CR-only line ends");
    expect_refused("intra_bw_GBps = 1\ntflops = 1\ntflops = 2\n", ":3: key 'tflops' is given twice (first on line 2)");
    expect_refused("name = a\nname = b\nintra_bw_GBps = 1\ntflops = 1\n", ":2: key 'name' is given twice");
    expect_refused("intra_bw_GBps = 1\n\xEF\xBB\xBFtflops = 1\n", ":2: line holds a UTF-8 byte-order mark");
    write_text("\xEF\xBB\xBFintra_bw_GBps = 1\r\ntflops = 2\r\n"); /* a leading BOM and CRLF are read */
    assert_int_equal(pb_cluster_file_read(path, "--cluster", &got), PB_OK);
    assert_true(got.flops == 2e12 && got.intra.bw_Bps == 1e9);
}

static void test_missing_file_and_lookup(void **state)
{
    (void)state;
    pb_model_cluster got;
    assert_int_equal(pb_cluster_file_read("/nonexistent/cluster.txt", "--cluster", &got), PB_ERR_ENV);
    assert_int_equal(pb_cluster_lookup("a100", "--cluster", &got), PB_OK); /* a preset name */
    assert_string_equal(got.name, "a100-ib200");
    write_text("intra_bw_GBps = 4\ntflops = 0.1\nname = here\n");
    assert_int_equal(pb_cluster_lookup(path, "--cluster", &got), PB_OK); /* a readable file */
    assert_string_equal(got.name, "here");
    assert_int_equal(pb_cluster_lookup("/nonexistent/x", "--cluster", &got), PB_ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_defaults_and_comments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_numbers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_and_lookup, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
