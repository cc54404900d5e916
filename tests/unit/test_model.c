/* Pins every formula of the model (model.h, coll.h, cluster.h) to a value
 * computed by hand, so a change to a formula is a deliberate change here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "plan/cluster.h"
#include "coll/coll.h"
#include "core/error.h"
#include "plan/model.h"
#include "plan/plan_explain.h"
#include "plan/plan_print.h"

#include <math.h>
#include <string.h>

#define CLOSE(x, want) assert_true(fabs((x) - (want)) <= 1e-9 * fmax(1.0, fabs(want)))

static void test_bus_factors(void **state)
{
    (void)state;
    CLOSE(pb_coll_busbw_factor(PB_COLL_ALLREDUCE, 8), 1.75);
    CLOSE(pb_coll_busbw_factor(PB_COLL_ALLGATHER, 8), 0.875);
    CLOSE(pb_coll_busbw_factor(PB_COLL_REDUCESCATTER, 4), 0.75);
    CLOSE(pb_coll_busbw_factor(PB_COLL_ALLTOALL, 2), 0.5);
    CLOSE(pb_coll_busbw_factor(PB_COLL_BROADCAST, 8), 1.0);
    CLOSE(pb_coll_busbw_factor(PB_COLL_REDUCE, 8), 1.0);
    CLOSE(pb_coll_busbw_factor(PB_COLL_SENDRECV, 2), 1.0);
    CLOSE(pb_coll_busbw_factor(PB_COLL_ALLREDUCE, 1), 0.0);
    CLOSE(pb_coll_busbw_factor(PB_COLL_ALLREDUCE, 0), 0.0);
    CLOSE(pb_coll_busbw_factor(PB_COLL_ALLREDUCE, 2), 1.0);
}

static void test_coll_names(void **state)
{
    (void)state;
    for (int i = 0; i < PB_COLL_COUNT; i++) {
        pb_coll c;
        assert_int_equal(pb_coll_from_name(pb_coll_name((pb_coll)i), &c), PB_OK);
        assert_int_equal(c, i);
    }
    pb_coll c;
    assert_int_equal(pb_coll_from_name("allreduce", &c), PB_OK);
    assert_int_equal(c, PB_COLL_ALLREDUCE);
    assert_int_equal(pb_coll_from_name("all_reduce", &c), PB_ERR_USAGE);
    assert_int_equal(pb_coll_from_name(NULL, &c), PB_ERR_USAGE);
    assert_null(pb_coll_name(PB_COLL_COUNT));
}

static void test_ring_time(void **state)
{
    (void)state;
    pb_model_link l = {0.0, 50e9};
    /* The seed's DP example: 7B bf16 on 8 GPUs at 50 GB/s -> 2*7/8*14 GB / 50 GB/s. */
    CLOSE(pb_model_t_ring_allreduce(14e9, 8, l), 0.49);
    pb_model_link la = {2e-6, 10e9};
    CLOSE(pb_model_t_ring_allreduce(1e6, 4, la), 6 * 2e-6 + 1.5 * 1e6 / 10e9);
    CLOSE(pb_model_t_ring_allreduce(1e6, 1, la), 0.0);
    CLOSE(pb_model_t_allgather(8e6, 8, la), 7 * 2e-6 + 7.0 / 8 * 8e6 / 10e9);
    CLOSE(pb_model_t_reducescatter(8e6, 8, la), pb_model_t_allgather(8e6, 8, la));
    CLOSE(pb_model_t_p2p(1e6, la), 2e-6 + 1e-4);
    /* Binomial tree: 2 * ceil(log2 n) rounds of a + S/B. */
    CLOSE(pb_model_t_tree_allreduce(1e3, 8, la), 6 * (2e-6 + 1e3 / 10e9));
    CLOSE(pb_model_t_tree_allreduce(1e3, 5, la), 6 * (2e-6 + 1e3 / 10e9));
    /* Small messages: the tree's fewer latency terms win; large: the ring. */
    CLOSE(pb_model_t_allreduce(8, 64, la), pb_model_t_tree_allreduce(8, 64, la));
    CLOSE(pb_model_t_allreduce(1e9, 64, la), pb_model_t_ring_allreduce(1e9, 64, la));
    CLOSE(pb_model_t_coll(PB_COLL_ALLREDUCE, 1e6, 4, la), pb_model_t_ring_allreduce(1e6, 4, la));
    CLOSE(pb_model_t_coll(PB_COLL_BROADCAST, 1e6, 8, la), 3 * pb_model_t_p2p(1e6, la));
    CLOSE(pb_model_t_coll(PB_COLL_SENDRECV, 1e6, 2, la), pb_model_t_p2p(1e6, la));
    /* Node-aware allreduce: 32 ranks, 8 a node (4 nodes): a ring of 8 inside each
     * node, 2*7 latencies + 2*7/8 S/B_intra, then a ring of the 4 nodes over each
     * member's eighth, 2*3 latencies + 2*3/4 (S/8)/B_inter. */
    pb_model_link nv = {2e-6, 300e9}, ib = {5e-6, 25e9};
    CLOSE(pb_model_t_node_allreduce(3.2e9, 32, 8, nv, ib),
          14 * 2e-6 + 1.75 * 3.2e9 / 300e9 + 6 * 5e-6 + 1.5 * 0.4e9 / 25e9);
    CLOSE(pb_model_t_node_allreduce(3.2e9, 32, 1, nv, ib), pb_model_t_ring_allreduce(3.2e9, 32, ib));
    CLOSE(pb_model_t_node_allreduce(3.2e9, 8, 8, nv, ib), pb_model_t_ring_allreduce(3.2e9, 8, nv));
    CLOSE(pb_model_t_node_allreduce(3.2e9, 12, 4, nv, ib),
          pb_model_t_ring_allreduce(3.2e9, 4, nv) + pb_model_t_ring_allreduce(0.8e9, 3, ib));
}

