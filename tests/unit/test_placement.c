/* Grid placement policies and the rank-map parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "workload/placement.h"
#include "core/world.h"

#include <stdlib.h>
#include <string.h>

/* 8 ranks launched round-robin over 2 nodes (mpirun --map-by node): even
 * ranks on node 0, odd on node 1. Grid T=2, P=2, D=2. */
static const int node_of[8] = {0, 1, 0, 1, 0, 1, 0, 1};

static int node_at(const int *rank_at, int t, int p, int d) { return node_of[rank_at[pb_placement_grid_pos(2, 2, t, p, d)]]; }

static void tp_inner_keeps_tp_in_a_node(void **state)
{
    (void)state;
    int rank_at[8];
    pb_placement_grid_place(PB_PLACE_TP_INNER, 2, 2, 2, 8, node_of, rank_at);
    for (int p = 0; p < 2; p++)
        for (int d = 0; d < 2; d++) assert_int_equal(node_at(rank_at, 0, p, d), node_at(rank_at, 1, p, d));
    /* each node holds 4 ranks = 2 TP groups; stage 0 and 1 of replica 0 on the same node */
    assert_int_equal(rank_at[0], 0);
    assert_int_equal(rank_at[1], 2);
}

static void naive_ignores_nodes(void **state)
{
    (void)state;
    int rank_at[8];
    pb_placement_grid_place(PB_PLACE_NAIVE, 2, 2, 2, 8, node_of, rank_at);
    for (int i = 0; i < 8; i++) assert_int_equal(rank_at[i], i);
    /* with round-robin ranks every TP pair spans the two nodes */
    assert_int_not_equal(node_at(rank_at, 0, 0, 0), node_at(rank_at, 1, 0, 0));
}

static void dp_inner_keeps_dp_in_a_node(void **state)
{
    (void)state;
    int rank_at[8];
    pb_placement_grid_place(PB_PLACE_DP_INNER, 2, 2, 2, 8, node_of, rank_at);
    for (int t = 0; t < 2; t++)
        for (int p = 0; p < 2; p++) assert_int_equal(node_at(rank_at, t, p, 0), node_at(rank_at, t, p, 1));
}

/* Every policy is a permutation, and coords invert it. */
static void permutations(void **state)
{
    (void)state;
    for (int pol = 0; pol < PB_PLACE_RANKMAP; pol++) {
        int rank_at[8], seen[8] = {0};
        pb_placement_grid_place((pb_placement)pol, 2, 2, 2, 8, node_of, rank_at);
        for (int i = 0; i < 8; i++) seen[rank_at[i]]++;
        for (int r = 0; r < 8; r++) {
            assert_int_equal(seen[r], 1);
            int t, p, d;
            assert_int_equal(pb_placement_grid_coords(rank_at, 2, 2, 2, r, &t, &p, &d), 0);
            assert_int_equal(rank_at[pb_placement_grid_pos(2, 2, t, p, d)], r);
        }
    }
}

