/* All-pairs summaries: per link class statistics, slow-pair flagging, matrix files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/p2p_matrix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 4 ranks on 2 nodes: (0,1) and (2,3) intra, the rest inter (0-2 rail 0, 1-3 rail 1);
 * pair 1-2 has a bad link. */
static pb_p2p_matrix_pair_result pairs[] = {
    {0, 1, "intra", 0.5, 10.0, 0, -1}, {0, 2, "inter", 10, 1.20, 0, 0}, {0, 3, "inter", 11, 1.25, 0, -1},
    {1, 2, "inter", 12, 0.40, 0, -1},  {1, 3, "inter", 10, 1.22, 0, 1}, {2, 3, "intra", 0.6, 9.0, 0, -1},
};
#define NP ((int)(sizeof pairs / sizeof pairs[0]))

static void summaries(void **state)
{
    (void)state;
    pb_p2p_matrix_class_summary s[3];
    int n = pb_p2p_matrix_summarize(pairs, NP, s);
    assert_int_equal(n, 2);
    assert_string_equal(s[0].link, "intra");
    assert_int_equal(s[0].pairs, 2);
    assert_true(s[0].bw_min == 9.0 && s[0].bw_max == 10.0 && s[0].bw_median == 9.5);
    assert_string_equal(s[1].link, "inter");
    assert_int_equal(s[1].pairs, 4);
    assert_true(s[1].lat_min == 10 && s[1].lat_max == 12 && s[1].lat_median == 10.5);
    assert_true(s[1].bw_median == (1.20 + 1.22) / 2);
}

/* The bad inter pair is flagged; intra pairs are judged against intra, not against inter. */
static void slow_pairs(void **state)
{
    (void)state;
    pb_p2p_matrix_class_summary s[3];
    int n = pb_p2p_matrix_summarize(pairs, NP, s);
    assert_int_equal(pb_p2p_matrix_flag_slow(pairs, NP, s, n, 0.8, 2.0), 1);
    for (int i = 0; i < NP; i++) assert_int_equal(pairs[i].slow, pairs[i].a == 1 && pairs[i].b == 2);
    /* a pair with a high latency is flagged too */
    pairs[0].lat_us = 5;
    assert_int_equal(pb_p2p_matrix_flag_slow(pairs, NP, s, n, 0.8, 2.0), 2);
    pairs[0].lat_us = 0.5;
}

/* The thresholds p2p_sweep uses, from both sides: 8 inter pairs at 1 GB/s and
 * 10 us, then one pair moved just past each bound (flagged) and just inside it
 * (not flagged). A bound moved by a quarter turns one of the four around. */
static void default_thresholds(void **state)
{
    (void)state;
    pb_p2p_matrix_pair_result r[9];
    for (int i = 0; i < 9; i++) r[i] = (pb_p2p_matrix_pair_result){0, i + 1, "inter", 10.0, 1.0, 0, -1};
    struct { double bw, lat; int slow; } cases[] = {
        {0.7, 10.0, 1},  /* 0.7x the median bandwidth: slow */
        {0.9, 10.0, 0},  /* 0.9x: within noise */
        {1.0, 23.0, 1},  /* 2.3x the median latency: slow */
        {1.0, 17.0, 0},  /* 1.7x: within noise */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        r[8].bw_GBps = cases[c].bw;
        r[8].lat_us = cases[c].lat;
        pb_p2p_matrix_class_summary s[3];
        int n = pb_p2p_matrix_summarize(r, 9, s);
        assert_int_equal(pb_p2p_matrix_flag_slow(r, 9, s, n, PB_P2P_MATRIX_SLOW_BW_FRAC, PB_P2P_MATRIX_SLOW_LAT_FACTOR),
                         cases[c].slow);
        assert_int_equal(r[8].slow != 0, cases[c].slow);
    }
}

/* Local ranks and rails: rank order within each node, whatever the placement;
 * a rail is an inter-node pair of equal local ranks. */
static void rails(void **state)
{
    (void)state;
    int node_of[] = {0, 1, 0, 1, 2, 2}, local[6];
    pb_p2p_matrix_local_ranks(node_of, 6, local);
    int want[] = {0, 0, 1, 1, 0, 1};
    for (int i = 0; i < 6; i++) assert_int_equal(local[i], want[i]);
    assert_int_equal(pb_p2p_matrix_rail(node_of, local, 0, 1), 0);  /* nodes 0,1; local 0,0 */
    assert_int_equal(pb_p2p_matrix_rail(node_of, local, 2, 5), 1);  /* nodes 0,2; local 1,1 */
    assert_int_equal(pb_p2p_matrix_rail(node_of, local, 0, 3), -1); /* cross-rail */
    assert_int_equal(pb_p2p_matrix_rail(node_of, local, 0, 2), -1); /* same node */
}