static void test_pipeline(void **state)
{
    (void)state;
    CLOSE(pb_model_pipe_efficiency(32, 8), 32.0 / 39.0);
    CLOSE(pb_model_pipe_bubble_of_step(32, 8), 7.0 / 39.0);
    CLOSE(pb_model_pipe_bubble_of_compute(32, 8), 7.0 / 32.0);
    CLOSE(pb_model_pipe_efficiency(4, 1), 1.0);
    assert_int_equal(pb_model_pipe_in_flight(PB_PP_GPIPE, 32, 8), 32);
    assert_int_equal(pb_model_pipe_in_flight(PB_PP_1F1B, 32, 8), 8);
    assert_int_equal(pb_model_pipe_in_flight(PB_PP_1F1B, 4, 8), 4);
}

static void test_tp_dp_volume(void **state)
{
    (void)state;
    CLOSE(pb_model_tp_elems_per_rank_layer(1, 2048, 4096, 8), 8.0 * 2048 * 4096 * 7 / 8);
    CLOSE(pb_model_tp_elems_per_rank_layer(2, 1024, 1024, 2), 8.0 * 2 * 1024 * 1024 / 2);
    CLOSE(pb_model_tp_elems_per_rank_layer(1, 2048, 4096, 1), 0.0);
    CLOSE(pb_model_dp_grad_bytes(7e9, 2), 14e9);
}

static void test_flops(void **state)
{
    (void)state;
    double b = 2, s = 1024, h = 4096;
    double gpt = pb_flops_layer_linear_params(h, 32, 32, 4 * h, 0);
    CLOSE(gpt, 12 * h * h);
    CLOSE(pb_flops_layer_fwd(b, s, h, gpt, 1, 1), 2 * b * s * 12 * h * h + 4 * b * s * s * h);
    CLOSE(pb_flops_layer_bwd(b, s, h, gpt, 1, 1), 2 * pb_flops_layer_fwd(b, s, h, gpt, 1, 1));
    CLOSE(pb_flops_layer_fwd(b, s, h, gpt, 4, 0), 2 * b * s * 12 * h * h / 4);
    /* Llama-2-70B's layer: Q and O 8192^2 each, K and V 8192 x 1024 each (8 of 64 heads), SwiGLU 3 x 8192 x 28672. */
    CLOSE(pb_flops_layer_linear_params(8192, 64, 8, 28672, 1), 2.0 * 8192 * 8192 + 2.0 * 8192 * 1024 + 3.0 * 8192 * 28672);
    /* a GELU MLP of the same width has two matrices */
    CLOSE(pb_flops_layer_linear_params(8192, 64, 64, 28672, 0), 4.0 * 8192 * 8192 + 2.0 * 8192 * 28672);
    CLOSE(pb_model_logit_flops_fwd(1, 2048, 4096, 32000), 2.0 * 2048 * 4096 * 32000);
}

