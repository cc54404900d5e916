/* The FSDP step (fsdp.h): the sharded parameters and gradients, the
 * communication lane that runs the gathers and reduce-scatters beside
 * compute, and the per-layer schedule with and without prefetch. */
#include "workload/fsdp_impl.h"

#include "backend/gpu.h"
#include "core/error.h"
#include "core/faults.h"
#include "core/mem.h"
#include "core/timing.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *at(void *p, uint64_t elems, size_t es) { return (char *)p + elems * es; }

static pb_layer_stack_config stack_config(const pb_fsdp_config *c, void *grads)
{
    return (pb_layer_stack_config){.eng = c->eng, .shape = c->shape, .layer0 = 0, .nlayers = c->nlayers,
                                   .model_layers = c->nlayers, .seed = c->seed, .grad_dtype = c->grad_dtype,
                                   .grads = grads};
}

static pb_layer_shape effective(const pb_fsdp_config *c)
{
    pb_layer_shape sh = c->shape;
    sh.dtype = c->eng->gemm_dtype(sh.dtype);
    return sh;
}

void pb_fsdp_layer_shard(const pb_fsdp_config *cfg, pb_fsdp_shard *out)
{
    pb_layer_shape eff = effective(cfg);
    pb_fsdp_shard_of((uint64_t)pb_layer_params_local(&eff), cfg->be->size(cfg->shard_comm), out);
}

/* Bytes of the step's buffers beyond the stack (fsdp_impl.h's list). */
static uint64_t own_bytes(const pb_fsdp_config *c, const pb_fsdp_shard *sh, uint64_t *largest)
{
    pb_layer_shape eff = effective(c);
    uint64_t L = (uint64_t)c->nlayers, pes = pb_dtype_size(eff.dtype), ges = pb_dtype_size(c->grad_dtype);
    uint64_t tokens = pb_layer_io_bytes(&eff);
    uint64_t shards = pb_mem_mul(pb_mem_mul(L, sh->per_rank), pes + ges);
    uint64_t fulls = pb_mem_mul(2 * pes, sh->padded);
    uint64_t grads = pb_mem_add(pb_mem_mul(pb_mem_mul(L, sh->params), ges), (sh->padded - sh->params) * ges);
    *largest = pb_mem_mul(sh->padded, pes > ges ? pes : ges);
    return pb_mem_add(pb_mem_add(pb_mem_mul(5, tokens), shards), pb_mem_add(fulls, grads));
}

void pb_fsdp_bytes(const pb_fsdp_config *cfg, uint64_t *engine_bytes, uint64_t *host_bytes)
{
    pb_fsdp_shard sh;
    pb_fsdp_layer_shard(cfg, &sh);
    pb_layer_stack_config sc = stack_config(cfg, (void *)cfg); /* non-NULL: the gradients are ours */
    pb_layer_shape eff = effective(cfg);
    uint64_t largest, e = pb_mem_add(pb_layer_stack_bytes(&sc), pb_layer_act_bytes(&eff, cfg->nlayers));
    e = pb_mem_add(e, own_bytes(cfg, &sh, &largest));
    *engine_bytes = pb_staging_needed(cfg->eng, cfg->be) ? pb_mem_add(e, pb_mem_mul(2, largest)) : e;
    /* Validation: two layers' parameters, and the gradient check's chunks (fsdp_check.c). */
    *host_bytes = pb_mem_add(pb_mem_mul(2 * pb_dtype_size(eff.dtype), sh.params), ((uint64_t)1 << 20) * 40);
}

/* ---- the communication lane ------------------------------------------------ */

/* Issue one collective on the backend. Stream order: queued, complete later;
 * host order: staged where the memories differ, complete on return. */
