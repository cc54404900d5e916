/* The all-pairs schedules: every pair exactly once, no rank twice in a round,
 * O(N) rounds laid out along the nodes (inter-node rounds pair whole nodes,
 * rank k with rank k + s), for uneven node sizes up to 4096 ranks; the
 * sampled schedule of large worlds (every node pair's rails, a few
 * cross-rail pairs, every pair inside a node) and its counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "coll/p2p_schedule.h"

#include <stdlib.h>
#include <string.h>

/* Checks every property but the pair count; returns the number of rounds. */
static int check_pairs(const pb_p2p_schedule *s, const int *node_of, int n)
{
    unsigned char *seen = calloc((size_t)n * (size_t)n, 1);
    int *last_round = malloc(sizeof(int) * (size_t)n);
    assert_non_null(seen);
    assert_non_null(last_round);
    for (int r = 0; r < n; r++) last_round[r] = -1;
    for (int i = 0; i < s->npairs; i++) {
        const pb_p2p_schedule_pair *p = &s->pairs[i];
        assert_true(p->a >= 0 && p->a < p->b && p->b < n);
        assert_true(p->round >= 0 && p->round < s->nrounds);
        if (i > 0) assert_true(p->round >= s->pairs[i - 1].round); /* sorted by round */
        assert_int_equal(seen[(size_t)p->a * (size_t)n + (size_t)p->b]++, 0); /* each pair once */
        assert_true(last_round[p->a] != p->round); /* no rank twice in one round */
        assert_true(last_round[p->b] != p->round);
        last_round[p->a] = last_round[p->b] = p->round;
        /* a round is all inter-node or all intra-node */
        if (i > 0 && s->pairs[i - 1].round == p->round) {
            const pb_p2p_schedule_pair *q = &s->pairs[i - 1];
            assert_int_equal(node_of[q->a] == node_of[q->b], node_of[p->a] == node_of[p->b]);
        }
    }
    free(seen);
    free(last_round);
    return s->nrounds;
}

/* Every pair: checks every property; returns the number of rounds. */
static int check_schedule(const pb_p2p_schedule *s, const int *node_of, int n)
{
    assert_int_equal(s->npairs, n * (n - 1) / 2);
    assert_int_equal(pb_p2p_schedule_peers(s, n), n - 1);
    return check_pairs(s, node_of, n);
}

static int *uniform_nodes(int nodes, int per_node)
{
    int *node_of = malloc(sizeof(int) * (size_t)(nodes * per_node));
    for (int r = 0; r < nodes * per_node; r++) node_of[r] = r / per_node;
    return node_of;
}

/* 2 nodes x 2 ranks: 3 rounds, (0,2)(1,3) then (0,3)(1,2) across, then (0,1)(2,3) inside. */
static void two_by_two(void **state)
{
    (void)state;
    int node_of[] = {0, 0, 1, 1};
    pb_p2p_schedule s;
    assert_int_equal(pb_p2p_schedule_concurrent(node_of, 4, &s), PB_OK);
    assert_int_equal(check_schedule(&s, node_of, 4), 3);
    const pb_p2p_schedule_pair want[] = {{0, 2, 0}, {1, 3, 0}, {0, 3, 1}, {1, 2, 1}, {0, 1, 2}, {2, 3, 2}};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(s.pairs[i].a, want[i].a);
        assert_int_equal(s.pairs[i].b, want[i].b);
        assert_int_equal(s.pairs[i].round, want[i].round);
    }
    pb_p2p_schedule_free(&s);
}

/* n nodes of r ranks: N - 1 rounds when both are even, and the first
 * inter-node sub-round of each node round pairs local rank k with local rank k (rails). */
static void uniform_is_optimal(void **state)
{
    (void)state;
    const int shapes[][2] = {{1, 8}, {2, 8}, {4, 2}, {16, 8}, {128, 8}, {512, 8}, {3, 4}, {5, 3}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int nodes = shapes[k][0], per = shapes[k][1], n = nodes * per;
        int *node_of = uniform_nodes(nodes, per);
        pb_p2p_schedule s;
        assert_int_equal(pb_p2p_schedule_concurrent(node_of, n, &s), PB_OK);
        int rounds = check_schedule(&s, node_of, n);
        int node_rounds = nodes < 2 ? 0 : nodes % 2 ? nodes : nodes - 1;
        int intra = per < 2 ? 0 : per % 2 ? per : per - 1;
        assert_int_equal(rounds, node_rounds * per + intra);
        if (nodes % 2 == 0 && per % 2 == 0) assert_int_equal(rounds, n - 1);
        for (int i = 0; i < s.npairs && nodes > 1; i++)
            if (s.pairs[i].round % per == 0 && s.pairs[i].round < node_rounds * per)
                assert_int_equal(s.pairs[i].a % per, s.pairs[i].b % per); /* rank k with rank k */
        pb_p2p_schedule_free(&s);
        free(node_of);
    }
}

