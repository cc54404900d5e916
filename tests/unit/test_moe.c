/* The MoE layer's routing arithmetic (expert and rank loads, the skew, each
 * token's k distinct experts, the refusals) and the planner's MoE step model,
 * each against an independent computation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "plan/model.h"
#include "workload/moe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Every route: the loads sum to T*k, no expert above T, a rank's rows are its
 * experts', each token's k choices are k distinct experts with every expert's
 * rows consecutive, and the imbalance is the heaviest rank's over T*k. */
static void check_route(const pb_moe_route *r)
{
    int64_t T = r->tokens, total = 0, most = 0;
    for (int e = 0; e < r->experts; e++) {
        int64_t c = pb_moe_expert_rows(r, e);
        assert_true(c >= 0 && c <= T);
        total += c;
    }
    assert_int_equal(total, T * r->top_k);
    int per = r->experts / r->ep;
    int64_t first = 0;
    for (int d = 0; d < r->ep; d++) {
        int64_t rows = 0;
        for (int e = d * per; e < (d + 1) * per; e++) rows += pb_moe_expert_rows(r, e);
        assert_int_equal(pb_moe_rank_rows(r, d), rows);
        assert_int_equal(pb_moe_rank_first(r, d), first);
        assert_int_equal(pb_moe_recv_rows(r, d), r->ep * rows);
        for (int64_t s = first; s < first + rows; s++) assert_int_equal(pb_moe_row_expert(r, s) / per, d);
        first += rows;
        most = r->ep * rows > most ? r->ep * rows : most;
    }
    assert_true(fabs(pb_moe_imbalance(r) - (double)most / (double)(T * r->top_k)) < 1e-12);
    char *seen = calloc((size_t)r->experts, 1);
    for (int64_t t = 0; t < T; t++) {
        memset(seen, 0, (size_t)r->experts);
        for (int j = 0; j < r->top_k; j++) {
            int e = pb_moe_row_expert(r, (int64_t)j * T + t);
            assert_false(seen[e]); /* a token's experts are distinct */
            seen[e] = 1;
        }
    }
    free(seen);
}

static void test_loads(void **state)
{
    /* 8 experts top-2 on 100 tokens: mean 25, expert 0 at F = 2 gets 50, the others 150 / 7. */
    pb_moe_route r = {.tokens = 100, .experts = 8, .top_k = 2, .ep = 2, .skew = 2.0};
    assert_int_equal(pb_moe_route_check(&r), PB_OK);
    assert_int_equal(pb_moe_expert_rows(&r, 0), 50);
    assert_int_equal(pb_moe_expert_rows(&r, 1), 22);
    assert_int_equal(pb_moe_expert_rows(&r, 7), 21);
    assert_int_equal(pb_moe_rank_rows(&r, 0), 50 + 22 + 22 + 22);
    assert_true(fabs(pb_moe_imbalance(&r) - 2.0 * 116 / 200) < 1e-12);
    r.skew = 1.0; /* uniform: 25 each, every rank alike */
    for (int e = 0; e < 8; e++) assert_int_equal(pb_moe_expert_rows(&r, e), 25);
    assert_true(fabs(pb_moe_imbalance(&r) - 1.0) < 1e-12);
    /* One expert per rank, top-1: the expert's skew is the rank's. */
    pb_moe_route one = {.tokens = 64, .experts = 4, .top_k = 1, .ep = 4, .skew = 3.0};
    assert_int_equal(pb_moe_expert_rows(&one, 0), 48);
    assert_true(fabs(pb_moe_imbalance(&one) - 3.0) < 1e-12);
    /* Every valid route over a range of small shapes. */
    const double skews[] = {1.0, 1.5, 2.0, 3.0, 4.0, 8.0};
    for (int64_t T = 1; T <= 13; T += 3)
        for (int E = 1; E <= 8; E++)
            for (int k = 1; k <= E; k++)
                for (int ep = 1; ep <= E; ep++)
                    for (size_t s = 0; s < sizeof skews / sizeof skews[0]; s++) {
                        pb_moe_route q = {.tokens = T, .experts = E, .top_k = k, .ep = ep, .skew = skews[s]};
                        if (E % ep == 0 && pb_moe_route_check(&q) == PB_OK) check_route(&q);
                    }
}

static void test_refusals(void **state)
{
    pb_moe_route r = {.tokens = 100, .experts = 8, .top_k = 2, .ep = 4, .skew = 1.0};
    assert_int_equal(pb_moe_route_check(&r), PB_OK);
    r.ep = 3; /* 8 experts over 3 ranks */
    assert_int_equal(pb_moe_route_check(&r), PB_ERR_USAGE);
    r.ep = 4, r.top_k = 9; /* k > E */
    assert_int_equal(pb_moe_route_check(&r), PB_ERR_USAGE);
    r.top_k = 0;
    assert_int_equal(pb_moe_route_check(&r), PB_ERR_USAGE);
    r.top_k = 2, r.skew = 0.5;
    assert_int_equal(pb_moe_route_check(&r), PB_ERR_USAGE);
    r.skew = 4.0; /* 4 x 25 = 100 = T: every token chooses expert 0, still allowed */
    assert_int_equal(pb_moe_route_check(&r), PB_OK);
    r.skew = 4.1; /* 103 > T */
    assert_int_equal(pb_moe_route_check(&r), PB_ERR_USAGE);
    int g, i;
    assert_int_equal(pb_moe_group_of(8, 4, 6, &g, &i), PB_OK);
    assert_int_equal(g, 1);
    assert_int_equal(i, 2);
    assert_int_equal(pb_moe_group_of(8, 3, 0, &g, &i), PB_ERR_USAGE);
}

/* The step model: four all-to-alls per layer on the heaviest rank's bytes
 * (pairwise: (n-1) a + (n-1)/n S'/B), and that rank's FLOPs at the rate. */
static void test_step_model(void **state)
{
    pb_model_link link = {2e-6, 1e10};
    pb_model_moe_layer l = {.a2a_bytes = 8e6, .imbalance = 1.5, .n = 4, .expert_flops = 3e9, .other_flops = 1e9};
    double a2a = 3 * 2e-6 + 0.75 * 1.5 * 8e6 / 1e10;
    assert_true(fabs(pb_model_moe_a2a(&l, link) - a2a) < 1e-15);
    double want = 3.0 * (4 * a2a + (1e9 + 1.5 * 3e9) / 1e12);
    assert_true(fabs(pb_model_moe_step(3, &l, link, 1e12) - want) < 1e-12);
    l.imbalance = 1.0; /* uniform: the even all-to-all */
    assert_true(fabs(pb_model_moe_a2a(&l, link) - (3 * 2e-6 + 0.75 * 8e6 / 1e10)) < 1e-15);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loads),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_step_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
