/* FSDP's sharding arithmetic (shard sizes, padding, groups, bytes sent) and
 * the planner's FSDP step model, each against an independent computation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "plan/model.h"
#include "workload/fsdp.h"

#include <math.h>

/* Shards tile [0, n*S): the valid parts cover [0, P) exactly once, in rank
 * order, every shard is S long, the padding is under n elements. */
static void check_tiling(uint64_t P, int n)
{
    pb_fsdp_shard s;
    pb_fsdp_shard_of(P, n, &s);
    assert_int_equal(s.n, n);
    assert_int_equal(s.padded, s.per_rank * (uint64_t)n);
    assert_true(s.padded >= P && s.padded - P < (uint64_t)n);
    uint64_t covered = 0;
    for (int r = 0; r < n; r++) {
        uint64_t v = pb_fsdp_shard_valid(&s, r);
        assert_true(v <= s.per_rank);
        if (v) assert_int_equal((uint64_t)r * s.per_rank, covered); /* no gap before a valid part */
        covered += v;
    }
    assert_int_equal(covered, P);
}

static void test_even_and_uneven(void **state)
{
    pb_fsdp_shard s;
    pb_fsdp_shard_of(12, 4, &s); /* divides: no padding */
    assert_int_equal(s.per_rank, 3);
    assert_int_equal(s.padded, 12);
    for (int r = 0; r < 4; r++) assert_int_equal(pb_fsdp_shard_valid(&s, r), 3);
    pb_fsdp_shard_of(10, 4, &s); /* 3 3 3 1, two padding elements */
    assert_int_equal(s.per_rank, 3);
    assert_int_equal(s.padded - s.params, 2);
    assert_int_equal(pb_fsdp_shard_valid(&s, 3), 1);
    pb_fsdp_shard_of(10, 8, &s); /* 2 2 2 2 2 0 0 0: the last ranks hold padding only */
    assert_int_equal(s.per_rank, 2);
    assert_int_equal(pb_fsdp_shard_valid(&s, 4), 2);
    assert_int_equal(pb_fsdp_shard_valid(&s, 5), 0);
    assert_int_equal(pb_fsdp_shard_valid(&s, 7), 0);
    assert_int_equal(pb_fsdp_shard_valid(&s, 8), 0);  /* outside the group */
    assert_int_equal(pb_fsdp_shard_valid(&s, -1), 0);
    pb_fsdp_shard_of(7, 1, &s); /* one rank holds everything */
    assert_int_equal(s.per_rank, 7);
    assert_int_equal(pb_fsdp_shard_valid(&s, 0), 7);
    for (uint64_t P = 1; P < 70; P++)
        for (int n = 1; n <= 16; n++) check_tiling(P, n);
    check_tiling(786432, 3); /* the tiny preset's layer over 3 ranks */
}

static void test_groups(void **state)
{
    int g = -1, i = -1;
    assert_int_equal(pb_fsdp_group_of(8, 4, 6, &g, &i), PB_OK);
    assert_int_equal(g, 1);
    assert_int_equal(i, 2);
    assert_int_equal(pb_fsdp_group_of(8, 8, 5, &g, &i), PB_OK);
    assert_int_equal(g, 0);
    assert_int_equal(i, 5);
    assert_int_equal(pb_fsdp_group_of(4, 3, 0, &g, &i), PB_ERR_USAGE);
    assert_int_equal(pb_fsdp_group_of(4, 8, 0, &g, &i), PB_ERR_USAGE);
    assert_int_equal(pb_fsdp_group_of(4, 0, 0, &g, &i), PB_ERR_USAGE);
}

static void test_bytes_sent(void **state)
{
    pb_fsdp_shard s;
    pb_fsdp_shard_of(10, 4, &s); /* S = 3 */
    /* per layer: 2 gathers of 3*3 params (2 B) + one reduce-scatter of 3*3 grads (4 B) */
    assert_true(fabs(pb_fsdp_step_bytes_sent(&s, 2, 2, 4, 1) - 2 * (2 * 9 * 2 + 9 * 4)) < 1e-9);
    /* 2 replicas add the all-reduce of 3 grads: 2*3*(1/2) elements */
    assert_true(fabs(pb_fsdp_step_bytes_sent(&s, 2, 2, 4, 2) - 2 * (2 * 9 * 2 + 9 * 4 + 3 * 4)) < 1e-9);
}

/* The schedule of fsdp_step.c, simulated layer by layer: each layer takes the
 * longer of its compute and what was issued during it. */
static double simulate(int64_t L, const pb_model_fsdp_layer *l, int prefetch)
{
    double f = l->fwd, b = l->bwd, g = l->gather, s = l->scatter, t = 0;
    if (!prefetch) {
        for (int64_t i = 0; i < L; i++) t += g + f;
        for (int64_t j = L - 1; j >= 0; j--) t += g + b + s;
        return t;
    }
    t = g; /* layer 0's gather, before any compute */
    for (int64_t i = 0; i < L; i++) t += fmax(f, g); /* the next gather (the last: backward's first) */
    for (int64_t j = L - 1; j >= 0; j--) {
        double issued = (j + 1 < L ? s : 0) + (j > 0 ? g : 0);
        t += fmax(b, issued);
    }
    return t + s; /* layer 0's reduce-scatter */
}

static void test_step_model(void **state)
{
    pb_model_fsdp_layer shapes[] = {{1, 2, 0.5, 0.3}, {1, 2, 3, 1}, {0.1, 0.2, 1, 1}, {2, 1, 1.5, 0.6}, {1, 2, 0, 0}};
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
        for (int64_t L = 1; L <= 6; L++)
            for (int p = 0; p <= 1; p++) {
                double want = simulate(L, &shapes[k], p), got = pb_model_fsdp_step(L, &shapes[k], p);
                assert_true(fabs(got - want) < 1e-9 * (1 + want));
            }
    pb_model_fsdp_layer l = {1, 2, 0.5, 0.3};
    assert_true(fabs(pb_model_fsdp_compute(4, &l) - 12) < 1e-12);
    /* Communication shorter than compute: prefetch exposes the first gather and the last reduce-scatter only. */
    assert_true(fabs(pb_model_fsdp_step(4, &l, 1) - (12 + 0.5 + 0.3)) < 1e-12);
    assert_true(fabs(pb_model_fsdp_step(4, &l, 0) - (12 + 4 * (2 * 0.5 + 0.3))) < 1e-12);
    assert_true(pb_model_fsdp_step(0, &l, 1) == 0);
}

static void test_comm_terms(void **state)
{
    pb_model_link link = {1e-6, 1e9}, across = {1e-5, 1e8};
    pb_model_fsdp_layer l;
    pb_model_fsdp_comm(8e6, 16e6, 4, 1, link, across, &l);
    assert_true(fabs(l.gather - (3 * 1e-6 + 0.75 * 8e6 / 1e9)) < 1e-12);
    assert_true(fabs(l.scatter - (3 * 1e-6 + 0.75 * 16e6 / 1e9)) < 1e-12);
    pb_model_fsdp_layer h;
    pb_model_fsdp_comm(8e6, 16e6, 4, 2, link, across, &h); /* plus a ring all-reduce of the 4e6-byte shard over 2 */
    assert_true(fabs(h.scatter - l.scatter - (2 * 1e-5 + 1.0 * 4e6 / 1e8)) < 1e-12);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_even_and_uneven), cmocka_unit_test(test_groups), cmocka_unit_test(test_bytes_sent),
        cmocka_unit_test(test_step_model),      cmocka_unit_test(test_comm_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