static void test_memory(void **state)
{
    (void)state;
    CLOSE(PB_BYTES_PER_PARAM, 16.0);
    pb_presets_model m;
    assert_int_equal(pb_presets_preset("llama-7b", "--model", &m), PB_OK);
    /* DP only: 16 B/param, 7B -> 112 GB before activations. */
    pb_model_mem r = pb_model_memory_per_gpu(7e9, &m, 1, 1, 1, PB_PP_1F1B, 1, 0, PB_RECOMPUTE_NONE);
    CLOSE(r.weights, 14e9);
    CLOSE(r.grads, 14e9);
    CLOSE(r.optimizer, 84e9);
    double s = 2048, b = 1, h = 4096, a = 32, sbh = s * b * h;
    double k = 4 + 11 + 3 + 6 * 11008.0 / 4096; /* norms, attention (MHA), SwiGLU of 11008 */
    CLOSE(pb_model_act_coefficient(&m), k);
    double layer = sbh * (k + 5 * a * s / h);
    CLOSE(pb_model_act_bytes_per_layer(&m, 1, 0, PB_RECOMPUTE_NONE), layer);
    CLOSE(r.activations, 32 * layer);
    CLOSE(r.total, 112e9 + 32 * layer);
    /* Korthikanti table 2 with t = 8. */
    CLOSE(pb_model_act_bytes_per_layer(&m, 8, 0, PB_RECOMPUTE_NONE), sbh * (10 + (k - 10) / 8 + 5 * a * s / (h * 8)));
    CLOSE(pb_model_act_bytes_per_layer(&m, 8, 1, PB_RECOMPUTE_NONE), layer / 8);
    CLOSE(pb_model_act_bytes_per_layer(&m, 8, 1, PB_RECOMPUTE_SELECTIVE), sbh * k / 8);
    CLOSE(pb_model_act_bytes_per_layer(&m, 8, 0, PB_RECOMPUTE_SELECTIVE), sbh * (10 + (k - 10) / 8));
    CLOSE(pb_model_act_bytes_per_layer(&m, 8, 0, PB_RECOMPUTE_FULL), 2 * sbh);
    CLOSE(pb_model_act_bytes_per_layer(&m, 8, 1, PB_RECOMPUTE_FULL), 2 * sbh / 8);
    /* Korthikanti's 34 for GPT's shape; grouped KV heads keep less, a gated MLP more. */
    pb_presets_model gpt, l70;
    assert_int_equal(pb_presets_preset("gpt-1.3b", "--model", &gpt), PB_OK);
    CLOSE(pb_model_act_coefficient(&gpt), 34.0);
    assert_int_equal(pb_presets_preset("llama-70b", "--model", &l70), PB_OK);
    CLOSE(pb_model_act_coefficient(&l70), 4 + 7 + 4 * 8.0 / 64 + 3 + 6 * 28672.0 / 8192);
    /* t=2, p=4, m=16: GPipe holds 16 micro-batches of 8 layers, 1F1B holds 4. */
    pb_model_mem g = pb_model_memory_per_gpu(7e9, &m, 2, 4, 16, PB_PP_GPIPE, 1, 1, PB_RECOMPUTE_NONE);
    pb_model_mem f = pb_model_memory_per_gpu(7e9, &m, 2, 4, 16, PB_PP_1F1B, 1, 1, PB_RECOMPUTE_NONE);
    CLOSE(g.weights, 7e9 / 8 * 2);
    CLOSE(g.optimizer, 7e9 / 8 * 12);
    CLOSE(g.activations, 16 * 8 * layer / 2);
    CLOSE(f.activations, 4 * 8 * layer / 2);
}

static pb_model_train job_for(const char *model, int64_t gb)
{
    pb_model_train j = {.dtype_bytes = 2, .global_batch = gb, .sched = PB_PP_1F1B, .sp = 1,
                  .recompute = PB_RECOMPUTE_SELECTIVE};
    assert_int_equal(pb_presets_preset(model, "--model", &j.model), PB_OK);
    j.params = j.model.nominal_params > 0 ? j.model.nominal_params : pb_presets_params(&j.model);
    return j;
}

