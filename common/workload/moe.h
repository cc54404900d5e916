/* A mixture-of-experts (MoE) layer with expert parallelism, forward and
 * backward, on L layers.
 *
 * Every rank holds T = b*s tokens of h elements. An expert-parallel (EP)
 * group of ep ranks holds the E experts of each layer, E/ep per rank (rank d:
 * experts d*E/ep .. (d+1)*E/ep - 1). Per layer:
 *   router:   logits = X Wr (T x h times h x E), then each token's top k
 *             experts (moe_route.c: the choice is a fixed function of the
 *             load, see below);
 *   permute:  the T*k (token, choice) rows in expert order: choice j of every
 *             token is block j of k copies of X;
 *   dispatch: the per-expert counts exchanged (an all-to-all of E/ep
 *             integers per peer, which the host reads, as real MoE code
 *             does), then the all-to-all(v) of the rows to the ranks holding
 *             their experts (coll/coll_alltoallv.h);
 *   experts:  per local expert, its rows from every sender through its MLP
 *             (GELU: W1 h x f, or SwiGLU: W1 h x 2f gate | up; W2 f x h);
 *   combine:  the reverse all-to-all(v): every row back to its origin;
 *   un-permute: Y = (1/k) sum over the k choices (gates of 1/k).
 * Backward runs the same in reverse: the output gradient expanded to its k
 * choices, all-to-all to the experts ("dispatch" direction), the experts'
 * backward (weight gradients and input gradients), all-to-all back
 * ("combine" direction), the sum over the choices, the router's backward.
 * Layer i's output is layer i+1's input.
 *
 * The load (moe_route.c): the T*k choices of every rank are split over the E
 * experts as coll_skew.h splits an alltoallv (pb_coll_skew_split): expert 0
 * gets F times the mean (--skew F; 1 = uniform), the others the rest evenly.
 * Choice j of token t is slot j*T + t of the experts' consecutive ranges, so
 * a token's k experts are distinct while no expert gets more than T choices.
 * Every rank routes alike, so EP rank d receives ep blocks of the same rows
 * and the heaviest rank receives `imbalance` times the mean. A trained
 * router's load is what --skew states; random router weights would spread it
 * evenly, so the router's GEMMs are real compute and its choice is not read
 * from them.
 *
 * Each all-to-all is timed on the host from its issue to its completion,
 * after the compute before it has completed (the dispatch needs its counts on
 * the host anyway). Where engine and backend memories differ the rows are
 * staged through two backend buffers (staging.h). */
#ifndef PB_MOE_H
#define PB_MOE_H

#include "backend/comm.h"
#include "compute/compute.h"

#include <mpi.h>
#include <stdint.h>

/* ---- routing arithmetic (moe_route.c): no MPI, no engine ---- */

typedef struct pb_moe_route {
    int64_t tokens; /* T: tokens per rank */
    int experts;    /* E */
    int top_k;      /* k */
    int ep;         /* ranks of the EP group */
    double skew;    /* F: expert 0's choices over the mean */
} pb_moe_route;

/* PB_OK, or PB_ERR_USAGE naming the option: --experts (E < 1, or not a
 * multiple of ep), --top-k (k < 1 or k > E), --skew (F < 1, or expert 0
 * would get more choices than there are tokens: F above about E/k). */
int pb_moe_route_check(const pb_moe_route *r);

/* Choices every rank routes to expert e. */
int64_t pb_moe_expert_rows(const pb_moe_route *r, int e);
/* Rows every rank sends to EP rank d (the choices of d's experts), and the
 * first of them in its permuted order (the rows sent to ranks before d). */
