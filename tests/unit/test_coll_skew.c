/* The per-destination counts of alltoallv (coll_skew.h): every sender's
 * counts sum to its buffer, the hot receiver gets F times the mean within one
 * unit of rounding, F = 1 is the even alltoall, and F outside 1..nranks is
 * refused; the skewed cost scales the even one by the achieved imbalance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "coll/coll.h"
#include "coll/coll_exec.h"
#include "coll/coll_skew.h"

#include <math.h>

static const int ranks[] = {1, 2, 3, 4, 5, 8, 16, 64};
static const double skews[] = {1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 7.5, 8.0, 16.0, 64.0};
#define LEN(a) (sizeof(a) / sizeof(a)[0])

static void counts_sum_to_the_buffer(void **state)
{
    (void)state;
    for (size_t i = 0; i < LEN(ranks); i++)
        for (size_t k = 0; k < LEN(skews); k++)
            for (size_t mean = 1; mean <= 9; mean++) {
                int n = ranks[i];
                double f = skews[k];
                if (!pb_coll_skew_valid(f, n)) continue;
                size_t count = PB_COLL_SKEW_UNIT * (size_t)n * mean, sum = 0, hot = pb_coll_skew_count_to(count, n, f, 0);
                for (int d = 0; d < n; d++) {
                    size_t to = pb_coll_skew_count_to(count, n, f, d);
                    assert_int_equal(to % PB_COLL_SKEW_UNIT, 0); /* blocks start on the pattern's period */
                    assert_true(to <= hot);                      /* destination 0 is the heaviest */
                    assert_int_equal(pb_coll_skew_recv_count(count, n, f, d), (size_t)n * to);
                    sum += to;
                }
                assert_int_equal(sum, count);
                /* max / mean = F within one unit's rounding: |H - F m| <= 1/2 unit */
                double imb = pb_coll_skew_imbalance(count, n, f);
                assert_true(fabs(imb - f) <= 0.5 / (double)mean + 1e-12);
                assert_true(imb >= 1.0 && imb <= (double)n);
                assert_true(fabs(imb - (double)pb_coll_skew_recv_count(count, n, f, 0) / (double)count) < 1e-12);
            }
}

static void exact_where_it_divides(void **state)
{
    (void)state;
    /* 8 ranks, 10 units each per destination: F = 2.5 sends 25 units to rank 0, 55 shared by 7 */
    size_t count = 12 * 8 * 10;
    assert_int_equal(pb_coll_skew_count_to(count, 8, 2.5, 0), 25 * 12);
    assert_int_equal(pb_coll_skew_count_to(count, 8, 2.5, 1), 8 * 12); /* 55 = 7 * 7 + 6: the first six get 8 */
    assert_int_equal(pb_coll_skew_count_to(count, 8, 2.5, 6), 8 * 12);
    assert_int_equal(pb_coll_skew_count_to(count, 8, 2.5, 7), 7 * 12);
    assert_true(fabs(pb_coll_skew_imbalance(count, 8, 2.5) - 2.5) < 1e-12);
    /* F = n: everything to rank 0 */
    assert_int_equal(pb_coll_skew_count_to(count, 8, 8.0, 0), count);
    assert_int_equal(pb_coll_skew_count_to(count, 8, 8.0, 3), 0);
}

static void one_is_even(void **state)
{
    (void)state;
    for (size_t i = 0; i < LEN(ranks); i++) {
        int n = ranks[i];
        size_t count = PB_COLL_SKEW_UNIT * (size_t)n * 3;
        for (int d = 0; d < n; d++) assert_int_equal(pb_coll_skew_count_to(count, n, 1.0, d), count / (size_t)n);
        assert_true(pb_coll_skew_imbalance(count, n, 1.0) == 1.0);
    }
}

static void bad_skews_refused(void **state)
{
    (void)state;
    assert_false(pb_coll_skew_valid(0.5, 4));
    assert_false(pb_coll_skew_valid(0.999, 4));
    assert_false(pb_coll_skew_valid(4.001, 4));
    assert_false(pb_coll_skew_valid(NAN, 4));
    assert_false(pb_coll_skew_valid(2.0, 1));
    assert_false(pb_coll_skew_valid(1.0, 0));
    assert_true(pb_coll_skew_valid(1.0, 1));
    assert_true(pb_coll_skew_valid(4.0, 4));
}

/* The shape: a multiple of unit * n, every rank sends count, receives its share. */
static void shapes_follow_the_skew(void **state)
{
    (void)state;
    for (int n = 1; n <= 8; n++)
        for (int rank = 0; rank < n; rank++) {
            pb_coll_exec_shape sh;
            pb_coll_exec_shape_skewed(PB_COLL_ALLTOALLV, 4000, PB_FLOAT32, n, rank, (double)n, &sh);
            assert_int_equal(sh.count % (PB_COLL_SKEW_UNIT * (size_t)n), 0);
            assert_int_equal(sh.send_count, sh.count);
            assert_int_equal(sh.recv_count, rank == 0 ? (size_t)n * sh.count : (n == 1 ? sh.count : 0));
            assert_int_equal(pb_coll_exec_expect_count(PB_COLL_ALLTOALLV, &sh), sh.recv_count);
            pb_coll_exec_shape_skewed(PB_COLL_ALLTOALL, 4000, PB_FLOAT32, n, rank, (double)n, &sh);
            assert_int_equal(sh.recv_count, sh.count); /* the even alltoall ignores the skew */
            assert_int_equal(pb_coll_exec_expect_count(PB_COLL_ALLTOALL, &sh), sh.count);
        }
    pb_coll_exec_shape small;
    pb_coll_exec_shape_of(PB_COLL_ALLTOALLV, 8, PB_FLOAT32, 4, &small);
    assert_int_equal(small.count, 48); /* at least one unit a rank */
}

/* The heaviest receiver sets the time: the even bytes term times max / mean. */
static void cost_scales_with_imbalance(void **state)
{
    (void)state;
    size_t count = 12 * 8 * 10;
    pb_coll_cost even = pb_coll_cost_of(PB_COLL_ALLTOALLV, 8), skewed = pb_coll_cost_skewed(PB_COLL_ALLTOALLV, 8, count, 2.5);
    assert_true(fabs(even.bytes - 7.0 / 8) < 1e-12);
    assert_true(fabs(skewed.bytes - 2.5 * 7.0 / 8) < 1e-12);
    assert_true(skewed.steps == even.steps);
    pb_coll_cost ring = pb_coll_cost_skewed(PB_COLL_ALLTOALL, 8, count, 2.5);
    assert_true(fabs(ring.bytes - 7.0 / 8) < 1e-12); /* not skewed */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counts_sum_to_the_buffer), cmocka_unit_test(exact_where_it_divides),
        cmocka_unit_test(one_is_even),              cmocka_unit_test(bad_skews_refused),
        cmocka_unit_test(shapes_follow_the_skew),   cmocka_unit_test(cost_scales_with_imbalance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