static void test_step(void **state)
{
    (void)state;
    pb_model_cluster c;
    assert_int_equal(pb_cluster_preset("a100", "--cluster", &c), PB_OK);
    pb_model_train j = job_for("llama-70b", 128);
    pb_model_step s;
    pb_model_step_eval(&j, &c, 8, 8, 4, &s);
    assert_string_equal(s.reject, "");
    assert_int_equal(s.m, 32);
    assert_int_equal(s.link_t, PB_LINK_INTRA);
    assert_int_equal(s.link_p, PB_LINK_INTER);
    assert_int_equal(s.link_d, PB_LINK_INTER);
    /* Terms as documented: the slowest stage is the last, which holds the
     * logit layer (forward, and twice that in backward: it is not replayed);
     * m of its slots, the 7 other stages' slots once each, then DP. */
    double slot = s.t_fwd + s.t_bwd + s.c_tp + s.c_pp;
    assert_int_equal(s.slow, 7);
    pb_model_train no_logits = j;
    no_logits.model.vocab = 0;
    pb_model_step even;
    pb_model_step_eval(&no_logits, &c, 8, 8, 4, &even);
    double slot0 = even.t_fwd + even.t_bwd + even.c_tp + even.c_pp;
    CLOSE(even.step, 39 * slot0 + even.c_dp);
    CLOSE(slot - slot0, 3 * pb_model_logit_flops_fwd(1, 4096, 8192, 32000) / 8 / c.flops);
    CLOSE(s.bubble, 7 * slot0);
    CLOSE(s.step, 32 * slot + 7 * slot0 + s.c_dp);
    /* The bubble-free compute: what plan's overhead shares and compute_s are of. */
    CLOSE(s.compute, 32 * (s.t_fwd + s.t_bwd));
    CLOSE(s.c_tp, 10 * 4 * pb_model_t_ring_allreduce(4096.0 * 8192 * 2, 8, c.intra));
    CLOSE(s.c_dp, pb_model_t_ring_allreduce(70e9 / 64 * 2, 4, c.inter));
    /* One stage sends no activations: no PP term, whatever the link. */
    pb_model_step one;
    pb_model_step_eval(&j, &c, 8, 1, 4, &one);
    assert_true(one.c_pp == 0.0 && one.c_tp > 0.0);
    /* Rejections: TP over a node, too big, indivisible layers. */
    pb_model_step_eval(&j, &c, 16, 4, 4, &s);
    assert_non_null(strstr(s.reject, "larger than a node"));
    pb_model_step_eval(&j, &c, 1, 1, 256, &s);
    assert_non_null(strstr(s.reject, "exceeds the global batch"));
    j.global_batch = 1024;
    pb_model_step_eval(&j, &c, 1, 16, 16, &s);
    char fit[160]; /* its figures: the step's memory against the cluster's, both in GB */
    snprintf(fit, sizeof fit, "does not fit: %.1f GB > %.1f GB per GPU", s.mem.total / 1e9, c.mem_bytes / 1e9);
    assert_string_equal(s.reject, fit);
    assert_true(s.mem.total > c.mem_bytes && c.mem_bytes > 1e10 && c.mem_bytes < 1e12);
    pb_model_step_eval(&j, &c, 1, 32, 8, &s);
    assert_non_null(strstr(s.reject, "does not divide 80 layers"));
    /* The order is the one whose links the step was computed with: 8 stages of
     * a 1.3B model and 2 replicas on 2 nodes. TDP keeps DP in a node (and
     * spreads the stages over both), TPD keeps the stages in a node; the
     * pipeline's 64 micro-batches of sends outweigh one gradient all-reduce. */
    pb_model_train pp_heavy = job_for("gpt-1.3b", 128);
    pb_model_step_eval(&pp_heavy, &c, 1, 8, 2, &s);
    assert_string_equal(s.reject, "");
    assert_int_equal(s.order, PB_ORDER_TPD);
    assert_int_equal(s.link_p, PB_LINK_INTRA);
    assert_int_equal(s.link_d, PB_LINK_INTER);
    /* DP across nodes with several members a node: with t = 1 a node's 8 GPUs are
     * all in one DP group (node-aware allreduce, g = 8); t = 2 leaves 4 a node;
     * t = 8 one, the flat ring over the inter-node links (llama-70b above). */
    pb_model_train dp = job_for("gpt-1.3b", 512);
    double g13 = pb_model_dp_grad_bytes(dp.params, 2);
    pb_model_step_eval(&dp, &c, 1, 1, 32, &s);
    assert_int_equal(s.link_d, PB_LINK_INTER);
    assert_int_equal(s.d_per_node, 8);
    CLOSE(s.c_dp, pb_model_t_node_allreduce(g13, 32, 8, c.intra, c.inter));
    pb_model_step_eval(&dp, &c, 2, 1, 16, &s);
    assert_int_equal(s.d_per_node, 4);
    CLOSE(s.c_dp, pb_model_t_ring_allreduce(g13 / 2, 4, c.intra) + pb_model_t_ring_allreduce(g13 / 8, 4, c.inter));
    pb_model_step_eval(&j, &c, 8, 8, 4, &s);
    assert_int_equal(s.d_per_node, 1);
    /* Small jobs: on one node every axis is intra-node. */
    pb_model_train t = job_for("tiny", 8);
    pb_model_step_eval(&t, &c, 2, 2, 2, &s);
    assert_string_equal(s.reject, "");
    assert_int_equal(s.link_d, PB_LINK_INTRA);
    assert_int_equal(s.link_p, PB_LINK_INTRA);
    pb_model_step_eval(&t, &c, 1, 1, 4, &s); /* 4 ranks of a node's 8: 4 a node, not 8 */
    assert_int_equal(s.link_d, PB_LINK_INTRA);
    assert_int_equal(s.d_per_node, 4);
}

