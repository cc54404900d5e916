/* Context parallelism: ring attention (Liu et al. 2023, "Ring Attention with
 * Blockwise Transformers"; Megatron-LM's context parallelism) over a CP
 * group of c ranks.
 *
 * The sequence of s tokens is split in c blocks of s/c; rank i of the group
 * holds block i's queries, keys and values (the model's heads and KV heads,
 * head dimension h/heads, compute/attn.h's layouts). One layer's step:
 *   forward:  c steps; at step k the rank attends its Q block to the K/V
 *             block it holds, that of rank i - k (mod c), combining blocks
 *             exactly by the online softmax, and during steps 0..c-2 sends
 *             that K/V block to rank i + 1 and receives the next one from
 *             rank i - 1;
 *   backward: the same ring carrying K/V; beside it travel the dK/dV
 *             accumulators: at step k the rank adds its block's dK/dV into
 *             the accumulator of block i - k that arrived from rank i - 1 (k
 *             ranks' contributions) and passes it on at step k + 1; after
 *             the last step one more transfer brings each accumulator, all c
 *             contributions in, home to its block's owner.
 * K/V and dK/dV travel as one message each ([K | V], [dK | dV]).
 *
 * Overlap (--overlap):
 *   on:  a step's exchange is posted before its attention and waited for
 *        after it (host order: on a communication thread, MPI_THREAD_MULTIPLE;
 *        stream order: on the communication stream, ordered by CUDA events);
 *   off: the exchange is posted and waited for, then the attention runs.
 * No causal mask: every block costs the same, so the ring is balanced. The
 * step runs L layers' attention (forward of every layer, then backward of
 * every layer) on the same blocks: the rest of a layer (projections, MLP)
 * sends nothing around the ring. */
#ifndef PB_CP_H
#define PB_CP_H

#include "backend/comm.h"
#include "compute/attn.h"
#include "compute/compute.h"

#include <mpi.h>
#include <stdint.h>

/* ---- the ring's arithmetic (cp_ring.c) ---- */

/* CP groups of c consecutive ranks over `world` ranks: this rank's group and
 * its index in it (its block). PB_ERR_USAGE naming --cp when c < 1 or c does
 * not divide the ranks. */
int pb_cp_group_of(int world, int c, int rank, int *group, int *index);
/* PB_ERR_USAGE naming --cp when c does not divide the sequence. */
int pb_cp_check_seq(int64_t seq, int c);

/* Validation's work bound: the host reference in double costs b * heads *
 * s * head_dim row-key-dim products per query row it covers, about 6 ns each
 * on one CPU core; 2^33 of them (about a minute) a rank checks every row. */
#define PB_CP_CHECK_BUDGET 8589934592.0
#define PB_CP_CHECK_AUTO (-1) /* --check-rows auto: every row within the budget, else as many as fit */
#define PB_CP_CHECK_ALL 0     /* --check-rows all */
/* Rows of each block a head that validation checks, for a request of
 * PB_CP_CHECK_AUTO, PB_CP_CHECK_ALL or N > 0: from 1 to the block's s/c rows,
 * s/c meaning every row (and then dK and dV too). */
int64_t pb_cp_check_rows(int64_t b, int64_t heads, int64_t seq, int c, int64_t head_dim, int64_t request);
/* Row k of the n a block's head checks: spread evenly, row 0 first. */
int64_t pb_cp_check_row(int64_t k, int64_t n, int64_t block_rows);

/* The block (its owner's index) rank `index` of c holds at step k, forward
 * and backward alike: index - k mod c. */
int pb_cp_block_at(int c, int index, int step);

/* What step k's exchange carries: forward steps 0..c-1, backward 0..c (step
 * c is the accumulators' last transfer home). */
typedef struct pb_cp_exchange {
    int kv;  /* the K/V block held now goes to the next rank, the next one comes from the previous */
    int dkv; /* the dK/dV accumulator completed last step goes on, the one for this step's block comes in */
} pb_cp_exchange;
pb_cp_exchange pb_cp_exchange_at(int c, int step, int backward);

/* Bytes of one K/V block (and of one dK/dV accumulator): K and V, each
 * b * s/c * kv_heads * head_dim elements of `elem` bytes. */
uint64_t pb_cp_block_bytes(int64_t b, int64_t seq, int c, int64_t kv_heads, int64_t head_dim, size_t elem);
/* Blocks a rank sends per layer: c - 1 K/V forward, c - 1 K/V and c dK/dV
 * backward; 0 for c = 1. */
int pb_cp_transfers(int c);

/* ---- the step (cp_step.c) ---- */

typedef enum { PB_CP_OVERLAP_OFF, PB_CP_OVERLAP_ON, PB_CP_OVERLAP_COUNT } pb_cp_overlap;
const char *pb_cp_overlap_name(pb_cp_overlap o); /* "off", "on" */

typedef struct pb_cp_config {
    const pb_compute *eng;
    const pb_comm_backend *be;
    pb_comm *ring;            /* the CP group: c ranks, this rank's index = its block */
    int64_t b, seq, heads, kv_heads, head_dim; /* the whole sequence's shape */
    pb_dtype dtype;           /* requested; the engine's gemm_dtype decides */
    int64_t layers;
    uint64_t seed;
    int group;                /* which CP group: seeds its inputs */
    int rank;                 /* world rank: the tests' slow hook */
    pb_cp_overlap overlap;
    int64_t check_rows;       /* validation: rows of the block a head (pb_cp_check_rows); 0 = every row */
} pb_cp_config;

/* What the last step (or pb_cp_comm) took on this rank. */
typedef struct pb_cp_timing {
    double wait_us; /* the host blocked on the ring's exchanges */
    int exchanges;  /* exchanges run */
} pb_cp_timing;

typedef struct pb_cp pb_cp;

/* This rank's block shape (sq = sk = s/c, the effective compute type). */
void pb_cp_block_shape(const pb_cp_config *cfg, pb_attn_block *out);
/* Engine bytes one rank needs; host bytes for validation. */
void pb_cp_bytes(const pb_cp_config *cfg, uint64_t *engine_bytes, uint64_t *host_bytes);

int pb_cp_create(const pb_cp_config *cfg, pb_cp **out);
void pb_cp_destroy(pb_cp *f);
double pb_cp_flops(const pb_cp *f); /* forward + backward of every block, every layer, this rank */

int pb_cp_compute(pb_cp *f); /* every block's attention on this rank's own K/V, no communication */
int pb_cp_comm(pb_cp *f);    /* the step's exchanges back to back, no compute */
int pb_cp_step(pb_cp *f);    /* the step, overlapped as configured */
void pb_cp_last_timing(const pb_cp *f, pb_cp_timing *out);

/* One step with checks (collective over `ring`, the CP group's ranks): this
 * rank's output O, its dQ and its block's dK and dV (home after the ring)
 * against attention over the whole sequence computed on the host in double
 * from every rank's Q, K, V and dO. With cfg.check_rows under the block's
 * rows, only O and dQ of those rows of each head are checked (dK and dV sum
 * over every row). *wrong_out counts O's elements off by more than the
 * tolerance, *wrong_grads dQ's, dK's and dV's. `corrupt`: this rank
 * falsifies one element of O, and of dV where dV is checked (fault injection). */
int pb_cp_validate(pb_cp *f, MPI_Comm ring, int corrupt, long long *wrong_out, long long *wrong_grads);

#endif
