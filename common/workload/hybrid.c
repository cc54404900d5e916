#include "workload/hybrid.h"

#include "core/error.h"
#include "core/mem.h"
#include "core/timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct pb_hybrid {
    pb_hybrid_config cfg;
    pb_hybrid_coords at;
    MPI_Comm tp_group, pp_group, dp_group;
    pb_comm *tp_comm, *dp_comm;
    pb_tp *tp;
    pb_pp_exec *ex;
    pb_pp_schedule_plan plan;
    pb_dp *dp;
    uint64_t *layer_bytes;
    pb_layer_saved **acts; /* per micro-batch in flight */
    int64_t rows;   /* activation rows per rank (N, or N/t with sequence parallelism) */
    uint64_t peak;
};

static pb_tp_config tp_config(const pb_hybrid_config *cfg, int t, int p, pb_comm *comm)
{
    pb_layer_shape sh = cfg->shape;
    sh.tp_size = cfg->T;
    sh.tp_rank = t;
    int64_t per_stage = cfg->layers / cfg->P;
    return (pb_tp_config){.eng = cfg->eng, .be = cfg->be, .comm = comm, .shape = sh, .layer0 = p * per_stage,
                          .nlayers = per_stage, .model_layers = cfg->layers, .seed = cfg->seed,
                          .mode = cfg->tp_mode, .grad_dtype = cfg->grad_dtype, .grads = NULL};
}

uint64_t pb_hybrid_bytes(const pb_hybrid_config *cfg)
{
    pb_tp_config tc = tp_config(cfg, 0, 0, NULL);
    int in_flight = cfg->sched == PB_PP_GPIPE ? cfg->micro_batches : cfg->P;
    pb_pp_config pc = {.be = cfg->be, .act_count = (size_t)pb_tp_io_rows(&tc) * (size_t)cfg->shape.h,
                       .act_dtype = cfg->eng->gemm_dtype(cfg->shape.dtype), .max_sends = cfg->micro_batches};
    return pb_mem_add(pb_mem_add(pb_tp_bytes(&tc), pb_mem_mul((uint64_t)in_flight, pb_tp_act_bytes(&tc))),
                      pb_pp_exec_bytes(&pc));
}

/* ---- the stage's compute, for the pipeline executor ---- */

static int begin_step(void *user)
{
    pb_hybrid *h = user;
    pb_layer_act_reset_peak(pb_layer_stack_pool(pb_tp_stack(h->tp)));
    return PB_OK;
}

static int act_alloc(void *user, int chunk, int mb)
{
    pb_hybrid *h = user;
    (void)chunk;
    return pb_tp_acts_alloc(h->tp, &h->acts[mb]);
}

static void act_free(void *user, int chunk, int mb)
{
    pb_hybrid *h = user;
    (void)chunk;
    pb_tp_acts_free(h->tp, h->acts[mb]);
    h->acts[mb] = NULL;
}

static int forward(void *user, int chunk, int mb, const void *in, void *out)
{
    pb_hybrid *h = user;
    (void)chunk;
    return pb_tp_forward(h->tp, h->acts[mb], in, out);
}

static int backward(void *user, int chunk, int mb, const void *dout, void *din)
{
    pb_hybrid *h = user;
    (void)chunk;
    return pb_tp_backward(h->tp, h->acts[mb], dout, din, 1, NULL, NULL);
}

/* Replica d trains on micro-batches d*m .. d*m + m - 1 of the global batch:
 * replicas see different data (same weights), so their gradients differ and
 * only the DP all-reduce makes them equal. */
static int global_mb(const pb_hybrid *h, int mb) { return h->at.d * h->cfg.micro_batches + mb; }

static int input(void *user, int mb, void *x)
{
    pb_hybrid *h = user;
    return pb_pp_fill_input(h->cfg.eng, pb_tp_shape(h->tp)->dtype, x, h->rows, h->cfg.shape.h, h->cfg.seed,
                            global_mb(h, mb));
}

static int loss_grad(void *user, int mb, void *dy)
{
    pb_hybrid *h = user;
    return pb_pp_fill_loss_grad(h->cfg.eng, pb_tp_shape(h->tp)->dtype, dy, h->rows, h->cfg.shape.h, h->cfg.seed,
                                global_mb(h, mb));
}

static uint64_t act_peak(void *user)
{
    pb_hybrid *h = user;
    return pb_layer_act_peak(pb_layer_stack_pool(pb_tp_stack(h->tp)));
}

static const pb_pp_ops tp_stage_ops = {
    .begin_step = begin_step, .act_alloc = act_alloc, .act_free = act_free, .forward = forward,
    .backward = backward, .input = input, .loss_grad = loss_grad, .act_peak = act_peak,
};

/* ---- set-up ---- */

static pb_link_class group_link(const pb_world *w, MPI_Comm group)
{
    int n;
    MPI_Comm_size(group, &n);
    int me = w->rank, *ranks = malloc(sizeof(int) * (size_t)n);
    if (!ranks) return PB_LINK_MIXED; /* unknown: claim nothing */
    MPI_Allgather(&me, 1, MPI_INT, ranks, 1, MPI_INT, group);
    pb_link_class link = pb_world_link(w, ranks, n);
    free(ranks);
    return link;
}

