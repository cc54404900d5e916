/* The context-parallel (ring attention) step model (model.h): per ring step
 * the attention and the exchange, overlapped or in turn. */
#include "plan/model.h"

#include <math.h>

static double step(double compute, double transfer, int overlap)
{
    return overlap ? fmax(compute, transfer) : compute + transfer;
}

double pb_model_cp_step(int c, const pb_model_cp_block *t, int overlap)
{
    if (c < 1) return 0.0;
    double total = 0.0;
    for (int k = 0; k < c; k++) {
        double kv = k < c - 1 ? t->kv : 0.0, dkv = k >= 1 ? t->dkv : 0.0;
        total += step(t->fwd, kv, overlap) + step(t->bwd, kv + dkv, overlap);
    }
    return c > 1 ? total + t->dkv : total;
}

double pb_model_cp_compute(int c, const pb_model_cp_block *t) { return c * (t->fwd + t->bwd); }

void pb_model_cp_block_of(double b, double seq, double hidden, int c, double flops_per_s, double block_bytes,
                          pb_model_link link, pb_model_cp_block *out)
{
    double sc = seq / c, fwd = 4.0 * b * sc * sc * hidden;
    out->fwd = flops_per_s > 0 ? fwd / flops_per_s : 0.0;
    out->bwd = 2.5 * out->fwd;
    out->kv = out->dkv = c > 1 ? pb_model_t_p2p(block_bytes, link) : 0.0;
}
