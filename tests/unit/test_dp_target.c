/* The search for the gradient size whose all-reduce takes a target share of
 * the compute (dp_allreduce --target-ratio), driven by known comm(size) curves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "workload/dp_target.h"
#include "core/error.h"

#include <math.h>

/* comm/compute = (alpha + bytes / bw) / compute, with an optional relative
 * noise that alternates in sign, and a record of every size probed. */
typedef struct curve {
    double alpha_us, bw_Bpus, compute_us, noise;
    int calls, fail_at;
    uint64_t seen[64];
} curve;

static int probe(void *ctx, uint64_t bytes, double *ratio)
{
    curve *c = ctx;
    if (c->calls == c->fail_at) return PB_ERR_TIMEOUT;
    double r = (c->alpha_us + (double)bytes / c->bw_Bpus) / c->compute_us;
    *ratio = r * (1 + (c->calls % 2 ? -c->noise : c->noise));
    c->seen[c->calls++ % 64] = bytes;
    return PB_OK;
}

static double exact_ratio(const curve *c, uint64_t bytes)
{
    return (c->alpha_us + (double)bytes / c->bw_Bpus) / c->compute_us;
}

static void test_converges_on_a_latency_bandwidth_curve(void **state)
{
    (void)state;
    /* 30 ms of compute, 20 us + 2 GB/s: 0.112 is at about 6.7 MB. Start 16x too small. */
    curve c = {.alpha_us = 20, .bw_Bpus = 2000, .compute_us = 30000, .fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 0.112, .tol = 0.02, .start = 1 << 18, .align = 1024,
                            .max_bytes = 1ull << 34, .max_probes = 12};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, probe, &c, &r), PB_OK);
    assert_true(r.converged);
    assert_true(fabs(r.ratio / 0.112 - 1) <= 0.02);
    assert_true(fabs(exact_ratio(&c, r.grad_bytes) - r.ratio) < 1e-12); /* the answer is a probed size */
    assert_int_equal(r.grad_bytes % 1024, 0);
    assert_int_equal(r.probes, c.calls);
    assert_true(r.probes <= 4); /* proportional scaling lands near it at once on such a curve */
    assert_int_equal(c.seen[0], 1 << 18);
    /* It stops at the first probe within the tolerance. */
    for (int k = 0; k < c.calls; k++)
        assert_int_equal(fabs(exact_ratio(&c, c.seen[k]) / 0.112 - 1) <= 0.02, k == c.calls - 1);
}

static void test_latency_bound_curve_takes_the_secant(void **state)
{
    (void)state;
    /* The latency is 90% of the target: scaling by target/ratio alone creeps up by ~10% a probe
     * and never brackets it; the secant through two probes lands on it. */
    curve c = {.alpha_us = 90, .bw_Bpus = 100, .compute_us = 1000, .fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 0.1, .tol = 0.001, .start = 100, .align = 1,
                            .max_bytes = 1 << 30, .max_probes = 12};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, probe, &c, &r), PB_OK);
    assert_true(r.converged);
    assert_true(r.probes <= 3);
    assert_true(r.grad_bytes >= 999 && r.grad_bytes <= 1001); /* 90 + 1000/100 = 100 us */
}

/* An alignment of 0 means none: the same search as with 1, not a division by zero. */
static void test_align_zero_is_one(void **state)
{
    (void)state;
    pb_dp_target_result r0, r1;
    for (uint64_t align = 0; align <= 1; align++) {
        curve c = {.alpha_us = 90, .bw_Bpus = 100, .compute_us = 1000, .fail_at = -1};
        pb_dp_target_cfg cfg = {.target = 0.1, .tol = 0.001, .start = 100, .align = align,
                                .max_bytes = 1 << 30, .max_probes = 12};
        assert_int_equal(pb_dp_target_search(&cfg, probe, &c, align ? &r1 : &r0), PB_OK);
    }
    assert_true(r0.converged && r1.converged);
    assert_int_equal(r0.grad_bytes, r1.grad_bytes);
    assert_int_equal(r0.probes, r1.probes);
}

/* A ratio that jumps from 0.5 to 2 at 8 KiB: no size gives 1. */
static int jump_probe(void *ctx, uint64_t bytes, double *ratio)
{
    int *calls = ctx;
    ++*calls;
    *ratio = bytes < 8192 ? 0.5 * (double)bytes / 8192 : 2;
    return PB_OK;
}

