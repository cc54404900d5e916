/* Tensor parallelism as Megatron-LM does it: a stack of transformer layers
 * whose weights are sharded over the t ranks of one TP group, run block by
 * block (layer.h) with the group's collectives between the blocks.
 *
 *   QKV [h x 3h/t], MLP-up [h x 4h/t]: column-parallel (each rank its columns)
 *   out [h/t x h],  MLP-down [4h/t x h]: row-parallel (each rank a PARTIAL sum)
 *
 * Two ways to combine the partial sums (--tp-comm):
 *   allreduce: Megatron's f/g operators. Every block's partial output is
 *              all-reduced (2 per layer forward), and so is every block's
 *              partial input gradient (2 per layer backward). Activations
 *              entering and leaving the stack are REPLICATED: N x h on every
 *              rank, N = b*s tokens.
 *   sp:        sequence parallelism. An all-gather before each block turns the
 *              sequence-sharded input into the full one; a reduce-scatter
 *              after it sums the partials and leaves each rank its shard.
 *              Backward mirrors it (all-gather dY, reduce-scatter dX).
 *              Activations entering and leaving the stack are SEQUENCE-
 *              SHARDED: rank r holds token rows [r*N/t, (r+1)*N/t) of the
 *              token-major [N x h] matrix (t must divide s, so this is s/t
 *              positions when b = 1).
 * Both move 8*b*s*h*(t-1)/t elements per rank per layer (forward + backward).
 *
 * Communication sits on the critical path: a block's GEMM needs the previous
 * collective's result, so compute and communication alternate. How the two
 * are ordered follows ordering.h: on the host (MPI, BLAS: each region completes
 * before the next starts, timed by the host clock), or on the streams (NCCL
 * with cuBLAS: each collective waits on the GEMM before it and the next GEMM
 * waits on the collective through CUDA events, the host only queues work,
 * and each region is timed by event spans on its stream). Either way the
 * times are summed in the accounting (pb_tp_acct), and every pass
 * (pb_tp_forward, pb_tp_backward) returns with its output complete.
 *
 * Reuse (hybrid_3d): a pipeline stage creates one pb_tp over its TP
 * sub-communicator, allocates one pb_layer_saved per micro-batch in flight
 * (pb_tp_acts_alloc), runs pb_tp_forward / pb_tp_backward per micro-batch,
 * and hands the flat gradient buffer (pb_tp_grads, or its own through
 * cfg.grads) to data parallelism through the grad-ready callback.
 * With t = 1 no collective is issued (copies stand in), and be/comm may be NULL. */
#ifndef PB_TP_H
#define PB_TP_H

#include "backend/comm.h"
#include "compute/compute.h"
#include "compute/layer.h"
#include "core/world.h"
#include "workload/ordering.h"

#include <stdint.h>

typedef enum { PB_TP_ALLREDUCE, PB_TP_SP, PB_TP_MODE_COUNT } pb_tp_mode;

const char *pb_tp_mode_name(pb_tp_mode m); /* "allreduce", "sp" */
const char *const *pb_tp_mode_names(void);  /* NULL-terminated, in enum order */
/* "allreduce" or "sp"; PB_ERR_USAGE naming `option` otherwise. */
int pb_tp_mode_parse(const char *option, const char *text, pb_tp_mode *out);

typedef struct pb_tp_config {
    const pb_compute *eng;
    const pb_comm_backend *be;  /* NULL allowed when shape.tp_size == 1 */
    pb_comm *comm;         /* the TP group: size shape.tp_size, this rank shape.tp_rank */
    pb_layer_shape shape;  /* requested dtype; tp_size = t, tp_rank = index in the group */
    int64_t layer0;        /* global index of the first layer (seeds the weights) */
    int64_t nlayers;
    int64_t model_layers;  /* of the whole model; 0 = layer0 + nlayers */
    uint64_t seed;
    pb_tp_mode mode;
    pb_dtype grad_dtype;   /* PB_FLOAT32 or PB_BFLOAT16 */
    void *grads;           /* engine memory of pb_tp_grad_bytes(), or NULL to allocate */
} pb_tp_config;

