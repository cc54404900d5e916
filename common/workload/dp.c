/* The gradient synchronizer: buckets, the communication thread (host order)
 * or event-ordered issue (stream order), staging and the time accounting.
 * See dp.h for the contract. */
#include "workload/dp.h"

#include "workload/bucket.h"
#include "backend/gpu.h"
#include "core/error.h"
#include "workload/ordering.h"
#include "workload/staging.h"
#include "core/timing.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct pb_dp {
    pb_dp_config cfg;
    pb_bucket_plan plan;
    uint64_t max_bucket;
    pb_staging stage;  /* one bucket of backend memory, when engine and backend memory differ */
    pb_ordering order;
    pb_ordering_side_timer comm_t; /* stream order: device time of the bucket all-reduces */

    pthread_t thread;  /* bucket mode in host order only */
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t posted_cv, done_cv;
    size_t posted;     /* buckets handed to the thread or issued on the stream (a prefix of the plan) */
    size_t issued;     /* buckets the thread has finished */
    int quit, thread_status;

    double t_begin;
    pb_dp_timing timing;
};

/* Largest element count a backend call takes (MPI counts are ints). */
static uint64_t max_call_bytes(pb_dtype t)
{
    uint64_t es = pb_dtype_size(t);
    return (uint64_t)INT_MAX / es * es;
}

static int build_plan(pb_dp *dp)
{
    const pb_dp_config *c = &dp->cfg;
    uint64_t es = pb_dtype_size(c->dtype), cap = c->bucket_bytes ? c->bucket_bytes : PB_DDP_BUCKET_BYTES;
    /* none: the whole buffer at once, cut only where MPI's int counts force it */
    if (c->overlap == PB_DP_OVERLAP_NONE) cap = c->bytes;
    if (cap > max_call_bytes(c->dtype)) cap = max_call_bytes(c->dtype);
    if (cap < es) cap = es;
    PB_TRY(pb_bucket_plan_build(c->layer_bytes, c->nlayers, cap, es, &dp->plan));
    for (size_t k = 0; k < dp->plan.count; k++)
        if (dp->plan.buckets[k].bytes > dp->max_bucket) dp->max_bucket = dp->plan.buckets[k].bytes;
    return PB_OK;
}

static int check_config(const pb_dp_config *c, pb_ordering order)
{
    PB_CHECK(c->be && c->comm && c->eng && c->grads, PB_ERR_USAGE, "dp: backend, communicator, engine and buffer needed");
    PB_CHECK(c->dtype == PB_FLOAT32 || c->dtype == PB_BFLOAT16, PB_ERR_USAGE, "dp: gradients are float or bfloat16");
    PB_CHECK(c->overlap >= 0 && c->overlap < PB_DP_OVERLAP_COUNT, PB_ERR_USAGE, "dp: unknown overlap mode");
    uint64_t sum = 0;
    for (int64_t i = 0; i < c->nlayers; i++) sum += c->layer_bytes[i];
    PB_CHECK(c->nlayers > 0 && sum == c->bytes, PB_ERR_USAGE, "dp: the layer shares do not add up to the buffer");
    if (c->overlap == PB_DP_OVERLAP_BUCKET && order == PB_ORDERING_HOST) {
        int level = MPI_THREAD_SINGLE;
        MPI_Query_thread(&level);
        PB_CHECK(level >= MPI_THREAD_MULTIPLE, PB_ERR_ENV,
                 "--overlap bucket: the communication thread needs MPI_THREAD_MULTIPLE; the MPI library "
                 "granted level %d", level);
    }
    return PB_OK;
}

/* All-reduce bucket k in place and complete it; adds to the busy time. */
static int reduce_bucket(pb_dp *dp, size_t k)
{
    const pb_bucket *bk = &dp->plan.buckets[k];
    const pb_dp_config *c = &dp->cfg;
    char *p = (char *)c->grads + bk->offset;
    size_t count = (size_t)(bk->bytes / pb_dtype_size(c->dtype));
    double t0 = pb_timing_now_us();
    void *buf = dp->stage.buf[0] ? dp->stage.buf[0] : p;
    if (buf != p) PB_TRY(pb_staging_in(&dp->stage, 0, p, (size_t)bk->bytes));
    PB_TRY(c->be->allreduce(c->comm, buf, buf, count, c->dtype, PB_SUM));
    PB_TRY(c->be->sync(c->comm));
    if (buf != p) PB_TRY(pb_staging_out(&dp->stage, 0, p, (size_t)bk->bytes));
    double t1 = pb_timing_now_us();
    dp->timing.busy_us += t1 - t0;
    dp->timing.last_done_us = t1 - dp->t_begin;
    return PB_OK;
}

/* Stream order: queue bucket k's all-reduce behind the backward work queued
 * so far (the bucket's gradients), bracketed by an event span. Nothing waits. */
