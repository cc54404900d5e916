/* The MoE layer's step model (model.h): four all-to-alls per layer whose
 * critical path is the heaviest rank's bytes, and that rank's GEMMs. */
#include "plan/model.h"

double pb_model_moe_a2a(const pb_model_moe_layer *l, pb_model_link link)
{
    return pb_model_t_coll(PB_COLL_ALLTOALL, l->imbalance * l->a2a_bytes, l->n, link);
}

double pb_model_moe_step(int64_t layers, const pb_model_moe_layer *l, pb_model_link link, double flops)
{
    double compute = flops > 0 ? (l->other_flops + l->imbalance * l->expert_flops) / flops : 0.0;
    return (double)layers * (4.0 * pb_model_moe_a2a(l, link) + compute);
}
