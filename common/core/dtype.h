/* Element types and reduction operators, named as nccl-tests names them, with
 * the bf16/fp16 conversions and a portable local reduction that the MPI
 * backend's user-defined ops and the validation code share. */
#ifndef PB_DTYPE_H
#define PB_DTYPE_H

#include <stddef.h>
#include <stdint.h>

/* PB_BYTE is for point-to-point payloads only: -d does not accept it and
 * there are no reductions on it. */
typedef enum { PB_FLOAT32, PB_BFLOAT16, PB_FLOAT16, PB_INT32, PB_BYTE, PB_DTYPE_COUNT } pb_dtype;
typedef enum { PB_SUM, PB_MAX, PB_MIN, PB_REDOP_COUNT } pb_dtype_redop;

size_t pb_dtype_size(pb_dtype t);
const char *pb_dtype_name(pb_dtype t);   /* "float", "bfloat16", "half", "int32" */
const char *pb_dtype_redop_name(pb_dtype_redop op);  /* "sum", "max", "min" */

/* Accepts the nccl-tests names and common aliases (float32, fp16, bf16, int, ...). */
int pb_dtype_parse(const char *option, const char *text, pb_dtype *out);
int pb_dtype_redop_parse(const char *option, const char *text, pb_dtype_redop *out);

/* IEEE conversions, round to nearest even; NaN stays NaN, overflow becomes Inf. */
uint16_t pb_dtype_float_to_bf16(float f);
float pb_dtype_bf16_to_float(uint16_t h);
uint16_t pb_dtype_float_to_fp16(float f);
float pb_dtype_fp16_to_float(uint16_t h);

/* Element i of a buffer of type t, as a double, and the reverse (rounded to t). */
double pb_dtype_get(pb_dtype t, const void *buf, size_t i);
void pb_dtype_set(pb_dtype t, void *buf, size_t i, double v);

/* inout[i] = op(in[i], inout[i]) for i < count. bf16/fp16 reduce in fp32 and
 * round once, as NCCL does. */
void pb_dtype_reduce_local(pb_dtype t, pb_dtype_redop op, const void *in, void *inout, size_t count);

#endif
