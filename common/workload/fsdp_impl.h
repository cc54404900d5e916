/* Internals shared by fsdp_step.c (the step and its communication lane) and
 * fsdp_check.c (validation). Not for benchmarks: they use fsdp.h. */
#ifndef PB_FSDP_IMPL_H
#define PB_FSDP_IMPL_H

#include "workload/fsdp.h"
#include "workload/ordering.h"
#include "workload/staging.h"

#include <pthread.h>

typedef enum { PB_FSDP_IMPL_GATHER, PB_FSDP_IMPL_SCATTER } pb_fsdp_impl_kind;

/* One collective of the step: gather layer's shards into full[buf], or
 * reduce-scatter layer's gradient into its shard (then across replicas). */
typedef struct pb_fsdp_impl_op {
    pb_fsdp_impl_kind kind;
    int64_t layer;
    int buf;
} pb_fsdp_impl_op;

/* Validation's view of a step: called when layer `layer`'s compute is about
 * to read full[buf] (its gather complete). */
typedef int (*pb_fsdp_impl_check_fn)(pb_fsdp *f, int64_t layer, int buf);

struct pb_fsdp {
    pb_fsdp_config cfg;
    pb_layer_shape eff;   /* dtype = what the engine computes in */
    pb_fsdp_shard sh;     /* one layer's P over the shard group */
    int index;            /* this rank's shard */
    size_t pes, ges;      /* parameter and gradient element sizes */
    pb_layer_stack *st;
    pb_layer_saved *acts;
    void *x, *y, *dy, *io[2]; /* tokens x h */
    void **own;           /* each layer's own full weights (the stack's) */
    void *pshard;         /* L x S parameters: this rank's shards */
    void *full[2];        /* n*S parameters each: the gathered layers */
    void *grads;          /* L*P + (n*S - P) gradient elements: the backward's, zero tail */
    void *gshard;         /* L x S gradient elements: the reduced shards */
    pb_ordering order;
    pb_staging stage;     /* two backend buffers of the largest collective, when memories differ */

    /* The communication lane: a thread (host order, prefetch on) or the stream. */
    int threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t posted_cv, done_cv;
    pb_fsdp_impl_op *queue;
    size_t cap, posted, done;
    int quit, thread_status;
    int64_t *pending;     /* stream order: layers whose replica all-reduce waits */
    size_t npending;

    int slow;             /* test hook: every collective of this rank starts PB_FAULTS_SLOW_US late */
    pb_fsdp_timing timing;
    pb_fsdp_impl_check_fn check;
    long long wrong_params;
    void *host_a, *host_b; /* validation: P parameters each */
};

/* The step's schedule with or without its collectives (fsdp_step.c). */
int pb_fsdp_impl_run(pb_fsdp *f, int with_comm);

#endif
