/* The tensor-parallel stack: layer blocks (layer.h) on this rank's shards,
 * the TP group's collectives between them, and the accounting. */
#include "workload/tp.h"

#include "core/error.h"
#include "core/mem.h"
#include "workload/staging.h"

#include <stdlib.h>
#include <string.h>

struct pb_tp {
    pb_tp_config cfg;
    pb_layer_shape sh; /* effective compute type */
    pb_layer_stack *st;
    size_t es;
    uint64_t full;      /* N*h elements */
    int64_t rows;       /* rows of the stack's input/output on this rank */
    void *part;         /* N x h: a block's partial output (or input gradient) */
    void *gathered;     /* N x h: the reduced or gathered activation / gradient */
    void *io[2];        /* rows x h: between layers (forward uses io[0]; backward alternates) */
    void *shard;        /* rows x h: between the blocks of a layer in sp mode */
    pb_staging stage;   /* backend memory, N x h each (send, receive), when memories differ */
    pb_ordering order;
    pb_ordering_side_timer compute_t, comm_t;
    pb_tp_acct acct;    /* bytes and counts; the times live in the timers */
};

typedef enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER } coll_op;

static pb_layer_shape effective(const pb_tp_config *cfg)
{
    pb_layer_shape sh = cfg->shape;
    sh.dtype = cfg->eng->gemm_dtype(sh.dtype);
    return sh;
}

static pb_layer_stack_config stack_cfg(const pb_tp_config *cfg)
{
    return (pb_layer_stack_config){.eng = cfg->eng, .shape = cfg->shape, .layer0 = cfg->layer0,
                             .nlayers = cfg->nlayers, .model_layers = cfg->model_layers, .seed = cfg->seed,
                             .grad_dtype = cfg->grad_dtype, .grads = cfg->grads};
}

/* Staging is needed when the engine computes in one memory and the backend
 * communicates from another (cuBLAS with MPI, BLAS with NCCL). */
static int needs_staging(const pb_tp_config *cfg)
{
    if (cfg->shape.tp_size <= 1 || !cfg->be) return 0;
    return pb_staging_needed(cfg->eng, cfg->be);
}

int64_t pb_tp_io_rows(const pb_tp_config *cfg)
{
    int64_t n = cfg->shape.b * cfg->shape.s;
    return cfg->mode == PB_TP_SP ? n / cfg->shape.tp_size : n;
}

uint64_t pb_tp_io_bytes(const pb_tp_config *cfg)
{
    pb_layer_shape sh = effective(cfg);
    return pb_mem_mul(pb_mem_mul((uint64_t)pb_tp_io_rows(cfg), (uint64_t)sh.h), pb_dtype_size(sh.dtype));
}

uint64_t pb_tp_bytes(const pb_tp_config *cfg)
{
    pb_layer_shape sh = effective(cfg);
    pb_layer_stack_config sc = stack_cfg(cfg);
    uint64_t full = pb_layer_io_bytes(&sh);
    uint64_t sum = pb_mem_add(pb_mem_add(pb_layer_stack_bytes(&sc), pb_mem_mul(2, full)),
                              pb_mem_mul(3, pb_tp_io_bytes(cfg)));
    return pb_mem_add(sum, needs_staging(cfg) ? pb_mem_mul(2, full) : 0);
}

uint64_t pb_tp_act_bytes(const pb_tp_config *cfg)
{
    pb_layer_shape sh = effective(cfg);
    return pb_layer_act_bytes(&sh, cfg->nlayers);
}

uint64_t pb_tp_grad_bytes(const pb_tp_config *cfg)
{
    pb_layer_stack_config sc = stack_cfg(cfg);
    return pb_layer_stack_grad_bytes(&sc);
}

static int check_config(const pb_tp_config *cfg)
{
    PB_CHECK(cfg->eng, PB_ERR_USAGE, "tp: no compute engine");
    PB_TRY(pb_tp_shape_check(&cfg->shape, cfg->mode));
    if (cfg->shape.tp_size == 1) return PB_OK;
    PB_CHECK(cfg->be && cfg->comm, PB_ERR_USAGE, "tp: t = %d needs a backend communicator", cfg->shape.tp_size);
    int size = cfg->be->size(cfg->comm), rank = cfg->be->rank(cfg->comm);
    PB_CHECK(size == cfg->shape.tp_size && rank == cfg->shape.tp_rank, PB_ERR_USAGE,
             "tp: communicator has rank %d of %d, the shape says %d of %d", rank, size, cfg->shape.tp_rank,
             cfg->shape.tp_size);
    return PB_OK;
}

