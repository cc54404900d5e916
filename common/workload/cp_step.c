/* The context-parallel step (cp.h): the blocks, the communication lane that
 * runs the ring's exchanges beside the attention, and the forward and
 * backward rings. */
#include "workload/cp_impl.h"

#include "backend/gpu.h"
#include "core/error.h"
#include "core/faults.h"
#include "core/mem.h"
#include "core/timing.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *pb_cp_overlap_name(pb_cp_overlap o) { return o == PB_CP_OVERLAP_ON ? "on" : "off"; }

void pb_cp_block_shape(const pb_cp_config *cfg, pb_attn_block *out)
{
    int c = cfg->be->size(cfg->ring);
    *out = (pb_attn_block){.b = cfg->b, .heads = cfg->heads, .kv_heads = cfg->kv_heads, .hd = cfg->head_dim,
                           .sq = cfg->seq / c, .sk = cfg->seq / c, .t = cfg->eng->gemm_dtype(cfg->dtype)};
}

void pb_cp_bytes(const pb_cp_config *cfg, uint64_t *engine_bytes, uint64_t *host_bytes)
{
    pb_attn_block a;
    pb_cp_block_shape(cfg, &a);
    int c = cfg->be->size(cfg->ring);
    uint64_t es = pb_dtype_size(a.t), rows = pb_mem_mul(pb_mem_mul((uint64_t)a.b, (uint64_t)a.heads), (uint64_t)a.sq);
    uint64_t q = pb_mem_mul(pb_mem_mul(rows, (uint64_t)a.hd), es);
    uint64_t kv = pb_cp_block_bytes(a.b, cfg->seq, c, a.kv_heads, a.hd, es); /* [K | V] */
    uint64_t sc = pb_mem_mul(pb_mem_mul(rows, (uint64_t)a.sk), es);
    uint64_t e = pb_mem_add(pb_mem_mul(4, q), pb_mem_mul(6, kv)); /* q o dO dQ; own, 2 ring, 2 acc, dkv */
    e = pb_mem_add(pb_mem_add(e, pb_mem_mul(2, sc)), pb_mem_mul(rows, 2 * sizeof(float)));
    *engine_bytes = pb_staging_needed(cfg->eng, cfg->be) ? pb_mem_add(e, pb_mem_mul(4, kv)) : e;
    /* Validation (cp_check.c's buffers): in fp32 this rank's Q and dO, every
     * rank's K and V and one of this rank's results; in double its reference
     * O and dQ and a row's scores, and when every row is checked what its rows
     * add to every block's dK and dV and its own block's sum of them. */
    uint64_t qn = q / es, kvn = kv / (2 * es), C = (uint64_t)c;
    uint64_t q2 = pb_mem_mul(2, qn), kv2 = pb_mem_mul(2, kvn);
    int every_row = cfg->check_rows <= 0 || cfg->check_rows >= a.sq;
    uint64_t floats = pb_mem_add(pb_mem_add(q2, pb_mem_mul(C, kv2)), qn > kv2 ? qn : kv2);
    uint64_t doubles = pb_mem_add(pb_mem_add(q2, every_row ? pb_mem_mul(pb_mem_add(C, 1), kv2) : 0),
                                  pb_mem_add(pb_mem_mul(2, (uint64_t)cfg->seq), (uint64_t)a.hd));
    *host_bytes = pb_mem_add(pb_mem_mul(floats, sizeof(float)), pb_mem_mul(doubles, sizeof(double)));
}

static void *half(void *kv, const pb_cp *f) { return (char *)kv + f->kvn * f->es; } /* V in [K | V] */

/* ---- the communication lane -------------------------------------------------- */

/* One exchange on the backend: sends to the next rank, receives from the
 * previous one, posted together. Host order: complete on return (staged
 * where the memories differ); stream order: queued. */