/* 3 nodes x 2 ranks. Rail 0 runs at 2 GB/s, rail 1 at 1 GB/s, cross-rail pairs at
 * 1.5: the inter class median is 1.5. Pair 0-4 on rail 0 at 1.3 is fine for its
 * class (>= 1.2) but slow for its rail (< 1.6): flagged "rail" only. Rail 1's
 * pairs are below their class, not their rail: "class" only. */
static void slow_against_rail(void **state)
{
    (void)state;
    pb_p2p_matrix_pair_result r[] = {
        {0, 2, "inter", 10, 2.0, 0, 0}, {2, 4, "inter", 10, 2.0, 0, 0}, {0, 4, "inter", 10, 1.3, 0, 0},
        {1, 3, "inter", 10, 1.0, 0, 1}, {3, 5, "inter", 10, 1.0, 0, 1}, {1, 5, "inter", 10, 1.0, 0, 1},
        {0, 3, "inter", 10, 1.5, 0, -1}, {1, 2, "inter", 10, 1.5, 0, -1}, {0, 5, "inter", 10, 1.5, 0, -1},
        {1, 4, "inter", 10, 1.5, 0, -1}, {2, 5, "inter", 10, 1.5, 0, -1}, {3, 4, "inter", 10, 1.5, 0, -1},
        {0, 1, "intra", 1, 9.0, 0, -1},
    };
    int n = (int)(sizeof r / sizeof r[0]);
    pb_p2p_matrix_class_summary s[3];
    int nc = pb_p2p_matrix_summarize(r, n, s);
    assert_int_equal(pb_p2p_matrix_flag_slow(r, n, s, nc, 0.8, 2.0), 4);
    assert_int_equal(r[0].slow, 0);
    assert_int_equal(r[2].slow, PB_P2P_MATRIX_SLOW_RAIL);
    for (int i = 3; i < 6; i++) assert_int_equal(r[i].slow, PB_P2P_MATRIX_SLOW_CLASS);
    for (int i = 6; i < n; i++) assert_int_equal(r[i].slow, 0);
    assert_string_equal(pb_p2p_matrix_slow_name(r[2].slow), "rail");
    /* slow against both */
    r[2].bw_GBps = 0.5;
    pb_p2p_matrix_flag_slow(r, n, s, nc, 0.8, 2.0);
    assert_int_equal(r[2].slow, PB_P2P_MATRIX_SLOW_CLASS | PB_P2P_MATRIX_SLOW_RAIL);
    assert_string_equal(pb_p2p_matrix_slow_name(r[2].slow), "class+rail");
}

static void pairs_file(void **state)
{
    (void)state;
    char path[] = "/tmp/pb-pairs-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    pb_p2p_matrix_pair_result r[] = {{0, 2, "inter", 10, 0.5, PB_P2P_MATRIX_SLOW_RAIL, 0}};
    assert_int_equal(pb_p2p_matrix_write_pairs(path, r, 1), 0);
    FILE *f = fopen(path, "r");
    char line[256];
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "a,b,link_class,latency_us,bw_GBps,slow,rail,slow_against\n");
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "0,2,inter,10,0.5,1,0,rail\n");
    fclose(f);
    close(fd);
    unlink(path);
}

static void matrix_file(void **state)
{
    (void)state;
    char path[] = "/tmp/pb-matrix-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(pb_p2p_matrix_write_csv(path, 4, pairs, NP, 1), 0);
    FILE *f = fopen(path, "r");
    char line[256];
    assert_non_null(fgets(line, sizeof line, f)); /* comment */
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "rank,0,1,2,3\n");
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "0,,10,1.2,1.25\n");
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "1,10,,0.4,1.22\n"); /* symmetric */
    fclose(f);
    unlink(path);
}

/* A sampled matrix leaves pairs out: their cells are empty, never 0 (the
 * rails 0-2 and 1-3 and the pairs inside the nodes only). */
static void matrix_file_sampled(void **state)
{
    (void)state;
    char path[] = "/tmp/pb-matrix-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const pb_p2p_matrix_pair_result some[] = {pairs[0], pairs[1], pairs[4], pairs[5]};
    assert_int_equal(pb_p2p_matrix_write_csv(path, 4, some, 4, 1), 0);
    FILE *f = fopen(path, "r");
    char line[256];
    assert_non_null(fgets(line, sizeof line, f)); /* comment */
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "0,,10,1.2,\n");
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "1,10,,,1.22\n");
    fclose(f);
    unlink(path);
}

