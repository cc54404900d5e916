/* Blockwise attention (attn.h): the per-head GEMM batches and one
 * block's forward and backward on engine primitives only. */
#include "compute/attn.h"

#include "core/error.h"

#include <math.h>

static void *at(const void *p, int64_t elems, pb_dtype t) { return (char *)p + (size_t)elems * pb_dtype_size(t); }

pb_attn_operand pb_attn_per_head(const void *p, int64_t ld, int64_t stride)
{
    return (pb_attn_operand){(void *)p, ld, stride, 0};
}

pb_attn_operand pb_attn_per_kv(const void *p, int64_t ld, int64_t stride)
{
    return (pb_attn_operand){(void *)p, ld, stride, 1};
}

/* Batch `member` takes query head g * group + member of every KV head g: a
 * query operand starts `member` heads in and steps a group at a time, a KV
 * operand steps one KV head at a time. */
static const void *member_start(pb_attn_operand x, int64_t member, pb_dtype t)
{
    return x.per_kv ? x.p : at(x.p, member * x.stride, t);
}
static int64_t member_stride(pb_attn_operand x, int64_t group) { return x.per_kv ? x.stride : group * x.stride; }

int pb_attn_head_gemms(const pb_compute *eng, pb_dtype t, int64_t group, int64_t count, pb_compute_trans ta,
                       pb_compute_trans tb, int64_t m, int64_t n, int64_t k, float alpha, float beta,
                       pb_attn_operand a, pb_attn_operand b, pb_attn_operand c)
{
    for (int64_t j = 0; j < group; j++) {
        pb_compute_gemm_batch g = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .alpha = alpha,
                                   .beta = c.per_kv && j > 0 ? 1.0f : beta,
                                   .a = member_start(a, j, t), .lda = a.ld, .stride_a = member_stride(a, group),
                                   .b = member_start(b, j, t), .ldb = b.ld, .stride_b = member_stride(b, group),
                                   .c = (void *)member_start(c, j, t), .ldc = c.ld,
                                   .stride_c = member_stride(c, group), .count = count, .t = t};
        PB_TRY(pb_compute_gemm_batched(eng, &g));
    }
    return PB_OK;
}

/* Sequences and KV heads fold into one batch: query head (bi, g, j) is head
 * (bi * kv_heads + g) * group + j of the head-major layout. */
static int64_t group_of(const pb_attn_block *a) { return a->heads / a->kv_heads; }
static int64_t count_of(const pb_attn_block *a) { return a->b * a->kv_heads; }
static int64_t rows_of(const pb_attn_block *a) { return a->b * a->heads * a->sq; }

static int gemms(const pb_compute *eng, const pb_attn_block *a, pb_compute_trans ta, pb_compute_trans tb, int64_t m,
                 int64_t n, int64_t k, float alpha, float beta, pb_attn_operand x, pb_attn_operand y,
                 pb_attn_operand z)
{
    return pb_attn_head_gemms(eng, a->t, group_of(a), count_of(a), ta, tb, m, n, k, alpha, beta, x, y, z);
}

static float scale_of(const pb_attn_block *a) { return 1.0f / sqrtf((float)a->hd); }

int pb_attn_block_forward(const pb_compute *eng, const pb_attn_block *a, const void *q, const void *k, const void *v,
                          void *o, float *stats, void *scores)
{
    int64_t sq = a->sq, sk = a->sk, hd = a->hd;
    pb_attn_operand Q = pb_attn_per_head(q, hd, sq * hd), S = pb_attn_per_head(scores, sk, sq * sk);
    PB_TRY(gemms(eng, a, PB_NOTRANS, PB_TRANS, sq, sk, hd, scale_of(a), 0.0f, Q, pb_attn_per_kv(k, hd, sk * hd), S));
    PB_TRY(eng->softmax_online(a->t, rows_of(a), sk, scores, o, hd, stats));
    return gemms(eng, a, PB_NOTRANS, PB_NOTRANS, sq, hd, sk, 1.0f, 1.0f, S, pb_attn_per_kv(v, hd, sk * hd),
                 pb_attn_per_head(o, hd, sq * hd));
}

int pb_attn_block_end(const pb_compute *eng, const pb_attn_block *a, void *o, float *stats)
{
    return eng->softmax_online_end(a->t, rows_of(a), a->hd, o, stats);
}

/* dP = dO V^T; S = c Q K^T; P and dS (softmax_online_bwd); dV = P^T dO;
 * dQ += c dS K; dK = c dS^T Q. */
int pb_attn_block_backward(const pb_compute *eng, const pb_attn_block *a, const void *q, const void *k, const void *v,
                           const void *o, const void *d_o, const float *stats, void *dq, void *dk, void *dv,
                           void *scores, void *dp)
{
    int64_t sq = a->sq, sk = a->sk, hd = a->hd;
    float c = scale_of(a);
    pb_attn_operand Q = pb_attn_per_head(q, hd, sq * hd), dO = pb_attn_per_head(d_o, hd, sq * hd);
    pb_attn_operand K = pb_attn_per_kv(k, hd, sk * hd), V = pb_attn_per_kv(v, hd, sk * hd);
    pb_attn_operand P = pb_attn_per_head(scores, sk, sq * sk), dS = pb_attn_per_head(dp, sk, sq * sk);
    PB_TRY(gemms(eng, a, PB_NOTRANS, PB_TRANS, sq, sk, hd, 1.0f, 0.0f, dO, V, dS));
    PB_TRY(gemms(eng, a, PB_NOTRANS, PB_TRANS, sq, sk, hd, c, 0.0f, Q, K, P));
    PB_TRY(eng->softmax_online_bwd(a->t, rows_of(a), sk, scores, dp, o, d_o, hd, stats));
    PB_TRY(gemms(eng, a, PB_TRANS, PB_NOTRANS, sk, hd, sq, 1.0f, 0.0f, P, dO, pb_attn_per_kv(dv, hd, sk * hd)));
    PB_TRY(gemms(eng, a, PB_NOTRANS, PB_NOTRANS, sq, hd, sk, c, 1.0f, dS, K, pb_attn_per_head(dq, hd, sq * hd)));
    return gemms(eng, a, PB_TRANS, PB_NOTRANS, sk, hd, sq, c, 0.0f, dS, Q, pb_attn_per_kv(dk, hd, sk * hd));
}

double pb_attn_block_flops_fwd(const pb_attn_block *a)
{
    return 4.0 * (double)a->b * (double)a->heads * (double)a->sq * (double)a->sk * (double)a->hd;
}

double pb_attn_block_flops_bwd(const pb_attn_block *a) { return 2.5 * pb_attn_block_flops_fwd(a); }