static int issue_bucket(pb_dp *dp, size_t k)
{
    const pb_bucket *bk = &dp->plan.buckets[k];
    const pb_dp_config *c = &dp->cfg;
    void *p = (char *)c->grads + bk->offset;
    size_t count = (size_t)(bk->bytes / pb_dtype_size(c->dtype));
    PB_TRY(pb_ordering_comm_after_compute(dp->order, c->eng, c->be, c->comm));
    PB_TRY(pb_ordering_side_timer_begin(&dp->comm_t));
    PB_TRY(c->be->allreduce(c->comm, p, p, count, c->dtype, PB_SUM));
    return pb_ordering_side_timer_end(&dp->comm_t);
}

/* Stream order: issue buckets [posted, upto). */
static int issue_upto(pb_dp *dp, size_t upto)
{
    if (upto > dp->posted && dp->posted == 0) dp->timing.first_post_us = pb_timing_now_us() - dp->t_begin;
    for (; dp->posted < upto; dp->posted++) PB_TRY(issue_bucket(dp, dp->posted));
    return PB_OK;
}

/* Stream order: wait for every issued bucket, read their device time. Each
 * bucket waited on the compute stream, so backward is complete too. */
static int complete_streamed(pb_dp *dp)
{
    const pb_dp_config *c = &dp->cfg;
    PB_TRY(c->be->sync(c->comm));
    dp->timing.last_done_us = pb_timing_now_us() - dp->t_begin;
    dp->comm_t.total_us = 0;
    PB_TRY(pb_ordering_side_timer_take(&dp->comm_t));
    dp->timing.busy_us = dp->comm_t.total_us;
    return PB_OK;
}

/* The communication thread: reduce posted buckets in plan order; sleep on a
 * condition variable (not spinning) while none is posted. */
static void *comm_thread(void *arg)
{
    pb_dp *dp = arg;
    /* CUDA's current device is per thread and starts at 0: without this, the
     * thread's copies and NCCL calls would go to GPU 0 on every rank. */
    int bound = pb_gpu_thread_bind();
    pthread_mutex_lock(&dp->mu);
    for (;;) {
        while (!dp->quit && dp->issued == dp->posted) pthread_cond_wait(&dp->posted_cv, &dp->mu);
        if (dp->quit) break;
        size_t k = dp->issued;
        int failed = dp->thread_status != PB_OK;
        pthread_mutex_unlock(&dp->mu);
        int s = failed ? PB_OK : bound != PB_OK ? bound : reduce_bucket(dp, k);
        pthread_mutex_lock(&dp->mu);
        if (s != PB_OK) dp->thread_status = s;
        dp->issued++;
        pthread_cond_broadcast(&dp->done_cv);
    }
    pthread_mutex_unlock(&dp->mu);
    return NULL;
}

static int start_thread(pb_dp *dp)
{
    pthread_mutex_init(&dp->mu, NULL);
    pthread_cond_init(&dp->posted_cv, NULL);
    pthread_cond_init(&dp->done_cv, NULL);
    PB_CHECK(pthread_create(&dp->thread, NULL, comm_thread, dp) == 0, PB_ERR_ENV,
             "dp: cannot start the communication thread");
    dp->thread_started = 1;
    return PB_OK;
}

int pb_dp_create(const pb_dp_config *cfg, pb_dp **out)
{
    *out = NULL;
    PB_CHECK(cfg->be && cfg->eng, PB_ERR_USAGE, "dp: backend and engine needed");
    pb_ordering order = pb_ordering_plan(cfg->eng, cfg->be);
    PB_TRY(check_config(cfg, order));
    pb_dp *dp = calloc(1, sizeof *dp);
    PB_CHECK(dp, PB_ERR_ENV, "dp: out of memory");
    dp->cfg = *cfg;
    dp->order = order;
    pb_ordering_side_timer_init(&dp->comm_t, order, cfg->eng, cfg->be, cfg->comm);
    int s = build_plan(dp);
    dp->cfg.layer_bytes = NULL; /* the caller's array; only the plan keeps the layout */
    if (s == PB_OK) s = pb_staging_alloc(&dp->stage, cfg->eng, cfg->be, 1, (size_t)dp->max_bucket);
    if (s == PB_OK && cfg->overlap == PB_DP_OVERLAP_BUCKET && order == PB_ORDERING_HOST) s = start_thread(dp);
    if (s != PB_OK) {
        pb_dp_destroy(dp);
        return s;
    }
    *out = dp;
    return PB_OK;
}

