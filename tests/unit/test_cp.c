/* Context parallelism's ring (which block each rank holds at each step, what
 * each exchange carries, block bytes, groups) and the planner's ring step
 * model, each against an independent computation: a simulation of the ring
 * passing tagged blocks and accumulators. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "plan/model.h"
#include "workload/cp.h"

#include <math.h>
#include <string.h>

#define MAXC 16

/* The forward ring, simulated: every rank starts with its own block (tagged
 * with its owner), computes with what it holds, and when the step's exchange
 * carries K/V passes it to rank + 1. Each rank must see every block exactly
 * once, and hold at step k the block pb_cp_block_at names. */
static void simulate_forward(int c)
{
    int held[MAXC], seen[MAXC][MAXC];
    memset(seen, 0, sizeof seen);
    for (int r = 0; r < c; r++) held[r] = r;
    for (int k = 0; k < c; k++) {
        for (int r = 0; r < c; r++) {
            assert_int_equal(held[r], pb_cp_block_at(c, r, k));
            seen[r][held[r]]++;
        }
        pb_cp_exchange x = pb_cp_exchange_at(c, k, 0);
        assert_int_equal(x.dkv, 0);
        assert_int_equal(x.kv, k < c - 1);
        if (!x.kv) continue;
        int next[MAXC];
        for (int r = 0; r < c; r++) next[(r + 1) % c] = held[r];
        memcpy(held, next, sizeof next);
    }
    for (int r = 0; r < c; r++)
        for (int o = 0; o < c; o++) assert_int_equal(seen[r][o], 1);
}

/* The backward ring: the accumulator a rank adds its contribution to at step
 * k is the one that arrived with the exchange (block k's, from rank - 1);
 * after the last exchange every accumulator holds one contribution of every
 * rank and sits with its block's owner. Contributions are bits: rank r adds
 * 1 << r to the accumulator of the block it computes. */
static void simulate_backward(int c)
{
    int held[MAXC], acc_block[MAXC], mine_block[MAXC];
    unsigned acc[MAXC], mine[MAXC];
    for (int r = 0; r < c; r++) held[r] = r, acc_block[r] = -1, acc[r] = 0;
    for (int k = 0; k <= c; k++) {
        pb_cp_exchange x = pb_cp_exchange_at(c, k, 1);
        assert_int_equal(x.kv, k < c - 1);
        assert_int_equal(x.dkv, c > 1 && k >= 1);
        if (x.dkv) { /* the accumulator completed last step moves on */
            int nb[MAXC];
            unsigned na[MAXC];
            for (int r = 0; r < c; r++) nb[(r + 1) % c] = mine_block[r], na[(r + 1) % c] = mine[r];
            memcpy(acc_block, nb, sizeof nb);
            memcpy(acc, na, sizeof na);
        }
        if (k == c) break;
        for (int r = 0; r < c; r++) {
            assert_int_equal(held[r], pb_cp_block_at(c, r, k));
            if (k > 0) assert_int_equal(acc_block[r], held[r]); /* the accumulator of the block in hand */
            mine_block[r] = held[r];
            mine[r] = (k > 0 ? acc[r] : 0) | (1u << r);
        }
        if (x.kv) {
            int next[MAXC];
            for (int r = 0; r < c; r++) next[(r + 1) % c] = held[r];
            memcpy(held, next, sizeof next);
        }
    }
    for (int r = 0; r < c; r++) {
        int block = c > 1 ? acc_block[r] : mine_block[r];
        unsigned bits = c > 1 ? acc[r] : mine[r];
        assert_int_equal(block, r);                 /* home */
        assert_int_equal(bits, (1u << c) - 1);      /* every rank's contribution, once */
    }
}

static void test_ring_schedule(void **state)
{
    for (int c = 1; c <= MAXC; c++) {
        simulate_forward(c);
        simulate_backward(c);
    }
    assert_int_equal(pb_cp_block_at(4, 1, 2), 3);
    assert_int_equal(pb_cp_block_at(4, 3, 3), 0);
    assert_int_equal(pb_cp_transfers(1), 0);
    assert_int_equal(pb_cp_transfers(2), 4);
    assert_int_equal(pb_cp_transfers(8), 22);
}

static void test_block_bytes_and_groups(void **state)
{
    /* llama3-8b at 8k tokens on 8 ranks: 1024 tokens x 8 KV heads x 128 x 2 B, K and V */
    assert_int_equal(pb_cp_block_bytes(1, 8192, 8, 8, 128, 2), 2ull * 1024 * 8 * 128 * 2);
    assert_int_equal(pb_cp_block_bytes(2, 128, 2, 8, 32, 4), 2ull * 2 * 64 * 8 * 32 * 4);
    int g = -1, i = -1;
    assert_int_equal(pb_cp_group_of(8, 4, 6, &g, &i), PB_OK);
    assert_int_equal(g, 1);
    assert_int_equal(i, 2);
    assert_int_equal(pb_cp_group_of(4, 3, 0, &g, &i), PB_ERR_USAGE);
    assert_int_equal(pb_cp_group_of(4, 0, 0, &g, &i), PB_ERR_USAGE);
    assert_int_equal(pb_cp_check_seq(128, 4), PB_OK);
    assert_int_equal(pb_cp_check_seq(128, 3), PB_ERR_USAGE);
}

