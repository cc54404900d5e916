/* Step time and memory of a (t, p, d) configuration (model.h), and the
 * enumeration `plan --model` ranks. The step model:
 *   slot_i = t_fwd + t_bwd + c_tp + c_pp         one micro-batch on stage i
 *   step  = m * max slot_i + (sum slot_i - max slot_i)/v + c_dp
 *           GPipe and 1F1B alike (v = 1), interleaved over v virtual stages;
 *           (m + (p - 1)/v) * slot when every stage costs the same
 * Compute is GEMM FLOPs at the sustained GEMM rate plus element-wise traffic
 * at memory bandwidth (a roofline sum: the two kinds of kernel run one after
 * the other),
 * with no overlap of communication and compute (an upper bound that keeps
 * every term visible). docs/plan.md states each term's source. */
#include "plan/model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pb_model_order_name(enum pb_order o) { return o == PB_ORDER_TDP ? "t-d-p" : "t-p-d"; }

/* A group of n ranks with this stride stays inside one node when it spans at
 * most a node's GPUs (t is innermost, so groups are node-aligned). */
static pb_link_class axis_link(int stride, int n, int gpus_per_node)
{
    return (n <= 1 || stride * n <= gpus_per_node) ? PB_LINK_INTRA : PB_LINK_INTER;
}

/* Members of a group that share a node: ranks `stride` apart, nodes of
 * gpus_per_node consecutive ranks (rounded down when stride does not divide it). */
static int members_per_node(int stride, int n, int gpus_per_node)
{
    int g = stride >= gpus_per_node ? 1 : gpus_per_node / stride;
    return g < n ? g : n;
}

static pb_model_link link_of(const pb_model_cluster *c, pb_link_class k) { return k == PB_LINK_INTRA ? c->intra : c->inter; }

/* Virtual stages per GPU: the interleaved schedule's v, else 1. */
static int virtual_stages(const pb_model_train *job)
{
    return job->sched == PB_PP_INTERLEAVED && job->interleave > 1 ? job->interleave : 1;
}

/* Seconds of element-wise traffic for `layers` layers' forward (and, in
 * `replay`, what backward recomputes of it); 0 when the cluster gives no
 * memory bandwidth. */
static double elementwise_fwd(const pb_model_train *job, const pb_model_cluster *c, double layers, int t, double *replay)
{
    const pb_presets_model *md = &job->model;
    double b = (double)md->micro_batch, sq = (double)md->seq, a = (double)md->heads;
    *replay = 0.0;
    if (c->mem_bw <= 0) return 0.0;
    double k = PB_MODEL_ELEMENTWISE_TRAFFIC * layers / c->mem_bw;
    double fwd = k * pb_model_act_bytes_per_layer(md, t, job->sp, PB_RECOMPUTE_NONE);
    if (job->recompute == PB_RECOMPUTE_FULL) *replay = fwd;
    if (job->recompute == PB_RECOMPUTE_SELECTIVE) *replay = k * 5.0 * a * sq * sq * b / t; /* the attention core */
    return fwd;
}

int pb_model_stage_layers(int64_t layers, int p, pb_model_partition part, int stage)
{
    int64_t emb = part == PB_PARTITION_EMBED ? 1 : 0;
    int64_t units = layers + 2 * emb; /* the embedding and the logit layer as one unit each */
    int64_t n = units / p + (stage < units % p ? 1 : 0);
    if (emb && stage == 0) n--;
    if (emb && stage == p - 1) n--;
    return n < 0 ? 0 : (int)n;
}

/* One stage's terms for one micro-batch: `layers` transformer layers, and
 * the logit layer when `logits`. */
typedef struct {
    double fwd, bwd, tp;
} stage_cost;