static void test_a_jump_closes_the_bracket_instead_of_oscillating(void **state)
{
    (void)state;
    int calls = 0;
    pb_dp_target_cfg cfg = {.target = 1, .tol = 0.02, .start = 1000, .align = 1, .max_bytes = 1 << 20,
                            .max_probes = 64};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, jump_probe, &calls, &r), PB_OK);
    assert_false(r.converged);
    /* The search ends once the bracket's sizes are within 2% of each other, below the jump. */
    assert_true(r.grad_bytes < 8192 && r.grad_bytes >= 8192 - 0.02 * 8192);
    assert_true(r.probes <= 12); /* shrinking a bracket, not bouncing off the jump */
    assert_int_equal(r.probes, calls);
}

/* Sizes within tol of each other bracket the target: the search ends there, the
 * nearest probe kept, instead of measuring the loop's noise between them. Here the
 * ratio (0.9 x bytes / 1000) jumps at 1000 B to 1.1, past the target 1 with tol 2%:
 * 985, 1111, 1052, 1009, then 990; 990 and 1009 are 1.9% apart (a search that
 * went on would halve its way to 999 and 1000, four probes more). */
static int cliff_probe(void *ctx, uint64_t bytes, double *ratio)
{
    curve *c = ctx;
    c->seen[c->calls++ % 64] = bytes;
    *ratio = bytes < 1000 ? 0.9 * (double)bytes / 1000 : 1.1;
    return PB_OK;
}

static void test_sizes_within_tol_end_the_search(void **state)
{
    (void)state;
    curve c = {.fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 1, .tol = 0.02, .start = 985, .align = 1, .max_bytes = 1 << 20,
                            .max_probes = 12};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, cliff_probe, &c, &r), PB_OK);
    assert_int_equal(c.calls, 5);
    assert_true(c.seen[3] == 1009 && c.seen[4] == 990);
    assert_false(r.converged);
    assert_int_equal(r.grad_bytes, 1111); /* 1.1 is 10% off, 0.891 10.9% */
}

/* The first probe measures no communication at all (below the timer): no
 * slope and no ratio to scale by, so the next size is the largest step, 16x. */
static int silent_first_probe(void *ctx, uint64_t bytes, double *ratio)
{
    curve *c = ctx;
    int first = c->calls == 0;
    PB_TRY(probe(c, bytes, ratio));
    if (first) *ratio = 0;
    return PB_OK;
}

static void test_no_communication_measured_grows_sixteenfold(void **state)
{
    (void)state;
    curve c = {.alpha_us = 20, .bw_Bpus = 2000, .compute_us = 30000, .fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 0.112, .tol = 0.02, .start = 4096, .align = 1, .max_bytes = 1ull << 32,
                            .max_probes = 3};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, silent_first_probe, &c, &r), PB_OK);
    assert_true(c.calls >= 2);
    assert_true(c.seen[0] == 4096 && c.seen[1] == 16 * 4096);
}

/* A probe that never gets near the target (the same ratio at every size): the
 * search stops after exactly max_probes probes, the best of them kept, not converged. */
static int flat_probe(void *ctx, uint64_t bytes, double *ratio)
{
    (void)bytes;
    ++*(int *)ctx;
    *ratio = 0.5;
    return PB_OK;
}

static void test_stops_after_max_probes(void **state)
{
    (void)state;
    int calls = 0;
    pb_dp_target_cfg cfg = {.target = 0.112, .tol = 0.02, .start = 1 << 20, .align = 1, .max_bytes = 1ull << 30,
                            .max_probes = 3};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, flat_probe, &calls, &r), PB_OK);
    assert_int_equal(calls, 3);
    assert_int_equal(r.probes, 3);
    assert_false(r.converged);
    assert_true(r.ratio == 0.5 && r.grad_bytes == 1 << 20); /* every probe as far off: the first is kept */
}

/* A convex curve, r = (x / 1e6)^2: scaling overshoots, so the search brackets the
 * target and then interpolates inside the bracket, (target - r_lo) / (r_hi - r_lo)
 * of the way: 0.01, 2.56, 0.466, 0.840; the low end has moved twice, so the high
 * end's weight is halved (Illinois): 1.067, then 0.997, within 2% on the sixth probe. */
static int square_probe(void *ctx, uint64_t bytes, double *ratio)
{
    int *calls = ctx;
    ++*calls;
    *ratio = ((double)bytes / 1e6) * ((double)bytes / 1e6);
    return PB_OK;
}

