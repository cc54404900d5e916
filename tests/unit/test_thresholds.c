/* Threshold-file parser: every metric and key, units and percentages, and
 * every bad form with its FILE:LINE message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/coll.h"
#include "core/error.h"
#include "plan/thresholds.h"

#include <stdio.h>
#include <string.h>

static int parse(const char *text, pb_thresholds_set *set, char *err, size_t errlen)
{
    return pb_thresholds_parse("t.thr", text, strlen(text), set, err, errlen);
}

static void good_rules(void **state)
{
    (void)state;
    const char *text = "# acceptance for a test\n"
                       "\n"
                       "busbw coll=allreduce size=64M link=intra >= 2.5 GB/s   # trailing comment\n"
                       "  coll_latency   coll=allgather size=8 <= 40 us\n"
                       "p2p_latency size=8 link=inter <= 12.5\r\n"
                       "dp_overhead overlap=bucket size=16M <= 20 %\n"
                       "pp_efficiency schedule=1f1b m=8 stages=2 >= 0.9\n"
                       "tp_comm_fraction hidden=1024 mode=allreduce <= 0.5\n"
                       "fit_error benchmark=coll_sweep <= 0.25";
    pb_thresholds_set set;
    char err[256];
    assert_int_equal(parse(text, &set, err, sizeof err), PB_OK);
    assert_int_equal(set.n, 7);
    const pb_thresholds_rule *r = &set.rules[0];
    assert_int_equal(r->line, 3);
    assert_string_equal(r->metric->name, "busbw");
    assert_string_equal(r->text[PB_TH_KEY_COLL], "allreduce");
    assert_true(r->size == (uint64_t)64 << 20);
    assert_int_equal(r->op, PB_TH_GE);
    assert_true(r->value == 2.5);
    assert_string_equal(r->source_text, "busbw coll=allreduce size=64M link=intra >= 2.5 GB/s");
    assert_int_equal(set.rules[1].line, 4);
    assert_int_equal(set.rules[1].op, PB_TH_LE);
    assert_true(set.rules[2].value == 12.5);
    assert_true(set.rules[3].value == 0.2); /* 20 % */
    assert_string_equal(set.rules[3].text[PB_TH_KEY_MODE], "bucket");
    assert_int_equal(set.rules[4].num[PB_TH_KEY_M], 8);
    assert_int_equal(set.rules[4].num[PB_TH_KEY_STAGES], 2);
    assert_int_equal(set.rules[5].num[PB_TH_KEY_HIDDEN], 1024);
    assert_true(pb_thresholds_passes(&set.rules[0], 2.5));
    assert_false(pb_thresholds_passes(&set.rules[0], 2.49));
    assert_true(pb_thresholds_passes(&set.rules[1], 40));
    assert_false(pb_thresholds_passes(&set.rules[1], 40.1));
    pb_thresholds_free(&set);
}