/* Compute = GEMM FLOPs at the GEMM rate + element-wise traffic at memory
 * bandwidth; the interleaved schedule divides the bubble by v and multiplies
 * the pipeline sends by v. */
static void test_compute_and_interleave(void **state)
{
    (void)state;
    pb_model_cluster c;
    assert_int_equal(pb_cluster_preset("a100", "--cluster", &c), PB_OK);
    CLOSE(c.flops, 312e12 * PB_CLUSTER_GEMM_EFFICIENCY);
    CLOSE(c.mem_bw, 2039e9);
    c.mem_bytes = 1e12; /* no recomputation: let it fit */
    pb_model_train j = job_for("llama-70b", 128);
    j.recompute = PB_RECOMPUTE_NONE;
    j.model.vocab = 0; /* no logit layer: every stage costs the same */
    pb_model_step with_mem, gemm_only;
    pb_model_step_eval(&j, &c, 8, 8, 4, &with_mem);
    pb_model_cluster no_mem = c;
    no_mem.mem_bw = 0;
    pb_model_step_eval(&j, &no_mem, 8, 8, 4, &gemm_only);
    /* 10 layers a stage; without recomputation the backward moves twice the forward's bytes. */
    double ew = 10 * PB_MODEL_ELEMENTWISE_TRAFFIC * pb_model_act_bytes_per_layer(&j.model, 8, j.sp, PB_RECOMPUTE_NONE) / c.mem_bw;
    CLOSE(with_mem.t_fwd - gemm_only.t_fwd, ew);
    CLOSE(with_mem.t_bwd - gemm_only.t_bwd, 2 * ew);
    CLOSE(gemm_only.t_bwd, 2 * gemm_only.t_fwd);

    j.sched = PB_PP_INTERLEAVED;
    j.interleave = 5;
    pb_model_step v5;
    pb_model_step_eval(&j, &c, 8, 8, 4, &v5);
    assert_string_equal(v5.reject, "");
    assert_int_equal(v5.v, 5);
    CLOSE(v5.c_pp, 5 * with_mem.c_pp);
    double slot = v5.t_fwd + v5.t_bwd + v5.c_tp + v5.c_pp;
    CLOSE(v5.bubble, 7.0 / 5.0 * slot);
    CLOSE(v5.step, v5.m * slot + v5.bubble + v5.c_dp);
    /* Activations: 1 + (p-1)/(p*v) times 1F1B's. */
    CLOSE(v5.mem.activations, with_mem.mem.activations * (1.0 + 7.0 / 40.0));
    j.interleave = 3; /* 80 layers over 8 stages x 3 chunks */
    pb_model_step_eval(&j, &c, 8, 8, 4, &v5);
    assert_non_null(strstr(v5.reject, "p*v=8*3 does not divide 80 layers"));
}

/* Full recomputation replays each layer's forward during backward: its 2 TP
 * all-reduces run again (2 forward + 2 replayed + 2 backward = 6 per layer,
 * Megatron-LM), and the backward pays one more forward's GEMMs. */
static void test_full_recompute(void **state)
{
    (void)state;
    pb_model_cluster c;
    assert_int_equal(pb_cluster_preset("a100", "--cluster", &c), PB_OK);
    c.mem_bw = 0; /* GEMMs only: the backward is then 2 forwards, plus the replay */
    pb_model_train j = job_for("llama-70b", 128);
    j.recompute = PB_RECOMPUTE_FULL;
    pb_model_step s;
    pb_model_step_eval(&j, &c, 8, 8, 4, &s);
    assert_string_equal(s.reject, "");
    double ar = pb_model_t_ring_allreduce(4096.0 * 8192 * 2, 8, c.intra); /* b*s*h bf16 over t = 8 */
    CLOSE(s.c_tp, 10 * 6 * ar); /* 80 layers / p = 8: 10 a stage */
    /* The logit layer, on this slowest (last) stage, is not replayed. */
    CLOSE(s.t_bwd, 3 * s.t_fwd - pb_model_logit_flops_fwd(1, 4096, 8192, 32000) / 8 / c.flops);
    j.recompute = PB_RECOMPUTE_NONE;
    pb_model_step_eval(&j, &c, 8, 8, 4, &s);
    CLOSE(s.c_tp, 10 * 4 * ar);
    CLOSE(s.t_bwd, 2 * s.t_fwd);
}