static void test_a_bracket_is_interpolated(void **state)
{
    (void)state;
    int calls = 0;
    pb_dp_target_cfg cfg = {.target = 1, .tol = 0.02, .start = 100000, .align = 1, .max_bytes = 1ull << 30,
                            .max_probes = 12};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, square_probe, &calls, &r), PB_OK);
    assert_true(r.converged);
    assert_int_equal(r.probes, 6);
}

/* A knee: comm/compute grows with the size until the buffers leave the cache, then
 * jumps (as measured on a 2-core host: 0.099 at 28 MB, 0.211 at 33.9 MB). Plain
 * interpolation keeps the far end at the jump and creeps up from below, a probe a
 * time, 12 probes without reaching 2%; halving the far end's weight whenever the
 * low end moves twice in a row (Illinois) reaches it on the seventh. */
static int knee_probe(void *ctx, uint64_t bytes, double *ratio)
{
    static const double pts[][2] = {{10.87e6, 0.036}, {20.86e6, 0.069}, {24.8e6, 0.086}, {28.0e6, 0.099},
                                    {31.5e6, 0.111},  {33.0e6, 0.125},  {33.9e6, 0.211}, {60e6, 0.45}};
    curve *c = ctx;
    double x = (double)bytes;
    c->calls++;
    *ratio = pts[7][1];
    for (int i = 0; i < 7; i++)
        if (x <= pts[i + 1][0]) {
            *ratio = pts[i][1] + (pts[i + 1][1] - pts[i][1]) * (x - pts[i][0]) / (pts[i + 1][0] - pts[i][0]);
            break;
        }
    return PB_OK;
}

static void test_a_knee_moves_the_far_end_too(void **state)
{
    (void)state;
    curve c = {.fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 0.112, .tol = 0.02, .start = 10872832, .align = 4096,
                            .max_bytes = 1ull << 34, .max_probes = 12};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, knee_probe, &c, &r), PB_OK);
    assert_true(r.converged);
    assert_int_equal(r.probes, 7);
}

static void test_every_probe_is_aligned_and_within_bounds(void **state)
{
    (void)state;
    curve c = {.alpha_us = 300, .bw_Bpus = 500, .compute_us = 10000, .noise = 0.04, .fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 0.3, .tol = 0.005, .start = 12345, .align = 4096,
                            .max_bytes = 1 << 26, .max_probes = 20};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, probe, &c, &r), PB_OK);
    assert_true(c.calls >= 2 && c.calls <= 20);
    for (int k = 0; k < c.calls; k++) {
        assert_int_equal(c.seen[k] % 4096, 0);
        assert_true(c.seen[k] >= 4096 && c.seen[k] <= (1u << 26));
    }
    /* The answer is the probe nearest the target, whatever the noise did. */
    double best = INFINITY;
    for (int k = 0; k < c.calls; k++) {
        double rk = exact_ratio(&c, c.seen[k]) * (1 + (k % 2 ? -0.04 : 0.04));
        if (fabs(rk / 0.3 - 1) < best) best = fabs(rk / 0.3 - 1);
    }
    assert_true(fabs(fabs(r.ratio / 0.3 - 1) - best) < 1e-12);
    assert_int_equal(r.converged, best <= 0.005);
}

static void test_target_above_the_largest_size_stops_there(void **state)
{
    (void)state;
    curve c = {.alpha_us = 10, .bw_Bpus = 1000, .compute_us = 1e6, .fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 0.5, .tol = 0.02, .start = 1 << 20, .align = 1024,
                            .max_bytes = (1 << 24) + 100, .max_probes = 12};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, probe, &c, &r), PB_OK);
    assert_false(r.converged);
    assert_int_equal(r.grad_bytes, 1 << 24); /* max_bytes rounded down to the alignment */
    assert_true(r.probes < 12);              /* it stops at the limit, not after every probe */
}

static void test_target_below_the_latency_stops_at_the_smallest(void **state)
{
    (void)state;
    /* The latency alone is 0.1 of the compute: 0.05 is out of reach. */
    curve c = {.alpha_us = 100, .bw_Bpus = 1000, .compute_us = 1000, .fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 0.05, .tol = 0.02, .start = 1 << 20, .align = 256,
                            .max_bytes = 1 << 30, .max_probes = 12};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, probe, &c, &r), PB_OK);
    assert_false(r.converged);
    assert_int_equal(r.grad_bytes, 256);
    assert_true(r.probes < 12);
}