static stage_cost stage_of(const pb_model_train *job, const pb_model_cluster *c, const pb_model_step *s, int layers,
                           int logits)
{
    const pb_presets_model *md = &job->model;
    double b = (double)md->micro_batch, sq = (double)md->seq, h = (double)md->hidden, n = layers;
    stage_cost r;
    /* Compute: this stage's layers split t ways; the logit layer is not
     * recomputed (recomputation replays transformer layers only). */
    double f_layers = n * pb_flops_layer_fwd(b, sq, h, pb_presets_layer_params(md), 1, 1) / s->t;
    double f_logit = logits ? pb_model_logit_flops_fwd(b, sq, h, (double)md->vocab) / s->t : 0.0;
    double f_extra = 0.0; /* recomputation in backward */
    if (job->recompute == PB_RECOMPUTE_FULL) f_extra = f_layers;
    if (job->recompute == PB_RECOMPUTE_SELECTIVE) f_extra = n * 4.0 * b * sq * sq * h / s->t;
    double ew_extra, ew_fwd = elementwise_fwd(job, c, n, s->t, &ew_extra);
    r.fwd = (f_layers + f_logit) / c->flops + ew_fwd;
    r.bwd = (2.0 * (f_layers + f_logit) + f_extra) / c->flops + 2.0 * ew_fwd + ew_extra;
    /* TP: 4 allreduces of b*s*h per layer (AG+RS pairs cost the same); full
     * recomputation replays the 2 forward ones. */
    double act = b * sq * h * job->dtype_bytes;
    int n_ar = job->recompute == PB_RECOMPUTE_FULL ? 6 : 4;
    r.tp = n * n_ar * pb_model_t_ring_allreduce(act, s->t, link_of(c, s->link_t));
    return r;
}

/* Fill the time terms for one rank order. 1F1B (and GPipe) run at the pace
 * of the slowest stage: m of its slots, plus the other stages' slots once
 * each while the pipeline fills and drains (over v with interleaving). */
static void eval_order(const pb_model_train *job, const pb_model_cluster *c, enum pb_order order, pb_model_step *s)
{
    const pb_presets_model *md = &job->model;
    double b = (double)md->micro_batch, sq = (double)md->seq, h = (double)md->hidden;
    int stride_d = order == PB_ORDER_TDP ? s->t : s->t * s->p;
    int stride_p = order == PB_ORDER_TDP ? s->t * s->d : s->t;
    s->order = order;
    s->link_t = axis_link(1, s->t, c->gpus_per_node);
    s->link_d = axis_link(stride_d, s->d, c->gpus_per_node);
    s->link_p = axis_link(stride_p, s->p, c->gpus_per_node);

    /* PP: one activation forward, one gradient back per micro-batch and
     * virtual stage; the scatter-gather optimization sends act/t from each TP rank. */
    double act = b * sq * h * job->dtype_bytes;
    int v = virtual_stages(job);
    s->c_pp = s->p > 1 ? 2.0 * v * pb_model_t_p2p(act / s->t, link_of(c, s->link_p)) : 0.0;
    /* DP: this rank's share of the gradients, once per step; across nodes,
     * the group's members on one node share the node's network. */
    double grads = pb_model_dp_grad_bytes(job->params / ((double)s->t * s->p), job->dtype_bytes);
    s->d_per_node = members_per_node(stride_d, s->d, c->gpus_per_node);
    s->c_dp = s->link_d == PB_LINK_INTER ? pb_model_t_node_allreduce(grads, s->d, s->d_per_node, c->intra, c->inter)
                                         : pb_model_t_ring_allreduce(grads, s->d, c->intra);

    /* Stages with the same layer count and no logits cost the same: the loop
     * evaluates each kind once. */
    double sum = 0.0, slowest = -1.0;
    int last_layers = -1;
    stage_cost k = {0, 0, 0};
    for (int i = 0; i < s->p; i++) {
        int n = pb_model_stage_layers(md->layers, s->p, job->partition, i), logits = i == s->p - 1;
        if (n != last_layers || logits) k = stage_of(job, c, s, n, logits);
        last_layers = logits ? -1 : n;
        double slot = k.fwd + k.bwd + k.tp + s->c_pp;
        sum += slot;
        if (slot > slowest) {
            slowest = slot;
            s->slow = i;
            s->t_fwd = k.fwd;
            s->t_bwd = k.bwd;
            s->c_tp = k.tp;
        }
    }
    s->compute = s->m * (s->t_fwd + s->t_bwd);
    s->bubble = (sum - slowest) / v;
    s->step = s->m * slowest + s->bubble + s->c_dp;
}

