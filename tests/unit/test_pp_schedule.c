/* Pipeline schedules: action lists, transfers, in-flight counts, and the
 * simulated step time against the model's m/(m+p-1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/error.h"
#include "plan/model.h"
#include "workload/pp_schedule.h"

#include <malloc.h>
#include <math.h>
#include <string.h>

#define CLOSE(x, want) assert_true(fabs((x) - (want)) <= 1e-9 * fmax(1.0, fabs(want)))

static void build_all(pb_pp_sched s, int p, int m, int v, pb_pp_schedule_plan *plans)
{
    for (int r = 0; r < p; r++) assert_int_equal(pb_pp_schedule_plan_build(s, p, m, v, r, &plans[r]), PB_OK);
}

static void free_all(pb_pp_schedule_plan *plans, int p)
{
    for (int r = 0; r < p; r++) pb_pp_schedule_plan_free(&plans[r]);
}

static void test_names(void **state)
{
    (void)state;
    pb_pp_sched s;
    assert_int_equal(pb_pp_sched_parse("--schedule", "1f1b", &s), PB_OK);
    assert_int_equal(s, PB_PP_1F1B);
    assert_string_equal(pb_pp_sched_name(PB_PP_INTERLEAVED), "interleaved");
    assert_int_equal(pb_pp_sched_parse("--schedule", "zigzag", &s), PB_ERR_USAGE);
    assert_int_equal(pb_pp_schedule_valid(PB_PP_GPIPE, 4, 0, 1), PB_ERR_USAGE);
    assert_int_equal(pb_pp_schedule_valid(PB_PP_INTERLEAVED, 4, 6, 2), PB_ERR_USAGE); /* m % p */
    assert_int_equal(pb_pp_schedule_valid(PB_PP_INTERLEAVED, 4, 8, 1), PB_ERR_USAGE);
    assert_int_equal(pb_pp_schedule_valid(PB_PP_INTERLEAVED, 1, 8, 2), PB_ERR_USAGE);
    assert_int_equal(pb_pp_schedule_valid(PB_PP_INTERLEAVED, 4, 8, 2), PB_OK);
    /* a stage outside 0..p-1 is refused, each schedule, and the plan is left empty (freeable) */
    pb_pp_schedule_plan pl;
    for (pb_pp_sched k = PB_PP_GPIPE; k <= PB_PP_INTERLEAVED; k++)
        for (int stage = -1; stage <= 4; stage += 5) {
            assert_int_equal(pb_pp_schedule_plan_build(k, 4, 8, 2, stage, &pl), PB_ERR_USAGE);
            assert_null(pl.a);
            assert_int_equal(pl.n, 0);
        }
    assert_int_equal(pb_pp_schedule_plan_build(PB_PP_1F1B, 4, 8, 1, 3, &pl), PB_OK); /* the last stage is one */
    pb_pp_schedule_plan_free(&pl);
}

/* GPipe: F0..F(m-1) then B0..B(m-1); transfers only between neighbours. */
static void test_gpipe_order(void **state)
{
    (void)state;
    pb_pp_schedule_plan pl;
    assert_int_equal(pb_pp_schedule_plan_build(PB_PP_GPIPE, 3, 4, 1, 1, &pl), PB_OK);
    assert_int_equal(pl.n, 8);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(pl.a[k].op, PB_PP_FWD);
        assert_int_equal(pl.a[k].mb, k);
        assert_int_equal(pl.a[k].recv_from, 0);
        assert_int_equal(pl.a[k].send_to, 2);
        assert_int_equal(pl.a[4 + k].op, PB_PP_BWD);
        assert_int_equal(pl.a[4 + k].recv_from, 2);
        assert_int_equal(pl.a[4 + k].send_to, 0);
    }
    assert_int_equal(pb_pp_schedule_plan_max_in_flight(&pl), 4);
    pb_pp_schedule_plan_free(&pl);
    assert_int_equal(pb_pp_schedule_plan_build(PB_PP_GPIPE, 3, 4, 1, 0, &pl), PB_OK);
    assert_int_equal(pl.a[0].recv_from, -1); /* the first stage makes its input */
    assert_int_equal(pl.a[7].send_to, -1);   /* and keeps its input gradient */
    pb_pp_schedule_plan_free(&pl);
}

