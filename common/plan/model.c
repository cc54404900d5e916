/* Closed-form costs. Each function is one formula from docs/METRICS.md, docs/plan.md or the paper
 * cited in model.h; docs/plan.md derives them. */
#include "plan/model.h"

#include <math.h>

double pb_model_t_p2p(double bytes, pb_model_link l) { return l.alpha_s + bytes / l.bw_Bps; }

/* The collective table's alpha-beta terms (coll.h). */
static double alpha_beta(pb_coll_cost k, double bytes, pb_model_link l)
{
    return k.steps * l.alpha_s + k.bytes * bytes / l.bw_Bps;
}

double pb_model_t_coll(pb_coll c, double bytes, int n, pb_model_link l) { return alpha_beta(pb_coll_cost_of(c, n), bytes, l); }

double pb_model_t_ring_allreduce(double bytes, int n, pb_model_link l) { return pb_model_t_coll(PB_COLL_ALLREDUCE, bytes, n, l); }

double pb_model_t_node_allreduce(double bytes, int n, int g, pb_model_link intra, pb_model_link inter)
{
    if (g <= 1) return pb_model_t_ring_allreduce(bytes, n, inter);
    if (g >= n) return pb_model_t_ring_allreduce(bytes, n, intra);
    int nodes = (n + g - 1) / g;
    return pb_model_t_ring_allreduce(bytes, g, intra) + pb_model_t_ring_allreduce(bytes / g, nodes, inter);
}

double pb_model_t_allgather(double bytes, int n, pb_model_link l) { return pb_model_t_coll(PB_COLL_ALLGATHER, bytes, n, l); }

double pb_model_t_reducescatter(double bytes, int n, pb_model_link l) { return pb_model_t_coll(PB_COLL_REDUCESCATTER, bytes, n, l); }

/* ceil(log2 n) rounds of a binomial tree. */
static double tree_depth(int n) { return n <= 1 ? 0.0 : ceil(log2((double)n)); }

double pb_model_t_tree_allreduce(double bytes, int n, pb_model_link l)
{
    return 2.0 * tree_depth(n) * pb_model_t_p2p(bytes, l);
}

double pb_model_t_allreduce(double bytes, int n, pb_model_link l)
{
    return fmin(pb_model_t_ring_allreduce(bytes, n, l), pb_model_t_tree_allreduce(bytes, n, l));
}

double pb_model_pipe_efficiency(int m, int p) { return (double)m / (double)(m + p - 1); }
double pb_model_pipe_bubble_of_step(int m, int p) { return (double)(p - 1) / (double)(m + p - 1); }
double pb_model_pipe_bubble_of_compute(int m, int p) { return (double)(p - 1) / (double)m; }

int pb_model_pipe_in_flight(pb_pp_sched s, int m, int p)
{
    /* 1F1B starts backward after p forwards, so at most p are alive. */
    if (s == PB_PP_1F1B || s == PB_PP_INTERLEAVED) return m < p ? m : p;
    return m;
}

double pb_model_tp_elems_per_rank_layer(double b, double s, double h, int t)
{
    if (t <= 1) return 0.0;
    return 8.0 * b * s * h * (double)(t - 1) / (double)t;
}

double pb_model_dp_grad_bytes(double params, int dtype_bytes) { return params * (double)dtype_bytes; }

double pb_model_logit_flops_fwd(double b, double s, double h, double vocab) { return 2.0 * b * s * h * vocab; }

double pb_model_act_coefficient(const pb_presets_model *m)
{
    double h = (double)m->hidden, kv = (double)m->kv_heads / (double)m->heads, f = (double)m->ffn / h;
    double attention = 7.0 + 4.0 * kv;  /* input 2, Q 2, K and V 2 each (times kv), O 2, dropout mask 1 */
    double mlp = m->mlp == PB_MLP_SWIGLU ? 3.0 + 6.0 * f  /* input 2, Z (gate and up) 4f, silu*up 2f, mask 1 */
                                         : 3.0 + 4.0 * f; /* input 2, Z 2f, gelu(Z) 2f, mask 1 */
    return 4.0 + attention + mlp;      /* + the two layer norms' inputs */
}

double pb_model_act_bytes_per_layer(const pb_presets_model *m, int t, int sp, pb_model_recompute rc)
{
    double s = (double)m->seq, h = (double)m->hidden, a = (double)m->heads;
    double sbh = s * (double)m->micro_batch * h, tt = (double)t, c = pb_model_act_coefficient(m);
    double attn = 5.0 * a * s / h; /* softmax, its dropout mask, attention over values */
    if (t <= 1) sp = 1;            /* with one rank the SP formula is the plain one */
    switch (rc) {
    case PB_RECOMPUTE_FULL: return sp ? 2.0 * sbh / tt : 2.0 * sbh;
    case PB_RECOMPUTE_SELECTIVE: return sp ? sbh * c / tt : sbh * (10.0 + (c - 10.0) / tt);
    default: return sp ? sbh * (c + attn) / tt : sbh * (10.0 + (c - 10.0) / tt + attn / tt);
    }
}

pb_model_mem pb_model_memory_per_gpu(double params, const pb_presets_model *m, int t, int p, int micro_batches, pb_pp_sched sched,
                         int v, int sp, pb_model_recompute rc)
{
    pb_model_mem r;
    double local = params / ((double)t * (double)p);
    r.weights = local * PB_BYTES_WEIGHTS;
    r.grads = local * PB_BYTES_GRADS;
    r.optimizer = local * PB_BYTES_OPTIMIZER;
    /* Layers split evenly; the first stage holds the most micro-batches. */
    double layers = ceil((double)m->layers / (double)p);
    double per_layer = pb_model_act_bytes_per_layer(m, t, sp, rc);
    double in_flight = (double)pb_model_pipe_in_flight(sched, micro_batches, p);
    if (sched == PB_PP_INTERLEAVED && v > 1) in_flight *= 1.0 + (double)(p - 1) / ((double)p * v);
    r.activations = in_flight * layers * per_layer;
    r.total = r.weights + r.grads + r.optimizer + r.activations;
    return r;
}