static int run_op(pb_fsdp *f, const pb_fsdp_impl_op *op)
{
    const pb_comm_backend *be = f->cfg.be;
    pb_comm *c = f->cfg.shard_comm, *rep = f->cfg.replica_comm;
    uint64_t S = f->sh.per_rank;
    void **sb = f->stage.buf;
    int staged = sb[0] != NULL;
    if (op->kind == PB_FSDP_IMPL_GATHER) {
        void *src = at(f->pshard, (uint64_t)op->layer * S, f->pes), *dst = f->full[op->buf];
        if (!staged) {
            PB_TRY(be->allgather(c, src, dst, (size_t)S, f->eff.dtype));
            return f->order == PB_ORDERING_STREAM ? PB_OK : be->sync(c);
        }
        PB_TRY(pb_staging_in(&f->stage, 0, src, (size_t)(S * f->pes)));
        PB_TRY(be->allgather(c, sb[0], sb[1], (size_t)S, f->eff.dtype));
        PB_TRY(be->sync(c));
        return pb_staging_out(&f->stage, 1, dst, (size_t)(f->sh.padded * f->pes));
    }
    void *src = at(f->grads, (uint64_t)op->layer * f->sh.params, f->ges);
    void *dst = at(f->gshard, (uint64_t)op->layer * S, f->ges);
    pb_dtype gt = f->cfg.grad_dtype;
    if (staged) PB_TRY(pb_staging_in(&f->stage, 0, src, (size_t)(f->sh.padded * f->ges)));
    PB_TRY(be->reducescatter(c, staged ? sb[0] : src, staged ? sb[1] : dst, (size_t)S, gt, PB_SUM));
    if (f->order == PB_ORDERING_STREAM) { /* the replica all-reduce waits for the compute stream's next wait */
        if (rep) f->pending[f->npending++] = op->layer;
        return PB_OK;
    }
    PB_TRY(be->sync(c));
    if (rep) {
        PB_TRY(be->allreduce(rep, staged ? sb[1] : dst, staged ? sb[1] : dst, (size_t)S, gt, PB_SUM));
        PB_TRY(be->sync(rep));
    }
    return staged ? pb_staging_out(&f->stage, 1, dst, (size_t)(S * f->ges)) : PB_OK;
}

/* run_op, timed where it completes on return (host order). */
static int exec_op(pb_fsdp *f, const pb_fsdp_impl_op *op)
{
    if (f->slow) nanosleep(&(struct timespec){0, PB_FAULTS_SLOW_US * 1000L}, NULL); /* the tests' slow link */
    if (f->order == PB_ORDERING_STREAM) return run_op(f, op);
    double t0 = pb_timing_now_us();
    int status = run_op(f, op);
    double us = pb_timing_now_us() - t0;
    if (op->kind == PB_FSDP_IMPL_GATHER) f->timing.gather_us += us;
    else f->timing.scatter_us += us;
    if (!f->threaded) f->timing.wait_us += us; /* run inline: the host waited for all of it */
    return status;
}

/* Host order with prefetch: run posted collectives in order; sleep on a
 * condition variable (not spinning) while none is posted. */
static void *lane_thread(void *arg)
{
    pb_fsdp *f = arg;
    int bound = pb_gpu_thread_bind(); /* CUDA's current device is per thread */
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->quit && f->done == f->posted) pthread_cond_wait(&f->posted_cv, &f->mu);
        if (f->quit) break;
        pb_fsdp_impl_op op = f->queue[f->done];
        int failed = f->thread_status != PB_OK;
        pthread_mutex_unlock(&f->mu);
        int s = failed ? PB_OK : bound != PB_OK ? bound : exec_op(f, &op);
        pthread_mutex_lock(&f->mu);
        if (s != PB_OK) f->thread_status = s;
        f->done++;
        pthread_cond_broadcast(&f->done_cv);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* Hand one collective to the lane. */
static int lane_post(pb_fsdp *f, pb_fsdp_impl_kind kind, int64_t layer, int buf)
{
    pb_fsdp_impl_op op = {kind, layer, buf};
    f->timing.colls += 1 + (kind == PB_FSDP_IMPL_SCATTER && f->cfg.replica_comm);
    if (!f->threaded) return exec_op(f, &op);
    pthread_mutex_lock(&f->mu);
    int room = f->posted < f->cap;
    if (room) f->queue[f->posted++] = op;
    pthread_cond_signal(&f->posted_cv);
    pthread_mutex_unlock(&f->mu);
    PB_CHECK(room, PB_ERR_USAGE, "fsdp: more than %zu collectives in one step", f->cap);
    return PB_OK;
}

