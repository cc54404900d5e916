/* The analytical model: alpha-beta collective costs, pipeline bubble, Megatron
 * tensor-parallel volume, data-parallel gradient bytes, transformer FLOPs,
 * memory per GPU, and the step time of a (t, p, d) configuration.
 *
 * `plan` and the benchmarks' "predicted" columns share these functions, so a
 * prediction printed by a benchmark is the planner's prediction. Sources and
 * derivations are in docs/plan.md. Units: bytes, seconds, bytes/s, FLOP. */
#ifndef PB_MODEL_H
#define PB_MODEL_H

#include "coll/coll.h"
#include "core/flops.h"
#include "core/link.h"
#include "plan/pp_sched.h"
#include "plan/presets.h"

#include <stdint.h>

/* ---- alpha-beta costs (Hockney model; Thakur, Rabenseifner, Gropp 2005) ---- */

/* One link class: a = per-message latency, B = per-direction bandwidth. */
typedef struct pb_model_link {
    double alpha_s; /* seconds */
    double bw_Bps;  /* bytes per second */
} pb_model_link;

/* a + S/B */
double pb_model_t_p2p(double bytes, pb_model_link l);
/* Ring allreduce of an S-byte buffer on n ranks: 2(n-1)a + 2(n-1)/n * S/B. 0 for n <= 1. */
double pb_model_t_ring_allreduce(double bytes, int n, pb_model_link l);
/* Allreduce on n ranks of which g share each node (n/g nodes), with every GPU
 * on its own share of the node's network: a ring inside each node (reduce-
 * scatter and allgather) around a ring of the nodes over each member's shard,
 * S/g, which is how NCCL's rings over a node's several NICs move the data:
 * 2(g-1)/g * S/B_intra + 2(N-1)/N * S/(g B_inter), with the latency terms.
 * g <= 1 is the flat ring over `inter`, g >= n the ring inside one node. */
double pb_model_t_node_allreduce(double bytes, int n, int g, pb_model_link intra, pb_model_link inter);
/* Ring allgather / reducescatter, S = full (gathered) buffer: (n-1)a + (n-1)/n * S/B. */
double pb_model_t_allgather(double bytes, int n, pb_model_link l);
double pb_model_t_reducescatter(double bytes, int n, pb_model_link l);
/* Binomial-tree reduce followed by binomial-tree broadcast, the short-message
 * allreduce of Thakur et al. 2005 (reduction compute ignored):
 * 2*ceil(log2 n)*(a + S/B). Fewer latency terms than the ring, more bytes. */
double pb_model_t_tree_allreduce(double bytes, int n, pb_model_link l);
/* The better of ring and tree: what a tuned library picks per size. */
double pb_model_t_allreduce(double bytes, int n, pb_model_link l);
/* Any collective by enum, from its cost terms in the collective table
 * (coll.h). broadcast/reduce: binomial tree ceil(log2 n)(a + S/B);
 * alltoall: pairwise exchange (n-1)a + (n-1)/n S/B; sendrecv: a + S/B. */
double pb_model_t_coll(pb_coll c, double bytes, int n, pb_model_link l);

/* ---- pipeline (GPipe, Huang et al. 2019; 1F1B, Narayanan et al. 2021) ---- */

/* m/(m+p-1): ideal compute over step time. */
double pb_model_pipe_efficiency(int m, int p);
/* (p-1)/(m+p-1): the bubble as a fraction of the step time. */
double pb_model_pipe_bubble_of_step(int m, int p);
/* (p-1)/m: the bubble relative to the ideal (bubble-free) compute time. */
double pb_model_pipe_bubble_of_compute(int m, int p);

/* Micro-batches whose activations a stage holds at once: GPipe m, 1F1B min(p, m)
 * (interleaved: as 1F1B; pb_model_memory_per_gpu adds its extra share). */
int pb_model_pipe_in_flight(pb_pp_sched s, int m, int p);

