/* The FSDP step model (model.h): per-layer compute and collectives under
 * the schedule of workload/fsdp.h, with and without prefetch. */
#include "plan/model.h"

#include <math.h>

double pb_model_fsdp_compute(int64_t layers, const pb_model_fsdp_layer *l)
{
    return (double)layers * (l->fwd + l->bwd);
}

double pb_model_fsdp_step(int64_t layers, const pb_model_fsdp_layer *l, int prefetch)
{
    double L = (double)layers, f = l->fwd, b = l->bwd, g = l->gather, s = l->scatter;
    if (layers <= 0) return 0.0;
    if (!prefetch) return L * (g + f) + L * (g + b + s);
    double forward = g + L * fmax(f, g);
    if (layers == 1) return forward + b + s;
    double backward = fmax(b, g) + (L - 2) * fmax(b, g + s) + fmax(b, s) + s;
    return forward + backward;
}

void pb_model_fsdp_comm(double param_bytes, double grad_bytes, int n, int r, pb_model_link link,
                        pb_model_link across, pb_model_fsdp_layer *out)
{
    out->gather = pb_model_t_allgather(param_bytes, n, link);
    out->scatter = pb_model_t_reducescatter(grad_bytes, n, link);
    if (r > 1 && n > 0) out->scatter += pb_model_t_ring_allreduce(grad_bytes / n, r, across);
}