static int run_xchg(pb_cp *f, const pb_cp_impl_xchg *x)
{
    const pb_comm_backend *be = f->cfg.be;
    pb_comm *c = f->cfg.ring;
    size_t n = (size_t)(2 * f->kvn), bytes = n * f->es;
    int staged = f->stage_kv.buf[0] != NULL;
    if (f->slow) nanosleep(&(struct timespec){0, PB_FAULTS_SLOW_US * 1000L}, NULL); /* the tests' slow link */
    if (staged && x->kv_send) PB_TRY(pb_staging_in(&f->stage_kv, 0, x->kv_send, bytes));
    if (staged && x->dkv_send) PB_TRY(pb_staging_in(&f->stage_dkv, 0, x->dkv_send, bytes));
    PB_TRY(be->group_start(c));
    if (x->kv_send) {
        PB_TRY(be->send(c, staged ? f->stage_kv.buf[0] : x->kv_send, n, f->blk.t, f->next));
        PB_TRY(be->recv(c, staged ? f->stage_kv.buf[1] : x->kv_recv, n, f->blk.t, f->prev));
    }
    if (x->dkv_send) {
        PB_TRY(be->send(c, staged ? f->stage_dkv.buf[0] : x->dkv_send, n, f->blk.t, f->next));
        PB_TRY(be->recv(c, staged ? f->stage_dkv.buf[1] : x->dkv_recv, n, f->blk.t, f->prev));
    }
    PB_TRY(be->group_end(c));
    if (f->order == PB_ORDERING_STREAM) return PB_OK;
    PB_TRY(be->sync(c));
    if (staged && x->kv_recv) PB_TRY(pb_staging_out(&f->stage_kv, 1, x->kv_recv, bytes));
    if (staged && x->dkv_recv) PB_TRY(pb_staging_out(&f->stage_dkv, 1, x->dkv_recv, bytes));
    return PB_OK;
}

/* Host order, overlap on: run each posted exchange; sleep on a condition
 * variable while none is posted. */
static void *lane_thread(void *arg)
{
    pb_cp *f = arg;
    int bound = pb_gpu_thread_bind(); /* CUDA's current device is per thread */
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->quit && f->done == f->posted) pthread_cond_wait(&f->cv, &f->mu);
        if (f->quit) break;
        pb_cp_impl_xchg x = f->job;
        pthread_mutex_unlock(&f->mu);
        int s = bound != PB_OK ? bound : run_xchg(f, &x);
        pthread_mutex_lock(&f->mu);
        if (s != PB_OK && f->thread_status == PB_OK) f->thread_status = s;
        f->done = f->posted;
        pthread_cond_broadcast(&f->cv);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* Start one exchange; what compute queued so far is complete or ordered before it. */
static int lane_post(pb_cp *f, const pb_cp_impl_xchg *x)
{
    f->timing.exchanges++;
    if (f->order == PB_ORDERING_STREAM) {
        PB_TRY(f->cfg.be->after_queue(f->cfg.ring, f->cfg.eng->queue()));
        return run_xchg(f, x);
    }
    PB_TRY(f->cfg.eng->synchronize());
    if (!f->threaded) { /* inline: the host waits for all of it */
        double t0 = pb_timing_now_us();
        int status = run_xchg(f, x);
        f->timing.wait_us += pb_timing_now_us() - t0;
        return status;
    }
    pthread_mutex_lock(&f->mu);
    f->job = *x;
    f->posted++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    return PB_OK;
}

/* Compute queued from now on sees the exchange posted last complete. */
static int lane_wait(pb_cp *f)
{
    if (f->order == PB_ORDERING_STREAM) return f->cfg.be->before_queue(f->cfg.ring, f->cfg.eng->queue());
    if (!f->threaded) return PB_OK;
    double t0 = pb_timing_now_us();
    pthread_mutex_lock(&f->mu);
    while (f->done < f->posted) pthread_cond_wait(&f->cv, &f->mu);
    int status = f->thread_status;
    pthread_mutex_unlock(&f->mu);
    f->timing.wait_us += pb_timing_now_us() - t0;
    return status;
}

