/* Statistics per docs/METRICS.md, collective shapes and expected results, rotation slots. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend/buffers.h"
#include "coll/coll_exec.h"
#include "core/error.h"
#include "core/grow.h"
#include "core/options.h"
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>

static void one_rank(void **state)
{
    (void)state;
    double x[] = {5, 1, 4, 2, 3};
    pb_stats s;
    pb_stats_of(x, 5, &s);
    assert_true(s.mean == 3 && s.min == 1 && s.max == 5 && s.median == 3);
    assert_true(fabs(s.p99 - 4.96) < 1e-12); /* 4 + 0.96 * (5 - 4), linear interpolation */
    assert_true(x[0] == 1 && x[4] == 5);     /* sorted in place: no copy to allocate after a measurement */
    pb_stats_of(x, 0, &s);
    assert_true(s.samples == 0 && s.mean == 0);
    /* A percentile of no data is 0, as every statistic of no samples; of one sample, that sample. */
    assert_true(pb_stats_percentile_sorted(x, 0, 50) == 0 && pb_stats_percentile_sorted(x, 0, 99) == 0);
    assert_true(pb_stats_percentile_sorted(x, 1, 50) == 1 && pb_stats_percentile_sorted(x, 1, 99) == 1);
}

/* Mean of rank means, rankmax, pooled percentiles. */
static void across_ranks(void **state)
{
    (void)state;
    double all[] = {1, 1, 1, 1, /* rank 0: mean 1 */ 2, 2, 2, 6 /* rank 1: mean 3 */};
    pb_stats s;
    pb_stats_across(all, 4, 2, &s);
    assert_true(s.mean == 2);
    assert_true(s.rankmax == 3);
    assert_true(s.min == 1 && s.max == 6);
    assert_true(s.median == 1.5);
    assert_int_equal(s.samples, 8);
}

/* Shapes as nccl-tests: full buffer size S, counts split per rank where needed. */
static void shapes(void **state)
{
    (void)state;
    pb_coll_exec_shape sh;
    pb_coll_exec_shape_of(PB_COLL_ALLREDUCE, 1024, PB_FLOAT32, 3, &sh);
    assert_true(sh.count == 256 && sh.send_count == 256 && sh.recv_count == 256 && sh.param == 256);
    pb_coll_exec_shape_of(PB_COLL_ALLGATHER, 1024, PB_FLOAT32, 3, &sh);
    assert_true(sh.count == 255 && sh.send_count == 85 && sh.recv_count == 255 && sh.param == 85);
    assert_true(sh.bytes == 1020);
    pb_coll_exec_shape_of(PB_COLL_REDUCESCATTER, 1024, PB_FLOAT32, 4, &sh);
    assert_true(sh.send_count == 256 && sh.recv_count == 64 && sh.param == 64);
    pb_coll_exec_shape_of(PB_COLL_ALLTOALL, 8, PB_FLOAT32, 4, &sh); /* rounds up to one element per rank */
    assert_true(sh.count == 4 && sh.param == 1 && sh.bytes == 16);
    pb_coll_exec_shape_of(PB_COLL_BROADCAST, 1, PB_BFLOAT16, 2, &sh);
    assert_true(sh.count == 1);
}

/* Simulate each collective on the host from the inputs and check the checker
 * accepts exactly the right answer (and rejects a changed one). */
static void expected_results(void **state)
{
    (void)state;
    const int n = 3;
    for (int c = 0; c < PB_COLL_COUNT; c++) {
        pb_coll_exec_shape sh;
        pb_coll_exec_shape_of((pb_coll)c, 36 * 4, PB_FLOAT32, n, &sh);
        size_t chunk = sh.count / n;
        float in[3][36] = {{0}}, out[36];
        for (int r = 0; r < n; r++) pb_coll_exec_fill((pb_coll)c, &sh, PB_FLOAT32, r, n, 1, in[r]);
        for (int r = 0; r < n; r++) {
            for (size_t j = 0; j < sh.recv_count; j++) {
                double v = 0;
                switch (c) {
                case PB_COLL_ALLREDUCE:
                case PB_COLL_REDUCE: for (int q = 0; q < n; q++) v += in[q][j]; break;
                case PB_COLL_REDUCESCATTER: for (int q = 0; q < n; q++) v += in[q][r * chunk + j]; break;
                case PB_COLL_ALLGATHER: v = in[j / chunk][j % chunk]; break;
                case PB_COLL_BROADCAST: v = in[1][j]; break;
                case PB_COLL_ALLTOALL: v = in[j / chunk][r * chunk + j % chunk]; break;
                case PB_COLL_SENDRECV: v = in[(r + n - 1) % n][j]; break;
                case PB_COLL_ALLTOALLV: v = in[j / chunk][r * chunk + j % chunk]; break; /* even: --skew 1 */
                }
                out[j] = (float)v;
            }
            assert_int_equal(pb_coll_exec_count_wrong((pb_coll)c, &sh, PB_FLOAT32, PB_SUM, r, n, 1, out), 0);
            if (c == PB_COLL_REDUCE && r != 1) continue; /* undefined output on non-roots */
            out[sh.recv_count - 1] += 1;
            assert_int_equal(pb_coll_exec_count_wrong((pb_coll)c, &sh, PB_FLOAT32, PB_SUM, r, n, 1, out), 1);
        }
    }
}

