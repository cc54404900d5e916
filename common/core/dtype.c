#include "core/dtype.h"

#include "core/error.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[PB_DTYPE_COUNT] = {
    [PB_FLOAT32] = {"float", 4}, [PB_BFLOAT16] = {"bfloat16", 2},
    [PB_FLOAT16] = {"half", 2},  [PB_INT32] = {"int32", 4}, [PB_BYTE] = {"byte", 1},
};
static const char *const redop_names[PB_REDOP_COUNT] = {"sum", "max", "min"};

size_t pb_dtype_size(pb_dtype t) { return dtypes[t].size; }
const char *pb_dtype_name(pb_dtype t) { return dtypes[t].name; }
const char *pb_dtype_redop_name(pb_dtype_redop op) { return redop_names[op]; }

int pb_dtype_parse(const char *option, const char *text, pb_dtype *out)
{
    static const struct {
        const char *alias;
        pb_dtype t;
    } aliases[] = {{"float", PB_FLOAT32},    {"float32", PB_FLOAT32}, {"fp32", PB_FLOAT32},
                   {"f32", PB_FLOAT32},      {"bfloat16", PB_BFLOAT16}, {"bf16", PB_BFLOAT16},
                   {"half", PB_FLOAT16},     {"float16", PB_FLOAT16}, {"fp16", PB_FLOAT16},
                   {"int32", PB_INT32},      {"int", PB_INT32}};
    for (size_t i = 0; text && i < sizeof aliases / sizeof aliases[0]; i++) {
        if (strcasecmp(text, aliases[i].alias) == 0) {
            *out = aliases[i].t;
            return PB_OK;
        }
    }
    return pb_error_usage(option, "'%s' is not a datatype; expected float (float32), bfloat16 (bf16), half (float16) or int32",
                    text ? text : "");
}

int pb_dtype_redop_parse(const char *option, const char *text, pb_dtype_redop *out)
{
    for (int i = 0; text && i < PB_REDOP_COUNT; i++) {
        if (strcasecmp(text, redop_names[i]) == 0) {
            *out = (pb_dtype_redop)i;
            return PB_OK;
        }
    }
    return pb_error_usage(option, "'%s' is not a reduction; expected sum, max or min", text ? text : "");
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t pb_dtype_float_to_bf16(float f)
{
    uint32_t u = float_bits(f);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40); /* keep it a (quiet) NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                   /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float pb_dtype_bf16_to_float(uint16_t h) { return bits_float((uint32_t)h << 16); }

uint16_t pb_dtype_float_to_fp16(float f)
{
    uint32_t u = float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0)); /* Inf/NaN */
    if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds above 65504: Inf */
    if (abs < 0x38800000u) {                                    /* result is subnormal or zero */
        if (abs < 0x33000000u) return sign;                     /* below half the smallest subnormal */
        uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
        /* value = mant * 2^(exp-150) and the fp16 subnormal unit is 2^-24: shift by 126 - exp */
        int shift = 126 - (int)(abs >> 23);
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t r = abs - 0x38000000u; /* rebias exponent 127 -> 15 (exponent field moves by 112) */
    uint32_t q = r >> 13, rem = r & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
    return (uint16_t)(sign | q);
}

float pb_dtype_fp16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) { /* zero or subnormal: mant * 2^-24 */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

double pb_dtype_get(pb_dtype t, const void *buf, size_t i)
{
    switch (t) {
    case PB_FLOAT32: return ((const float *)buf)[i];
    case PB_BFLOAT16: return pb_dtype_bf16_to_float(((const uint16_t *)buf)[i]);
    case PB_FLOAT16: return pb_dtype_fp16_to_float(((const uint16_t *)buf)[i]);
    case PB_INT32: return ((const int32_t *)buf)[i];
    case PB_BYTE: return ((const uint8_t *)buf)[i];
    default: return NAN;
    }
}

void pb_dtype_set(pb_dtype t, void *buf, size_t i, double v)
{
    switch (t) {
    case PB_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case PB_BFLOAT16: ((uint16_t *)buf)[i] = pb_dtype_float_to_bf16((float)v); break;
    case PB_FLOAT16: ((uint16_t *)buf)[i] = pb_dtype_float_to_fp16((float)v); break;
    case PB_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case PB_BYTE: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    default: break;
    }
}

static float apply_f(pb_dtype_redop op, float a, float b)
{
    switch (op) {
    case PB_MAX: return a > b ? a : b;
    case PB_MIN: return a < b ? a : b;
    default: return a + b;
    }
}

void pb_dtype_reduce_local(pb_dtype t, pb_dtype_redop op, const void *in, void *inout, size_t count)
{
    size_t i;
    switch (t) {
    case PB_FLOAT32: {
        const float *a = in;
        float *b = inout;
        for (i = 0; i < count; i++) b[i] = apply_f(op, a[i], b[i]);
        break;
    }
    case PB_INT32: {
        const int32_t *a = in;
        int32_t *b = inout;
        for (i = 0; i < count; i++) {
            /* sum wraps like two's complement (as NCCL's does), without signed-overflow UB */
            if (op == PB_SUM) b[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]);
            else if (op == PB_MAX) b[i] = a[i] > b[i] ? a[i] : b[i];
            else b[i] = a[i] < b[i] ? a[i] : b[i];
        }
        break;
    }
    case PB_BFLOAT16: {
        const uint16_t *a = in;
        uint16_t *b = inout;
        for (i = 0; i < count; i++)
            b[i] = pb_dtype_float_to_bf16(apply_f(op, pb_dtype_bf16_to_float(a[i]), pb_dtype_bf16_to_float(b[i])));
        break;
    }
    case PB_FLOAT16: {
        const uint16_t *a = in;
        uint16_t *b = inout;
        for (i = 0; i < count; i++)
            b[i] = pb_dtype_float_to_fp16(apply_f(op, pb_dtype_fp16_to_float(a[i]), pb_dtype_fp16_to_float(b[i])));
        break;
    }
    default: break;
    }
}