int64_t pb_moe_rank_rows(const pb_moe_route *r, int d);
int64_t pb_moe_rank_first(const pb_moe_route *r, int d);
/* Rows EP rank d receives: ep blocks of pb_moe_rank_rows(d). */
int64_t pb_moe_recv_rows(const pb_moe_route *r, int d);
/* The heaviest rank's received rows over the mean, T*k; 1 when even. */
double pb_moe_imbalance(const pb_moe_route *r);
/* The expert of permuted row s (choice s / T of token s mod T). */
int pb_moe_row_expert(const pb_moe_route *r, int64_t s);

/* EP groups of `size` consecutive ranks over `world`: this rank's group and
 * index in it. PB_ERR_USAGE naming --ep-group when size does not divide world. */
int pb_moe_group_of(int world, int size, int rank, int *group, int *index);

/* ---- the layer (moe_layer.c) ---- */

typedef struct pb_moe_config {
    const pb_compute *eng;
    const pb_comm_backend *be;
    pb_comm *ep_comm;     /* the EP group; this rank's index holds experts index*E/ep.. */
    int64_t tokens, hidden, ffn;
    int gated;            /* 1: SwiGLU experts, 0: GELU */
    pb_dtype dtype;       /* requested; the engine's gemm_dtype is what runs */
    int64_t nlayers;
    int experts, top_k;
    double skew;
    uint64_t seed;
    int rank;             /* world rank: seeds the inputs, names a row's origin in validation */
    int group;            /* EP group: world rank = group * ep + index */
} pb_moe_config;

/* What the last step (or pb_moe_a2a_only) took on this rank, host clock. */
typedef struct pb_moe_timing {
    double dispatch_us; /* the token-to-expert all-to-alls: forward dispatch (with its counts) and
                         * backward's all-to-all of the output gradients */
    double combine_us;  /* the expert-to-token ones: forward combine, backward's input gradients */
    int a2as;           /* all-to-alls issued */
} pb_moe_timing;

typedef struct pb_moe pb_moe;

/* The routing of this configuration (ep from the group). */
void pb_moe_route_of(const pb_moe_config *cfg, pb_moe_route *out);
/* Engine bytes one rank needs (weights, gradients, saved activations,
 * scratch, staging) and host bytes for validation. */
void pb_moe_bytes(const pb_moe_config *cfg, uint64_t *engine_bytes, uint64_t *host_bytes);

/* Collective over the EP group. */
int pb_moe_create(const pb_moe_config *cfg, pb_moe **out);
void pb_moe_destroy(pb_moe *m);

int pb_moe_step(pb_moe *m); /* L layers forward and backward */
/* The step's 4L all-to-alls alone, back to back, no compute: at the layer's
 * load (even 0) or at uniform load (even 1: skew 1, the same bytes per rank),
 * what the skewed ones are compared with. */
int pb_moe_a2a_only(pb_moe *m, int even);
void pb_moe_last_timing(const pb_moe *m, pb_moe_timing *out);
/* Each all-to-all of the last call, in issue order (timing.a2as of them):
 * dispatches at even indexes, combines at odd ones. */
const double *pb_moe_a2a_times(const pb_moe *m);

/* FLOPs of one step on this rank: the experts' GEMMs (on the rows it
 * received), and the rest (router, permutations), which every rank does alike. */
double pb_moe_expert_flops(const pb_moe *m);
double pb_moe_other_flops(const pb_moe *m);
/* Bytes one rank sends in one all-to-all at uniform load: T*k*h elements. */
double pb_moe_a2a_bytes(const pb_moe *m);
/* Counts received that differ from the routing's, over every dispatch so far. */
long long pb_moe_wrong_counts(const pb_moe *m);

/* One dispatch and combine with checks (collective over the EP group): every
 * row sent carries a pattern of (origin world rank, permuted row, column);
 * each receiver checks every row it got, adds its expert's index + 1 as its
 * "expert", and the origin checks every row that came back
 * (*wrong_rows: elements). `corrupt`: this rank falsifies one element before
 * the combine (fault injection). Counts are this rank's. */
int pb_moe_validate(pb_moe *m, int corrupt, long long *wrong_rows);

#endif
