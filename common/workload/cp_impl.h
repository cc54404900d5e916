/* Internals shared by cp_step.c (the ring and its communication lane) and
 * cp_check.c (validation). Not for benchmarks: they use cp.h. */
#ifndef PB_CP_IMPL_H
#define PB_CP_IMPL_H

#include "workload/cp.h"
#include "workload/ordering.h"
#include "workload/staging.h"

#include <pthread.h>

/* One exchange: each pair (send, receive) NULL where the step does not carry it. */
typedef struct pb_cp_impl_xchg {
    const void *kv_send;
    void *kv_recv;
    const void *dkv_send;
    void *dkv_recv;
} pb_cp_impl_xchg;

struct pb_cp {
    pb_cp_config cfg;
    pb_attn_block blk;      /* this rank's Q block against one K/V block */
    int c, index, next, prev;
    size_t es;              /* element size of the compute type */
    uint64_t qn, kvn;       /* elements of Q (and O, dO, dQ), of one of K or V */
    void *q, *o, *d_o, *dq; /* [b][heads][s/c][hd] */
    void *kv_own;           /* [K | V] of this rank's block */
    void *kv[2];            /* the ring's K/V blocks */
    void *acc[2];           /* the ring's dK/dV accumulators */
    void *dkv;              /* [dK | dV] of the block just computed */
    void *scores, *dp;      /* [b][heads][s/c][s/c] */
    float *stats;           /* 2 floats per row */
    pb_ordering order;
    pb_staging stage_kv, stage_dkv; /* send and receive buffers in the backend's memory, when memories differ */

    /* The communication lane: a thread (host order, overlap on), else inline or the stream. */
    int threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pb_cp_impl_xchg job;
    int posted, done, quit, thread_status;

    int slow; /* test hook: every exchange of this rank starts PB_FAULTS_SLOW_US late */
    pb_cp_timing timing;
};

/* Where the home block's dK/dV are after a step with communication. */
void *pb_cp_impl_result_dkv(pb_cp *f);

#endif
