/* Judging an acceptance rule on tables built in memory (plan/thresholds_eval.h):
 * which rows a rule selects (text and numeric keys, the metric's row filter),
 * the size measured nearest the rule's, link classes, the worst of several
 * rows and tables, rows that cannot be trusted, and both sides of >= and <=. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "plan/thresholds_eval.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAXTAB 4
static pb_thresholds_eval_table tabs[MAXTAB];
static int ntab;

/* A results file of benchmark `source` named `path`, from its text. */
static void add_table(const char *path, const char *source, const char *text)
{
    assert_true(ntab < MAXTAB);
    pb_thresholds_eval_table *t = &tabs[ntab++];
    t->path = path;
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(fp);
    assert_int_equal(pb_csv_read_stream(fp, &t->csv), PB_OK);
    fclose(fp);
    fp = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(fp);
    assert_int_equal(pb_result_notes_read_stream(fp, path, source, &t->notes), PB_OK);
    fclose(fp);
}

static int teardown(void **state)
{
    (void)state;
    for (int i = 0; i < ntab; i++) pb_csv_free(&tabs[i].csv), pb_result_notes_free(&tabs[i].notes);
    ntab = 0;
    return 0;
}

/* The outcome of one rule, written as in a threshold file, on the tables added. */
static pb_thresholds_eval_outcome judge(const char *rule)
{
    pb_thresholds_set set;
    char err[256];
    assert_int_equal(pb_thresholds_parse("t.thr", rule, strlen(rule), &set, err, sizeof err), PB_OK);
    assert_int_equal(set.n, 1);
    pb_thresholds_eval_outcome o;
    pb_thresholds_eval_start(&o);
    pb_thresholds_eval(&set.rules[0], tabs, ntab, &o);
    pb_thresholds_free(&set);
    return o;
}

/* judge(rule), checked: its verdict, the value measured and the table and row
 * it came from (table -1: none, and nothing measured). */
static pb_thresholds_eval_outcome expect(const char *rule, enum pb_th_verdict v, double measured, int table, int row)
{
    pb_thresholds_eval_outcome o = judge(rule);
    assert_int_equal(o.v, v);
    assert_int_equal(o.from_table, table);
    if (table < 0) {
        assert_true(isnan(o.measured));
        return o;
    }
    assert_true(o.measured == measured);
    assert_int_equal(o.from_row, row);
    return o;
}

static const char sweep[] = "# parabench coll_sweep\n"
                            "collective,bytes,link_class,time_us,busbw_GBps,wrong\n"
                            "allreduce,1048576,intra,10,3,0\n"
                            "allreduce,4194304,intra,20,5,0\n"
                            "allgather,4194304,intra,30,1,0\n"
                            "allreduce,67108860,intra,40,9,0\n"
                            "# complete\n";

/* Text keys (coll), both sides of >= and <=. */
static void select_by_text(void **state)
{
    (void)state;
    add_table("a.csv", "coll_sweep", sweep);
    pb_thresholds_eval_outcome o = expect("busbw coll=allreduce size=4M >= 5 GB/s", PB_TH_PASS, 5, 0, 1);
    assert_int_equal(o.rows, 1);
    o = expect("busbw coll=allreduce size=4M >= 5.01 GB/s", PB_TH_FAIL, 5, 0, 1);
    assert_string_equal(o.why, "measured 5, required >= 5.01 GB/s");
    expect("busbw coll=allgather size=4M >= 5 GB/s", PB_TH_FAIL, 1, 0, 2);
    expect("coll_latency coll=allreduce size=4M <= 20 us", PB_TH_PASS, 20, 0, 1);
    o = expect("coll_latency coll=allreduce size=4M <= 19.99 us", PB_TH_FAIL, 20, 0, 1);
    assert_string_equal(o.why, "measured 20, required <= 19.99 us");
    o = expect("busbw coll=broadcast size=4M >= 1 GB/s", PB_TH_FAIL, NAN, -1, -1);
    assert_string_equal(o.why, "no matching rows in coll_sweep*.csv");
}

/* Columns are found by name wherever they are, the first one included. */
static void metric_in_the_first_column(void **state)
{
    (void)state;
    add_table("a.csv", "coll_sweep",
              "busbw_GBps,collective,bytes,link_class,time_us,wrong\n3,allreduce,1048576,intra,10,0\n# complete\n");
    expect("busbw coll=allreduce size=1M >= 3 GB/s", PB_TH_PASS, 3, 0, 0);
    expect("busbw coll=allreduce size=1M >= 3.5 GB/s", PB_TH_FAIL, 3, 0, 0);
}

