/* SiLU (swish), the gate of SwiGLU (LLaMA's MLP: silu(X Wg) * (X Wu)):
 *   silu(x)  = x * sigmoid(x)
 *   silu'(x) = sigmoid(x) * (1 + x * (1 - sigmoid(x)))
 * Header-only and host+device under nvcc, so both engines evaluate the same
 * expression. */
#ifndef PB_SILU_H
#define PB_SILU_H

#include "core/rng.h" /* PB_HD */

#include <math.h>

static inline PB_HD float pb_silu_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

static inline PB_HD float pb_silu(float x) { return x * pb_silu_sigmoid(x); }

static inline PB_HD float pb_silu_grad(float x)
{
    float sg = pb_silu_sigmoid(x);
    return sg * (1.0f + x * (1.0f - sg));
}

#endif