/* Stages as Megatron-LM (uniform) and Megatron-DeepSpeed ('type:transformer',
 * 'type:transformer|embedding') split them: BLOOM's 70 layers over 12 stages. */
static void test_stage_partition(void **state)
{
    (void)state;
    int sum = 0;
    for (int i = 0; i < 12; i++) {
        int n = pb_model_stage_layers(70, 12, PB_PARTITION_EMBED, i);
        assert_int_equal(n, i == 0 || i == 11 ? 5 : 6); /* [embed | 5], 6 x 10, [5 | logits] */
        assert_int_equal(pb_model_stage_layers(70, 12, PB_PARTITION_BALANCED, i), i < 10 ? 6 : 5);
        sum += n;
    }
    assert_int_equal(sum, 70);
    assert_int_equal(pb_model_stage_layers(70, 1, PB_PARTITION_EMBED, 0), 70);
    assert_int_equal(pb_model_stage_layers(96, 8, PB_PARTITION_UNIFORM, 7), 12);

    pb_model_cluster c;
    assert_int_equal(pb_cluster_preset("a100-opa", "--cluster", &c), PB_OK);
    CLOSE(c.inter.bw_Bps, 4 * 12.5e9 / 8); /* 4 links a node shared by 8 GPUs */
    pb_model_train j = {.dtype_bytes = 2, .global_batch = 2048, .sched = PB_PP_1F1B, .sp = 0,
                        .recompute = PB_RECOMPUTE_FULL, .partition = PB_PARTITION_UNIFORM};
    j.model = (pb_presets_model){.hidden = 14336, .layers = 70, .heads = 112, .kv_heads = 112, .ffn = 4 * 14336,
                                 .seq = 2048, .vocab = 250880, .tied = 1, .micro_batch = 2};
    j.params = pb_presets_params(&j.model);
    pb_model_step uniform, balanced, embed;
    pb_model_step_eval(&j, &c, 4, 12, 8, &uniform);
    assert_non_null(strstr(uniform.reject, "p=12 does not divide 70 layers"));
    j.partition = PB_PARTITION_BALANCED;
    pb_model_step_eval(&j, &c, 4, 12, 8, &balanced);
    assert_string_equal(balanced.reject, "");
    j.partition = PB_PARTITION_EMBED;
    pb_model_step_eval(&j, &c, 4, 12, 8, &embed);
    assert_string_equal(embed.reject, "");
    /* 70 layers: the same stages in another order (one of 5 layers, ten of
     * 6, 5 and the logits), so the same step; a 6-layer stage is the slowest. */
    CLOSE(embed.step, balanced.step);
    assert_true(embed.slow > 0 && embed.slow < 11);
    /* 12 layers over 4 stages with a logit layer worth more than a layer:
     * balanced gives 3 each and the logits to the last, the slowest; the
     * embedding-aware split gives 3, 4, 3 and 2 with the logits. */
    j.model.layers = 12;
    j.model.vocab = 501760;
    pb_model_step_eval(&j, &c, 4, 4, 24, &embed);
    j.partition = PB_PARTITION_BALANCED;
    pb_model_step_eval(&j, &c, 4, 4, 24, &balanced);
    assert_int_equal(balanced.slow, 3);
    assert_int_equal(embed.slow, 1);
    assert_true(embed.step < balanced.step);
    j.partition = PB_PARTITION_EMBED;
    j.model.layers = 10;
    pb_model_step_eval(&j, &c, 4, 12, 8, &embed);
    assert_string_equal(embed.reject, ""); /* 10 layers + 2 embedding units over 12 stages */
    j.partition = PB_PARTITION_BALANCED;
    pb_model_step_eval(&j, &c, 4, 12, 8, &balanced);
    assert_non_null(strstr(balanced.reject, "p=12 is more stages than 10 layers"));
}

static void test_enumerate(void **state)
{
    (void)state;
    pb_model_cluster c;
    assert_int_equal(pb_cluster_preset("a100", "--cluster", &c), PB_OK);
    pb_model_train j = job_for("llama-70b", 1024);
    pb_model_step s[256];
    int n = pb_model_step_enumerate(&j, &c, 256, s, 256);
    assert_int_equal(n, 45); /* ordered factorizations of 2^8 into 3 */
    int valid = 0;
    for (int i = 0; i < n; i++) {
        if (s[i].reject[0]) continue;
        valid++;
        assert_true(s[i].mem.total <= c.mem_bytes);
        assert_true(s[i].t <= 8);
        if (i) assert_true(s[i].step >= s[i - 1].step); /* ranked */
    }
    assert_true(valid > 0);
    for (int i = valid; i < n; i++) assert_true(s[i].reject[0] != '\0'); /* rejected last */
}

