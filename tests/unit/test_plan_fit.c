/* plan --fit pieces: the alpha-beta least squares recovers known values from
 * synthetic data (exact and with noise), the CSV reader finds columns by name,
 * and the command's error statuses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/csv.h"
#include "core/error.h"
#include "plan/model.h"
#include "plan/plan_fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int within(double x, double want, double rel) { return fabs(x - want) <= rel * fabs(want); }

/* Deterministic +-amp relative noise. */
static double noise(unsigned *seed, double amp)
{
    *seed = *seed * 1103515245u + 12345u;
    return 1.0 + amp * (2.0 * ((*seed >> 8) & 0xffff) / 65535.0 - 1.0);
}

static void test_fit_p2p_exact(void **state)
{
    (void)state;
    pb_model_link truth = {12e-6, 0.6e9}, got;
    pb_plan_fit_obs o[24];
    int n = 0;
    for (double S = 8; S <= 64 * 1048576.0; S *= 4) o[n++] = (pb_plan_fit_obs){1.0, S, pb_model_t_p2p(S, truth)};
    double rms;
    assert_int_equal(pb_plan_fit_alpha_beta(o, n, &got, &rms, NULL), PB_OK);
    assert_true(within(got.alpha_s, truth.alpha_s, 1e-6));
    assert_true(within(got.bw_Bps, truth.bw_Bps, 1e-6));
    assert_true(rms < 1e-9);
}

static void test_fit_allreduce_noisy(void **state)
{
    (void)state;
    pb_model_link truth = {0.4e-6, 5e9}, got;
    pb_plan_fit_obs o[64];
    int n = 0;
    unsigned seed = 7;
    for (int ranks = 2; ranks <= 8; ranks *= 2)
        for (double S = 64; S <= 256 * 1048576.0; S *= 8) {
            double k = ranks - 1;
            o[n++] = (pb_plan_fit_obs){2 * k, 2 * k / ranks * S, pb_model_t_ring_allreduce(S, ranks, truth) * noise(&seed, 0.03)};
        }
    assert_int_equal(pb_plan_fit_alpha_beta(o, n, &got, NULL, NULL), PB_OK);
    assert_true(within(got.alpha_s, truth.alpha_s, 0.05));
    assert_true(within(got.bw_Bps, truth.bw_Bps, 0.05));
}

static void test_fit_bandwidth_only(void **state)
{
    (void)state;
    pb_plan_fit_obs o[2] = {{0, 1e8, 0.1}, {0, 2e8, 0.2}}; /* 1 GB/s, no latency information */
    pb_model_link got;
    int kept = -1;
    double rms = -1;
    assert_int_equal(pb_plan_fit_alpha_beta(o, 2, &got, &rms, &kept), PB_OK);
    assert_true(within(got.bw_Bps, 1e9, 1e-9));
    assert_true(got.alpha_s == 0.0);
    assert_int_equal(kept, 2); /* too few points for the robust pass: both counted, once */
    assert_true(rms >= 0 && rms < 1e-9);
    pb_plan_fit_obs bad[1] = {{1, 0, 0}};
    assert_int_equal(pb_plan_fit_alpha_beta(bad, 1, &got, NULL, NULL), PB_ERR_CHECK);
}

static void test_fit_drops_outliers(void **state)
{
    (void)state;
    pb_model_link truth = {10e-6, 1e9}, got;
    pb_plan_fit_obs o[16];
    int n = 0, kept;
    for (double S = 8; S <= 64 * 1048576.0; S *= 8) o[n++] = (pb_plan_fit_obs){1.0, S, pb_model_t_p2p(S, truth)};
    o[0].y *= 500; /* a descheduled rank: 5 ms for 8 bytes */
    o[3].y *= 20;
    assert_int_equal(pb_plan_fit_alpha_beta(o, n, &got, NULL, &kept), PB_OK);
    assert_int_equal(kept, n - 2);
    assert_true(within(got.alpha_s, truth.alpha_s, 0.01));
    assert_true(within(got.bw_Bps, truth.bw_Bps, 0.01));
}