/* The end of a step: the exchanges and the compute complete. */
static int lane_end(pb_cp *f)
{
    int status = lane_wait(f);
    double t0 = pb_timing_now_us();
    if (f->order == PB_ORDERING_STREAM) {
        int s = f->cfg.be->sync(f->cfg.ring);
        if (status == PB_OK) status = s;
    }
    int s = f->cfg.eng->synchronize();
    if (f->order == PB_ORDERING_STREAM) f->timing.wait_us += pb_timing_now_us() - t0;
    return status == PB_OK ? s : status;
}

static void lane_begin(pb_cp *f)
{
    f->timing = (pb_cp_timing){0};
    if (!f->threaded) return;
    pthread_mutex_lock(&f->mu);
    f->posted = f->done = 0;
    f->thread_status = PB_OK;
    pthread_mutex_unlock(&f->mu);
}

/* ---- the rings ---------------------------------------------------------------- */

/* Step k's exchange: posted before the attention and waited for after it
 * (overlap on), or run to completion before it (off). */
static int before_block(pb_cp *f, const pb_cp_impl_xchg *x)
{
    if (!x->kv_send && !x->dkv_send) return PB_OK;
    PB_TRY(lane_post(f, x));
    return f->cfg.overlap == PB_CP_OVERLAP_ON ? PB_OK : lane_wait(f);
}

static int after_block(pb_cp *f, const pb_cp_impl_xchg *x)
{
    if (!x->kv_send && !x->dkv_send) return PB_OK;
    return f->cfg.overlap == PB_CP_OVERLAP_ON ? lane_wait(f) : PB_OK;
}

/* The K/V block held at step k (the own block without communication), and
 * the buffer the next one arrives in. */
static void *held(pb_cp *f, int k, int comm) { return k == 0 || !comm ? f->kv_own : f->kv[(k - 1) & 1]; }

static int forward(pb_cp *f, int comm)
{
    const pb_compute *E = f->cfg.eng;
    PB_TRY(E->memset(f->stats, 0, (size_t)(2 * f->blk.b * f->blk.heads * f->blk.sq) * sizeof(float)));
    for (int k = 0; k < f->c; k++) {
        void *cur = held(f, k, comm);
        pb_cp_exchange e = pb_cp_exchange_at(f->c, k, 0);
        pb_cp_impl_xchg x = {0};
        if (comm && e.kv) x.kv_send = cur, x.kv_recv = f->kv[k & 1];
        PB_TRY(before_block(f, &x));
        PB_TRY(pb_attn_block_forward(E, &f->blk, f->q, cur, half(cur, f), f->o, f->stats, f->scores));
        PB_TRY(after_block(f, &x));
    }
    return pb_attn_block_end(E, &f->blk, f->o, f->stats);
}

/* At step k the accumulator completed at step k - 1 (acc[(k-1) & 1]) goes
 * on and block k's comes into acc[k & 1]; this rank's dK/dV of the block are
 * added to it once it is in. */
static int backward(pb_cp *f, int comm)
{
    const pb_compute *E = f->cfg.eng;
    size_t n = (size_t)(2 * f->kvn);
    PB_TRY(E->memset(f->dq, 0, (size_t)f->qn * f->es));
    for (int k = 0; k < f->c; k++) {
        void *cur = held(f, k, comm), *acc = f->acc[k & 1];
        pb_cp_exchange e = pb_cp_exchange_at(f->c, k, 1);
        pb_cp_impl_xchg x = {0};
        if (comm && e.kv) x.kv_send = cur, x.kv_recv = f->kv[k & 1];
        if (comm && e.dkv) x.dkv_send = f->acc[(k - 1) & 1], x.dkv_recv = acc;
        PB_TRY(before_block(f, &x));
        PB_TRY(pb_attn_block_backward(E, &f->blk, f->q, cur, half(cur, f), f->o, f->d_o, f->stats, f->dq, f->dkv,
                                      half(f->dkv, f), f->scores, f->dp));
        PB_TRY(after_block(f, &x));
        if (k == 0) PB_TRY(E->copy(acc, f->dkv, n * f->es));
        else PB_TRY(E->add(f->blk.t, n, f->dkv, acc));
    }
    pb_cp_exchange e = pb_cp_exchange_at(f->c, f->c, 1);
    if (!comm || !e.dkv) return PB_OK;
    pb_cp_impl_xchg home = {.dkv_send = f->acc[(f->c - 1) & 1], .dkv_recv = f->acc[f->c & 1]};
    PB_TRY(lane_post(f, &home));
    return lane_wait(f);
}

