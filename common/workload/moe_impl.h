/* Internals shared by moe_layer.c (the layer and its all-to-alls) and
 * moe_check.c (validation). Not for benchmarks: they use moe.h. */
#ifndef PB_MOE_IMPL_H
#define PB_MOE_IMPL_H

#include "workload/moe.h"
#include "workload/staging.h"

struct pb_moe {
    pb_moe_config cfg;
    pb_moe_route route, even;  /* the layer's load, and the uniform one */
    pb_dtype t;                /* what the engine computes in */
    size_t es;
    int ep, index, local;      /* EP ranks, this rank's index, experts per rank */
    int64_t T, h, f, f1, k;    /* tokens, hidden, expert width, W1's width (2f gated) */
    int64_t Rp, R, even_recv;  /* rows from each sender, received in all, received at uniform load */
    int64_t *to, *even_to;     /* per EP rank: rows every sender sends it (layer, uniform) */
    int64_t *rows, *first;     /* per local expert: its rows in each sender's block, and their offset */
    int32_t *cnt_host, *cnt_want; /* the counts received, and the routing's */
    void **w, **g;             /* per layer: Wr (h x E), then per local expert W1, W2; gradients alike */
    void **xs;                 /* L+1 tokens x h: the input, then each layer's output */
    void **recv, **z, **hid;   /* per layer, saved: rows received (R x h), W1's output (R x f1), activation (R x f) */
    void *logits, *xk, *eout, *ck, *dz, *dxr, *dy0, *dys[2], *ones;
    void *cnt_send, *cnt_recv; /* backend memory: E int32 counts each */
    pb_staging stage;          /* two backend buffers of the largest all-to-all, when memories differ */
    pb_moe_timing timing;
    double *a2a_us;            /* each all-to-all of the last call, in issue order (4L) */
    long long wrong_counts;
    void *host_a, *host_b;     /* validation: T*k and R rows */
};

/* One all-to-all of rows (coll_alltoallv.h): forward (to the experts) or
 * reverse (back to the origins), at the layer's load or the uniform one;
 * `counts`: the per-expert counts exchanged and read on the host first. The
 * compute before it is completed first; timed from issue to completion. */
int pb_moe_impl_a2a(pb_moe *m, const void *send, void *recv, int reverse, int even, int counts);

#endif