static void test_cluster_presets(void **state)
{
    (void)state;
    pb_model_cluster c;
    assert_int_equal(pb_cluster_preset("h100", "--cluster", &c), PB_OK);
    assert_string_equal(c.name, "h100-ib400");
    CLOSE(c.inter.bw_Bps, 50e9);
    CLOSE(c.intra.bw_Bps, 450e9);
    assert_int_equal(pb_cluster_preset("a100-eth100", "--cluster", &c), PB_OK);
    CLOSE(c.inter.bw_Bps, 12.5e9);
    assert_int_equal(c.gpus_per_node, 8);
    assert_int_equal(pb_cluster_preset("a100-ib300", "--cluster", &c), PB_ERR_USAGE);
    assert_int_equal(pb_cluster_preset("v100", "--cluster", &c), PB_ERR_USAGE);
    assert_int_equal(pb_cluster_preset("a1000", "--cluster", &c), PB_ERR_USAGE);
}

/* pb_plan_explain ranks the wanted configuration among the first n steps only:
 * a step past n (stale entries of a caller's larger array) is not a candidate. */
static void test_explain(void **state)
{
    (void)state;
    pb_model_step s[3] = {{.t = 8, .p = 4, .d = 8, .step = 2.0}, {.t = 8, .p = 8, .d = 4, .step = 2.5},
                          {.t = 4, .p = 8, .d = 8, .step = 3.0}};
    char buf[512];
    double gap = 0;
    /* Each term in points of the step's own compute: TP 30 vs 10, bubble 10 vs 20, DP 5 vs 5, PP 2 vs 1. */
    s[0].compute = s[1].compute = 1.0;
    s[0].m = s[1].m = 1;
    s[0].c_tp = 0.1, s[0].bubble = 0.2, s[0].c_dp = 0.05, s[0].c_pp = 0.01, s[0].mem.total = 40e9;
    s[1].c_tp = 0.3, s[1].bubble = 0.1, s[1].c_dp = 0.05, s[1].c_pp = 0.02, s[1].mem.total = 30e9;
    assert_int_equal(pb_plan_explain(s, 2, (int[]){8, 8, 4}, buf, sizeof buf, &gap), 2);
    CLOSE(gap, 0.25);
    assert_string_equal(buf, "(8,8,4) ranks 2, 25.00% behind (8,4,8): vs it, TP +20.0, bubble -10.0, DP +0.0, "
                             "PP +1.0 points of compute; memory 30 vs 40 GB/GPU");
    assert_int_equal(pb_plan_explain(s, 2, (int[]){8, 4, 8}, buf, sizeof buf, &gap), 1);
    assert_string_equal(buf, "(8,4,8) ranks first");
    assert_int_equal(pb_plan_explain(s, 2, (int[]){4, 8, 8}, buf, sizeof buf, &gap), 0);
    assert_non_null(strstr(buf, "rejected or not a factorization"));
    snprintf(s[0].reject, sizeof s[0].reject, "does not fit");
    /* ranked against the best valid step, not the rejected s[0]; t != p in the name */
    s[2].compute = 1.0, s[2].m = 1;
    s[2].c_tp = 0.1, s[2].bubble = 0.3, s[2].c_dp = 0.05, s[2].c_pp = 0.02, s[2].mem.total = 20e9;
    assert_int_equal(pb_plan_explain(s, 3, (int[]){4, 8, 8}, buf, sizeof buf, &gap), 2);
    CLOSE(gap, 0.2);
    assert_string_equal(buf, "(4,8,8) ranks 2, 20.00% behind (8,8,4): vs it, TP -20.0, bubble +20.0, DP +0.0, "
                             "PP +0.0 points of compute; memory 20 vs 30 GB/GPU");
    /* plan --reproduce's verdict on each side of each boundary; a rejected one is never "near the top" */
    assert_string_equal(pb_plan_explain_verdict(1, 0.0), "the model puts it first");
    assert_non_null(strstr(pb_plan_explain_verdict(2, 0.05), "near the top"));
    assert_non_null(strstr(pb_plan_explain_verdict(2, 0.0501), "more than 5% behind"));
    assert_string_equal(pb_plan_explain_verdict(0, 0.0), "the model rejects it");
}