static int run(pb_cp *f, int comm)
{
    lane_begin(f);
    int status = PB_OK;
    for (int64_t l = 0; l < f->cfg.layers && status == PB_OK; l++) status = forward(f, comm);
    for (int64_t l = 0; l < f->cfg.layers && status == PB_OK; l++) status = backward(f, comm);
    int end = lane_end(f); /* also after a failure: nothing stays in flight */
    return status == PB_OK ? end : status;
}

int pb_cp_compute(pb_cp *f) { return run(f, 0); }
int pb_cp_step(pb_cp *f) { return run(f, 1); }

/* The step's exchanges in the step's order, each complete before the next. */
int pb_cp_comm(pb_cp *f)
{
    int status = PB_OK;
    lane_begin(f);
    for (int64_t l = 0; l < 2 * f->cfg.layers && status == PB_OK; l++) {
        int bwd = l >= f->cfg.layers;
        for (int k = 0; k <= f->c && status == PB_OK; k++) {
            pb_cp_exchange e = pb_cp_exchange_at(f->c, k, bwd);
            pb_cp_impl_xchg x = {0};
            if (e.kv) x.kv_send = held(f, k, 1), x.kv_recv = f->kv[k & 1];
            if (e.dkv) x.dkv_send = f->acc[(k - 1) & 1], x.dkv_recv = f->acc[k & 1];
            if (!e.kv && !e.dkv) continue;
            status = lane_post(f, &x);
            if (status == PB_OK) status = lane_wait(f);
        }
    }
    int end = lane_end(f);
    return status == PB_OK ? end : status;
}

void pb_cp_last_timing(const pb_cp *f, pb_cp_timing *out) { *out = f->timing; }
void *pb_cp_impl_result_dkv(pb_cp *f) { return f->c > 1 ? f->acc[f->c & 1] : f->acc[0]; }

double pb_cp_flops(const pb_cp *f)
{
    double per = pb_attn_block_flops_fwd(&f->blk) + pb_attn_block_flops_bwd(&f->blk);
    return (double)f->cfg.layers * f->c * per;
}

/* ---- create and destroy -------------------------------------------------------- */

/* Q, K, V and dO of this rank's block: deterministic, different per block
 * and per CP group, ~U(-1, 1). */
static int fill(pb_cp *f, void *p, uint64_t elems, uint64_t which)
{
    pb_compute_fill_spec spec = {.seed = f->cfg.seed, .stream = ((uint64_t)f->cfg.group * 8 + which),
                                 .row0 = (int64_t)((uint64_t)f->index * elems), .col0 = 0, .scale = 1.0f};
    return f->cfg.eng->fill(p, f->blk.t, (int64_t)elems, 1, 1, &spec);
}

static int start_lane(pb_cp *f)
{
    f->threaded = f->order == PB_ORDERING_HOST && f->cfg.overlap == PB_CP_OVERLAP_ON && f->c > 1;
    if (!f->threaded) return PB_OK;
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    PB_CHECK(level >= MPI_THREAD_MULTIPLE, PB_ERR_ENV, "--overlap on: the communication thread needs "
             "MPI_THREAD_MULTIPLE; the MPI library granted level %d", level);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->cv, NULL);
    if (pthread_create(&f->thread, NULL, lane_thread, f) != 0) {
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->mu);
        f->threaded = 0;
        return pb_fail(PB_ERR_ENV, "cp: cannot start the communication thread");
    }
    return PB_OK;
}