/* Element-wise memory traffic (layer norms, softmax, dropout, GeLU, bias,
 * residual adds) of a layer's forward as a multiple of the activation bytes
 * it keeps without recomputation (pb_model_act_bytes_per_layer, none); the
 * backward moves twice that. Set with PB_CLUSTER_GEMM_EFFICIENCY (cluster.h). */
#define PB_MODEL_ELEMENTWISE_TRAFFIC 3.5

/* ---- tensor and data parallelism volumes ---- */

/* Megatron TP elements sent per rank per layer, forward + backward:
 * 4 allreduces of b*s*h elements, each 2(t-1)/t per rank => 8*b*s*h*(t-1)/t.
 * Sequence parallelism (AG + RS per allreduce) moves the same volume. */
double pb_model_tp_elems_per_rank_layer(double b, double s, double h, int t);
/* Gradient bytes a data-parallel allreduce carries: params * dtype size. */
double pb_model_dp_grad_bytes(double params, int dtype_bytes);

/* ---- sharded data parallelism (ZeRO-3, PyTorch FSDP; model_fsdp.c) ---- */

/* One layer's terms, seconds: forward and backward compute, one all-gather
 * of its parameters, and its gradient's reduce-scatter (with hybrid
 * sharding, plus the all-reduce of the shard over the replicas). */
typedef struct pb_model_fsdp_layer {
    double fwd, bwd, gather, scatter;
} pb_model_fsdp_layer;

/* The step of L such layers under fsdp.h's schedule. Every layer's compute
 * starts once the collectives issued before it are complete, so a layer
 * takes the longer of its compute and what was issued during it:
 *   prefetch off: L (g + f) + L (g + b + s)      (nothing overlapped)
 *   prefetch on:  g + L max(f, g)                 (forward: the next gather
 *                                                  runs under each layer)
 *                 + max(b, g) + (L-2) max(b, g + s) + max(b, s) + s
 *                 (backward: layer j+1's reduce-scatter and layer j-1's
 *                 gather under layer j; the first gather and the last
 *                 reduce-scatter exposed); L = 1: g + max(f, g) + b + s. */
double pb_model_fsdp_step(int64_t layers, const pb_model_fsdp_layer *l, int prefetch);
/* The step's compute, L (f + b): what step - compute exposes is communication. */
double pb_model_fsdp_compute(int64_t layers, const pb_model_fsdp_layer *l);
/* A layer's collectives on a shard group of n ranks (`link`) and r replicas
 * (`across`): ring all-gather of the padded parameters (param_bytes = n*S
 * elements), ring reduce-scatter of the padded gradient, and the ring
 * all-reduce of one S-element shard over r replicas. */
void pb_model_fsdp_comm(double param_bytes, double grad_bytes, int n, int r, pb_model_link link,
                        pb_model_link across, pb_model_fsdp_layer *out);

/* ---- context parallelism (ring attention; model_cp.c) ---- */

/* One block's terms, seconds: its attention forward and backward, one K/V
 * block's transfer and one dK/dV accumulator's. */
typedef struct pb_model_cp_block {
    double fwd, bwd, kv, dkv;
} pb_model_cp_block;

/* One layer's attention over a ring of c ranks under cp.h's schedule: each
 * step takes max(compute, exchange) with overlap and their sum without;
 * forward steps 0..c-2 carry a K/V block, backward steps 0..c-2 a K/V block
 * and steps 1..c-1 an accumulator, and the accumulators' last transfer home
 * comes after the last block:
 *   sum_k step(f, kv_k) + sum_k step(b, kv_k + dkv_k) + dkv   (c > 1). */
double pb_model_cp_step(int c, const pb_model_cp_block *t, int overlap);
/* Its compute alone, c (f + b). */
double pb_model_cp_compute(int c, const pb_model_cp_block *t);
/* The terms from the shape: forward 4 b (s/c)^2 h FLOPs, backward 2.5 times
 * that (the scores recomputed), at `flops_per_s`; each transfer a + S/B of
 * `block_bytes` on `link`. */
void pb_model_cp_block_of(double b, double seq, double hidden, int c, double flops_per_s, double block_bytes,
                          pb_model_link link, pb_model_cp_block *out);