const char *pb_hybrid_axis_link(const pb_world *w, pb_link_class mine)
{
    int intra = mine == PB_LINK_INTRA, inter = mine == PB_LINK_INTER;
    MPI_Allreduce(MPI_IN_PLACE, &intra, 1, MPI_INT, MPI_MIN, w->comm);
    MPI_Allreduce(MPI_IN_PLACE, &inter, 1, MPI_INT, MPI_MIN, w->comm);
    return pb_link_name(intra ? PB_LINK_INTRA : inter ? PB_LINK_INTER : PB_LINK_MIXED);
}

static int split_groups(pb_hybrid *h)
{
    const pb_hybrid_config *c = &h->cfg;
    if (pb_placement_grid_coords(c->rank_at, c->T, c->P, c->D, c->w->rank, &h->at.t, &h->at.p, &h->at.d) != 0)
        return pb_fail(PB_ERR_USAGE, "rank %d has no place in the %d x %d x %d grid", c->w->rank, c->T, c->P, c->D);
    int t = h->at.t, p = h->at.p, d = h->at.d;
    MPI_Comm_split(c->w->comm, p + c->P * d, t, &h->tp_group);
    MPI_Comm_split(c->w->comm, t + c->T * d, p, &h->pp_group);
    MPI_Comm_split(c->w->comm, t + c->T * p, d, &h->dp_group);
    h->at.tp_link = pb_hybrid_axis_link(c->w, group_link(c->w, h->tp_group));
    h->at.pp_link = pb_hybrid_axis_link(c->w, group_link(c->w, h->pp_group));
    h->at.dp_link = pb_hybrid_axis_link(c->w, group_link(c->w, h->dp_group));
    /* Each creation is agreed in its group; the world agrees before the next
     * one, whose groups cut across these. */
    PB_TRY(pb_world_agree_at(c->w->comm, c->be->comm_create(h->tp_group, &h->tp_comm), "comm"));
    return pb_world_agree_at(c->w->comm, c->be->comm_create(h->dp_group, &h->dp_comm), "comm");
}

static int create_dp(pb_hybrid *h)
{
    int64_t n = h->cfg.layers / h->cfg.P;
    pb_tp_config tc = tp_config(&h->cfg, h->at.t, h->at.p, h->tp_comm);
    uint64_t total = pb_tp_grad_bytes(&tc);
    h->layer_bytes = malloc(sizeof(uint64_t) * (size_t)n);
    PB_CHECK(h->layer_bytes, PB_ERR_ENV, "out of memory");
    for (int64_t i = 0; i < n; i++) h->layer_bytes[i] = total / (uint64_t)n;
    pb_dp_config dc = {.be = h->cfg.be, .comm = h->dp_comm, .eng = h->cfg.eng, .grads = pb_tp_grads(h->tp),
                       .bytes = total, .dtype = h->cfg.grad_dtype, .overlap = PB_DP_OVERLAP_NONE,
                       .layer_bytes = h->layer_bytes, .nlayers = n, .layer0 = tc.layer0};
    return pb_dp_create(&dc, &h->dp);
}