/* What this rank spent and sent since the last reset. */
typedef struct pb_tp_acct {
    double compute_us;   /* block GEMMs etc., to completion (host clock or compute-stream events) */
    double comm_us;      /* collectives, issue to completion, staging included (host clock or events) */
    uint64_t comm_bytes; /* sent by this rank, algorithm-independent definition (pb_tp_*_bytes) */
    uint64_t colls;      /* collectives issued */
} pb_tp_acct;

typedef struct pb_tp pb_tp;

/* ---- pure arithmetic (tp_plan.c) ---------------------------------------- */

/* Shape for TP: layer.h's checks plus t | h, 3h, 4h, heads (exit 2 naming
 * --tp and the constraint), and for sp t | s (naming --seq). */
int pb_tp_shape_check(const pb_layer_shape *sh, pb_tp_mode mode);

/* TP groups over `world` ranks. Stride 1: consecutive ranks, group g =
 * {g*t .. g*t+t-1}. Stride S: inside each block of S*t consecutive ranks,
 * group j = {j, j+S, .., j+(t-1)S} (placement experiments). Gives this rank's
 * group id and index in it; PB_ERR_USAGE naming --tp / --tp-stride when t
 * does not divide world or S*t does not. */
int pb_tp_group_of(int world, int t, int stride, int rank, int *group, int *index);
/* The t world ranks of group `group`, in index order. */
void pb_tp_group_ranks(int world, int t, int stride, int group, int *ranks);

/* ---- the groups that run at once (tp_spread.c) --------------------------- */

/* Every TP group of the world runs at once, each as slow as its slowest rank:
 * what an operator acts on is "node 17's TP layer is 30% slower". */
typedef struct pb_tp_spread {
    int slowest;                    /* the slowest group's id (pb_tp_group_of) */
    double slowest_us, median_us;   /* its time, and the median group's */
    char hosts[PB_HOST_MAX * 2];    /* the slowest group's hosts, '+'-joined, cut short past the size */
} pb_tp_spread;

/* Collective over w: each rank gives its time (mine_us); rank 0 gets *out for
 * the ngroups groups of t ranks (stride as pb_tp_group_of). Agreed status. */
int pb_tp_group_spread(const pb_world *w, int t, int stride, int ngroups, double mine_us, pb_tp_spread *out);

/* Bytes a rank sends per collective, as nccl-tests' bus bandwidth counts them
 * (independent of the algorithm): all-reduce of `count` elements 2*count*(t-1)/t,
 * all-gather of `count` per rank and reduce-scatter to `count` per rank
 * count*(t-1). Times the element size. */
uint64_t pb_tp_allreduce_bytes(uint64_t count, int t, size_t elem);
uint64_t pb_tp_shard_coll_bytes(uint64_t count, int t, size_t elem);
/* Expected bytes per rank for one layer, forward + backward, from the
 * planner's formula 8*b*s*h*(t-1)/t elements (model.h). */
double pb_tp_expected_bytes_layer(const pb_layer_shape *sh, size_t elem);

/* Relative tolerance of sharded vs unsharded results (relative to the
 * largest |value| of the reference): 1e-4 for fp32, 3e-2 for bf16. */
double pb_tp_tolerance(pb_dtype t);

/* ---- the sharded stack (tp.c) ------------------------------------------- */

/* Rows of x, y, dy, dx per rank: N (allreduce) or N/t (sp). */
int64_t pb_tp_io_rows(const pb_tp_config *cfg);
/* Bytes of one such buffer, in the effective compute type. */
uint64_t pb_tp_io_bytes(const pb_tp_config *cfg);
/* Engine memory pb_tp_create takes (stack, grads unless given, work buffers,
 * staging when backend and engine memory differ). Activations excluded:
 * pb_tp_act_bytes per micro-batch. Call pb_mem_require before creating. */