/* ---- mixture of experts with expert parallelism (model_moe.c) ---- */

/* One MoE layer on an EP group of n ranks (workload/moe.h). */
typedef struct pb_model_moe_layer {
    double a2a_bytes;    /* bytes one rank sends per all-to-all at uniform load: T*k*h elements */
    double imbalance;    /* the heaviest rank's rows over the mean (>= 1) */
    int n;               /* ranks of the EP group */
    double expert_flops; /* one rank's expert GEMMs, forward + backward, at uniform load */
    double other_flops;  /* router and permutations, forward + backward, alike on every rank */
} pb_model_moe_layer;

/* One all-to-all whose heaviest rank moves imbalance * S: the pairwise
 * exchange of pb_model_t_coll at those bytes, (n-1)a + (n-1)/n imbalance S/B. */
double pb_model_moe_a2a(const pb_model_moe_layer *l, pb_model_link link);
/* The step of L layers, nothing overlapped, on the heaviest rank (the one
 * the all-to-alls wait for): L (4 a2a + (other + imbalance * expert) / flops). */
double pb_model_moe_step(int64_t layers, const pb_model_moe_layer *l, pb_model_link link, double flops);

/* ---- compute (Narayanan et al. 2021, appendix) ---- */

/* A layer's forward and backward: core/flops.h (t = 1, with scores). */
/* Logit layer forward: 2*b*s*h*V (the tied embedding used as output projection). */
double pb_model_logit_flops_fwd(double b, double s, double h, double vocab);

/* ---- memory per GPU (Rajbhandari et al. 2020; Korthikanti et al. 2022) ---- */

/* Mixed-precision Adam without ZeRO: bf16 weights 2 + bf16 grads 2 + fp32
 * master weights 4 + Adam m 4 + Adam v 4 = 16 bytes per parameter. */
#define PB_BYTES_WEIGHTS 2.0
#define PB_BYTES_GRADS 2.0
#define PB_BYTES_OPTIMIZER 12.0
#define PB_BYTES_PER_PARAM (PB_BYTES_WEIGHTS + PB_BYTES_GRADS + PB_BYTES_OPTIMIZER)

typedef enum { PB_RECOMPUTE_NONE, PB_RECOMPUTE_SELECTIVE, PB_RECOMPUTE_FULL } pb_model_recompute;

/* Korthikanti et al. 2022's 34 (bytes of activations per s*b*h a layer keeps
 * without recomputation), counted term by term for the model's shape:
 * 4 (norms) + 7 + 4*kv_heads/heads (attention) + 3 + 4*ffn/h (GELU MLP) or
 * 3 + 6*ffn/h (SwiGLU: gate and up both saved). 34 for GPT's shape. */
double pb_model_act_coefficient(const pb_presets_model *m);

/* Activation bytes one layer keeps for one micro-batch (16-bit activations),
 * Korthikanti et al. 2022 table 2 with c = pb_model_act_coefficient (34 for
 * GPT) and a = attention heads:
 *   none,      t = 1 : s*b*h*(c + 5*a*s/h)
 *   none,      TP    : s*b*h*(10 + (c-10)/t + 5*a*s/(h*t))
 *   none,      TP+SP : s*b*h*(c + 5*a*s/h)/t
 *   selective, TP    : s*b*h*(10 + (c-10)/t);  TP+SP: s*b*h*c/t
 *   full             : 2*s*b*h (the layer input only);  with SP: /t */
double pb_model_act_bytes_per_layer(const pb_presets_model *m, int t, int sp, pb_model_recompute rc);

typedef struct pb_model_mem {
    double weights, grads, optimizer, activations, total; /* bytes per GPU */
} pb_model_mem;

/* Memory of the most loaded GPU (first stage): params/(t*p) parameters at
 * 16 B each, plus in-flight micro-batches x layers/p x pb_model_act_bytes_per_layer;
 * the interleaved schedule over v virtual stages keeps 1 + (p-1)/(p*v) times
 * 1F1B's activations (Korthikanti et al. 2022, section 4.2.3). */
