/* plan --fsdp world|node: a training job as sharded data parallelism (ZeRO-3,
 * PyTorch FSDP) instead of a (t, p, d) grid: every GPU a data-parallel rank,
 * each layer's parameters sharded over a shard group (every GPU, or the GPUs
 * of a node with one replica per node), the step from pb_model_fsdp_step with
 * the planner's own compute terms and alpha-beta collectives, and the memory
 * sharding leaves on a GPU. */
#ifndef PB_PLAN_FSDP_H
#define PB_PLAN_FSDP_H

#include "plan/model.h"

#include <stdio.h>

typedef struct pb_plan_fsdp {
    int gpus, n, replicas, m;     /* GPUs, shard group, replicas, micro-batches a GPU a step */
    pb_link_class link, across;   /* the shard group's link, the replicas' */
    pb_model_fsdp_layer layer;    /* one layer of one micro-batch, seconds */
    double layer_bytes;           /* one layer's parameters on the wire (each all-gather's output) */
    double compute, step_off, step_on; /* a step, seconds */
    double sharded, activations, gathered, total; /* bytes a GPU holds */
    char reject[160];             /* empty when the job is valid and fits */
} pb_plan_fsdp;

/* The job on `gpus` GPUs sharded over every GPU (node_groups 0) or over each
 * node's GPUs (1). A micro-batch's forward and backward are the planner's
 * (pb_model_step_eval at t = p = 1) spread evenly over the layers, so the
 * logit layer and the element-wise work are counted as the grid's plan counts
 * them. Memory: 16 B a parameter over the shard group, one micro-batch's
 * activations of every layer, two gathered layers. */
void pb_plan_fsdp_eval(const pb_model_train *job, const pb_model_cluster *c, int gpus, int node_groups, pb_plan_fsdp *out);

void pb_plan_fsdp_print(const pb_plan_fsdp *f, FILE *out);

#endif