/* 1F1B on stage 1 of 4 with m = 6: warm-up F0 F1, steady F2 B0 F3 B1 F4 B2 F5 B3, cool-down B4 B5. */
static void test_1f1b_order(void **state)
{
    (void)state;
    static const char want[] = "F0F1F2B0F3B1F4B2F5B3B4B5";
    pb_pp_schedule_plan pl;
    assert_int_equal(pb_pp_schedule_plan_build(PB_PP_1F1B, 4, 6, 1, 1, &pl), PB_OK);
    char got[64] = "", *w = got;
    for (int i = 0; i < pl.n; i++) w += sprintf(w, "%c%d", pl.a[i].op == PB_PP_FWD ? 'F' : 'B', pl.a[i].mb);
    assert_string_equal(got, want);
    assert_int_equal(pb_pp_schedule_plan_max_in_flight(&pl), 3);
    pb_pp_schedule_plan_free(&pl);
}

/* Measured in-flight: GPipe m, 1F1B min(m, p - stage), as the model says for stage 0. */
static void test_in_flight(void **state)
{
    (void)state;
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 16; m++)
            for (int r = 0; r < p; r++) {
                pb_pp_schedule_plan g, f;
                assert_int_equal(pb_pp_schedule_plan_build(PB_PP_GPIPE, p, m, 1, r, &g), PB_OK);
                assert_int_equal(pb_pp_schedule_plan_build(PB_PP_1F1B, p, m, 1, r, &f), PB_OK);
                assert_int_equal(pb_pp_schedule_plan_max_in_flight(&g), m);
                assert_int_equal(pb_pp_schedule_plan_max_in_flight(&f), m < p - r ? m : p - r);
                if (r == 0) {
                    assert_int_equal(pb_pp_schedule_plan_max_in_flight(&g), pb_model_pipe_in_flight(PB_PP_GPIPE, m, p));
                    assert_int_equal(pb_pp_schedule_plan_max_in_flight(&f), pb_model_pipe_in_flight(PB_PP_1F1B, m, p));
                }
                pb_pp_schedule_plan_free(&g);
                pb_pp_schedule_plan_free(&f);
            }
}

/* Every schedule is consistent and deadlock-free, and with free transfers the
 * simulated step is (m+p-1)(tf+tb) for gpipe and 1f1b: efficiency m/(m+p-1). */
static void test_simulated_efficiency(void **state)
{
    (void)state;
    pb_pp_schedule_plan plans[8];
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 32; m++)
            for (int s = PB_PP_GPIPE; s <= PB_PP_1F1B; s++) {
                build_all((pb_pp_sched)s, p, m, 1, plans);
                assert_int_equal(pb_pp_schedule_check(plans, p), PB_OK);
                double step = 0, busy[8];
                assert_int_equal(pb_pp_schedule_simulate(plans, p, 1.0, 2.0, 0.0, &step, busy), PB_OK);
                CLOSE(step, (m + p - 1) * 3.0);
                CLOSE(m * 3.0 / step, pb_model_pipe_efficiency(m, p));
                for (int r = 0; r < p; r++) CLOSE(busy[r], m * 3.0);
                free_all(plans, p);
            }
    /* The documents' figure: p = 8, m = 32 gives 82%. */
    build_all(PB_PP_1F1B, 8, 32, 1, plans);
    double step = 0;
    assert_int_equal(pb_pp_schedule_simulate(plans, 8, 1.0, 2.0, 0.0, &step, NULL), PB_OK);
    assert_true(fabs(32 * 3.0 / step - 0.82) < 0.005);
    free_all(plans, 8);
}

/* A simulation frees what it allocates: the heap in use after a second run is
 * what it was before it (the first fills the C library's caches). Plans of
 * several sizes, so that no freed block is simply reused by the next run. */
static void test_simulate_frees(void **state)
{
    (void)state;
    pb_pp_schedule_plan plans[8];
    for (int round = 0; round < 2; round++) {
        size_t before = mallinfo2().uordblks;
        for (int m = 4; m <= 32; m *= 2) {
            build_all(PB_PP_1F1B, 8, m, 1, plans);
            size_t built = mallinfo2().uordblks;
            double step = 0;
            assert_int_equal(pb_pp_schedule_simulate(plans, 8, 1.0, 2.0, 0.0, &step, NULL), PB_OK);
            if (round == 1) assert_int_equal(mallinfo2().uordblks, built);
            free_all(plans, 8);
        }
        if (round == 1) assert_int_equal(mallinfo2().uordblks, before);
    }
}

/* Interleaved: consistent for every (p, v, m multiple of p), holds more than
 * 1F1B's p but fewer than all m*v, and its bubble shrinks by v. */
