/* Rules proposed from a golden run's tables (plan/thresholds_derive.h): one per
 * collective and link class at the largest size, latency at the smallest, the
 * workloads at their largest shape, values a rule cannot hold left out; the
 * threshold less the margin for a rate and plus it for a time, rounded away
 * from the measured value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "plan/thresholds_derive.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static pb_thresholds_eval_table tab;

static void read_table(const char *text)
{
    FILE *fp = fmemopen((void *)text, strlen(text), "r");
    assert_non_null(fp);
    assert_int_equal(pb_csv_read_stream(fp, &tab.csv), PB_OK);
    fclose(fp);
    tab.path = "t.csv";
}

static const pb_thresholds_derive_headline *headline(const char *metric)
{
    for (const pb_thresholds_derive_headline *h = pb_thresholds_derive_headlines(); h->metric; h++)
        if (strcmp(h->metric, metric) == 0) return h;
    fail_msg("no headline %s", metric);
    return NULL;
}

/* The rules proposed for `metric`, joined by '|'. */
static void proposed(const char *metric, char *buf, size_t len)
{
    char **rules;
    int n;
    assert_int_equal(pb_thresholds_derive_propose(headline(metric), &tab, 1, &rules, &n), PB_OK);
    buf[0] = '\0';
    for (int i = 0; i < n; i++) snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "|" : "", rules[i]);
    pb_thresholds_derive_free(rules, n);
}

static const char *sweep = "collective,bytes,link_class,time_us,busbw_GBps,wrong\n"
                           "allreduce,8,intra,5,0.1,0\n"
                           "allreduce,67108860,intra,900,3,0\n"
                           "allreduce,1048576,intra,400,2,0\n"
                           "allreduce,64,inter,20,0.1,0\n"
                           "allreduce,4194304,inter,900,1,0\n"
                           "allgather,1048576,intra,300,2,0\n"
                           "bad word,1048576,intra,300,2,0\n"
                           "allgather,1048576,,300,2,0\n"
                           "# complete\n";

static void collectives(void **state)
{
    (void)state;
    char got[1024];
    read_table(sweep);
    proposed("busbw", got, sizeof got);
    assert_string_equal(got, "busbw coll=allreduce size=67108860 link=intra|busbw coll=allreduce size=4M link=inter|"
                             "busbw coll=allgather size=1M link=intra");
    proposed("coll_latency", got, sizeof got);
    assert_string_equal(got, "coll_latency coll=allreduce size=8 link=intra|coll_latency coll=allreduce size=64 link=inter");
    proposed("p2p_bw", got, sizeof got);
    assert_string_equal(got, ""); /* its rows are mode=bw: none here */
    pb_csv_free(&tab.csv);
}

static void workloads(void **state)
{
    (void)state;
    char got[1024];
    read_table("schedule,stages,micro_batches,link_class,efficiency,efficiency_theory,wrong\n"
               "1f1b,2,4,intra,0.7,0.8,0\n1f1b,2,8,intra,0.8,0.9,0\ngpipe,4,2,intra,0.5,0.6,0\n# complete\n");
    proposed("pp_efficiency", got, sizeof got);
    assert_string_equal(got, "pp_efficiency link=intra schedule=1f1b m=8 stages=2|"
                             "pp_efficiency link=intra schedule=gpipe m=2 stages=4");
    pb_csv_free(&tab.csv);
    read_table("test,size,rate,unit\ngemm,256,100,GFLOP/s\ngemm,1024,150,GFLOP/s\ncopy,4096,9,GB/s\n# complete\n");
    proposed("gemm_rate", got, sizeof got);
    assert_string_equal(got, "gemm_rate size=1K");
    pb_csv_free(&tab.csv);
    /* FSDP: one rule per prefetch setting and link class; no size to pick */
    read_table("nranks,shard_group,link_class,prefetch,overhead,wrong\n8,8,intra,off,0.3,0\n8,8,intra,on,0.1,0\n"
               "16,8,inter,on,0.2,0\n# complete\n");
    proposed("fsdp_overhead", got, sizeof got);
    assert_string_equal(got, "fsdp_overhead link=intra prefetch=off|fsdp_overhead link=intra prefetch=on|"
                             "fsdp_overhead link=inter prefetch=on");
    pb_csv_free(&tab.csv);
    read_table("nranks,cp,link_class,overlap,overhead,wrong\n8,8,intra,off,1.5,0\n8,8,intra,on,0.2,0\n# complete\n");
    proposed("cp_overhead", got, sizeof got);
    assert_string_equal(got, "cp_overhead link=intra overlap=off|cp_overhead link=intra overlap=on");
    pb_csv_free(&tab.csv);
    read_table("nranks,ep_group,link_class,skew,a2a_share,wrong\n8,2,intra,1,0.1,0\n8,2,intra,2,0.2,0\n"
               "8,8,mixed,2,0.3,0\n# complete\n");
    proposed("moe_a2a_share", got, sizeof got);
    assert_string_equal(got, "moe_a2a_share link=intra skew=1|moe_a2a_share link=intra skew=2|"
                             "moe_a2a_share link=mixed skew=2");
    pb_csv_free(&tab.csv);
}

static void thresholds(void **state)
{
    (void)state;
    assert_true(pb_thresholds_derive_threshold(PB_TH_GE, 6.54848, 0.10) == 5.893); /* 5.893632, down */
    assert_true(fabs(pb_thresholds_derive_threshold(PB_TH_LE, 0.549717, 0.10) - 0.6047) < 1e-12); /* 0.6046887, up */
    assert_true(pb_thresholds_derive_threshold(PB_TH_GE, 2.0, 0) <= 2.0);
    assert_true(pb_thresholds_derive_threshold(PB_TH_LE, 2.00001, 0) >= 2.00001);
    assert_true(pb_thresholds_derive_threshold(PB_TH_LE, -0.05, 0.1) == 0); /* never negative */
    assert_true(pb_thresholds_derive_threshold(PB_TH_GE, 123456, 0.1) == 111100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(collectives),
        cmocka_unit_test(workloads),
        cmocka_unit_test(thresholds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
