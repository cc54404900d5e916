/* bf16/fp16 conversions (against exact values and rounding rules) and local reductions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/dtype.h"
#include "core/error.h"

#include <math.h>
#include <string.h>

static void bf16_exact_and_rounding(void **state)
{
    (void)state;
    assert_int_equal(pb_dtype_float_to_bf16(1.0f), 0x3f80);
    assert_int_equal(pb_dtype_float_to_bf16(-2.0f), 0xc000);
    assert_true(pb_dtype_bf16_to_float(0x3f80) == 1.0f);
    /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even -> 1. */
    assert_int_equal(pb_dtype_float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
    /* 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even) -> up. */
    assert_int_equal(pb_dtype_float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
    assert_true(isnan(pb_dtype_bf16_to_float(pb_dtype_float_to_bf16(NAN))));
    assert_true(isinf(pb_dtype_bf16_to_float(pb_dtype_float_to_bf16(INFINITY))));
    /* Every integer up to 256 is exact. */
    for (int i = -256; i <= 256; i++) assert_true(pb_dtype_bf16_to_float(pb_dtype_float_to_bf16((float)i)) == (float)i);
}

static void fp16_exact_and_rounding(void **state)
{
    (void)state;
    assert_int_equal(pb_dtype_float_to_fp16(1.0f), 0x3c00);
    assert_int_equal(pb_dtype_float_to_fp16(-2.0f), 0xc000);
    assert_int_equal(pb_dtype_float_to_fp16(65504.0f), 0x7bff);   /* largest finite */
    assert_int_equal(pb_dtype_float_to_fp16(65520.0f), 0x7c00);   /* rounds to Inf */
    assert_int_equal(pb_dtype_float_to_fp16(INFINITY), 0x7c00);   /* Inf stays Inf, not a NaN */
    assert_int_equal(pb_dtype_float_to_fp16(-INFINITY), 0xfc00);
    assert_int_equal(pb_dtype_float_to_fp16(NAN) & 0x7e00, 0x7e00); /* a quiet NaN */
    assert_int_equal(pb_dtype_float_to_fp16(0x1p-24f), 0x0001);   /* smallest subnormal */
    assert_int_equal(pb_dtype_float_to_fp16(0x1p-25f), 0x0000);   /* half of it: ties to even -> 0 */
    assert_int_equal(pb_dtype_float_to_fp16(0x1.8p-24f), 0x0002); /* 1.5 units: ties to even -> 2 */
    assert_int_equal(pb_dtype_float_to_fp16(1.0f + 0x1p-11f), 0x3c00); /* tie -> even */
    assert_true(pb_dtype_fp16_to_float(0x0001) == 0x1p-24f);
    assert_true(isnan(pb_dtype_fp16_to_float(pb_dtype_float_to_fp16(NAN))));
    /* Round trip of every finite fp16 value. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00) continue;
        assert_int_equal(pb_dtype_float_to_fp16(pb_dtype_fp16_to_float((uint16_t)h)), h == 0x8000 ? 0x8000 : h);
    }
}

static void reductions(void **state)
{
    (void)state;
    for (int t = 0; t < PB_BYTE; t++) {
        for (int op = 0; op < PB_REDOP_COUNT; op++) {
            char a[4 * 8], b[4 * 8];
            double x[4] = {1, -3, 2.5, 0}, y[4] = {2, 4, -1.5, -7};
            if (t == PB_INT32) x[2] = 2, y[2] = -1;
            for (int i = 0; i < 4; i++) {
                pb_dtype_set((pb_dtype)t, a, (size_t)i, x[i]);
                pb_dtype_set((pb_dtype)t, b, (size_t)i, y[i]);
            }
            pb_dtype_reduce_local((pb_dtype)t, (pb_dtype_redop)op, a, b, 4);
            for (int i = 0; i < 4; i++) {
                double want = op == PB_SUM ? x[i] + y[i] : op == PB_MAX ? fmax(x[i], y[i]) : fmin(x[i], y[i]);
                assert_true(pb_dtype_get((pb_dtype)t, b, (size_t)i) == want);
            }
        }
    }
}

static void names_and_parsing(void **state)
{
    (void)state;
    pb_dtype t;
    assert_int_equal(pb_dtype_parse("-d", "bf16", &t), PB_OK);
    assert_int_equal(t, PB_BFLOAT16);
    assert_string_equal(pb_dtype_name(t), "bfloat16");
    assert_int_equal(pb_dtype_parse("-d", "half", &t), PB_OK);
    assert_int_equal(pb_dtype_size(t), 2);
    assert_int_equal(pb_dtype_parse("-d", "byte", &t), PB_ERR_USAGE); /* p2p-only type */
    assert_int_equal(pb_dtype_parse("-d", "double", &t), PB_ERR_USAGE);
    pb_dtype_redop op;
    assert_int_equal(pb_dtype_redop_parse("-o", "max", &op), PB_OK);
    assert_int_equal(op, PB_MAX);
    assert_int_equal(pb_dtype_redop_parse("-o", "prod", &op), PB_ERR_USAGE);
}

int main(void)
{
    pb_error_set_quiet_usage(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bf16_exact_and_rounding),
        cmocka_unit_test(fp16_exact_and_rounding),
        cmocka_unit_test(reductions),
        cmocka_unit_test(names_and_parsing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