static void tolerance_and_inputs(void **state)
{
    (void)state;
    assert_true(pb_coll_exec_tolerance(PB_BFLOAT16, 64) == 0);
    assert_true(pb_coll_exec_tolerance(PB_BFLOAT16, 128) > 0);
    assert_true(pb_coll_exec_tolerance(PB_FLOAT32, 4096) == 0);
    for (size_t i = 0; i < 100; i++) {
        double v = pb_coll_exec_input_value((int)i, i * 3);
        assert_true(v >= -1 && v <= 4 && v == floor(v)); /* small integers: exact sums */
    }
}

static void rotation(void **state)
{
    (void)state;
    size_t cache = 32u << 20, max = PB_ROTATE_POOL_MAX;
    /* fixed buffers: exactly the largest message, page-rounded */
    assert_true(pb_buffers_rotation_pool(100, cache, 0) == 4096);
    assert_true(pb_buffers_rotation_pool(1u << 20, cache, 0) == 1u << 20);
    /* rotating: twice the cache, bounded, but never smaller than the largest message */
    assert_true(pb_buffers_rotation_pool(100, cache, 1) == 2 * cache);
    assert_true(pb_buffers_rotation_pool(100, (size_t)8 << 30, 1) == max);
    assert_true(pb_buffers_rotation_pool((size_t)3 << 30, cache, 1) == (size_t)3 << 30);
    /* slots are sized by the current message, not by the largest of the sweep */
    assert_true(pb_buffers_rotation_slots(8, 2 * cache) == 2 * cache / 4096);
    assert_true(pb_buffers_rotation_slots(1u << 20, 2 * cache) == 64);
    assert_true(pb_buffers_rotation_slots(1u << 30, 2 * cache) == 1); /* bigger than the pool: one slot */
}

/* A rotating buffer walks message-sized slots through its pool; a fixed one never moves. */
static void rotating_slots(void **state)
{
    (void)state;
    const pb_comm_backend *be = pb_comm_backend_mpi();
    pb_buffers r, f;
    assert_int_equal(pb_buffers_alloc(be, 1u << 20, 1, &r), PB_OK);
    assert_int_equal(pb_buffers_alloc(be, 1u << 20, 0, &f), PB_OK);
    assert_true(r.pool >= 2 * (1u << 20));
    pb_buffers_fit(&r, 8);
    pb_buffers_fit(&f, 8);
    assert_true((char *)pb_buffers_slot(&r, 1) - (char *)pb_buffers_slot(&r, 0) == 4096);
    assert_true(pb_buffers_slot(&r, (int)r.slots) == pb_buffers_slot(&r, 0)); /* wraps after the pool */
    assert_true((char *)pb_buffers_slot(&r, (int)r.slots - 1) + 8 <= r.base + r.pool);
    assert_true(pb_buffers_slot(&r, -5) == pb_buffers_slot(&r, 0)); /* warm-up uses slot 0 */
    assert_true(pb_buffers_slot(&f, 7) == pb_buffers_slot(&f, 0));
    pb_buffers_fit(&r, 1u << 20);
    assert_true(r.slots == r.pool / (1u << 20));
    assert_true((char *)pb_buffers_slot(&r, 1) - (char *)pb_buffers_slot(&r, 0) == 1u << 20);
    pb_buffers_free(&r);
    pb_buffers_free(&f);
}