pb_model_mem pb_model_memory_per_gpu(double params, const pb_presets_model *m, int t, int p, int micro_batches, pb_pp_sched sched,
                         int v, int sp, pb_model_recompute rc);

/* ---- a machine and a training job ---- */

typedef struct pb_model_cluster {
    char name[48];
    int gpus_per_node;
    pb_model_link intra;      /* inside a node (NVLink) */
    pb_model_link inter;      /* between nodes, per GPU (one NIC rail per GPU) */
    double flops;       /* sustained GEMM FLOP/s per GPU */
    double mem_bw;      /* bytes/s element-wise work streams at; 0: not modeled */
    double mem_bytes;   /* GPU memory */
} pb_model_cluster;

/* How layers are split over pipeline stages. The embedding sits on the
 * first stage and the logit layer on the last in all three.
 *   UNIFORM   Megatron-LM: L/p layers a stage; p must divide L.
 *   BALANCED  Megatron-DeepSpeed's 'type:transformer': L mod p stages (the
 *             first ones) hold one layer more; p need not divide L.
 *   EMBED     its 'type:transformer|embedding': the embedding and the logit
 *             layer each count as one layer in that balance (BLOOM). */
typedef enum { PB_PARTITION_UNIFORM, PB_PARTITION_BALANCED, PB_PARTITION_EMBED } pb_model_partition;

/* Transformer layers on `stage` (0-based) of p under `part`. */
int pb_model_stage_layers(int64_t layers, int p, pb_model_partition part, int stage);

typedef struct pb_model_train {
    pb_presets_model model;       /* shape; model.micro_batch is b */
    double params;        /* parameter count used for memory and DP volume */
    int dtype_bytes;      /* activations and gradients on the wire: 2 for bf16 */
    int64_t global_batch; /* sequences per step */
    pb_pp_sched sched;
    int interleave;       /* virtual stages per GPU with PB_PP_INTERLEAVED, else 1 */
    int sp;               /* sequence parallelism */
    pb_model_recompute recompute;
    pb_model_partition partition;
} pb_model_train;

/* Rank order: t is always innermost (fills a node first); then d or p. */
enum pb_order { PB_ORDER_TDP, PB_ORDER_TPD };

typedef struct pb_model_step {
    int t, p, d, m;
    int v;                /* virtual stages per GPU (interleaved), else 1 */
    enum pb_order order;
    pb_link_class link_t, link_p, link_d; /* intra or inter */
    int d_per_node;       /* members of a DP group on one node (the node-aware allreduce's g) */
    double t_fwd, t_bwd;  /* compute per micro-batch on the slowest stage, s */
    double c_tp;          /* TP comm per micro-batch on the slowest stage (fwd+bwd), s */
    double c_pp;          /* P2P comm per micro-batch per stage (fwd+bwd sends), s */
    double c_dp;          /* gradient allreduce per step, s (not overlapped) */
    double compute;       /* m * (t_fwd + t_bwd): ideal compute per step, s */
    int slow;             /* the slowest stage, whose terms t_fwd .. c_pp are */
    double bubble;        /* (sum of the stages' slots - slowest slot)/v, s: (p-1)/v slots when even */
    double step;          /* m * slowest slot + bubble + c_dp, s */
    pb_model_mem mem;
    char reject[160];     /* empty when the configuration is valid and fits */
} pb_model_step;

/* Step time and memory of one (t, p, d) configuration, best of the two rank
 * orders. Invalid or non-fitting configurations come back with `reject` set
 * (the numbers are still filled in where they can be computed). */
void pb_model_step_eval(const pb_model_train *job, const pb_model_cluster *c, int t, int p, int d, pb_model_step *out);

/* Every (t, p, d) with t*p*d == gpus, valid ones first sorted by step time,
 * rejected ones after. Returns the count written (at most cap). */
int pb_model_step_enumerate(const pb_model_train *job, const pb_model_cluster *c, int gpus, pb_model_step *out, int cap);

const char *pb_model_order_name(enum pb_order o);

#endif