/* p2p_latency reads only the rows of mode latency: a bandwidth row's time is not one. */
static void row_filter(void **state)
{
    (void)state;
    add_table("p.csv", "p2p_sweep",
              "mode,bytes,link_class,time_us,bw_GBps,wrong\nbw,8,intra,50,0.1,0\nlatency,8,intra,4,0,0\n# complete\n");
    assert_int_equal(expect("p2p_latency size=8 <= 5 us", PB_TH_PASS, 4, 0, 1).rows, 1);
}

/* Numeric keys (m, stages) compare as numbers; the divisor column divides. */
static void select_by_number(void **state)
{
    (void)state;
    add_table("pp.csv", "pp_pipeline",
              "schedule,stages,micro_batches,link_class,efficiency,efficiency_theory,wrong\n"
              "1f1b,2,4,intra,0.4,0.8,0\n"
              "1f1b,2,8.0,intra,0.8,1,0\n"
              "1f1b,4,8,intra,0.3,1,0\n"
              "gpipe,2,8,intra,0.6,1,0\n"
              "# complete\n");
    assert_int_equal(expect("pp_efficiency schedule=1f1b m=8 stages=2 >= 0.8", PB_TH_PASS, 0.8, 0, 1).rows, 1);
    expect("pp_efficiency schedule=1f1b m=4 >= 0.5", PB_TH_PASS, 0.5, 0, 0); /* 0.4 / 0.8 */
    /* every 1f1b row: the worst is stages=4 */
    assert_int_equal(expect("pp_efficiency schedule=1f1b >= 0.5", PB_TH_FAIL, 0.3, 0, 2).rows, 3);
}

/* Only fit_error is compared as |value|: an efficiency a sign error made
 * negative is judged as written, never passed as its magnitude. */
static void signed_unless_absolute(void **state)
{
    (void)state;
    add_table("pp.csv", "pp_pipeline",
              "schedule,stages,micro_batches,link_class,efficiency,efficiency_theory,wrong\n"
              "1f1b,2,4,intra,-0.9,1,0\n# complete\n");
    add_table("plan_fit.csv", "plan_fit", "benchmark,rel_error,wrong\ncoll_sweep,-0.05,0\n# complete\n");
    expect("pp_efficiency >= 0.5", PB_TH_FAIL, -0.9, 0, 0);
    expect("fit_error benchmark=coll_sweep <= 0.1", PB_TH_PASS, 0.05, 1, 0);
}

/* A rule size takes the nearest measured one within a factor of 2; halfway
 * between two, the smaller. */
static void nearest_size(void **state)
{
    (void)state;
    add_table("a.csv", "coll_sweep", sweep);
    expect("busbw coll=allreduce size=64M >= 1 GB/s", PB_TH_PASS, 9, 0, 3); /* 67108860: counts rounded to the ranks */
    assert_int_equal(expect("busbw coll=allreduce size=2M >= 1 GB/s", PB_TH_PASS, 3, 0, 0).rows, 1);
    expect("busbw coll=allreduce size=3M >= 1 GB/s", PB_TH_PASS, 5, 0, 1);
    expect("busbw coll=allreduce size=512K >= 1 GB/s", PB_TH_PASS, 3, 0, 0);
    /* 64M is 16 times smaller */
    pb_thresholds_eval_outcome o = expect("busbw coll=allreduce size=1G >= 1 GB/s", PB_TH_FAIL, NAN, -1, -1);
    assert_int_equal(o.rows, 0);
    assert_string_equal(o.why, "no matching rows in coll_sweep*.csv");
}

/* The nearest size is looked for among the rows the rule selects: another
 * collective's row at the rule's very size is not the rule's. */
static void nearest_size_own_rows(void **state)
{
    (void)state;
    add_table("b.csv", "coll_sweep",
              "collective,bytes,link_class,time_us,busbw_GBps,wrong\nallgather,2097152,intra,1,7,0\n"
              "allreduce,1048576,intra,1,3,0\nallreduce,4194304,intra,1,5,0\n# complete\n");
    expect("busbw coll=allreduce size=2M >= 1 GB/s", PB_TH_PASS, 3, 0, 1); /* 1M: halfway, the smaller */
    expect("busbw coll=allgather size=1M >= 1 GB/s", PB_TH_PASS, 7, 0, 0);
}

/* The smallest sizes: a rule at 1 byte takes the 1-byte row, not the 2-byte
 * one a factor of 2 away, and a 0-byte row is never the nearest. */
static void nearest_size_smallest(void **state)
{
    (void)state;
    add_table("p.csv", "p2p_sweep",
              "mode,bytes,link_class,time_us,bw_GBps,wrong\nlatency,0,intra,1,0,0\nlatency,1,intra,2,0,0\n"
              "latency,2,intra,3,0,0\n# complete\n");
    expect("p2p_latency size=1 <= 2 us", PB_TH_PASS, 2, 0, 1);
    expect("p2p_latency size=2 <= 2 us", PB_TH_FAIL, 3, 0, 2);
}