static void test_csv_reader(void **state)
{
    (void)state;
    char path[] = "/tmp/pb-test-csv-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("# command: x\n\n# more\nbytes,\"link_class\",time_us\n1024,intra,1.5\r\n\"2048\",\"in,ter\",2.5\n# c\n8,x\n",
          fp);
    fclose(fp);
    pb_csv t;
    assert_int_equal(pb_csv_read(path, &t), PB_OK);
    assert_int_equal(t.ncols, 3);
    assert_int_equal(t.nrows, 3);
    assert_int_equal(pb_csv_col(&t, "time_us"), 2);
    assert_int_equal(pb_csv_col(&t, "nope"), -1);
    double v;
    assert_int_equal(pb_csv_num(&t, 1, "bytes", &v), PB_OK);
    assert_true(v == 2048);
    assert_string_equal(pb_csv_get(&t, 1, "link_class"), "in,ter");
    assert_int_equal(pb_csv_num(&t, 0, "time_us", &v), PB_OK);
    assert_true(v == 1.5);
    assert_int_equal(pb_csv_num(&t, 2, "time_us", &v), PB_ERR_CHECK); /* short row */
    assert_int_equal(pb_csv_num(&t, 0, "link_class", &v), PB_ERR_CHECK);
    pb_csv_free(&t);
    unlink(path);
    assert_int_equal(pb_csv_read("/nonexistent/x.csv", &t), PB_ERR_ENV);
    /* on error the table is empty (csv.h): nothing to read, and freeing it is harmless */
    assert_int_equal(t.nrows, 0);
    assert_int_equal(t.ncols, 0);
    assert_int_equal(t.complete, 0);
    assert_null(t.header);
    assert_null(t.rows);
    pb_csv_free(&t);
}

static void test_fit_command_errors(void **state)
{
    (void)state;
    FILE *devnull = fopen("/dev/null", "w");
    pb_plan_fit_fitted f;
    assert_int_equal(pb_plan_fit_links("/nonexistent-dir", "--fit", &f, devnull), PB_ERR_USAGE);
    pb_model_cluster c = {.name = "c"};
    assert_int_equal(pb_plan_fit_from_cluster("/nonexistent-dir", &c, &f, devnull), PB_ERR_USAGE);
    char dir[] = "/tmp/pb-test-fit-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(pb_plan_fit_links(dir, "--fit", &f, devnull), PB_ERR_ENV); /* no sweep data */
    rmdir(dir);
    fclose(devnull);
}

/* Fit the links of a run directory whose SWEEP.csv (p2p_sweep, coll_sweep) is
 * `text` (beside an empty SWEEP-empty.csv when `with_empty`); the directory is
 * removed after. */
static void fit_sweep_text(const char *sweep, const char *text, int with_empty, pb_plan_fit_fitted *fit)
{
    char dir[] = "/tmp/pb-test-fit-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[64], empty[64];
    snprintf(path, sizeof path, "%s/%s.csv", dir, sweep);
    snprintf(empty, sizeof empty, "%s/%s-empty.csv", dir, sweep);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    if (with_empty) fclose(fopen(empty, "w"));
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(pb_plan_fit_links(dir, "--fit", fit, devnull), PB_OK);
    fclose(devnull);
    unlink(path);
    if (with_empty) unlink(empty);
    rmdir(dir);
}

/* p2p_sweep rows: a latency row of 0 us (below the timer) and bibw rows are
 * not observations; wrong rows are not either; an empty sweep file is
 * skipped with a note, not read. */
static void test_p2p_rows_used(void **state)
{
    (void)state;
    pb_plan_fit_fitted fit;
    fit_sweep_text("p2p_sweep", "mode,link_class,bytes,time_us,bw_GBps,wrong\n"
                 "latency,intra,8,2.0,,0\n"
                 "latency,intra,1024,3.0,,0\n"
                 "latency,intra,4096,0,,0\n"
                 "latency,intra,8192,4.0,,3\n"
                 "bibw,intra,4194304,100,40.0,0\n"
                 "bw,intra,4194304,200,20.0,0\n"
                 "# complete\n",
                 1, &fit);
    assert_int_equal(fit.rows[PB_LINK_INTRA][PB_FIT_P2P], 3); /* 2 latency rows with a time, 1 large bw row */
    assert_int_equal(fit.rows[PB_LINK_INTER][PB_FIT_P2P], 0);
}

/* coll_sweep rows: every ring-shaped row of 2+ ranks with a time counts, the
 * first as the last; a tree-shaped collective (broadcast), a wrong row, one
 * rank and an unknown class do not. */
static void test_coll_rows_used(void **state)
{
    (void)state;
    pb_plan_fit_fitted fit;
    fit_sweep_text("coll_sweep",
                   "collective,link_class,bytes,nranks,time_us,wrong\n"
                   "allreduce,intra,1048576,4,100.0,0\n"
                   "allgather,intra,1048576,4,60.0,0\n"
                   "reducescatter,inter,1048576,4,70.0,0\n"
                   "broadcast,intra,1048576,4,50.0,0\n"
                   "allreduce,intra,2097152,4,190.0,2\n"
                   "allreduce,intra,2097152,1,1.0,0\n"
                   "allreduce,sideways,2097152,4,190.0,0\n"
                   "allreduce,intra,4194304,4,370.0,0\n"
                   "# complete\n",
                   0, &fit);
    assert_int_equal(fit.rows[PB_LINK_INTRA][PB_FIT_COLL], 3);
    assert_int_equal(fit.rows[PB_LINK_INTER][PB_FIT_COLL], 1);
}

