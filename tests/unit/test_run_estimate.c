/* run_all.sh --dry-run's estimate: sizes of a sweep, the matrix's rounds (the
 * schedule p2p_sweep runs), each step bounded by its caps plus the launch and
 * never more than the step limit, steps skipped as run_all.sh skips them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "plan/run_estimate.h"

#include <string.h>

static void sizes(void **state)
{
    (void)state;
    pb_run_estimate_sweep s = {8, 1 << 20, 8, 0.25}; /* 8, 64, 512, 4K, 32K, 256K */
    assert_int_equal(pb_run_estimate_sizes(&s), 6);
    s = (pb_run_estimate_sweep){8, (uint64_t)64 << 20, 4, 3}; /* 8 .. 32M by 4 */
    assert_int_equal(pb_run_estimate_sizes(&s), 12);
    s = (pb_run_estimate_sweep){1 << 20, 1 << 20, 2, 1};
    assert_int_equal(pb_run_estimate_sizes(&s), 1);
}

/* (nodes - 1) x ranks_per_node + (ranks_per_node - 1) = N - 1 for even counts;
 * one node: a round-robin tournament, N - 1 (even) or N (odd). */
static void matrix_rounds(void **state)
{
    (void)state;
    assert_int_equal(pb_run_estimate_matrix_rounds(4, 2), 3);
    assert_int_equal(pb_run_estimate_matrix_rounds(1024, 8), 1023);
    assert_int_equal(pb_run_estimate_matrix_rounds(4, 4), 3);
    assert_int_equal(pb_run_estimate_matrix_rounds(5, 5), 5);
}

static const pb_run_estimate_step *find(const pb_run_estimate_step *st, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(st[i].name, name) == 0) return &st[i];
    fail_msg("no step %s", name);
    return NULL;
}

static void steps(void **state)
{
    (void)state;
    pb_run_estimate_in in = {.nranks = 4, .ranks_per_node = 2, .step_limit_s = 90, .launch_s = 2, .tool_s = 10,
                             .ncolls = 7, .coll = {8, 1 << 20, 8, 0.25}, .p2p = {1, 1 << 20, 16, 0.25},
                             .matrix_cap_s = 1, .hybrid = 1};
    pb_run_estimate_step st[PB_RUN_ESTIMATE_MAX_STEPS];
    double total;
    int n = pb_run_estimate_steps(&in, st, &total);
    assert_int_equal(n, 12);
    assert_true(find(st, n, "coll_sweep")->seconds == 2 + 7 * 6 * 0.25);
    assert_true(find(st, n, "coll_sweep_intra")->seconds == 2 + 7 * 6 * 0.25); /* 2 nodes */
    assert_true(find(st, n, "p2p_sweep")->seconds == 2 + 3 * 6 * 0.25);       /* 1, 16, .. 1M */
    assert_true(find(st, n, "p2p_matrix")->seconds == 2 + 3 * 2 * 1.0);       /* 3 rounds */
    assert_true(find(st, n, "dp_allreduce")->seconds == 90);
    assert_true(find(st, n, "report")->seconds == 10);
    assert_true(find(st, n, "compute_probe")->seconds == 10 && find(st, n, "calibrate")->seconds == 10);
    double sum = 0;
    for (int i = 0; i < n; i++) sum += st[i].seconds;
    assert_true(total == sum);

    /* one node: no intra sweep; no hybrid; the matrix capped at the step limit */
    in = (pb_run_estimate_in){.nranks = 64, .ranks_per_node = 64, .step_limit_s = 90, .launch_s = 2, .tool_s = 10,
                              .ncolls = 7, .coll = {8, 1 << 20, 8, 0.25}, .p2p = {1, 1 << 20, 16, 0.25},
                              .matrix_cap_s = 1, .acceptance = 1};
    n = pb_run_estimate_steps(&in, st, &total);
    assert_int_equal(n, 13);
    assert_true(find(st, n, "coll_sweep_intra")->seconds == 0);
    assert_true(find(st, n, "hybrid_3d")->seconds == 0);
    assert_true(find(st, n, "p2p_matrix")->seconds == 90); /* 63 rounds x 2 s > 88 */
    assert_non_null(strstr(find(st, n, "p2p_matrix")->why, "step limit"));
    assert_true(find(st, n, "acceptance")->seconds == 10);

    /* --reproduce: its all-reduce sweep (1M..64M by 2: 7 sizes at 0.5 s), 3 workloads, 2 scripts */
    in.reproduce = 1;
    double before = total;
    n = pb_run_estimate_steps(&in, st, &total);
    assert_int_equal(n, 19);
    assert_true(find(st, n, "repro_busbw")->seconds == 2 + 7 * 0.5);
    assert_true(find(st, n, "repro_pp")->seconds == 90);
    assert_true(total == before + (2 + 7 * 0.5) + 3 * 90 + 2 * 10);

    /* one rank: nothing that needs a peer */
    in.nranks = in.ranks_per_node = 1;
    n = pb_run_estimate_steps(&in, st, &total);
    assert_true(find(st, n, "p2p_sweep")->seconds == 0 && find(st, n, "p2p_matrix")->seconds == 0 &&
                find(st, n, "plan_fit")->seconds == 0 && find(st, n, "calibrate")->seconds == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes),
        cmocka_unit_test(matrix_rounds),
        cmocka_unit_test(steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