static int alloc_buffers(pb_tp *tp)
{
    const pb_compute *E = tp->cfg.eng;
    size_t full = (size_t)tp->full * tp->es, io = (size_t)pb_tp_io_bytes(&tp->cfg);
    PB_TRY(E->alloc(&tp->part, full));
    PB_TRY(E->alloc(&tp->gathered, full));
    PB_TRY(E->alloc(&tp->io[0], io));
    PB_TRY(E->alloc(&tp->io[1], io));
    PB_TRY(E->alloc(&tp->shard, io));
    if (!needs_staging(&tp->cfg)) return PB_OK;
    return pb_staging_alloc(&tp->stage, tp->cfg.eng, tp->cfg.be, 2, full);
}

int pb_tp_create(const pb_tp_config *cfg, pb_tp **out)
{
    *out = NULL;
    PB_TRY(check_config(cfg));
    pb_tp *tp = calloc(1, sizeof *tp);
    PB_CHECK(tp, PB_ERR_ENV, "tp: out of memory");
    tp->cfg = *cfg;
    tp->sh = effective(cfg);
    tp->es = pb_dtype_size(tp->sh.dtype);
    tp->full = (uint64_t)(tp->sh.b * tp->sh.s * tp->sh.h);
    tp->rows = pb_tp_io_rows(cfg);
    tp->order = pb_tp_ordering(cfg->eng, cfg->be, cfg->shape.tp_size);
    pb_ordering_side_timer_init(&tp->compute_t, tp->order, cfg->eng, cfg->be, NULL);
    pb_ordering_side_timer_init(&tp->comm_t, tp->order, cfg->eng, cfg->be, cfg->comm);
    pb_layer_stack_config sc = stack_cfg(cfg);
    int status = pb_layer_stack_create(&sc, &tp->st);
    if (status == PB_OK) status = alloc_buffers(tp);
    if (status != PB_OK) {
        pb_tp_destroy(tp);
        return status;
    }
    *out = tp;
    return PB_OK;
}

void pb_tp_destroy(pb_tp *tp)
{
    if (!tp) return;
    void *bufs[] = {tp->part, tp->gathered, tp->io[0], tp->io[1], tp->shard};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) tp->cfg.eng->free(bufs[i]);
    pb_staging_free(&tp->stage);
    pb_layer_stack_destroy(tp->st);
    free(tp);
}

pb_layer_stack *pb_tp_stack(pb_tp *tp) { return tp->st; }
const pb_layer_shape *pb_tp_shape(const pb_tp *tp) { return &tp->sh; }
const pb_tp_config *pb_tp_cfg(const pb_tp *tp) { return &tp->cfg; }
void *pb_tp_grads(pb_tp *tp) { return pb_layer_stack_grads(tp->st); }
int pb_tp_acts_alloc(pb_tp *tp, pb_layer_saved **out) { return pb_layer_saved_alloc(tp->st, out); }
void pb_tp_acts_free(pb_tp *tp, pb_layer_saved *acts) { pb_layer_saved_free(tp->st, acts); }
void pb_tp_acct_reset(pb_tp *tp)
{
    memset(&tp->acct, 0, sizeof tp->acct);
    tp->compute_t.total_us = tp->comm_t.total_us = 0;
    tp->compute_t.spans = tp->comm_t.spans = 0;
}

void pb_tp_acct_get(const pb_tp *tp, pb_tp_acct *out)
{
    *out = tp->acct;
    out->compute_us = tp->compute_t.total_us;
    out->comm_us = tp->comm_t.total_us;
}

pb_ordering pb_tp_ordering(const pb_compute *eng, const pb_comm_backend *be, int tp_size)
{
    return tp_size > 1 && be ? pb_ordering_plan(eng, be) : PB_ORDERING_HOST;
}

/* ---- collectives ----------------------------------------------------------- */