void pb_dp_destroy(pb_dp *dp)
{
    if (!dp) return;
    if (dp->thread_started) {
        pthread_mutex_lock(&dp->mu);
        dp->quit = 1;
        pthread_cond_broadcast(&dp->posted_cv);
        pthread_mutex_unlock(&dp->mu);
        pthread_join(dp->thread, NULL);
        pthread_cond_destroy(&dp->posted_cv);
        pthread_cond_destroy(&dp->done_cv);
        pthread_mutex_destroy(&dp->mu);
    }
    pb_staging_free(&dp->stage);
    pb_bucket_plan_free(&dp->plan);
    free(dp);
}

size_t pb_dp_bucket_count(const pb_dp *dp) { return dp->plan.count; }
uint64_t pb_dp_max_bucket(const pb_dp *dp) { return dp->max_bucket; }

int pb_dp_begin(pb_dp *dp)
{
    if (dp->thread_started) {
        pthread_mutex_lock(&dp->mu);
        int idle = dp->issued == dp->posted;
        dp->posted = dp->issued = 0;
        dp->thread_status = PB_OK;
        pthread_mutex_unlock(&dp->mu);
        PB_CHECK(idle, PB_ERR_USAGE, "dp: a step began before the previous one finished");
    }
    if (!dp->thread_started) dp->posted = 0; /* stream order's progress */
    dp->timing = (pb_dp_timing){.buckets = dp->plan.count};
    dp->t_begin = pb_timing_now_us();
    return PB_OK;
}

/* Hand buckets [0, upto) to the comm thread. */
static void post(pb_dp *dp, size_t upto)
{
    pthread_mutex_lock(&dp->mu);
    if (upto > dp->posted) {
        if (dp->posted == 0) dp->timing.first_post_us = pb_timing_now_us() - dp->t_begin;
        dp->posted = upto;
        pthread_cond_signal(&dp->posted_cv);
    }
    pthread_mutex_unlock(&dp->mu);
}

int pb_dp_grad_ready(void *user, int64_t layer, uint64_t offset, uint64_t bytes)
{
    (void)offset, (void)bytes;
    pb_dp *dp = user;
    if (dp->cfg.overlap != PB_DP_OVERLAP_BUCKET) return PB_OK;
    size_t first = 0, count = 0;
    pb_bucket_ready(&dp->plan, layer - dp->cfg.layer0, &first, &count);
    if (!count) return PB_OK;
    if (dp->order == PB_ORDERING_STREAM) return issue_upto(dp, first + count);
    PB_TRY(dp->cfg.eng->synchronize()); /* the thread reads these bytes */
    post(dp, first + count);
    return PB_OK;
}

/* wait_us starts once backward has completed, so it is the exposed tail in
 * either order: in stream order the rest of the buckets are queued first, so
 * the host's wait for backward does not delay them. */
int pb_dp_finish(pb_dp *dp)
{
    const pb_compute *E = dp->cfg.eng;
    int status = PB_OK;
    double t0;
    if (dp->order == PB_ORDERING_STREAM) {
        status = issue_upto(dp, dp->plan.count);
        int backward = E->synchronize();
        t0 = pb_timing_now_us();
        int done = complete_streamed(dp); /* also after a failed issue: nothing stays in flight */
        if (status == PB_OK) status = backward;
        if (status == PB_OK) status = done;
    } else if (dp->cfg.overlap == PB_DP_OVERLAP_BUCKET) {
        PB_TRY(E->synchronize());
        t0 = pb_timing_now_us();
        post(dp, dp->plan.count);
        pthread_mutex_lock(&dp->mu);
        while (dp->issued < dp->plan.count) pthread_cond_wait(&dp->done_cv, &dp->mu);
        status = dp->thread_status;
        pthread_mutex_unlock(&dp->mu);
    } else {
        PB_TRY(E->synchronize());
        t0 = pb_timing_now_us();
        dp->timing.first_post_us = t0 - dp->t_begin;
        for (size_t k = 0; k < dp->plan.count && status == PB_OK; k++) status = reduce_bucket(dp, k);
    }
    dp->timing.wait_us = pb_timing_now_us() - t0;
    return status;
}

int pb_dp_reduce_all(pb_dp *dp)
{
    PB_TRY(pb_dp_begin(dp));
    dp->timing.first_post_us = 0;
    if (dp->order == PB_ORDERING_STREAM) {
        int status = issue_upto(dp, dp->plan.count);
        int done = complete_streamed(dp);
        PB_TRY(status);
        PB_TRY(done);
        dp->timing.wait_us = pb_timing_now_us() - dp->t_begin;
        return PB_OK;
    }
    PB_TRY(dp->cfg.eng->synchronize());
    for (size_t k = 0; k < dp->plan.count; k++) PB_TRY(reduce_bucket(dp, k));
    dp->timing.wait_us = dp->timing.busy_us;
    return PB_OK;
}

void pb_dp_last_timing(const pb_dp *dp, pb_dp_timing *out) { *out = dp->timing; }