static void test_a_step_curve_ends_when_the_bracket_is_one_alignment_wide(void **state)
{
    (void)state;
    /* No size gives 0.112 within 0.1%: the ratio jumps at 8 KiB. The bracket closes there. */
    curve c = {.alpha_us = 0, .bw_Bpus = 1, .compute_us = 1, .fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 8192.5, .tol = 1e-9, .start = 1024, .align = 1,
                            .max_bytes = 1 << 20, .max_probes = 64};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, probe, &c, &r), PB_OK);
    assert_false(r.converged);
    assert_true(r.grad_bytes == 8192 || r.grad_bytes == 8193);
    assert_true(r.probes < 64);
}

static void test_a_failed_probe_ends_the_search_with_its_status(void **state)
{
    (void)state;
    curve c = {.alpha_us = 20, .bw_Bpus = 2000, .compute_us = 30000, .fail_at = 1};
    pb_dp_target_cfg cfg = {.target = 0.112, .tol = 0.0001, .start = 1 << 18, .align = 1024,
                            .max_bytes = 1ull << 34, .max_probes = 12};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, probe, &c, &r), PB_ERR_TIMEOUT);
    assert_int_equal(c.calls, 1);
}

static int nan_probe(void *ctx, uint64_t bytes, double *ratio)
{
    (void)ctx, (void)bytes;
    *ratio = NAN;
    return PB_OK;
}

static void test_refuses_what_it_cannot_search(void **state)
{
    (void)state;
    pb_dp_target_result r;
    pb_dp_target_cfg cfg = {.target = 0.112, .tol = 0.02, .start = 1 << 20, .align = 1024,
                            .max_bytes = 1 << 30, .max_probes = 12};
    pb_error_set_quiet_usage(1);
    assert_int_equal(pb_dp_target_search(&cfg, nan_probe, NULL, &r), PB_ERR_ENV);
    pb_dp_target_cfg bad = cfg;
    bad.target = 0;
    assert_int_equal(pb_dp_target_search(&bad, nan_probe, NULL, &r), PB_ERR_USAGE);
    bad = cfg, bad.max_bytes = 1000; /* below one alignment */
    assert_int_equal(pb_dp_target_search(&bad, nan_probe, NULL, &r), PB_ERR_USAGE);
    bad = cfg, bad.max_probes = 0;
    assert_int_equal(pb_dp_target_search(&bad, nan_probe, NULL, &r), PB_ERR_USAGE);
}

/* The tolerance is inclusive: a first probe off by exactly tol (|1.5/1 - 1| =
 * 0.5, exact in binary) is an answer, with no second probe. */
static void test_a_probe_at_the_tolerance_edge_is_an_answer(void **state)
{
    (void)state;
    curve c = {.alpha_us = 0, .bw_Bpus = 1000, .compute_us = 1, .fail_at = -1};
    pb_dp_target_cfg cfg = {.target = 1, .tol = 0.5, .start = 1500, .align = 1, .max_bytes = 1 << 20,
                            .max_probes = 8};
    pb_dp_target_result r;
    assert_int_equal(pb_dp_target_search(&cfg, probe, &c, &r), PB_OK);
    assert_int_equal(r.probes, 1);
    assert_int_equal(r.grad_bytes, 1500);
    assert_true(r.converged && r.ratio == 1.5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_converges_on_a_latency_bandwidth_curve),
        cmocka_unit_test(test_sizes_within_tol_end_the_search),
        cmocka_unit_test(test_a_knee_moves_the_far_end_too),
        cmocka_unit_test(test_every_probe_is_aligned_and_within_bounds),
        cmocka_unit_test(test_latency_bound_curve_takes_the_secant),
        cmocka_unit_test(test_align_zero_is_one),
        cmocka_unit_test(test_a_jump_closes_the_bracket_instead_of_oscillating),
        cmocka_unit_test(test_target_above_the_largest_size_stops_there),
        cmocka_unit_test(test_target_below_the_latency_stops_at_the_smallest),
        cmocka_unit_test(test_a_step_curve_ends_when_the_bracket_is_one_alignment_wide),
        cmocka_unit_test(test_a_failed_probe_ends_the_search_with_its_status),
        cmocka_unit_test(test_refuses_what_it_cannot_search),
        cmocka_unit_test(test_no_communication_measured_grows_sixteenfold),
        cmocka_unit_test(test_stops_after_max_probes),
        cmocka_unit_test(test_a_bracket_is_interpolated),
        cmocka_unit_test(test_a_probe_at_the_tolerance_edge_is_an_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