/* Compute queued from now on sees every collective posted so far complete. */
static int lane_wait(pb_fsdp *f)
{
    const pb_comm_backend *be = f->cfg.be;
    if (f->order == PB_ORDERING_STREAM) {
        void *q = f->cfg.eng->queue();
        PB_TRY(be->before_queue(f->cfg.shard_comm, q));
        if (!f->npending) return PB_OK;
        /* The compute stream now waits for these reduce-scatters: the replica
         * stream, behind it, all-reduces their shards. */
        PB_TRY(be->after_queue(f->cfg.replica_comm, q));
        for (size_t k = 0; k < f->npending; k++) {
            void *g = at(f->gshard, (uint64_t)f->pending[k] * f->sh.per_rank, f->ges);
            PB_TRY(be->allreduce(f->cfg.replica_comm, g, g, (size_t)f->sh.per_rank, f->cfg.grad_dtype, PB_SUM));
        }
        f->npending = 0;
        return PB_OK;
    }
    if (!f->threaded) return PB_OK; /* inline: complete already */
    double t0 = pb_timing_now_us();
    pthread_mutex_lock(&f->mu);
    while (f->done < f->posted) pthread_cond_wait(&f->done_cv, &f->mu);
    int status = f->thread_status;
    pthread_mutex_unlock(&f->mu);
    f->timing.wait_us += pb_timing_now_us() - t0;
    return status;
}

/* Collectives posted from now on read what compute has queued so far. */
static int lane_after_compute(pb_fsdp *f)
{
    if (f->order == PB_ORDERING_STREAM) return f->cfg.be->after_queue(f->cfg.shard_comm, f->cfg.eng->queue());
    return f->cfg.eng->synchronize();
}

/* The end of a step: every collective and the compute complete. */
static int lane_end(pb_fsdp *f)
{
    int status = lane_wait(f);
    if (f->order != PB_ORDERING_STREAM) return status;
    double t0 = pb_timing_now_us();
    int s = f->cfg.be->sync(f->cfg.shard_comm);
    if (status == PB_OK) status = s;
    if (f->cfg.replica_comm) {
        s = f->cfg.be->sync(f->cfg.replica_comm);
        if (status == PB_OK) status = s;
    }
    s = f->cfg.eng->synchronize();
    f->timing.wait_us += pb_timing_now_us() - t0;
    return status == PB_OK ? s : status;
}

static void lane_begin(pb_fsdp *f)
{
    f->timing = (pb_fsdp_timing){0};
    f->npending = 0;
    if (!f->threaded) return;
    pthread_mutex_lock(&f->mu);
    f->posted = f->done = 0;
    f->thread_status = PB_OK;
    pthread_mutex_unlock(&f->mu);
}

/* ---- the schedule -------------------------------------------------------------- */

/* The full buffer each use of a layer reads: the step gathers 2L times,
 * forward 0..L-1 then backward L-1..0, alternating buffers, so a prefetch
 * never writes the buffer the compute in flight reads. */
static int fwd_buf(const pb_fsdp *f, int64_t i) { (void)f; return (int)(i & 1); }
static int bwd_buf(const pb_fsdp *f, int64_t j) { return (int)((2 * f->cfg.nlayers - 1 - j) & 1); }

static int forward_layer(pb_fsdp *f, int64_t i, const void *w)
{
    int64_t L = f->cfg.nlayers;
    pb_layer *ly = pb_layer_stack_layer(f->st, i);
    pb_layer_bind_weights(ly, w);
    /* The layer copies its input into its saved activations first, so io[0]
     * may be its input and its output. */
    return pb_layer_forward(ly, pb_layer_saved_layer(f->acts, i), i == 0 ? f->x : f->io[0],
                            i == L - 1 ? f->y : f->io[0]);
}

static int backward_layer(pb_fsdp *f, int64_t j, const void *w)
{
    int64_t L = f->cfg.nlayers;
    pb_layer *ly = pb_layer_stack_layer(f->st, j);
    pb_layer_bind_weights(ly, w);
    return pb_layer_backward(ly, pb_layer_saved_layer(f->acts, j), j == L - 1 ? f->dy : f->io[(j + 1) & 1],
                             f->io[j & 1], 0);
}