uint64_t pb_tp_bytes(const pb_tp_config *cfg);
uint64_t pb_tp_act_bytes(const pb_tp_config *cfg);
uint64_t pb_tp_grad_bytes(const pb_tp_config *cfg);

int pb_tp_create(const pb_tp_config *cfg, pb_tp **out);
void pb_tp_destroy(pb_tp *tp);
pb_layer_stack *pb_tp_stack(pb_tp *tp);
const pb_layer_shape *pb_tp_shape(const pb_tp *tp); /* effective dtype */
const pb_tp_config *pb_tp_cfg(const pb_tp *tp);     /* as created */
void *pb_tp_grads(pb_tp *tp);

/* One micro-batch's saved activations (from the stack's pool). */
int pb_tp_acts_alloc(pb_tp *tp, pb_layer_saved **out);
void pb_tp_acts_free(pb_tp *tp, pb_layer_saved *acts);

/* x -> all layers -> y (pb_tp_io_rows x h each, engine memory). Collective
 * over the TP group: every rank of it calls with the same shapes. */
int pb_tp_forward(pb_tp *tp, pb_layer_saved *acts, const void *x, void *y);
/* dy -> layers last..first -> dx (dx may be NULL). `ready` (may be NULL) runs
 * after each layer's weight gradients are complete, as in pb_layer_stack_backward. */
int pb_tp_backward(pb_tp *tp, pb_layer_saved *acts, const void *dy, void *dx, int accumulate, pb_layer_grad_ready_fn ready,
                   void *user);

void pb_tp_acct_reset(pb_tp *tp);
void pb_tp_acct_get(const pb_tp *tp, pb_tp_acct *out);
/* How a TP group of `tp_size` ranks orders and times compute and
 * communication (ordering.h): the pair's plan, host when t = 1 (no collective). */
pb_ordering pb_tp_ordering(const pb_compute *eng, const pb_comm_backend *be, int tp_size);

/* ---- validation (tp_check.c) -------------------------------------------- */

/* The unsharded (t = 1) stack with the same weights: same seed, layers,
 * model_layers and shape, tp_size 1. */
pb_layer_stack_config pb_tp_reference_config(const pb_tp_config *cfg);
/* Engine bytes pb_tp_validate's reference takes: the unsharded layers of
 * `rc` (its recomputation decides what they keep), their activations twice
 * and 8 full-size tensors (validation's inputs and results). */
uint64_t pb_tp_reference_bytes(const pb_layer_stack_config *rc);

/* Host side of the check: count elements of `got` (ngot values) that differ
 * from ref[off..off+ngot) by more than pb_tp_tolerance(dt) * max|ref| over all
 * nref values, or are not finite; *max_err: the largest such relative error.
 * Both accumulate. `corrupt` falsifies got[0] by 1e3 * max|ref| (not written back). */
int pb_tp_compare(pb_dtype dt, const void *ref, size_t nref, size_t off, const void *got, size_t ngot, int corrupt,
                  long long *wrong, double *max_err);

/* Run one micro-batch through the sharded stack and through `ref` (built
 * from pb_tp_reference_config) from the same seeded input and loss gradient,
 * and count elements of y and dx (this rank's rows) that differ by more than
 * pb_tp_tolerance * max|reference|, or are not finite. `corrupt`: falsify one
 * element of y (bit 1: PARABENCH_TEST_CORRUPT) and of dx (bit 2: tests of the
 * backward's check). *max_err: largest relative error seen.
 * `all`: every rank validating at once (every TP group), which agrees on the
 * set-up before the step and after it (a rank whose step failed must not leave
 * its group in a collective); MPI_COMM_NULL for one rank without MPI. */
int pb_tp_validate(pb_tp *tp, pb_layer_stack *ref, MPI_Comm all, int corrupt, long long *wrong, double *max_err);

#endif
