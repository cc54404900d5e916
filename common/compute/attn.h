/* Blockwise attention: one query block against one key/value block, the unit
 * ring attention (Liu et al. 2023) and context parallelism compute at each
 * step of their ring, with the exact online-softmax combination across
 * blocks (Milakov and Gimelshein 2018; FlashAttention's forward and
 * backward). No causal mask.
 *
 * Layouts, head-major so that each head's rows are dense:
 *   q, o, d_o, dq:  [b][heads][sq][hd]
 *   k, v:           [b][kv_heads][sk][hd], each its own buffer
 *   stats:          2 floats per (sequence, query head, row) in engine memory
 *                   (compute.h's softmax_online): zeroed before the first block
 *   scores, dp:     scratch of [b][heads][sq][sk]
 * Query head g * (heads / kv_heads) + j shares KV head g (grouped-query
 * attention). The head GEMMs are strided batches (pb_attn_head_gemms), also
 * used by the transformer layer (layer.c). */
#ifndef PB_ATTN_H
#define PB_ATTN_H

#include "compute/compute.h"

#include <stdint.h>

typedef struct pb_attn_block {
    int64_t b, heads, kv_heads, hd; /* sequences, query heads, KV heads, head dimension */
    int64_t sq, sk;                 /* rows of the query block, of the key/value block */
    pb_dtype t;                     /* what the engine computes in */
} pb_attn_block;

/* One operand of a batch of per-head GEMMs: the first head's matrix, its
 * leading dimension, the distance to the next head's, and whether it belongs
 * to a query head (Q, O, scores, dO, dS) or to a KV head (K, V, dK, dV). */
typedef struct pb_attn_operand {
    void *p;
    int64_t ld, stride;
    int per_kv;
} pb_attn_operand;

pb_attn_operand pb_attn_per_head(const void *p, int64_t ld, int64_t stride);
pb_attn_operand pb_attn_per_kv(const void *p, int64_t ld, int64_t stride);

/* The GEMM of every query head of `count` KV heads of `group` query heads
 * each, as one strided batch per member of a group. C = alpha op(A) op(B) +
 * beta C; a per-KV result (dK, dV) sums over its group: the first member
 * uses beta, the others add. */
int pb_attn_head_gemms(const pb_compute *eng, pb_dtype t, int64_t group, int64_t count, pb_compute_trans ta,
                       pb_compute_trans tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                       pb_attn_operand a, pb_attn_operand b, pb_attn_operand c);

/* Forward of one block: S = Q K^T / sqrt(hd), the online softmax, O += P V
 * (O rescaled first; the first block overwrites it). */
int pb_attn_block_forward(const pb_compute *eng, const pb_attn_block *a, const void *q, const void *k, const void *v,
                          void *o, float *stats, void *scores);
/* After the last block: O normalised, stats the rows' log-sum-exp. */
int pb_attn_block_end(const pb_compute *eng, const pb_attn_block *a, void *o, float *stats);
/* Backward of one block: dQ += its share, dK and dV (of this block,
 * overwritten) from the final O, dO and stats. */
int pb_attn_block_backward(const pb_compute *eng, const pb_attn_block *a, const void *q, const void *k, const void *v,
                           const void *o, const void *d_o, const float *stats, void *dq, void *dk, void *dv,
                           void *scores, void *dp);

/* FLOPs of one block's forward: the two GEMMs, 4 b sq sk hd heads (softmax
 * not counted, as docs/compute.md); the backward's five GEMMs are 2.5 times
 * that, of which the recomputed scores are 0.5. */
double pb_attn_block_flops_fwd(const pb_attn_block *a);
double pb_attn_block_flops_bwd(const pb_attn_block *a);

#endif