static int issue(pb_tp *tp, coll_op op, const void *src, void *dst)
{
    const pb_comm_backend *be = tp->cfg.be;
    uint64_t shard = tp->full / (uint64_t)tp->sh.tp_size;
    switch (op) {
    case OP_ALLREDUCE: return be->allreduce(tp->cfg.comm, src, dst, (size_t)tp->full, tp->sh.dtype, PB_SUM);
    case OP_ALLGATHER: return be->allgather(tp->cfg.comm, src, dst, (size_t)shard, tp->sh.dtype);
    default: return be->reducescatter(tp->cfg.comm, src, dst, (size_t)shard, tp->sh.dtype, PB_SUM);
    }
}

/* All-reduce: dst = sum of every rank's src (N x h). All-gather: dst (N x h)
 * = every rank's src (N/t x h) in rank order. Reduce-scatter: dst (N/t x h) =
 * this rank's rows of the sum of every src (N x h). With t = 1 all three are
 * a copy and send nothing. Timed from issue to completion. */
static int coll(pb_tp *tp, coll_op op, const void *src, void *dst)
{
    int t = tp->sh.tp_size;
    uint64_t shard = tp->full / (uint64_t)t;
    size_t in = (size_t)((op == OP_ALLGATHER ? shard : tp->full) * tp->es);
    size_t out = (size_t)((op == OP_REDUCESCATTER ? shard : tp->full) * tp->es);
    const pb_compute *E = tp->cfg.eng;
    const pb_comm_backend *be = tp->cfg.be;
    pb_comm *c = tp->cfg.comm;
    int status = PB_OK;
    if (t == 1) {
        status = E->copy(dst, src, in);
    } else {
        /* Host order: the engine synchronizes here and the collective completes
         * inside the timer. Stream order: events order the two streams. */
        void **sb = tp->stage.buf;
        int staged = sb[0] != NULL;
        status = pb_ordering_comm_after_compute(tp->order, E, be, c);
        if (status == PB_OK) status = pb_ordering_side_timer_begin(&tp->comm_t);
        if (status == PB_OK && staged) status = pb_staging_in(&tp->stage, 0, src, in);
        if (status == PB_OK) status = issue(tp, op, staged ? sb[0] : src, staged ? sb[1] : dst);
        if (status == PB_OK && staged) status = be->sync(c);
        if (status == PB_OK && staged) status = pb_staging_out(&tp->stage, 1, dst, out);
        if (status == PB_OK) status = pb_ordering_side_timer_end(&tp->comm_t);
        if (status == PB_OK) status = pb_ordering_compute_after_comm(tp->order, E, be, c);
    }
    tp->acct.comm_bytes += op == OP_ALLREDUCE ? pb_tp_allreduce_bytes(tp->full, t, tp->es)
                                              : pb_tp_shard_coll_bytes(shard, t, tp->es);
    tp->acct.colls += t > 1;
    return status;
}

/* ---- blocks ---------------------------------------------------------------- */

typedef int (*block_fwd_fn)(pb_layer *, pb_layer_acts *, const void *, void *);
typedef int (*block_bwd_fn)(pb_layer *, pb_layer_acts *, const void *, void *, int);

/* A block's compute, timed to its completion (host order) or by an event
 * span on the compute stream (stream order). */
static int timed_fwd(pb_tp *tp, block_fwd_fn fn, pb_layer *ly, pb_layer_acts *sv, const void *x, void *y)
{
    PB_TRY(pb_ordering_side_timer_begin(&tp->compute_t));
    PB_TRY(fn(ly, sv, x, y));
    return pb_ordering_side_timer_end(&tp->compute_t);
}

static int timed_bwd(pb_tp *tp, block_bwd_fn fn, pb_layer *ly, pb_layer_acts *sv, const void *dy, void *dx,
                     int accumulate)
{
    PB_TRY(pb_ordering_side_timer_begin(&tp->compute_t));
    PB_TRY(fn(ly, sv, dy, dx, accumulate));
    return pb_ordering_side_timer_end(&tp->compute_t);
}

/* The end of a pass: its output complete (in stream order the compute stream
 * waits on the last collective, so synchronizing it completes both; with t = 1
 * the pass ends on a queued copy), the device times read. */
static int finish_pass(pb_tp *tp)
{
    PB_TRY(tp->cfg.eng->synchronize());
    if (tp->order != PB_ORDERING_STREAM) return PB_OK;
    PB_TRY(pb_ordering_side_timer_take(&tp->compute_t));
    return pb_ordering_side_timer_take(&tp->comm_t);
}

