/* GELU, tanh form (GPT-2, Megatron-LM's bias_gelu):
 *   gelu(x)  = x/2 (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
 *   gelu'(x) = (1 + tanh(u))/2 + x/2 (1 - tanh(u)^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
 * Header-only and host+device under nvcc, so both engines evaluate the same
 * expression. Its derivative is continuous: a pre-activation that rounds to
 * either side of 0 in a sharded GEMM changes the gradient by a rounding error,
 * where relu's step would let a whole token row of dX differ. */
#ifndef PB_GELU_H
#define PB_GELU_H

#include "core/rng.h" /* PB_HD */

#include <math.h>

#define PB_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define PB_GELU_C 0.044715f

static inline PB_HD float pb_gelu(float x)
{
    float t = tanhf(PB_GELU_K * (x + PB_GELU_C * x * x * x));
    return 0.5f * x * (1.0f + t);
}

static inline PB_HD float pb_gelu_grad(float x)
{
    float t = tanhf(PB_GELU_K * (x + PB_GELU_C * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * PB_GELU_K * (1.0f + 3.0f * PB_GELU_C * x * x);
}

#endif