/* A link class the run has no rows of is skipped; one it has, but not at the
 * rule's size, fails. */
static void link_class(void **state)
{
    (void)state;
    add_table("a.csv", "coll_sweep",
              "collective,bytes,link_class,busbw_GBps,wrong\nallreduce,8,inter,2,0\nallreduce,1024,inter,4,0\n"
              "allreduce,1024,intra,6,0\n# complete\n");
    expect("busbw coll=allreduce size=1K link=inter >= 1 GB/s", PB_TH_PASS, 4, 0, 1);
    pb_thresholds_eval_outcome o = expect("busbw coll=allreduce size=8 link=mixed >= 1 GB/s", PB_TH_SKIP, NAN, -1, -1);
    assert_string_equal(o.why, "this run has no mixed rows");
    o = expect("busbw coll=allreduce size=8 link=intra >= 1 GB/s", PB_TH_FAIL, NAN, -1, -1);
    assert_string_equal(o.why, "no matching rows in coll_sweep*.csv");
}

static void link_class_absent(void **state)
{
    (void)state;
    add_table(
        "a.csv", "coll_sweep",
        "collective,bytes,link_class,busbw_GBps,wrong\nallreduce,8,inter,2,0\nallreduce,8,inter,4,0\n# complete\n");
    pb_thresholds_eval_outcome o = expect("busbw coll=allreduce size=8 link=intra >= 1 GB/s", PB_TH_SKIP, NAN, -1, -1);
    assert_string_equal(o.why, "this run has no intra rows");
    assert_int_equal(o.rows, 0);
}

/* Several rows over two files fold into the worst: the smallest for >=, the
 * largest for <=, wherever it is. */
static void folding(void **state)
{
    (void)state;
    add_table("a.csv", "coll_sweep",
              "collective,bytes,link_class,time_us,busbw_GBps,wrong\nallreduce,8,intra,12,3,0\n# complete\n");
    add_table("b.csv", "coll_sweep",
              "collective,bytes,link_class,time_us,busbw_GBps,wrong\nallreduce,8,intra,10,4,0\n"
              "allreduce,8,inter,30,2,0\nallreduce,8,intra,11,5,0\n# complete\n");
    assert_int_equal(expect("busbw coll=allreduce size=8 >= 2 GB/s", PB_TH_PASS, 2, 1, 1).rows, 4);
    expect("busbw coll=allreduce size=8 >= 2.5 GB/s", PB_TH_FAIL, 2, 1, 1);
    expect("busbw coll=allreduce size=8 link=intra >= 3 GB/s", PB_TH_PASS, 3, 0, 0);
    expect("coll_latency coll=allreduce size=8 link=intra <= 12 us", PB_TH_PASS, 12, 0, 0);
    expect("coll_latency coll=allreduce size=8 <= 29 us", PB_TH_FAIL, 30, 1, 1);
}

/* A row with wrong values fails the rule whatever it measured; a count that
 * is no count, or a value that is not a number, makes it untrusted. */
static void wrong_rows(void **state)
{
    (void)state;
    add_table("a.csv", "coll_sweep",
              "collective,bytes,link_class,busbw_GBps,wrong\nallreduce,8,intra,9,0\nallreduce,8,intra,8,2\n"
              "allreduce,16,intra,9,0.5\nallreduce,32,intra,nan,0\nallreduce,64,intra,,0\n# complete\n");
    pb_thresholds_eval_outcome o = expect("busbw coll=allreduce size=8 >= 1 GB/s", PB_TH_FAIL, 8, 0, 1);
    assert_string_equal(o.why, "2 wrong values in a matching row (a.csv:3)");
    o = judge("busbw coll=allreduce size=16 >= 1 GB/s");
    assert_int_equal(o.v, PB_TH_FAIL);
    assert_true(o.untrusted);
    assert_string_equal(o.why, "a.csv:4: wrong is 0.5, not a count (a count of wrong values, or -1: not checked)");
    o = expect("busbw coll=allreduce size=32 >= 1 GB/s", PB_TH_FAIL, NAN, -1, -1);
    assert_string_equal(o.why, "a.csv:5: busbw_GBps is 'nan', not a finite number");
    o = expect("busbw coll=allreduce size=64 >= 1 GB/s", PB_TH_FAIL, NAN, -1, -1);
    assert_string_equal(o.why, "a.csv:6: busbw_GBps is empty (not measured)");
}

/* Data the benchmark did not check (wrong = -1, a run with -c 0), or a table
 * without the check's column, is never a pass; plan --fit's table, derived
 * from checked sweeps, has no such column and needs none. */