/* One block forward: in -> (all-gather) -> block -> reduce -> out.
 * allreduce: in, out N x h; sp: in, out N/t x h. */
static int block_forward(pb_tp *tp, block_fwd_fn fn, pb_layer *ly, pb_layer_acts *sv, const void *in, void *out)
{
    if (tp->cfg.mode == PB_TP_SP) {
        PB_TRY(coll(tp, OP_ALLGATHER, in, tp->gathered));
        in = tp->gathered;
    }
    PB_TRY(timed_fwd(tp, fn, ly, sv, in, tp->part));
    return coll(tp, tp->cfg.mode == PB_TP_SP ? OP_REDUCESCATTER : OP_ALLREDUCE, tp->part, out);
}

/* One block backward, mirrored: dy -> (all-gather) -> block -> reduce -> dx.
 * `before_reduce` (may be NULL) runs between the block and the reduction. */
static int block_backward(pb_tp *tp, block_bwd_fn fn, pb_layer *ly, pb_layer_acts *sv, const void *dy, void *dx,
                          int accumulate, int (*before_reduce)(void *), void *arg)
{
    if (tp->cfg.mode == PB_TP_SP) {
        PB_TRY(coll(tp, OP_ALLGATHER, dy, tp->gathered));
        dy = tp->gathered;
    }
    PB_TRY(timed_bwd(tp, fn, ly, sv, dy, tp->part, accumulate));
    if (before_reduce) PB_TRY(before_reduce(arg));
    return coll(tp, tp->cfg.mode == PB_TP_SP ? OP_REDUCESCATTER : OP_ALLREDUCE, tp->part, dx);
}

/* Between the two blocks of a layer: N x h replicated (allreduce) or this
 * rank's shard (sp). */
static void *between_blocks(pb_tp *tp) { return tp->cfg.mode == PB_TP_SP ? tp->shard : tp->gathered; }

int pb_tp_forward(pb_tp *tp, pb_layer_saved *acts, const void *x, void *y)
{
    int64_t n = tp->cfg.nlayers;
    const void *in = x;
    for (int64_t i = 0; i < n; i++) {
        pb_layer *ly = pb_layer_stack_layer(tp->st, i);
        pb_layer_acts *sv = pb_layer_saved_layer(acts, i);
        /* The blocks copy their input into the saved activations, so io[0]
         * may be both this layer's input and its output. */
        void *out = i == n - 1 ? y : tp->io[0];
        void *mid = between_blocks(tp);
        PB_TRY(block_forward(tp, pb_layer_attn_forward, ly, sv, in, mid));
        PB_TRY(block_forward(tp, pb_layer_mlp_forward, ly, sv, mid, out));
        in = out;
    }
    return finish_pass(tp);
}

typedef struct ready_ctx {
    pb_tp *tp;
    int64_t i;
    pb_layer_grad_ready_fn fn;
    void *user;
} ready_ctx;

/* Layer i's weight gradients are complete once its attention block has run
 * backward: hand them over before the last reduction, as early as possible. */
static int call_ready(void *arg)
{
    ready_ctx *r = arg;
    uint64_t off = pb_layer_stack_grad_offset(r->tp->st, r->i), bytes = pb_layer_stack_grad_offset(r->tp->st, 1);
    return r->fn(r->user, r->tp->cfg.layer0 + r->i, off, bytes);
}

int pb_tp_backward(pb_tp *tp, pb_layer_saved *acts, const void *dy, void *dx, int accumulate, pb_layer_grad_ready_fn ready,
                   void *user)
{
    const void *in = dy;
    for (int64_t i = tp->cfg.nlayers - 1; i >= 0; i--) {
        pb_layer *ly = pb_layer_stack_layer(tp->st, i);
        pb_layer_acts *sv = pb_layer_saved_layer(acts, i);
        /* Alternate so a layer never writes the buffer it reads. */
        void *out = i == 0 && dx ? dx : tp->io[i & 1];
        void *mid = between_blocks(tp);
        ready_ctx rc = {tp, i, ready, user};
        PB_TRY(block_backward(tp, pb_layer_mlp_backward, ly, sv, in, mid, accumulate, NULL, NULL));
        PB_TRY(block_backward(tp, pb_layer_attn_backward, ly, sv, mid, out, accumulate, ready ? call_ready : NULL, &rc));
        in = out;
    }
    return finish_pass(tp);
}