/* Before layer i's compute: its gather complete (and checked when validating). */
static int ready(pb_fsdp *f, int64_t layer, int buf)
{
    PB_TRY(lane_wait(f));
    return f->check ? f->check(f, layer, buf) : PB_OK;
}

/* Prefetch off: each collective posted when it is needed and waited for. */
static int run_serial(pb_fsdp *f)
{
    int64_t L = f->cfg.nlayers;
    for (int64_t i = 0; i < L; i++) {
        PB_TRY(lane_after_compute(f));
        PB_TRY(lane_post(f, PB_FSDP_IMPL_GATHER, i, fwd_buf(f, i)));
        PB_TRY(ready(f, i, fwd_buf(f, i)));
        PB_TRY(forward_layer(f, i, f->full[fwd_buf(f, i)]));
    }
    for (int64_t j = L - 1; j >= 0; j--) {
        PB_TRY(lane_after_compute(f));
        PB_TRY(lane_post(f, PB_FSDP_IMPL_GATHER, j, bwd_buf(f, j)));
        PB_TRY(ready(f, j, bwd_buf(f, j)));
        PB_TRY(backward_layer(f, j, f->full[bwd_buf(f, j)]));
        PB_TRY(lane_after_compute(f));
        PB_TRY(lane_post(f, PB_FSDP_IMPL_SCATTER, j, 0));
        PB_TRY(lane_wait(f));
    }
    return PB_OK;
}

/* Prefetch on: the next gather is posted before the current layer's compute,
 * once the compute that last read its buffer is done; layer j's
 * reduce-scatter is posted before layer j-1's backward, so it runs during it.
 * Compute waits (lane_wait) for what was posted before its own gather. */
static int run_prefetch(pb_fsdp *f)
{
    int64_t L = f->cfg.nlayers;
    PB_TRY(lane_post(f, PB_FSDP_IMPL_GATHER, 0, fwd_buf(f, 0)));
    for (int64_t i = 0; i < L; i++) {
        PB_TRY(ready(f, i, fwd_buf(f, i)));
        PB_TRY(lane_after_compute(f));
        if (i + 1 < L) PB_TRY(lane_post(f, PB_FSDP_IMPL_GATHER, i + 1, fwd_buf(f, i + 1)));
        else PB_TRY(lane_post(f, PB_FSDP_IMPL_GATHER, L - 1, bwd_buf(f, L - 1)));
        PB_TRY(forward_layer(f, i, f->full[fwd_buf(f, i)]));
    }
    for (int64_t j = L - 1; j >= 0; j--) {
        PB_TRY(ready(f, j, bwd_buf(f, j)));
        PB_TRY(lane_after_compute(f));
        if (j + 1 < L) PB_TRY(lane_post(f, PB_FSDP_IMPL_SCATTER, j + 1, 0));
        if (j > 0) PB_TRY(lane_post(f, PB_FSDP_IMPL_GATHER, j - 1, bwd_buf(f, j - 1)));
        PB_TRY(backward_layer(f, j, f->full[bwd_buf(f, j)]));
    }
    PB_TRY(lane_after_compute(f));
    return lane_post(f, PB_FSDP_IMPL_SCATTER, 0, 0);
}

/* Compute alone: the same layers on their own full weights. */
static int run_compute(pb_fsdp *f)
{
    int64_t L = f->cfg.nlayers;
    for (int64_t i = 0; i < L; i++) PB_TRY(forward_layer(f, i, f->own[i]));
    for (int64_t j = L - 1; j >= 0; j--) PB_TRY(backward_layer(f, j, f->own[j]));
    return f->cfg.eng->synchronize();
}

int pb_fsdp_impl_run(pb_fsdp *f, int with_comm)
{
    if (!with_comm) return run_compute(f);
    lane_begin(f);
    int status = f->cfg.prefetch == PB_FSDP_PREFETCH_ON ? run_prefetch(f) : run_serial(f);
    int end = lane_end(f); /* also after a failure: nothing stays in flight */
    return status == PB_OK ? end : status;
}

int pb_fsdp_compute(pb_fsdp *f) { return pb_fsdp_impl_run(f, 0); }
int pb_fsdp_step(pb_fsdp *f) { return pb_fsdp_impl_run(f, 1); }