/* The NCCL connection memory expected per peer: NCCL_BUFFSIZE (4 MiB unless
 * set) x 2 channels x 2 directions; a value that is not a size keeps the default. */
static void peer_bytes(void **state)
{
    (void)state;
    unsetenv("NCCL_BUFFSIZE");
    assert_int_equal(pb_p2p_matrix_peer_bytes(), 16u << 20);
    setenv("NCCL_BUFFSIZE", "1048576", 1);
    assert_int_equal(pb_p2p_matrix_peer_bytes(), 4u << 20);
    setenv("NCCL_BUFFSIZE", "lots", 1);
    assert_int_equal(pb_p2p_matrix_peer_bytes(), 16u << 20);
    unsetenv("NCCL_BUFFSIZE");
}

/* A rail's median latency is its pairs' middle one once sorted: rail 0's
 * latencies 10, 25, 5 (in that order) have median 10, so 25 is slow for its
 * rail (>= 2 x 10), though not for its class (cross-rail pairs at 30). */
static void rail_median_of_sorted_latencies(void **state)
{
    (void)state;
    pb_p2p_matrix_pair_result r[] = {
        {0, 2, "inter", 10, 1.0, 0, 0},  {2, 4, "inter", 25, 1.0, 0, 0},  {0, 4, "inter", 5, 1.0, 0, 0},
        {0, 3, "inter", 30, 1.0, 0, -1}, {1, 2, "inter", 30, 1.0, 0, -1}, {0, 5, "inter", 30, 1.0, 0, -1},
        {1, 4, "inter", 30, 1.0, 0, -1}, {2, 5, "inter", 30, 1.0, 0, -1},
    };
    int n = (int)(sizeof r / sizeof r[0]);
    pb_p2p_matrix_class_summary s[3];
    int nc = pb_p2p_matrix_summarize(r, n, s);
    assert_int_equal(pb_p2p_matrix_flag_slow(r, n, s, nc, 0.8, 2.0), 1);
    assert_int_equal(r[1].slow, PB_P2P_MATRIX_SLOW_RAIL);
    for (int i = 0; i < n; i++)
        if (i != 1) assert_int_equal(r[i].slow, 0);
}

/* The default pair (issue 52): between nodes, rank 0 and the first rank of the
 * next node, both local rank 0 (rail 0), not the last rank (another rail); on
 * one node rank 0 and the last rank, as OSU (0 and 1 at 2 ranks). */
static void default_pair(void **state)
{
    (void)state;
    struct {
        int nranks, node_of[16], a, b;
    } cases[] = {
        {16, {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, 0, 8}, /* 2 nodes of 8 GPUs */
        {12, {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2}, 0, 4},              /* 3 nodes: the next one */
        {8, {0, 0, 0, 0, 0, 0, 0, 0}, 0, 7},                           /* one node: today's pair */
        {2, {0, 0}, 0, 1},                                             /* OSU's two ranks */
        {2, {0, 1}, 0, 1},                                             /* two nodes of one rank */
        {4, {0, 1, 0, 1}, 0, 1},                                       /* ranks dealt round robin */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int pair[2] = {-1, -1}, local[16];
        pb_p2p_matrix_default_pair(cases[i].node_of, cases[i].nranks, pair);
        assert_int_equal(pair[0], cases[i].a);
        assert_int_equal(pair[1], cases[i].b);
        pb_p2p_matrix_local_ranks(cases[i].node_of, cases[i].nranks, local);
        int multi = cases[i].node_of[cases[i].nranks - 1] != 0 || cases[i].node_of[1] != 0;
        assert_int_equal(pb_p2p_matrix_rail(cases[i].node_of, local, pair[0], pair[1]), multi ? 0 : -1);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(summaries),
        cmocka_unit_test(slow_pairs),
        cmocka_unit_test(default_thresholds),
        cmocka_unit_test(rails),
        cmocka_unit_test(slow_against_rail), cmocka_unit_test(rail_median_of_sorted_latencies),
        cmocka_unit_test(pairs_file),
        cmocka_unit_test(matrix_file),
        cmocka_unit_test(matrix_file_sampled),
        cmocka_unit_test(peer_bytes),
        cmocka_unit_test(default_pair),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