/* Exponents in every form a number may take, spaced and glued to the unit. */
static void exponents(void **state)
{
    (void)state;
    const char *text = "busbw coll=allreduce size=8 >= 2.5e+1 GB/s\n"
                       "busbw coll=allreduce size=8 >= 25e-1 GB/s\n"
                       "busbw coll=allreduce size=8 >= 1E+1GB/s\n"
                       "coll_latency coll=allreduce size=8 <= 4e1us\n"
                       "coll_latency coll=allreduce size=8 <= 5.0E2\n";
    const double want[] = {25, 2.5, 10, 40, 500};
    pb_thresholds_set set;
    char err[256];
    assert_int_equal(parse(text, &set, err, sizeof err), PB_OK);
    assert_int_equal(set.n, 5);
    for (int i = 0; i < set.n; i++) assert_true(set.rules[i].value == want[i]);
    pb_thresholds_free(&set);
    const char *bad[] = {"busbw coll=allreduce size=8 >= 1e+ GB/s", "busbw coll=allreduce size=8 >= 1e GB/s",
                         "busbw coll=allreduce size=8 >= 1e+-1 GB/s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(parse(bad[i], &set, err, sizeof err), PB_ERR_USAGE);
}

/* A mode the benchmark never writes is refused when the file is read, naming the accepted ones,
 * instead of failing later as "no matching rows". */
static void unknown_modes(void **state)
{
    (void)state;
    static const struct { const char *rule, *why; } cases[] = {
        {"dp_overhead overlap=buckt <= 0.2", "overlap 'buckt' is not accepted for dp_overhead; expected none or bucket"},
        {"pp_efficiency schedule=1F1B >= 0.9", "expected gpipe, 1f1b or interleaved"},
        {"tp_comm_fraction mode=ar <= 0.5", "mode 'ar' is not accepted for tp_comm_fraction; expected allreduce or sp"},
        {"fsdp_overhead prefetch=yes <= 0.5", "prefetch 'yes' is not accepted for fsdp_overhead; expected off or on"},
        {"cp_overhead overlap=bucket <= 0.5", "overlap 'bucket' is not accepted for cp_overhead; expected off or on"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pb_thresholds_set set;
        char err[256] = "";
        assert_int_equal(parse(cases[i].rule, &set, err, sizeof err), PB_ERR_USAGE);
        assert_non_null(strstr(err, cases[i].why));
    }
    pb_thresholds_set set;
    char err[256];
    assert_int_equal(parse("dp_overhead overlap=none <= 1\nfit_error benchmark=anything <= 1", &set, err, sizeof err), PB_OK);
    pb_thresholds_free(&set);
    assert_int_equal(parse("fsdp_overhead prefetch=on link=intra <= 20 %", &set, err, sizeof err), PB_OK);
    pb_thresholds_free(&set);
    assert_int_equal(parse("cp_overhead overlap=on link=intra <= 0.1", &set, err, sizeof err), PB_OK);
    pb_thresholds_free(&set);
}

/* Every collective coll_sweep runs (the collective table) is one a rule may name, and the refusal lists them all. */
static void every_collective(void **state)
{
    (void)state;
    char names[160], err[512];
    for (const char *const *n = pb_coll_names(); *n; n++) {
        char rule[96];
        pb_thresholds_set set;
        snprintf(rule, sizeof rule, "busbw coll=%s size=1M >= 1", *n);
        assert_int_equal(parse(rule, &set, err, sizeof err), PB_OK);
        pb_thresholds_free(&set);
    }
    pb_thresholds_set set;
    assert_int_equal(parse("busbw coll=gather size=1M >= 1", &set, err, sizeof err), PB_ERR_USAGE);
    assert_non_null(strstr(err, pb_coll_name_list(names, sizeof names)));
}

static void bad_rules(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *message; /* expected substring, after "t.thr:LINE: " */
    } cases[] = {
        {"bw coll=allreduce size=1M >= 1\n", "t.thr:1: 'bw' is not a metric"},
        {"bw >= 1\n", "accepted: busbw, algbw, coll_latency, p2p_latency, p2p_bw, p2p_bibw, dp_overhead, "
                      "tp_comm_fraction, pp_efficiency, fsdp_overhead, cp_overhead, moe_a2a_share, fit_error, "
                      "gemm_rate"},
        {"# c\nbusbw coll=allreduce size=1M\n", "t.thr:2: missing comparison"},
        {"busbw coll=allreduce size=1M >=\n", "t.thr:1: missing threshold"},
        {"busbw coll=allreduce size=1M >= fast\n", "t.thr:1: threshold 'fast' is not a number"},
        {"busbw coll=allreduce size=1M >= -3\n", "is not a number"},
        {"busbw coll=allreduce size=1M >= nan\n", "is not a number"},
        {"busbw coll=allreduce size=1M >= 1 us\n", "unit 'us' is not accepted for busbw; expected GB/s"},
        {"dp_overhead <= 1 GB/s\n", "expected no unit (a fraction) or %"},
        {"busbw coll=allreduce size=1M >= 1 GB/s extra\n", "unexpected 'extra'"},
        {"busbw coll=allreduce size=1M > 1\n", "expected >= or <="},
        {"busbw coll=allreduc size=1M >= 1\n", "coll 'allreduc' is not a collective"},
        {"busbw coll=allreduce size=1X >= 1\n", "size '1X' is not a size"},
        {"busbw coll=allreduce size=0 >= 1\n", "size '0' is not a size"},
        {"busbw coll=allreduce size=1M link=remote >= 1\n", "expected intra, inter or mixed"},
        {"busbw coll=allreduce >= 1\n", "busbw needs size="},
        {"busbw size=1M >= 1\n", "busbw needs coll="},
        {"busbw coll=allreduce coll=allgather size=1M >= 1\n", "key 'coll' given twice"},
        {"busbw coll=allreduce size=1M m=3 >= 1\n", "key 'm' does not apply to busbw; accepted: coll, size, link"},
        {"pp_efficiency m=x >= 1\n", "m 'x' is not accepted; expected a positive integer"},
        {"pp_efficiency m= >= 1\n", "key 'm' has an empty value"},
        {"busbw =x >= 1\n", "is not a key=value selector"},
        {"# only a comment\n\n", "t.thr:2: no rules"},
        {"", "t.thr:1: no rules"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pb_thresholds_set set;
        char err[256] = "";
        int rc = parse(cases[i].text, &set, err, sizeof err);
        if (rc != PB_ERR_USAGE || !strstr(err, cases[i].message))
            fail_msg("case %zu '%s': rc %d, message '%s', expected '%s'", i, cases[i].text, rc, err, cases[i].message);
        assert_int_equal(set.n, 0);
        assert_null(set.rules);
    }
}

/* A value fills its key's text buffer but one byte (the terminator): the
 * longest accepted is sizeof - 1 characters, and one more is refused by
 * length, before the value itself is judged. */
static void value_length_boundary(void **state)
{
    (void)state;
    pb_thresholds_set set;
    char err[256] = "", rule[160];
    const int room = (int)sizeof set.rules[0].text[0] - 1; /* 31 */
    snprintf(rule, sizeof rule, "busbw coll=%.*s size=8 >= 1\n", room, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert_int_equal(parse(rule, &set, err, sizeof err), PB_ERR_USAGE);
    if (!strstr(err, "is not a collective")) fail_msg("a %d-character value: '%s'", room, err);
    snprintf(rule, sizeof rule, "busbw coll=%.*s size=8 >= 1\n", room + 1, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    assert_int_equal(parse(rule, &set, err, sizeof err), PB_ERR_USAGE);
    char want[64];
    snprintf(want, sizeof want, "value of 'coll' is too long (at most %d characters)", room);
    if (!strstr(err, want)) fail_msg("a %d-character value: '%s', expected '%s'", room + 1, err, want);
}

static void odd_input(void **state)
{
    (void)state;
    pb_thresholds_set set;
    char err[128];
    const char nul[] = "busbw coll=allreduce size=1M >= 1\nx\0y\n";
    assert_int_equal(pb_thresholds_parse("f", nul, sizeof nul - 1, &set, err, sizeof err), PB_ERR_USAGE);
    assert_non_null(strstr(err, "f:2: line holds a NUL byte"));
    char longline[PB_TH_LINE_MAX + 20];
    memset(longline, 'a', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    assert_int_equal(parse(longline, &set, err, sizeof err), PB_ERR_USAGE);
    assert_non_null(strstr(err, "longer than"));
    /* a tiny error buffer truncates, never overflows */
    char tiny[8];
    assert_int_equal(parse("nope >= 1", &set, tiny, sizeof tiny), PB_ERR_USAGE);
    assert_true(strlen(tiny) < sizeof tiny);
    assert_int_equal(parse("nope >= 1", &set, NULL, 0), PB_ERR_USAGE);
}

/* The lines themselves, as core/lines reads them for every input file. */
static void line_forms(void **state)
{
    (void)state;
    pb_thresholds_set set;
    char err[256];
    const char *rule = "busbw coll=allreduce size=1M >= 1\n";
    char text[8192];
    snprintf(text, sizeof text, "\xEF\xBB\xBF%s", rule); /* a leading BOM: read past */
    assert_int_equal(parse(text, &set, err, sizeof err), PB_OK);
    assert_int_equal(set.n, 1);
    pb_thresholds_free(&set);
    snprintf(text, sizeof text, "\xEF\xBB\xBF\n%s", rule); /* a BOM alone on the first line, the whole line */
    assert_int_equal(parse(text, &set, err, sizeof err), PB_OK);
    assert_int_equal(set.n, 1);
    pb_thresholds_free(&set);
    assert_int_equal(parse("busbw coll=allreduce size=1M >= 1\r\np2p_latency size=8 <= 5\r\n", &set, err, sizeof err), PB_OK);
    assert_int_equal(set.n, 2); /* CRLF */
    pb_thresholds_free(&set);
    assert_int_equal(parse("busbw coll=allreduce size=1M >= 1\rp2p_latency size=8 <= 5\r", &set, err, sizeof err),
                     PB_ERR_USAGE);
    assert_non_null(strstr(err, "t.thr:1: line has CR-only line ends"));
    snprintf(text, sizeof text, "%s\xEF\xBB\xBF%s", rule, rule); /* two files pasted together */
    assert_int_equal(parse(text, &set, err, sizeof err), PB_ERR_USAGE);
    assert_non_null(strstr(err, "t.thr:2: line holds a UTF-8 byte-order mark"));
    memset(text, 'a', 5000);
    snprintf(text + 5000, sizeof text - 5000, "\n%s", rule);
    assert_int_equal(parse(text, &set, err, sizeof err), PB_ERR_USAGE);
    assert_non_null(strstr(err, "t.thr:1: line is longer than the limit of 4096 bytes"));
    assert_null(set.rules);
}

static void metric_table(void **state)
{
    (void)state;
    int n = 0;
    for (const pb_thresholds_metric *m = pb_thresholds_metrics(); m->name; m++, n++) {
        assert_non_null(m->source);
        assert_non_null(m->column);
        assert_non_null(m->description);
    }
    assert_true(n >= 9);
}

int main(void)
{
    pb_error_set_quiet_usage(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(good_rules),
        cmocka_unit_test(unknown_modes),
        cmocka_unit_test(every_collective),
        cmocka_unit_test(exponents),
        cmocka_unit_test(bad_rules),
        cmocka_unit_test(value_length_boundary),
        cmocka_unit_test(odd_input),
        cmocka_unit_test(line_forms),
        cmocka_unit_test(metric_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