/* A row's median time is the observation when it has one, however small (a
 * shared-memory latency is below 1 us); only a median of 0 or none falls back
 * to the mean. Latency 0.5 + S * 1e-3 us by the medians, ten times that by the
 * means: the fitted alpha tells which was read. The last row's median is 0 and
 * its mean the true time: it still counts, through its mean. */
static void test_median_preferred(void **state)
{
    (void)state;
    char text[1024];
    int n = snprintf(text, sizeof text, "mode,link_class,bytes,time_us,time_us_median,bw_GBps,wrong\n");
    for (int S = 8; S <= 8192; S *= 4)
        n += snprintf(text + n, sizeof text - (size_t)n, "latency,intra,%d,%.6f,%.6f,,0\n", S,
                      10 * (0.5 + S * 1e-3), 0.5 + S * 1e-3);
    snprintf(text + n, sizeof text - (size_t)n, "latency,intra,32768,%.6f,0,,0\n# complete\n", 0.5 + 32768 * 1e-3);
    pb_plan_fit_fitted fit;
    fit_sweep_text("p2p_sweep", text, 0, &fit);
    assert_int_equal(fit.rows[PB_LINK_INTRA][PB_FIT_P2P], 7);
    assert_true(within(fit.link[PB_LINK_INTRA][PB_FIT_P2P].alpha_s, 0.5e-6, 1e-3));
    assert_true(within(fit.link[PB_LINK_INTRA][PB_FIT_P2P].bw_Bps, 1e9, 1e-3));
}

/* Which fit models a row: its own class first (the row's kind of source, then the
 * other), and only a mixed row falls back to inter, its slowest hop. */
static void test_fitted_link_by_class(void **state)
{
    (void)state;
    pb_plan_fit_fitted f;
    memset(&f, 0, sizeof f);
    f.have[PB_LINK_INTER][PB_FIT_COLL] = 1;
    f.link[PB_LINK_INTER][PB_FIT_COLL].bw_Bps = 3e9;
    f.have[PB_LINK_INTRA][PB_FIT_P2P] = 1;
    f.link[PB_LINK_INTRA][PB_FIT_P2P].bw_Bps = 9e9;
    pb_model_link l;
    char used[32];
    assert_int_equal(pb_plan_fit_fitted_link(&f, "mixed", 1, &l, used, sizeof used), PB_OK);
    assert_string_equal(used, "inter/coll");
    assert_true(l.bw_Bps == 3e9);
    assert_int_equal(pb_plan_fit_fitted_link(&f, "intra", 1, &l, used, sizeof used), PB_OK);
    assert_string_equal(used, "intra/p2p"); /* its own class's other source, never inter's */
    f.have[PB_LINK_INTRA][PB_FIT_P2P] = 0;
    assert_int_equal(pb_plan_fit_fitted_link(&f, "intra", 1, &l, used, sizeof used), PB_ERR_CHECK);
    assert_int_equal(pb_plan_fit_fitted_link(&f, "sideways", 1, &l, used, sizeof used), PB_ERR_CHECK);
    /* A mixed row with a mixed fit of its own takes it, even its other source, before inter's. */
    f.have[PB_LINK_MIXED][PB_FIT_P2P] = 1;
    f.link[PB_LINK_MIXED][PB_FIT_P2P].bw_Bps = 5e9;
    assert_int_equal(pb_plan_fit_fitted_link(&f, "mixed", 1, &l, used, sizeof used), PB_OK);
    assert_string_equal(used, "mixed/p2p");
    assert_true(l.bw_Bps == 5e9);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_p2p_exact),   cmocka_unit_test(test_fit_allreduce_noisy),
        cmocka_unit_test(test_fit_bandwidth_only), cmocka_unit_test(test_fit_drops_outliers),
        cmocka_unit_test(test_csv_reader),
        cmocka_unit_test(test_fit_command_errors), cmocka_unit_test(test_p2p_rows_used),
        cmocka_unit_test(test_median_preferred), cmocka_unit_test(test_coll_rows_used), cmocka_unit_test(test_fitted_link_by_class),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