int pb_hybrid_create(const pb_hybrid_config *cfg, pb_hybrid **out)
{
    /* Every step that can fail on one rank is agreed over the world before
     * the next one, which starts with a collective. */
    MPI_Comm world = cfg->w->comm;
    pb_hybrid *h = calloc(1, sizeof *h);
    *out = h;
    if (h) {
        h->cfg = *cfg;
        h->acts = calloc((size_t)cfg->micro_batches, sizeof(pb_layer_saved *)); /* one pointer per micro-batch */
    }
    PB_TRY(pb_world_agree_at(world, h && h->acts ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory"), "hybrid"));
    if (!h || !h->acts) return PB_ERR_ENV; /* implied by the agreement; said for the analyzer */
    PB_TRY(split_groups(h));
    pb_tp_config tc = tp_config(cfg, h->at.t, h->at.p, h->tp_comm);
    PB_TRY(pb_world_agree_at(world, pb_tp_create(&tc, &h->tp), "hybrid tp"));
    h->rows = pb_tp_io_rows(&tc);
    pb_pp_config pc = {.be = cfg->be, .group = h->pp_group, .act_count = (size_t)h->rows * (size_t)cfg->shape.h,
                       .act_dtype = pb_tp_shape(h->tp)->dtype, .ring = 0, .max_sends = cfg->micro_batches};
    PB_TRY(pb_world_agree_at(world, pb_pp_exec_create(&pc, &h->ex), "pipeline")); /* agreed in the pipeline, then here */
    PB_TRY(pb_world_agree_at(world, pb_pp_schedule_plan_build(cfg->sched, cfg->P, cfg->micro_batches, 1, h->at.p, &h->plan),
                    "hybrid plan"));
    return create_dp(h);
}

void pb_hybrid_destroy(pb_hybrid *h)
{
    if (!h) return;
    if (h->dp) pb_dp_destroy(h->dp);
    pb_pp_schedule_plan_free(&h->plan);
    if (h->ex) pb_pp_exec_destroy(h->ex);
    for (int i = 0; h->acts && i < h->cfg.micro_batches; i++)
        if (h->acts[i]) pb_tp_acts_free(h->tp, h->acts[i]);
    if (h->tp) pb_tp_destroy(h->tp);
    if (h->tp_comm) h->cfg.be->comm_destroy(h->tp_comm);
    if (h->dp_comm) h->cfg.be->comm_destroy(h->dp_comm);
    MPI_Comm *groups[] = {&h->tp_group, &h->pp_group, &h->dp_group};
    for (int i = 0; i < 3; i++)
        if (*groups[i] != MPI_COMM_NULL && *groups[i] != 0) MPI_Comm_free(groups[i]);
    free(h->layer_bytes);
    free(h->acts);
    free(h);
}

int pb_hybrid_comms(int P) { return 2 + pb_pp_exec_comms(P, 0); }

void pb_hybrid_get_coords(const pb_hybrid *h, pb_hybrid_coords *out) { *out = h->at; }

/* The pipeline step alone: this replica's own gradients, not yet reduced. */
static int local_step(pb_hybrid *h, pb_pp_stats *ps)
{
    /* Gradients accumulate over the micro-batches of one step only. */
    pb_tp_config tc = tp_config(&h->cfg, h->at.t, h->at.p, h->tp_comm);
    PB_TRY(h->cfg.eng->memset(pb_tp_grads(h->tp), 0, pb_tp_grad_bytes(&tc)));
    return pb_pp_exec_step(h->ex, &h->plan, &tp_stage_ops, h, ps, NULL);
}

int pb_hybrid_step(pb_hybrid *h, pb_hybrid_stats *st)
{
    memset(st, 0, sizeof *st);
    pb_tp_acct_reset(h->tp);
    pb_tp_config tc = tp_config(&h->cfg, h->at.t, h->at.p, h->tp_comm);
    double t0 = pb_timing_now_us();
    pb_pp_stats ps;
    PB_TRY(local_step(h, &ps));
    PB_TRY(pb_dp_begin(h->dp));
    PB_TRY(pb_dp_finish(h->dp));
    st->step_us = pb_timing_now_us() - t0;
    pb_tp_acct acct;
    pb_tp_acct_get(h->tp, &acct);
    pb_dp_timing dt;
    pb_dp_last_timing(h->dp, &dt);
    st->compute_us = acct.compute_us;
    st->tp_comm_us = acct.comm_us;
    st->tp_bytes = (double)acct.comm_bytes;
    st->pp_wait_us = ps.wait_us;
    st->pp_bytes = (double)ps.bytes_sent;
    st->dp_comm_us = dt.busy_us;
    int D = h->cfg.D;
    st->dp_bytes = 2.0 * (D - 1) / D * (double)pb_tp_grad_bytes(&tc);
    h->peak = ps.peak_act_bytes;
    return PB_OK;
}

/* After the DP all-reduce every replica must hold the sum of all replicas'
 * local gradients. The expected sum is formed independently of the step:
 * each rank reruns its pipeline step without the all-reduce, keeps that
 * local gradient on the host, and pb_dp_check sums those over the DP group
 * on the control plane (MPI, in double) and compares them with the gradient
 * a full step leaves. Replicas must also agree bit for bit (one hash). */
int pb_hybrid_check(pb_hybrid *h, int corrupt, long long *wrong)
{
    pb_tp_config tc = tp_config(&h->cfg, h->at.t, h->at.p, h->tp_comm);
    uint64_t bytes = pb_tp_grad_bytes(&tc);
    void *local = malloc(bytes ? bytes : 1);
    int status = local ? PB_OK : pb_fail(PB_ERR_ENV, "out of host memory (%llu bytes)", (unsigned long long)bytes);
    status = pb_world_agree(h->cfg.w, status);
    pb_pp_stats ps;
    pb_hybrid_stats st;
    /* the steps exchange messages: a rank may wait inside one that failed elsewhere */
    MPI_Comm all = h->cfg.w->comm;
    if (status == PB_OK) status = pb_world_agree_after_step(all, local_step(h, &ps), PB_STEP_GRACE_S, NULL);
    if (status == PB_OK) status = pb_world_agree(h->cfg.w, h->cfg.eng->to_host(local, pb_tp_grads(h->tp), bytes));
    if (status == PB_OK) status = pb_world_agree_after_step(all, pb_hybrid_step(h, &st), PB_STEP_GRACE_S, NULL);
    long long bad = 0;
    uint64_t hash = 0, first = 0;
    if (status == PB_OK)
        status = pb_dp_check(h->dp_group, h->cfg.eng, pb_tp_grads(h->tp), local, bytes, h->cfg.grad_dtype, corrupt,
                             &bad, &hash);
    first = hash;
    MPI_Bcast(&first, 1, MPI_UINT64_T, 0, h->dp_group);
    bad = status != PB_OK || bad > 0 || hash != first;
    MPI_Allreduce(&bad, wrong, 1, MPI_LONG_LONG, MPI_SUM, h->cfg.w->comm);
    free(local);
    return status;
}
