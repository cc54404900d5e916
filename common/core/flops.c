#include "core/flops.h"

double pb_flops_layer_linear_params(double h, double heads, double kv_heads, double ffn, int gated)
{
    double kv_width = kv_heads * h / heads;
    return 2.0 * h * h + 2.0 * h * kv_width + (gated ? 3.0 : 2.0) * h * ffn;
}

double pb_flops_layer_fwd(double b, double s, double h, double linear_params, int t, int scores)
{
    double linear = 2.0 * b * s * linear_params, attn = scores ? 4.0 * b * s * s * h : 0.0;
    return (linear + attn) / (double)t;
}

double pb_flops_layer_bwd(double b, double s, double h, double linear_params, int t, int scores)
{
    return 2.0 * pb_flops_layer_fwd(b, s, h, linear_params, t, scores);
}
