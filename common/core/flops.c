#include "core/flops.h"

double pb_flops_layer_fwd(double b, double s, double h, int t, int scores)
{
    double linear = 2.0 * b * s * 12.0 * h * h, attn = scores ? 4.0 * b * s * s * h : 0.0;
    return (linear + attn) / (double)t;
}

double pb_flops_layer_bwd(double b, double s, double h, int t, int scores)
{
    return 2.0 * pb_flops_layer_fwd(b, s, h, t, scores);
}