/* plan --top's summary of rejections: one configuration for each reason
 * pb_model_step_eval gives, each counted once under its own words. */
static void test_reject_summary(void **state)
{
    (void)state;
    pb_model_cluster c;
    assert_int_equal(pb_cluster_preset("a100", "--cluster", &c), PB_OK);
    pb_model_train j = job_for("llama-70b", 128); /* 80 layers, 64 heads, micro-batch 1 */
    pb_model_train big = j, loose = j;
    big.global_batch = 1024;
    loose.partition = PB_PARTITION_BALANCED; /* so that p = 100 is refused for its stage count, not the split */
    struct {
        const pb_model_train *job;
        int t, p, d;
        const char *line;
    } cases[] = {
        {&j, 16, 4, 4, "  1 have t larger than a node\n"},
        {&j, 3, 1, 1, "  1 have t not dividing the heads or p (p*v) not dividing the layers\n"},
        {&loose, 1, 100, 1, "  1 have more stages than layers\n"},
        {&j, 1, 1, 256, "  1 have d*b above the global batch\n"},
        {&j, 1, 1, 3, "  1 have a global batch not a multiple of d*b\n"},
        {&big, 1, 16, 16, "  1 do not fit in GPU memory\n"},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    pb_model_step s[N + 1]; /* and one whose reason is of no known kind */
    for (int i = 0; i < N; i++) {
        pb_model_step_eval(cases[i].job, &c, cases[i].t, cases[i].p, cases[i].d, &s[i]);
        assert_true(s[i].reject[0] != '\0');
    }
    for (int n = N; n <= N + 1; n++) {
        if (n > N) {
            memset(&s[N], 0, sizeof s[N]);
            snprintf(s[N].reject, sizeof s[N].reject, "a reason a later model may give");
        }
        char text[4096] = "", want[32];
        FILE *f = fmemopen(text, sizeof text - 1, "w");
        assert_non_null(f);
        pb_plan_print_ranking(s, n, 5, NULL, f);
        fclose(f);
        snprintf(want, sizeof want, "rejected (%d):", n);
        assert_non_null(strstr(text, want));
        for (int i = 0; i < N; i++) {
            if (!strstr(text, cases[i].line)) print_error("%s: missing '%s' in:\n%s", s[i].reject, cases[i].line, text);
            assert_non_null(strstr(text, cases[i].line));
        }
        assert_int_equal(strstr(text, "  1 for other reasons\n") != NULL, n > N);
    }
}

/* A ranking row's percentage columns, each term in points of the step's own compute:
 * TP m*c_tp, PP m*c_pp, DP c_dp, then the bubble in points of the step, and GB. */
static void test_ranking_row(void **state)
{
    (void)state;
    pb_model_step s = {.t = 8, .p = 4, .d = 8, .m = 2, .step = 2.5, .compute = 1.0,
                       .c_tp = 0.15, .c_pp = 0.02, .c_dp = 0.5, .bubble = 0.25};
    s.mem.total = 40e9;
    char text[2048] = "";
    FILE *f = fmemopen(text, sizeof text - 1, "w");
    assert_non_null(f);
    pb_plan_print_ranking(&s, 1, 5, (int[]){8, 4, 8}, f);
    fclose(f);
    char *row = strstr(text, "\n*"), *save = NULL, *tok[32];
    assert_non_null(row);
    *strchr(row + 1, '\n') = '\0';
    int n = 0; /* the row's fields; the last five are the percentages and the memory */
    for (char *t = strtok_r(row + 1, " ", &save); t && n < 32; t = strtok_r(NULL, " ", &save)) tok[n++] = t;
    assert_true(n >= 5);
    const char *want[5] = {"30.0", "4.0", "50.0", "10.0", "40.0"};
    for (int k = 0; k < 5; k++) assert_string_equal(tok[n - 5 + k], want[k]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bus_factors), cmocka_unit_test(test_coll_names), cmocka_unit_test(test_ring_time),
        cmocka_unit_test(test_pipeline),    cmocka_unit_test(test_tp_dp_volume), cmocka_unit_test(test_flops),
        cmocka_unit_test(test_memory),      cmocka_unit_test(test_step),       cmocka_unit_test(test_enumerate),
        cmocka_unit_test(test_cluster_presets), cmocka_unit_test(test_compute_and_interleave),
        cmocka_unit_test(test_full_recompute), cmocka_unit_test(test_explain), cmocka_unit_test(test_stage_partition),
        cmocka_unit_test(test_reject_summary), cmocka_unit_test(test_ranking_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
