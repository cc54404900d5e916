/* plan --fsdp (plan_fsdp.h). */
#include "plan/plan_fsdp.h"

#include <string.h>

static pb_model_link link_of(const pb_model_cluster *c, pb_link_class k) { return k == PB_LINK_INTRA ? c->intra : c->inter; }

void pb_plan_fsdp_eval(const pb_model_train *job, const pb_model_cluster *c, int gpus, int node_groups, pb_plan_fsdp *out)
{
    pb_plan_fsdp *f = out;
    memset(f, 0, sizeof *f);
    f->gpus = gpus;
    f->n = node_groups && c->gpus_per_node < gpus ? c->gpus_per_node : gpus;
    f->replicas = gpus / f->n;
    /* ranks are numbered node by node: a group of at most a node's GPUs is inside one */
    f->link = f->n <= c->gpus_per_node ? PB_LINK_INTRA : PB_LINK_INTER;
    f->across = PB_LINK_INTER;
    pb_model_step s;
    pb_model_step_eval(job, c, 1, 1, gpus, &s);
    f->m = s.m;
    double L = (double)job->model.layers, params = pb_presets_layer_params(&job->model);
    f->layer_bytes = params * job->dtype_bytes;
    pb_model_fsdp_comm(f->layer_bytes, f->layer_bytes, f->n, f->replicas, link_of(c, f->link), c->inter, &f->layer);
    f->layer.fwd = s.t_fwd / L;
    f->layer.bwd = s.t_bwd / L;
    f->compute = f->m * pb_model_fsdp_compute(job->model.layers, &f->layer);
    f->step_off = f->m * pb_model_fsdp_step(job->model.layers, &f->layer, 0);
    f->step_on = f->m * pb_model_fsdp_step(job->model.layers, &f->layer, 1);
    f->sharded = PB_BYTES_PER_PARAM * job->params / f->n;
    f->activations = L * pb_model_act_bytes_per_layer(&job->model, 1, 0, job->recompute);
    f->gathered = 2.0 * f->layer_bytes;
    f->total = f->sharded + f->activations + f->gathered;
    /* the grid's reasons that hold here too: the global batch over the GPUs; not its memory (unsharded) */
    if (s.reject[0] && strncmp(s.reject, "does not fit", 12) != 0) memcpy(f->reject, s.reject, sizeof f->reject);
    else if (gpus % f->n)
        snprintf(f->reject, sizeof f->reject, "%d GPUs are not whole nodes of %d", gpus, c->gpus_per_node);
    else if (f->total > c->mem_bytes)
        snprintf(f->reject, sizeof f->reject, "does not fit: %.1f GB > %.1f GB per GPU", f->total / 1e9,
                 c->mem_bytes / 1e9);
}

void pb_plan_fsdp_print(const pb_plan_fsdp *f, FILE *out)
{
    const pb_model_fsdp_layer *k = &f->layer;
    fprintf(out, "\nFSDP (ZeRO-3) on %d GPUs: shard group of %d (%s)", f->gpus, f->n, pb_link_name(f->link));
    if (f->replicas > 1) fprintf(out, ", %d replicas (%s; hybrid sharding)", f->replicas, pb_link_name(f->across));
    fprintf(out, ", %d micro-batch%s a GPU a step\n", f->m, f->m == 1 ? "" : "es");
    fprintf(out, "  per layer and micro-batch: fwd %.3f ms, bwd %.3f ms, all-gather of %.1f MB %.3f ms, "
                 "reduce-scatter%s %.3f ms\n", k->fwd * 1e3, k->bwd * 1e3, f->layer_bytes / 1e6, k->gather * 1e3,
            f->replicas > 1 ? " + replica all-reduce" : "", k->scatter * 1e3);
    fprintf(out, "  step: prefetch off %.4g s, prefetch on %.4g s; compute %.4g s; exposed with prefetch %.4g s "
                 "(%.1f%% of compute)\n", f->step_off, f->step_on, f->compute, f->step_on - f->compute,
            f->compute > 0 ? 100.0 * (f->step_on - f->compute) / f->compute : 0.0);
    fprintf(out, "  memory per GPU: sharded weights, grads and optimizer %.2f + activations %.2f + two gathered "
                 "layers %.2f = %.2f GB\n", f->sharded / 1e9, f->activations / 1e9, f->gathered / 1e9, f->total / 1e9);
    if (f->reject[0]) fprintf(out, "  rejected: %s\n", f->reject);
}