/* OSU's split: 8192 B is small, 8193 B large; -n/-w override every size. */
static void iteration_policy(void **state)
{
    (void)state;
    pb_options o;
    pb_options_defaults(&o);
    int n, w;
    pb_options_iters_for(&o, &pb_policy_collective, 8192, &n, &w);
    assert_int_equal(n, 1000);
    assert_int_equal(w, 100);
    pb_options_iters_for(&o, &pb_policy_collective, 8193, &n, &w);
    assert_int_equal(n, 100);
    assert_int_equal(w, 10);
    assert_int_equal(pb_options_iters_max(&o, &pb_policy_collective), 1000);
    assert_int_equal(o.rotate, 0); /* fixed buffers by default, as OSU and nccl-tests */
    char *argv[] = {"x", "-n", "7", NULL};
    pb_options_group g = pb_options_common_group(&o, PB_OPTS_ALL);
    assert_int_equal(pb_options_parse(3, argv, "", &g, 1), PB_OK);
    pb_options_iters_for(&o, &pb_policy_collective, 1 << 20, &n, &w);
    assert_int_equal(n, 7);
    assert_int_equal(w, 10); /* -w not given: still the policy's */
    assert_int_equal(pb_options_iters_max(&o, &pb_policy_collective), 7);
}

/* Growable arrays: doubling, zeroed new slots, untouched until full. */
static void growing(void **state)
{
    (void)state;
    int *a = NULL, cap = 0;
    for (int n = 0; n < 100; n++) {
        int *g = pb_grow(a, &cap, n, sizeof *g, 4);
        assert_non_null(g);
        a = g;
        assert_true(cap > n);
        assert_int_equal(a[n], 0); /* new slots are zero */
        a[n] = n + 1;
    }
    assert_int_equal(cap, 128); /* 4, 8, ..., 128 */
    for (int n = 0; n < 100; n++) assert_int_equal(a[n], n + 1);
    assert_ptr_equal(pb_grow(a, &cap, 100, sizeof *a, 4), a); /* room left: same array */
    free(a);
}

/* A difference of two times is flagged when it is noise: too few iterations,
 * below the timer, within either time's spread; a clear one is not. */
static void diff_noise(void **state)
{
    (void)state;
    pb_stats a = {.mean = 100, .min = 95, .max = 105, .samples = 10}, b = {.mean = 50, .min = 49, .max = 51, .samples = 10};
    assert_null(pb_stats_diff_noise(&a, &b, 50, 10, 1));
    assert_non_null(pb_stats_diff_noise(&a, &b, 50, 1, 1));   /* one iteration */
    assert_non_null(pb_stats_diff_noise(&a, &b, 8, 10, 1));   /* within a's spread of 10 */
    assert_non_null(pb_stats_diff_noise(&a, &b, -8, 10, 1));  /* either sign */
    assert_non_null(pb_stats_diff_noise(&a, &b, 50, 10, 60)); /* below the resolution */
    pb_stats one = {.samples = 1};
    assert_non_null(pb_stats_diff_noise(&one, &b, 50, 10, 1));
}

/* Each group as slow as its slowest rank; the slowest group and the median
 * of the group times. */
static void concurrent_groups(void **state)
{
    (void)state;
    /* 3 groups of 2, interleaved: group 1 holds the slowest rank (9), group 2 the fastest pair */
    const double us[] = {4, 9, 5, 1, 2, 6};
    const int g3[] = {0, 1, 0, 1, 2, 2};
    pb_stats_groups o;
    assert_int_equal(pb_stats_groups_of(us, g3, 6, 3, &o), PB_OK);
    assert_int_equal(o.slowest, 1);
    assert_true(o.slowest_us == 9);
    assert_true(o.median_us == 6); /* groups: 5, 9, 6 */
    /* an even count: the median between the two middle groups */
    const int g2[] = {0, 0, 0, 1, 1, 1};
    assert_int_equal(pb_stats_groups_of(us, g2, 6, 2, &o), PB_OK);
    assert_int_equal(o.slowest, 0);
    assert_true(o.slowest_us == 9 && o.median_us == 7.5);
    /* one group: the whole world */
    const int g1[] = {0, 0, 0, 0, 0, 0};
    assert_int_equal(pb_stats_groups_of(us, g1, 6, 1, &o), PB_OK);
    assert_true(o.slowest == 0 && o.slowest_us == 9 && o.median_us == 9);
    /* a group with no rank, or a rank outside the groups, is refused */
    assert_int_equal(pb_stats_groups_of(us, g2, 6, 3, &o), PB_ERR_USAGE);
    const int bad[] = {0, 1, 3, 0, 1, 2};
    assert_int_equal(pb_stats_groups_of(us, bad, 6, 3, &o), PB_ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_rank), cmocka_unit_test(across_ranks),       cmocka_unit_test(shapes),
        cmocka_unit_test(expected_results), cmocka_unit_test(tolerance_and_inputs), cmocka_unit_test(rotation),
        cmocka_unit_test(rotating_slots),
        cmocka_unit_test(iteration_policy),
        cmocka_unit_test(growing), cmocka_unit_test(diff_noise), cmocka_unit_test(concurrent_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