int pb_fsdp_comm(pb_fsdp *f)
{
    int64_t L = f->cfg.nlayers;
    int status = PB_OK;
    lane_begin(f);
    for (int64_t i = 0; i < L && status == PB_OK; i++) status = lane_post(f, PB_FSDP_IMPL_GATHER, i, fwd_buf(f, i));
    for (int64_t j = L - 1; j >= 0 && status == PB_OK; j--) {
        status = lane_post(f, PB_FSDP_IMPL_GATHER, j, bwd_buf(f, j));
        if (status == PB_OK) status = lane_post(f, PB_FSDP_IMPL_SCATTER, j, 0);
    }
    int end = lane_end(f);
    return status == PB_OK ? end : status;
}

void pb_fsdp_last_timing(const pb_fsdp *f, pb_fsdp_timing *out) { *out = f->timing; }
void *pb_fsdp_grads(pb_fsdp *f) { return f->grads; }
uint64_t pb_fsdp_grad_bytes(const pb_fsdp *f) { return (uint64_t)f->cfg.nlayers * f->sh.params * f->ges; }
double pb_fsdp_flops(const pb_fsdp *f) { return (double)f->cfg.nlayers * pb_layer_step_flops(&f->eff); }

/* ---- create and destroy -------------------------------------------------------- */

/* This rank's shard of every layer, from the stack's full weights (zero padding). */
static int make_shards(pb_fsdp *f)
{
    const pb_compute *E = f->cfg.eng;
    uint64_t S = f->sh.per_rank, valid = pb_fsdp_shard_valid(&f->sh, f->index);
    PB_TRY(E->memset(f->pshard, 0, (size_t)((uint64_t)f->cfg.nlayers * S * f->pes)));
    for (int64_t i = 0; i < f->cfg.nlayers; i++) {
        f->own[i] = (void *)pb_layer_weights(pb_layer_stack_layer(f->st, i));
        if (valid)
            PB_TRY(E->copy(at(f->pshard, (uint64_t)i * S, f->pes), at(f->own[i], (uint64_t)f->index * S, f->pes),
                           (size_t)(valid * f->pes)));
    }
    return E->synchronize();
}

static int make_inputs(pb_fsdp *f)
{
    const pb_compute *E = f->cfg.eng;
    int64_t tokens = f->eff.b * f->eff.s;
    size_t bytes = (size_t)((uint64_t)tokens * (uint64_t)f->eff.h * f->pes);
    void **bufs[] = {&f->x, &f->y, &f->dy, &f->io[0], &f->io[1]};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++) PB_TRY(E->alloc(bufs[k], bytes));
    /* Inputs and loss gradients differ per rank, weights do not: as in DP. */
    uint64_t r = (uint64_t)f->cfg.rank;
    PB_TRY(pb_layer_fill_input(E, f->eff.dtype, f->x, tokens, f->eff.h, f->cfg.seed, 2 * r));
    return pb_layer_fill_input(E, f->eff.dtype, f->dy, tokens, f->eff.h, f->cfg.seed, 2 * r + 1);
}

static int start_lane(pb_fsdp *f)
{
    f->cap = 3 * (size_t)f->cfg.nlayers + 1;
    f->pending = malloc(sizeof(int64_t) * f->cap);
    PB_CHECK(f->pending, PB_ERR_ENV, "fsdp: out of memory");
    f->threaded = f->order == PB_ORDERING_HOST && f->cfg.prefetch == PB_FSDP_PREFETCH_ON;
    if (!f->threaded) return PB_OK;
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    PB_CHECK(level >= MPI_THREAD_MULTIPLE, PB_ERR_ENV, "--prefetch on: the communication thread needs "
             "MPI_THREAD_MULTIPLE; the MPI library granted level %d", level);
    f->queue = malloc(sizeof *f->queue * f->cap);
    PB_CHECK(f->queue, PB_ERR_ENV, "fsdp: out of memory");
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->posted_cv, NULL);
    pthread_cond_init(&f->done_cv, NULL);
    if (pthread_create(&f->thread, NULL, lane_thread, f) != 0) {
        f->threaded = 0;
        return pb_fail(PB_ERR_ENV, "fsdp: cannot start the communication thread");
    }
    return PB_OK;
}