/* Validation's rows: every row within the budget, else as many as fit (at
 * least 1), a request clamped to the block; rows spread from row 0. */
static void test_check_rows(void **state)
{
    (void)state;
    /* run_all's CPU shapes: tiny at 2 x 128 tokens, tiny-gqa at 8 x 128: every row */
    assert_int_equal(pb_cp_check_rows(1, 4, 256, 2, 16, PB_CP_CHECK_AUTO), 128);
    /* llama3-70b at 65536 tokens on 8: 64 heads x 65536 x 128 = 2^29 a row, 2^33 fit 16 of 8192 */
    assert_int_equal(pb_cp_check_rows(1, 64, 65536, 8, 128, PB_CP_CHECK_AUTO), 16);
    /* one row over: 2^33 / (2^33 + 1) products a row rounds down to 0, kept at 1 */
    assert_int_equal(pb_cp_check_rows(1, 1, (1ll << 33) + 1, 1, 1, PB_CP_CHECK_AUTO), 1);
    /* exactly the budget: every row */
    assert_int_equal(pb_cp_check_rows(1, 1, 1 << 16, 1, 2, PB_CP_CHECK_AUTO), 1 << 16);
    assert_int_equal(pb_cp_check_rows(1, 1, 1 << 16, 1, 4, PB_CP_CHECK_AUTO), 1 << 15);
    assert_int_equal(pb_cp_check_rows(1, 64, 65536, 8, 128, PB_CP_CHECK_ALL), 8192);
    assert_int_equal(pb_cp_check_rows(1, 64, 65536, 8, 128, 3), 3);
    assert_int_equal(pb_cp_check_rows(1, 4, 64, 2, 16, 100), 32);
    assert_int_equal(pb_cp_check_row(0, 3, 32), 0);
    assert_int_equal(pb_cp_check_row(1, 3, 32), 10);
    assert_int_equal(pb_cp_check_row(2, 3, 32), 21);
    assert_int_equal(pb_cp_check_row(31, 32, 32), 31);
}

/* The step model against the schedule walked step by step: each ring step
 * is the longer of its attention and its exchange with overlap, their sum
 * without; the last accumulator transfer is always exposed. */
static double walk(int c, const pb_model_cp_block *t, int overlap)
{
    double total = 0;
    for (int bwd = 0; bwd < 2; bwd++)
        for (int k = 0; k < c; k++) {
            pb_cp_exchange x = pb_cp_exchange_at(c, k, bwd);
            double comm = x.kv * t->kv + x.dkv * t->dkv, comp = bwd ? t->bwd : t->fwd;
            total += overlap ? fmax(comp, comm) : comp + comm;
        }
    return total + pb_cp_exchange_at(c, c, 1).dkv * t->dkv;
}

static void test_step_model(void **state)
{
    pb_model_cp_block terms[] = {{1, 2.5, 0.3, 0.3}, {1, 2.5, 1.5, 1.5}, {1, 2.5, 3, 0.2}, {0.1, 0.25, 1, 1}};
    for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++)
        for (int c = 1; c <= 8; c++)
            for (int ov = 0; ov < 2; ov++)
                assert_true(fabs(pb_model_cp_step(c, &terms[i], ov) - walk(c, &terms[i], ov)) < 1e-12);
    /* By hand: c = 2, f 1, b 2.5, transfers 0.3: overlapped 1 + 1 + 2.5 + 2.5 + 0.3; serial adds every transfer. */
    assert_true(fabs(pb_model_cp_step(2, &terms[0], 1) - 7.3) < 1e-12);
    assert_true(fabs(pb_model_cp_step(2, &terms[0], 0) - (7.0 + 4 * 0.3)) < 1e-12);
    assert_true(fabs(pb_model_cp_compute(4, &terms[0]) - 14.0) < 1e-12);
    /* Hidden when a block's attention exceeds its exchange: the overlapped step is compute + the last transfer. */
    assert_true(fabs(pb_model_cp_step(4, &terms[0], 1) - (14.0 + 0.3)) < 1e-12);
    assert_true(pb_model_cp_step(4, &terms[3], 1) > pb_model_cp_compute(4, &terms[3]) + 1.0);

    pb_model_cp_block b;
    pb_model_link l = {.alpha_s = 1e-5, .bw_Bps = 1e10};
    pb_model_cp_block_of(1, 8192, 4096, 8, 1e12, 4194304, l, &b);
    assert_true(fabs(b.fwd - 4.0 * 1024 * 1024 * 4096 / 1e12) < 1e-15);
    assert_true(fabs(b.bwd - 2.5 * b.fwd) < 1e-15);
    assert_true(fabs(b.kv - (1e-5 + 4194304 / 1e10)) < 1e-15 && b.dkv == b.kv);
    pb_model_cp_block_of(1, 8192, 4096, 1, 1e12, 4194304, l, &b);
    assert_true(b.kv == 0 && b.dkv == 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_schedule),
        cmocka_unit_test(test_block_bytes_and_groups),
        cmocka_unit_test(test_check_rows),
        cmocka_unit_test(test_step_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
