/* p2p_sweep's counts: OSU's iterations per mode on either side of 8 KiB, and
 * the time cap (--max-seconds-per-size) shared between warm-up (a quarter)
 * and the timed iterations (what is left), checked against the rule in
 * docs/METRICS.md rather than against the code's arithmetic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/p2p.h"
#include "core/options.h"

/* OSU: latency 10000 (+100) up to 8192 B, 1000 (+10) from 8193 B; bw and
 * bibw 100 (+10) and 20 (+2). */
static void test_osu_counts_at_8k(void **state)
{
    (void)state;
    static const int want[PB_P2P_MODES][4] = {
        [PB_P2P_LATENCY] = {10000, 100, 1000, 10}, [PB_P2P_BW] = {100, 10, 20, 2}, [PB_P2P_BIBW] = {100, 10, 20, 2}};
    pb_options o;
    pb_options_defaults(&o);
    for (int m = 0; m < PB_P2P_MODES; m++) {
        int n, w;
        pb_options_iters_for(&o, pb_p2p_policy((pb_p2p_mode)m), 8192, &n, &w);
        assert_int_equal(n, want[m][0]);
        assert_int_equal(w, want[m][1]);
        pb_options_iters_for(&o, pb_p2p_policy((pb_p2p_mode)m), 8193, &n, &w);
        assert_int_equal(n, want[m][2]);
        assert_int_equal(w, want[m][3]);
    }
}

#define SLACK 1e-9

/* Warm-up: the first iteration always runs; more only while the warm-up as a
 * whole stays within a quarter of the cap, and at most -w in all. */
static void test_warmup_share_of_cap(void **state)
{
    (void)state;
    assert_int_equal(pb_p2p_warmup_more(1e6, 1e4, 100), 24); /* 25 x 10 ms = 250 ms, a quarter of 1 s */
    static const double caps[] = {1e5, 1e6, 3.3e6}, firsts[] = {1, 7.5, 1000, 33333, 2e5, 5e6};
    static const int warmups[] = {0, 1, 2, 10, 100, 100000000};
    for (size_t c = 0; c < sizeof caps / sizeof *caps; c++)
        for (size_t f = 0; f < sizeof firsts / sizeof *firsts; f++)
            for (size_t w = 0; w < sizeof warmups / sizeof *warmups; w++) {
                double cap = caps[c], first = firsts[f], quarter = cap / 4;
                int asked = warmups[w] > 1 ? warmups[w] - 1 : 0;
                int more = pb_p2p_warmup_more(cap, first, warmups[w]);
                assert_true(more >= 0 && more <= asked);
                if (more > 0) assert_true((1 + more) * first <= quarter * (1 + SLACK));
                if (more < asked) assert_true((2 + more) * first > quarter * (1 - SLACK)); /* the next would not fit */
                assert_int_equal(pb_p2p_warmup_more(0, first, warmups[w]), asked); /* no cap: -w */
            }
}

/* Timed: at least two (one when -n is 1: one sample shows no spread); more
 * only while warm-up plus the timed iterations, at warm-up's rate, end within
 * the cap; at most -n. */
static void test_timed_within_cap(void **state)
{
    (void)state;
    assert_int_equal(pb_p2p_timed_iters(1e6, 2.5e5, 25, 1000), 75); /* 750 ms left at 10 ms each */
    assert_int_equal(pb_p2p_timed_iters(1e6, 9e5, 1, 100), 2);  /* one 900 ms window: still two timed */
    assert_int_equal(pb_p2p_timed_iters(1e6, 9e5, 1, 1), 1);    /* -n 1 */
    static const double caps[] = {1e5, 1e6, 3.3e6}, spents[] = {3, 1000, 2.5e4, 2.5e5, 9e5, 4e6};
    static const int warms[] = {1, 3, 100}, iters[] = {1, 20, 1000, 100000000};
    for (size_t c = 0; c < sizeof caps / sizeof *caps; c++)
        for (size_t s = 0; s < sizeof spents / sizeof *spents; s++)
            for (size_t w = 0; w < sizeof warms / sizeof *warms; w++)
                for (size_t i = 0; i < sizeof iters / sizeof *iters; i++) {
                    double cap = caps[c], spent = spents[s], per = spent / warms[w];
                    int n = pb_p2p_timed_iters(cap, spent, warms[w], iters[i]);
                    int least = iters[i] < 2 ? iters[i] : 2;
                    assert_true(n >= least && n <= iters[i]);
                    if (n > least) assert_true(spent + n * per <= cap * (1 + SLACK));
                    if (n < iters[i]) assert_true(spent + (n + 1) * per > cap * (1 - SLACK));
                    assert_int_equal(pb_p2p_timed_iters(0, spent, warms[w], iters[i]), iters[i]);
                }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_osu_counts_at_8k),
        cmocka_unit_test(test_warmup_share_of_cap),
        cmocka_unit_test(test_timed_within_cap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