static int build(pb_fsdp *f)
{
    const pb_fsdp_config *c = &f->cfg;
    const pb_compute *E = c->eng;
    uint64_t L = (uint64_t)c->nlayers, S = f->sh.per_rank, largest;
    own_bytes(c, &f->sh, &largest);
    size_t grads = (size_t)((L * f->sh.params + (f->sh.padded - f->sh.params)) * f->ges);
    PB_TRY(E->alloc(&f->grads, grads));
    PB_TRY(E->memset(f->grads, 0, grads)); /* the tail is the last layer's padding */
    pb_layer_stack_config sc = stack_config(c, f->grads);
    PB_TRY(pb_layer_stack_create(&sc, &f->st));
    PB_TRY(pb_layer_saved_alloc(f->st, &f->acts));
    f->own = calloc((size_t)L, sizeof *f->own);
    PB_CHECK(f->own, PB_ERR_ENV, "fsdp: out of memory");
    PB_TRY(E->alloc(&f->pshard, (size_t)(L * S * f->pes)));
    PB_TRY(E->alloc(&f->gshard, (size_t)(L * S * f->ges)));
    PB_TRY(E->memset(f->gshard, 0, (size_t)(L * S * f->ges)));
    for (int k = 0; k < 2; k++) {
        PB_TRY(E->alloc(&f->full[k], (size_t)(f->sh.padded * f->pes)));
        PB_TRY(E->memset(f->full[k], 0, (size_t)(f->sh.padded * f->pes)));
    }
    PB_TRY(make_shards(f));
    PB_TRY(make_inputs(f));
    PB_TRY(pb_staging_alloc(&f->stage, E, c->be, 2, (size_t)largest));
    return start_lane(f);
}

int pb_fsdp_create(const pb_fsdp_config *cfg, pb_fsdp **out)
{
    *out = NULL;
    PB_CHECK(cfg->eng && cfg->be && cfg->shard_comm, PB_ERR_USAGE, "fsdp: engine, backend and shard group needed");
    PB_CHECK(cfg->shape.tp_size == 1 && cfg->nlayers > 0, PB_ERR_USAGE, "fsdp: one TP rank, >= 1 layer");
    PB_CHECK(cfg->grad_dtype == PB_FLOAT32 || cfg->grad_dtype == PB_BFLOAT16, PB_ERR_USAGE,
             "fsdp: gradients are float or bfloat16");
    pb_fsdp *f = calloc(1, sizeof *f);
    PB_CHECK(f, PB_ERR_ENV, "fsdp: out of memory");
    f->cfg = *cfg;
    f->eff = effective(cfg);
    f->pes = pb_dtype_size(f->eff.dtype);
    f->ges = pb_dtype_size(cfg->grad_dtype);
    f->index = cfg->be->rank(cfg->shard_comm);
    f->order = pb_ordering_plan(cfg->eng, cfg->be);
    f->slow = pb_faults_slow_rank() == cfg->rank;
    pb_fsdp_layer_shard(cfg, &f->sh);
    int status = build(f);
    if (status != PB_OK) {
        pb_fsdp_destroy(f);
        return status;
    }
    *out = f;
    return PB_OK;
}

void pb_fsdp_destroy(pb_fsdp *f)
{
    if (!f) return;
    if (f->threaded) {
        pthread_mutex_lock(&f->mu);
        f->quit = 1;
        pthread_cond_broadcast(&f->posted_cv);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->thread, NULL);
        pthread_cond_destroy(&f->posted_cv);
        pthread_cond_destroy(&f->done_cv);
        pthread_mutex_destroy(&f->mu);
    }
    const pb_compute *E = f->cfg.eng;
    if (f->acts) pb_layer_saved_free(f->st, f->acts);
    pb_layer_stack_destroy(f->st);
    void *bufs[] = {f->x, f->y, f->dy, f->io[0], f->io[1], f->pshard, f->gshard, f->full[0], f->full[1], f->grads};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        if (bufs[k]) E->free(bufs[k]);
    pb_staging_free(&f->stage);
    free(f->own);
    free(f->queue);
    free(f->pending);
    free(f->host_a);
    free(f->host_b);
    free(f);
}