/* Uneven node sizes (a fixed pseudo-random layout), up to 4096 ranks. */
static void uneven_nodes(void **state)
{
    (void)state;
    const int sizes[] = {5, 37, 300, 1000, 4096};
    unsigned seed = 12345;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k], *node_of = malloc(sizeof(int) * (size_t)n), node = 0, left = 0, biggest = 0, cur = 0;
        for (int r = 0; r < n; r++) {
            if (left == 0) {
                seed = seed * 1103515245u + 12345u;
                left = 1 + (int)((seed >> 16) % 9); /* 1..9 ranks on this node */
                node += r > 0;
                cur = 0;
            }
            node_of[r] = node;
            left--;
            if (++cur > biggest) biggest = cur;
        }
        pb_p2p_schedule s;
        assert_int_equal(pb_p2p_schedule_concurrent(node_of, n, &s), PB_OK);
        int rounds = check_schedule(&s, node_of, n);
        int nodes = node + 1, node_rounds = nodes < 2 ? 0 : nodes % 2 ? nodes : nodes - 1;
        assert_true(rounds <= node_rounds * biggest + biggest); /* O(N): bounded by nodes x largest node */
        pb_p2p_schedule_free(&s);
        free(node_of);
    }
}

/* The sampled schedule on node_of (n ranks; nodes of `per`, the last maybe
 * smaller): each pair at most once, no rank twice in a round; every node
 * pair has all its rail pairs (local rank k with k), so every rail of every
 * node pair is covered; every pair inside a node; and the cross-rail pairs
 * are shift s = t + 1 of node round t only, every shift 1..per-1 present
 * once the node tournament is that long. Returns the cross-rail pairs. */
static int check_sampled(const pb_p2p_schedule *s, const int *node_of, int n, int per)
{
    check_pairs(s, node_of, n);
    unsigned char *seen = calloc((size_t)n * (size_t)n, 1), *shift = calloc((size_t)per + 1, 1);
    assert_non_null(seen);
    assert_non_null(shift);
    int cross = 0;
    for (int i = 0; i < s->npairs; i++) {
        int a = s->pairs[i].a, b = s->pairs[i].b;
        seen[(size_t)a * (size_t)n + (size_t)b] = 1;
        if (node_of[a] != node_of[b] && a % per != b % per) {
            cross++;
            shift[((b % per) - (a % per) + per) % per] = 1;
        }
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (node_of[a] == node_of[b] || a % per == b % per) /* inside a node, or a rail */
                assert_int_equal(seen[(size_t)a * (size_t)n + (size_t)b], 1);
    int nodes = node_of[n - 1] + 1, node_rounds = nodes < 2 ? 0 : nodes % 2 ? nodes : nodes - 1;
    for (int k = 1; k < per && k <= node_rounds && n % per == 0; k++)
        assert_true(shift[k] || shift[per - k]); /* shift k, or -k seen from the other node */
    free(seen);
    free(shift);
    return cross;
}

/* n nodes of r ranks, both even: (n - 1) + min(n - 1, r - 1) + (r - 1)
 * rounds, the rails C(n,2) r pairs, the cross-rail min(n - 1, r - 1) n/2 r,
 * inside the nodes n C(r,2); a rank meets a new peer every round. 1,024
 * ranks of 8 a node: 141 rounds and peers instead of 1,023. */
static void sampled(void **state)
{
    (void)state;
    const int shapes[][2] = {{4, 4}, {2, 8}, {16, 8}, {128, 8}, {4, 2}, {10, 4}, {1, 8}, {8, 1}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int nodes = shapes[k][0], per = shapes[k][1], n = nodes * per;
        int *node_of = uniform_nodes(nodes, per);
        pb_p2p_schedule s;
        assert_int_equal(pb_p2p_schedule_sampled(node_of, n, &s), PB_OK);
        int shifts = nodes - 1 < per - 1 ? nodes - 1 : per - 1, intra = per < 2 ? 0 : per - 1;
        int cross = check_sampled(&s, node_of, n, per);
        assert_int_equal(s.nrounds, (nodes - 1) + shifts + intra);
        assert_int_equal(cross, shifts * nodes / 2 * per);
        assert_int_equal(s.npairs, nodes * (nodes - 1) / 2 * per + cross + nodes * per * (per - 1) / 2);
        assert_int_equal(pb_p2p_schedule_peers(&s, n), s.nrounds);
        if (n == 1024) assert_int_equal(s.nrounds, 141);
        pb_p2p_schedule_free(&s);
        free(node_of);
    }
    /* Odd node counts and a smaller last node (3 of 8, then 5 of 8 and 5): the same coverage. */
    int odd[] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3};
    pb_p2p_schedule s;
    assert_int_equal(pb_p2p_schedule_sampled(odd, 14, &s), PB_OK);
    check_sampled(&s, odd, 14, 4);
    assert_true(s.npairs < 14 * 13 / 2);
    pb_p2p_schedule_free(&s);
    int *three = uniform_nodes(3, 8);
    assert_int_equal(pb_p2p_schedule_sampled(three, 24, &s), PB_OK);
    assert_int_equal(check_sampled(&s, three, 24, 8), 3 * 8); /* 3 node rounds, one pair and a bye each */
    assert_int_equal(s.nrounds, 3 + 3 + 7);
    pb_p2p_schedule_free(&s);
    free(three);
}

static void serial(void **state)
{
    (void)state;
    int node_of[6] = {0, 0, 0, 1, 1, 1};
    pb_p2p_schedule s;
    assert_int_equal(pb_p2p_schedule_serial(6, &s), PB_OK);
    assert_int_equal(check_schedule(&s, node_of, 6), 15);
    assert_int_equal(s.pairs[0].a, 0);
    assert_int_equal(s.pairs[0].b, 1);
    assert_int_equal(s.pairs[14].a, 4);
    pb_p2p_schedule_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(two_by_two),
        cmocka_unit_test(uniform_is_optimal),
        cmocka_unit_test(uneven_nodes),
        cmocka_unit_test(sampled),
        cmocka_unit_test(serial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