static void reject(pb_model_step *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(pb_model_step *s, const char *fmt, ...)
{
    if (s->reject[0]) return; /* keep the first reason */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reject, sizeof s->reject, fmt, ap);
    va_end(ap);
}

void pb_model_step_eval(const pb_model_train *job, const pb_model_cluster *c, int t, int p, int d, pb_model_step *out)
{
    const pb_presets_model *md = &job->model;
    pb_model_step *s = out;
    memset(s, 0, sizeof *s);
    s->t = t;
    s->p = p;
    s->d = d;
    int64_t per_pipe = md->micro_batch * (int64_t)d;
    s->m = (int)(job->global_batch / per_pipe);
    if (t > c->gpus_per_node)
        reject(s, "t=%d larger than a node (%d GPUs): TP would cross the inter-node network", t, c->gpus_per_node);
    if (md->heads % t != 0) reject(s, "t=%d does not divide %lld attention heads", t, (long long)md->heads);
    if (job->partition == PB_PARTITION_UNIFORM && md->layers % p != 0)
        reject(s, "p=%d does not divide %lld layers (Megatron-LM's uniform split; see --partition)", p,
               (long long)md->layers);
    if (md->layers + (job->partition == PB_PARTITION_EMBED ? 2 : 0) < p)
        reject(s, "p=%d is more stages than %lld layers", p, (long long)md->layers);
    int v = virtual_stages(job);
    s->v = v;
    if (v > 1 && md->layers % ((int64_t)p * v) != 0)
        reject(s, "p*v=%d*%d does not divide %lld layers (interleaved schedule)", p, v, (long long)md->layers);
    if (s->m < 1) {
        reject(s, "d*b=%lld exceeds the global batch %lld", (long long)per_pipe, (long long)job->global_batch);
        s->m = 1;
    } else if (job->global_batch % per_pipe != 0) {
        reject(s, "global batch %lld is not a multiple of d*b=%lld", (long long)job->global_batch, (long long)per_pipe);
    }
    pb_model_step other = *s;
    eval_order(job, c, PB_ORDER_TDP, s);
    eval_order(job, c, PB_ORDER_TPD, &other);
    if (other.step < s->step) *s = other;
    s->mem = pb_model_memory_per_gpu(job->params, md, t, p, s->m, job->sched, v, job->sp, job->recompute);
    if (s->mem.total > c->mem_bytes)
        reject(s, "does not fit: %.1f GB > %.1f GB per GPU", s->mem.total / 1e9, c->mem_bytes / 1e9);
}

static int by_step(const void *a, const void *b)
{
    const pb_model_step *x = a, *y = b;
    int xr = x->reject[0] != 0, yr = y->reject[0] != 0;
    if (xr != yr) return xr - yr;
    if (!xr && x->step != y->step) return x->step < y->step ? -1 : 1;
    if (x->t != y->t) return x->t - y->t;
    return x->p - y->p;
}

int pb_model_step_enumerate(const pb_model_train *job, const pb_model_cluster *c, int gpus, pb_model_step *out, int cap)
{
    int n = 0;
    for (int t = 1; t <= gpus; t++) {
        if (gpus % t) continue;
        for (int p = 1; p <= gpus / t; p++) {
            if ((gpus / t) % p || n == cap) continue;
            pb_model_step_eval(job, c, t, p, gpus / t / p, &out[n++]);
        }
    }
    if (n > 1) qsort(out, (size_t)n, sizeof *out, by_step);
    return n;
}