static void unchecked_rows(void **state)
{
    (void)state;
    add_table("a.csv", "coll_sweep",
              "collective,bytes,link_class,busbw_GBps,wrong\nallreduce,8,intra,9,0\nallreduce,16,intra,9,-1\n"
              "# complete\n");
    add_table("b.csv", "coll_sweep", "collective,bytes,link_class,busbw_GBps\nallgather,8,intra,9\n# complete\n");
    add_table("f.csv", "plan_fit", "benchmark,rel_error\ncoll_sweep,0.05\n# complete\n");
    expect("busbw coll=allreduce size=8 >= 1 GB/s", PB_TH_PASS, 9, 0, 0);
    pb_thresholds_eval_outcome o = judge("busbw coll=allreduce size=16 >= 1 GB/s");
    assert_int_equal(o.v, PB_TH_FAIL);
    assert_true(o.untrusted);
    assert_string_equal(o.why, "a.csv:3: wrong is -1: the data was not checked (a run with -c 0); "
                               "acceptance passes checked data only");
    o = judge("busbw coll=allgather size=8 >= 1 GB/s");
    assert_int_equal(o.v, PB_TH_FAIL);
    assert_true(o.untrusted);
    assert_string_equal(o.why, "b.csv: no 'wrong' column, so whether its data was checked is unknown; "
                               "expected coll_sweep's own CSV");
    o = judge("fit_error benchmark=coll_sweep <= 0.1");
    assert_int_equal(o.v, PB_TH_PASS);
    assert_false(o.untrusted);
}

/* Rows the benchmark marked untrustworthy are never folded: alone they fail
 * the rule, beside a trustworthy row the rule is judged on that one. */
static void untrustworthy_rows(void **state)
{
    (void)state;
    add_table("dp.csv", "dp_allreduce",
              "grad_bytes,overlap,link_class,overhead,wrong\n4194304,bucket,intra,0.01,0\n4194304,none,intra,0.5,0\n"
              "# note: untrustworthy: overhead 0.010 (grad 4194304 B, overlap bucket): exposed = 0.1 us: within the "
              "spread; use more iterations\n# complete\n");
    pb_thresholds_eval_outcome o = expect("dp_overhead overlap=bucket <= 0.2", PB_TH_FAIL, NAN, -1, -1);
    assert_int_equal(o.rows, 0);
    assert_int_equal(o.noted, 1);
    assert_string_equal(o.why, "no trustworthy data: 1 matching row marked untrustworthy "
                               "(dp.csv:2: exposed = 0.1 us: within the spread)");
    assert_int_equal(expect("dp_overhead <= 0.6", PB_TH_PASS, 0.5, 0, 1).rows, 1);
}

/* No file with the metric's column: the benchmark did not run. A reason found
 * while reading the files comes first. */
static void no_tables(void **state)
{
    (void)state;
    pb_thresholds_eval_outcome o = expect("busbw coll=allreduce size=8 >= 1 GB/s", PB_TH_FAIL, NAN, -1, -1);
    assert_string_equal(o.why, "no coll_sweep*.csv with a busbw_GBps column (benchmark not run?)");
    add_table("a.csv", "coll_sweep", sweep);
    pb_thresholds_set set;
    char err[256];
    const char *rule = "busbw coll=allreduce size=4M >= 1 GB/s";
    assert_int_equal(pb_thresholds_parse("t.thr", rule, strlen(rule), &set, err, sizeof err), PB_OK);
    pb_thresholds_eval_start(&o);
    pb_thresholds_eval_distrust(&o, "%s:%d: garbled row", "b.csv", 7);
    pb_thresholds_eval_distrust(&o, "a second reason");
    pb_thresholds_eval(&set.rules[0], tabs, ntab, &o);
    pb_thresholds_free(&set);
    assert_int_equal(o.v, PB_TH_FAIL);
    assert_string_equal(o.why, "b.csv:7: garbled row");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(select_by_text, teardown), cmocka_unit_test_teardown(metric_in_the_first_column, teardown),
        cmocka_unit_test_teardown(row_filter, teardown),
        cmocka_unit_test_teardown(select_by_number, teardown),
        cmocka_unit_test_teardown(signed_unless_absolute, teardown),
        cmocka_unit_test_teardown(nearest_size, teardown),
        cmocka_unit_test_teardown(nearest_size_own_rows, teardown),
        cmocka_unit_test_teardown(nearest_size_smallest, teardown),
        cmocka_unit_test_teardown(link_class, teardown),
        cmocka_unit_test_teardown(link_class_absent, teardown),
        cmocka_unit_test_teardown(folding, teardown),
        cmocka_unit_test_teardown(wrong_rows, teardown),
        cmocka_unit_test_teardown(unchecked_rows, teardown),
        cmocka_unit_test_teardown(untrustworthy_rows, teardown),
        cmocka_unit_test_teardown(no_tables, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