static void rankmaps(void **state)
{
    (void)state;
    int rank_at[4];
    const char *ok = "# rank t p d\n0 0 0 0\n\n1 1 0 0 # TP peer\n2 0 1 0\n3 1 1 0\n";
    assert_int_equal(pb_placement_rankmap_parse("m", ok, 2, 2, 1, rank_at), PB_OK);
    assert_int_equal(rank_at[pb_placement_grid_pos(2, 2, 1, 1, 0)], 3);
    const char *bad[] = {
        "0 0 0 0\n1 1 0 0\n2 0 1 0\n",          /* rank 3 missing */
        "0 0 0 0\n1 1 0 0\n2 0 1 0\n2 1 1 0\n", /* rank 2 twice */
        "0 0 0 0\n1 0 0 0\n2 0 1 0\n3 1 1 0\n", /* position taken */
        "0 0 0 0\n1 1 0 0\n2 0 1 0\n3 1 2 0\n", /* p out of range */
        "0 0 0 0\n1 1 0 0\n2 0 1 0\n3 1 1 0 7\n", /* extra field */
        "0 0 0\n",                               /* too few */
        "x y z w\n",                             /* garbage */
        "",                                      /* empty */
        "0 0 0 0\n4294967297 1 0 0\n2 0 1 0\n3 1 1 0\n", /* 2^32 + 1: not wrapped round to rank 1 */
        "0 0 0 0\n+1 1 0 0\n2 0 1 0\n3 1 1 0\n",         /* a sign */
        "0 0 0 0\n0x1 1 0 0\n2 0 1 0\n3 1 1 0\n",        /* hex */
        "0 0 0 0\n1 1 0 0\n2 0 1 0\n3 1 1 0x\n",         /* a trailing letter */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(pb_placement_rankmap_parse("m", bad[i], 2, 2, 1, rank_at), PB_ERR_USAGE);
    assert_int_equal(pb_placement_rankmap_read("/nonexistent/map", 2, 2, 1, rank_at), PB_ERR_USAGE);
    /* Each coordinate at its bound (t = T, p = P, d = D) is outside the grid. The
     * array has room past the grid, so a bound let through shows as a map accepted,
     * not as a write out of bounds. */
    int wide[16];
    const char *edge[] = {"0 0 0 0\n1 1 0 0\n2 0 1 0\n3 2 1 0\n", "0 0 0 0\n1 1 0 0\n2 0 1 0\n3 1 2 0\n",
                          "0 0 0 0\n1 1 0 0\n2 0 1 0\n3 1 1 1\n"};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
        for (int k = 0; k < 16; k++) wide[k] = -1;
        assert_int_equal(pb_placement_rankmap_parse("m", edge[i], 2, 2, 1, wide), PB_ERR_USAGE);
    }
}

/* The hosts of a set of ranks, each once, in list order: what names the
 * slowest TP group's nodes. */
static void hosts_of_ranks(void **state)
{
    (void)state;
    pb_world w = {0};
    assert_int_equal(pb_world_fake(&w, 8, 2), PB_OK); /* node0: 0,1  node1: 2,3  node2: 4,5  node3: 6,7 */
    char buf[64];
    const int group[] = {5, 4, 1, 0, 6};
    pb_world_hosts_text(&w, group, 5, buf, sizeof buf);
    assert_string_equal(buf, "node2+node0+node3");
    const int one[] = {6, 7};
    pb_world_hosts_text(&w, one, 2, buf, sizeof buf);
    assert_string_equal(buf, "node3");
    assert_int_equal(pb_world_nodes_spanned(&w, group, 5), 3);
    pb_world_hosts_text(&w, group, 5, buf, 9); /* cut short, never past the buffer */
    assert_string_equal(buf, "node2+no");
    free(w.host);
    free(w.node_of);
}

/* Each exit status has its own word in the failure messages, a hang's included
 * (the NCCL backend returns it when a collective times out); others are "error". */
static void status_words(void **state)
{
    (void)state;
    const char *want[] = {"ok", "wrong data", "usage error", "environment error", "timeout"};
    int codes[] = {PB_OK, PB_ERR_CHECK, PB_ERR_USAGE, PB_ERR_ENV, PB_ERR_TIMEOUT};
    for (int i = 0; i < 5; i++) assert_string_equal(pb_world_status_word(codes[i]), want[i]);
    assert_string_equal(pb_world_status_word(PB_ERR_TIMEOUT + 1), "error");
    assert_string_equal(pb_world_status_word(-1), "error");
}

int main(void)
{
    pb_error_set_quiet_usage(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tp_inner_keeps_tp_in_a_node), cmocka_unit_test(naive_ignores_nodes),
        cmocka_unit_test(dp_inner_keeps_dp_in_a_node), cmocka_unit_test(permutations),
        cmocka_unit_test(rankmaps), cmocka_unit_test(hosts_of_ranks), cmocka_unit_test(status_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