static void test_interleaved(void **state)
{
    (void)state;
    pb_pp_schedule_plan plans[8];
    for (int p = 2; p <= 8; p++)
        for (int v = 2; v <= 4; v++)
            for (int m = p; m <= 4 * p; m += p) {
                build_all(PB_PP_INTERLEAVED, p, m, v, plans);
                assert_int_equal(plans[0].n, 2 * m * v);
                assert_int_equal(pb_pp_schedule_check(plans, p), PB_OK);
                double step = 0;
                /* chunk times 1/v of a stage: forward 1, backward 2 per stage */
                assert_int_equal(pb_pp_schedule_simulate(plans, p, 1.0 / v, 2.0 / v, 0.0, &step, NULL), PB_OK);
                double eff = m * 3.0 / step;
                assert_true(eff >= pb_model_pipe_efficiency(m, p) - 1e-9);
                assert_true(eff <= 1.0 + 1e-9);
                if (m > p) CLOSE(eff, pb_model_pipe_efficiency(m * v, p));
                assert_true(pb_pp_schedule_plan_max_in_flight(&plans[0]) <= m * v);
                /* Megatron's warm-up on stage 0: 2(p-1) + (v-1)p forwards, then one more before the first backward. */
                int warm = m == p ? m * v : 2 * (p - 1) + (v - 1) * p + 1;
                assert_int_equal(pb_pp_schedule_plan_max_in_flight(&plans[0]), warm < m * v ? warm : m * v);
                free_all(plans, p);
            }
}

/* Megatron-LM's interleaved warm-up: stage s runs (p-s-1)*2 + (v-1)*p forward
 * chunks (all m*v of them when m == p, or when that is more) before its first
 * backward; the steady phase then opens with one more forward. */
static void test_interleaved_warmup(void **state)
{
    (void)state;
    for (int p = 2; p <= 8; p++)
        for (int v = 2; v <= 4; v++)
            for (int m = p; m <= 4 * p; m += p)
                for (int s = 0; s < p; s++) {
                    pb_pp_schedule_plan pl;
                    assert_int_equal(pb_pp_schedule_plan_build(PB_PP_INTERLEAVED, p, m, v, s, &pl), PB_OK);
                    int total = m * v, warm = m == p ? total : (p - s - 1) * 2 + (v - 1) * p;
                    if (warm > total) warm = total;
                    int before = 0; /* forwards before the first backward */
                    while (before < pl.n && pl.a[before].op == PB_PP_FWD) before++;
                    assert_int_equal(before, warm < total ? warm + 1 : total);
                    pb_pp_schedule_plan_free(&pl);
                }
    /* p = 4, v = 2, m = 8, stage 0: 3*2 + 1*4 = 10 warm-up chunks of 16. */
    pb_pp_schedule_plan pl;
    assert_int_equal(pb_pp_schedule_plan_build(PB_PP_INTERLEAVED, 4, 8, 2, 0, &pl), PB_OK);
    for (int i = 0; i <= 10; i++) assert_int_equal(pl.a[i].op, PB_PP_FWD);
    assert_int_equal(pl.a[11].op, PB_PP_BWD);
    pb_pp_schedule_plan_free(&pl);
}

/* A plan whose receive order differs from its sender's is rejected. */
static void test_check_rejects(void **state)
{
    (void)state;
    pb_pp_schedule_plan plans[2];
    build_all(PB_PP_GPIPE, 2, 3, 1, plans);
    pb_pp_schedule_action t = plans[1].a[0];
    plans[1].a[0] = plans[1].a[1];
    plans[1].a[1] = t;
    assert_int_equal(pb_pp_schedule_check(plans, 2), PB_ERR_CHECK);
    assert_non_null(strstr(pb_error_last(), "receives out of order"));
    free_all(plans, 2);
    /* Activations go to the next stage only: stage 0 of 3 sending to stage 2 is refused, by name. */
    pb_pp_schedule_plan three[3];
    build_all(PB_PP_1F1B, 3, 2, 1, three);
    assert_int_equal(pb_pp_schedule_check(three, 3), PB_OK);
    assert_int_equal(three[0].a[0].op, PB_PP_FWD);
    three[0].a[0].send_to = 2;
    assert_int_equal(pb_pp_schedule_check(three, 3), PB_ERR_CHECK);
    assert_non_null(strstr(pb_error_last(), "stage 0 sends to or receives from a stage that is not next to it"));
    free_all(three, 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),        cmocka_unit_test(test_gpipe_order),
        cmocka_unit_test(test_1f1b_order),   cmocka_unit_test(test_in_flight),
        cmocka_unit_test(test_simulated_efficiency), cmocka_unit_test(test_interleaved),
        cmocka_unit_test(test_interleaved_warmup),  cmocka_unit_test(test_simulate_frees),
        cmocka_unit_test(test_check_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