static int build(pb_cp *f)
{
    const pb_compute *E = f->cfg.eng;
    size_t qb = (size_t)f->qn * f->es, kvb = (size_t)(2 * f->kvn) * f->es;
    size_t sb = (size_t)(f->blk.b * f->blk.heads * f->blk.sq * f->blk.sk) * f->es;
    void **qs[] = {&f->q, &f->o, &f->d_o, &f->dq};
    for (size_t i = 0; i < 4; i++) PB_TRY(E->alloc(qs[i], qb));
    void **kvs[] = {&f->kv_own, &f->kv[0], &f->kv[1], &f->acc[0], &f->acc[1], &f->dkv};
    for (size_t i = 0; i < 6; i++) {
        PB_TRY(E->alloc(kvs[i], kvb));
        PB_TRY(E->memset(*kvs[i], 0, kvb));
    }
    PB_TRY(E->alloc(&f->scores, sb));
    PB_TRY(E->alloc(&f->dp, sb));
    PB_TRY(E->alloc((void **)&f->stats, (size_t)(2 * f->blk.b * f->blk.heads * f->blk.sq) * sizeof(float)));
    PB_TRY(fill(f, f->q, f->qn, 0));
    PB_TRY(fill(f, f->kv_own, f->kvn, 1));
    PB_TRY(fill(f, half(f->kv_own, f), f->kvn, 2));
    PB_TRY(fill(f, f->d_o, f->qn, 3));
    PB_TRY(E->synchronize());
    PB_TRY(pb_staging_alloc(&f->stage_kv, E, f->cfg.be, 2, kvb));
    PB_TRY(pb_staging_alloc(&f->stage_dkv, E, f->cfg.be, 2, kvb));
    return start_lane(f);
}

int pb_cp_create(const pb_cp_config *cfg, pb_cp **out)
{
    *out = NULL;
    PB_CHECK(cfg->eng && cfg->be && cfg->ring, PB_ERR_USAGE, "cp: engine, backend and CP group needed");
    PB_CHECK(cfg->layers > 0 && cfg->heads > 0 && cfg->kv_heads > 0 && cfg->heads % cfg->kv_heads == 0,
             PB_ERR_USAGE, "cp: >= 1 layer, KV heads dividing the heads");
    PB_TRY(pb_cp_check_seq(cfg->seq, cfg->be->size(cfg->ring)));
    pb_cp *f = calloc(1, sizeof *f);
    PB_CHECK(f, PB_ERR_ENV, "cp: out of memory");
    f->cfg = *cfg;
    pb_cp_block_shape(cfg, &f->blk);
    f->c = cfg->be->size(cfg->ring);
    f->index = cfg->be->rank(cfg->ring);
    f->next = (f->index + 1) % f->c;
    f->prev = (f->index + f->c - 1) % f->c;
    f->es = pb_dtype_size(f->blk.t);
    f->qn = (uint64_t)(f->blk.b * f->blk.heads * f->blk.sq * f->blk.hd);
    f->kvn = (uint64_t)(f->blk.b * f->blk.kv_heads * f->blk.sk * f->blk.hd);
    f->order = pb_ordering_plan(cfg->eng, cfg->be);
    f->slow = pb_faults_slow_rank() == cfg->rank;
    int status = build(f);
    if (status != PB_OK) {
        pb_cp_destroy(f);
        return status;
    }
    *out = f;
    return PB_OK;
}

void pb_cp_destroy(pb_cp *f)
{
    if (!f) return;
    if (f->threaded) {
        pthread_mutex_lock(&f->mu);
        f->quit = 1;
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->thread, NULL);
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->mu);
    }
    const pb_compute *E = f->cfg.eng;
    void *bufs[] = {f->q, f->o, f->d_o, f->dq, f->kv_own, f->kv[0], f->kv[1], f->acc[0], f->acc[1], f->dkv,
                    f->scores, f->dp, f->stats};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        if (bufs[k]) E->free(bufs[k]);
    pb_staging_free(&f->stage_kv);
    pb_staging_free(&f->stage_dkv);
    free(f);
}
