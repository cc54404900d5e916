/* Transformer layer blocks and their formulas. Only engine primitives touch
 * engine memory; pointer arithmetic on engine buffers (sub-matrices) is fine,
 * dereferencing them is not. */
#include "compute/layer_impl.h"

#include "compute/attn.h"

#include "core/error.h"
#include "core/flops.h"
#include "core/mem.h"

#include <math.h>

/* p + elems elements of type t, for sub-matrix views of engine buffers. */
static void *at(const void *p, int64_t elems, pb_dtype t)
{
    return (char *)p + (size_t)elems * pb_dtype_size(t);
}

static int64_t tokens(const pb_layer_shape *sh) { return sh->b * sh->s; }
static int64_t local_hidden(const pb_layer_shape *sh) { return sh->h / sh->tp_size; }
static int64_t head_dim(const pb_layer_shape *sh) { return sh->h / sh->heads; }

int64_t pb_layer_kv_heads(const pb_layer_shape *sh) { return sh->kv_heads > 0 ? sh->kv_heads : sh->heads; }
int64_t pb_layer_ffn(const pb_layer_shape *sh) { return sh->ffn > 0 ? sh->ffn : 4 * sh->h; }

/* Local heads, local KV heads, and the query heads that share a KV head. */
static int64_t local_heads(const pb_layer_shape *sh) { return sh->heads / sh->tp_size; }
static int64_t local_kv_heads(const pb_layer_shape *sh) { return pb_layer_kv_heads(sh) / sh->tp_size; }
static int64_t group_size(const pb_layer_shape *sh) { return sh->heads / pb_layer_kv_heads(sh); }
/* Columns of this rank's K (and of its V). */
static int64_t local_kv(const pb_layer_shape *sh) { return local_kv_heads(sh) * head_dim(sh); }

int64_t pb_layer_impl_qkv_cols(const pb_layer_shape *sh) { return local_hidden(sh) + 2 * local_kv(sh); }
int64_t pb_layer_impl_ffn_local(const pb_layer_shape *sh) { return pb_layer_ffn(sh) / sh->tp_size; }
int64_t pb_layer_impl_up_cols(const pb_layer_shape *sh) { return (sh->gated ? 2 : 1) * pb_layer_impl_ffn_local(sh); }

int pb_layer_shape_check(const pb_layer_shape *sh)
{
    if (sh->b <= 0) return pb_error_usage("--micro-batch", "must be positive, got %lld", (long long)sh->b);
    if (sh->s <= 0) return pb_error_usage("--seq", "must be positive, got %lld", (long long)sh->s);
    if (sh->h <= 0) return pb_error_usage("--hidden", "must be positive, got %lld", (long long)sh->h);
    if (sh->heads <= 0) return pb_error_usage("--heads", "must be positive, got %lld", (long long)sh->heads);
    if (sh->h % sh->heads != 0)
        return pb_error_usage("--hidden", "hidden size %lld is not divisible by the head count %lld", (long long)sh->h,
                        (long long)sh->heads);
    if (sh->tp_size <= 0) return pb_error_usage("--tp", "must be positive, got %d", sh->tp_size);
    if (sh->heads % sh->tp_size != 0)
        return pb_error_usage("--tp", "tensor-parallel size %d does not divide the head count %lld", sh->tp_size,
                        (long long)sh->heads);
    if (sh->kv_heads < 0 || sh->heads % pb_layer_kv_heads(sh) != 0)
        return pb_error_usage("--kv-heads", "%lld KV heads do not divide the %lld query heads",
                              (long long)sh->kv_heads, (long long)sh->heads);
    if (pb_layer_kv_heads(sh) % sh->tp_size != 0)
        return pb_error_usage("--tp", "tensor-parallel size %d does not divide the %lld KV heads (each rank holds "
                              "whole KV heads, as Megatron-LM's query groups)", sh->tp_size,
                              (long long)pb_layer_kv_heads(sh));
    if (sh->ffn < 0 || pb_layer_ffn(sh) % sh->tp_size != 0)
        return pb_error_usage("--ffn", "MLP width %lld does not split into %d tensor-parallel shards",
                              (long long)pb_layer_ffn(sh), sh->tp_size);
    if (sh->tp_rank < 0 || sh->tp_rank >= sh->tp_size)
        return pb_error_usage("--tp", "rank %d is outside the tensor-parallel group of %d", sh->tp_rank, sh->tp_size);
    if (sh->dtype != PB_FLOAT32 && sh->dtype != PB_BFLOAT16)
        return pb_error_usage("--dtype", "compute type %s not supported; expected float or bfloat16",
                        pb_dtype_name(sh->dtype));
    if (sh->recompute < PB_LAYER_RECOMPUTE_NONE || sh->recompute > PB_LAYER_RECOMPUTE_FULL)
        return pb_error_usage("--recompute", "unknown recomputation %d; expected none, selective or full", sh->recompute);
    if (sh->recompute == PB_LAYER_RECOMPUTE_FULL && sh->tp_size > 1)
        return pb_error_usage("--recompute", "full recomputes whole layers, which tensor parallelism (--tp %d) runs "
                              "as blocks with communication between them; expected none or selective", sh->tp_size);
    return PB_OK;
}

const char *const *pb_layer_recompute_names(void)
{
    static const char *const names[] = {"none", "selective", "full", NULL};
    return names;
}

void pb_layer_weight_dims(const pb_layer_shape *sh, enum pb_weight w, int64_t *rows, int64_t *cols)
{
    switch (w) {
    case PB_W_QKV: *rows = sh->h, *cols = pb_layer_impl_qkv_cols(sh); return;
    case PB_W_O: *rows = local_hidden(sh), *cols = sh->h; return;
    case PB_W_UP: *rows = sh->h, *cols = pb_layer_impl_up_cols(sh); return;
    default: *rows = pb_layer_impl_ffn_local(sh), *cols = sh->h; return;
    }
}

int64_t pb_layer_weight_offset(const pb_layer_shape *sh, enum pb_weight w)
{
    int64_t off = 0, r, c;
    for (int i = 0; i < (int)w; i++) {
        pb_layer_weight_dims(sh, (enum pb_weight)i, &r, &c);
        off += r * c;
    }
    return off;
}

int64_t pb_layer_params_local(const pb_layer_shape *sh) { return pb_layer_weight_offset(sh, PB_W_COUNT); }

double pb_layer_step_flops(const pb_layer_shape *sh)
{
    double b = (double)sh->b, s = (double)sh->s, h = (double)sh->h;
    double linear = pb_flops_layer_linear_params(h, (double)sh->heads, (double)pb_layer_kv_heads(sh),
                                                 (double)pb_layer_ffn(sh), sh->gated);
    double fwd = pb_flops_layer_fwd(b, s, h, linear, sh->tp_size, sh->attn_scores);
    double replay = sh->recompute == PB_LAYER_RECOMPUTE_FULL ? fwd : 0;
    if (sh->recompute == PB_LAYER_RECOMPUTE_SELECTIVE) /* the score GEMMs' share of the forward */
        replay = fwd - pb_flops_layer_fwd(b, s, h, linear, sh->tp_size, 0);
    return fwd + pb_flops_layer_bwd(b, s, h, linear, sh->tp_size, sh->attn_scores) + replay;
}

/* Rounded up to PB_ACT_ALIGN; a need past 2^64 stays PB_MEM_HUGE. */
static uint64_t align_up(uint64_t bytes)
{
    return bytes >= PB_MEM_HUGE - PB_ACT_ALIGN ? PB_MEM_HUGE : (bytes + PB_ACT_ALIGN - 1) / PB_ACT_ALIGN * PB_ACT_ALIGN;
}

/* a * b * c * d bytes, saturating (pb_mem_mul): model shapes multiply past 2^64. */
static uint64_t mul4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return pb_mem_mul(pb_mem_mul(a, b), pb_mem_mul(c, d)); }

void pb_layer_impl_act_slots(const pb_layer_shape *sh, uint64_t sizes[PB_LAYER_SLOTS])
{
    uint64_t n = pb_mem_mul((uint64_t)sh->b, (uint64_t)sh->s), h = (uint64_t)sh->h, hl = (uint64_t)local_hidden(sh);
    uint64_t es = pb_dtype_size(sh->dtype), sc = sh->attn_scores ? 1 : 0;
    uint64_t nhl = (uint64_t)local_heads(sh), s = (uint64_t)sh->s;
    sizes[0] = align_up(mul4(n, h, es, 1));                         /* x_attn */
    sizes[1] = align_up(mul4(n, (uint64_t)pb_layer_impl_qkv_cols(sh), es, 1)); /* qkv */
    sizes[2] = sc * align_up(mul4(pb_mem_mul((uint64_t)sh->b, nhl), s, s, es)); /* scores */
    sizes[3] = sc * align_up(mul4(n, hl, es, 1));                   /* o */
    sizes[4] = align_up(mul4(n, h, es, 1));                         /* x_mlp */
    sizes[5] = align_up(mul4(n, (uint64_t)pb_layer_impl_up_cols(sh), es, 1)); /* hmlp */
}

int pb_layer_impl_slot_kept(const pb_layer_shape *sh, int k)
{
    if (sh->recompute == PB_LAYER_RECOMPUTE_FULL) return k == 0; /* the layer's input */
    return sh->recompute != PB_LAYER_RECOMPUTE_SELECTIVE || k != 2; /* selective: all but the scores */
}

uint64_t pb_layer_io_bytes(const pb_layer_shape *sh)
{
    return mul4((uint64_t)sh->b, (uint64_t)sh->s, (uint64_t)sh->h, pb_dtype_size(sh->dtype));
}

uint64_t pb_layer_act_bytes(const pb_layer_shape *sh, int64_t nlayers)
{
    uint64_t sizes[PB_LAYER_SLOTS], sum = 0;
    pb_layer_impl_act_slots(sh, sizes);
    for (int i = 0; i < PB_LAYER_SLOTS; i++) sum = pb_mem_add(sum, pb_layer_impl_slot_kept(sh, i) ? sizes[i] : 0);
    return pb_mem_mul(sum, (uint64_t)nlayers);
}

/* ---- deterministic weights ---------------------------------------------- */

/* Fill this rank's rows x cols block at local column `lcol` of weight w, which
 * is the block at (row0, col0) of the full (unsharded) weight. */
static int fill_block(pb_layer *ly, uint64_t seed, enum pb_weight w, int64_t lcol, int64_t rows, int64_t cols,
                      int64_t row0, int64_t col0, float scale)
{
    int64_t r, ld;
    pb_layer_weight_dims(&ly->sh, w, &r, &ld);
    pb_compute_fill_spec spec = {.seed = seed, .stream = (uint64_t)ly->global * PB_W_COUNT + (uint64_t)w,
                         .row0 = row0, .col0 = col0, .scale = scale};
    void *p = at(ly->w, pb_layer_weight_offset(&ly->sh, w) + lcol, ly->sh.dtype);
    return ly->eng->fill(p, ly->sh.dtype, rows, cols, ld, &spec);
}

/* U(-1,1) * sqrt(3/fan_in) keeps the variance of a GEMM's output equal to its
 * input's; after gelu (or silu's gate), sqrt(6/fan_in) (He, derived for relu,
 * whose second moment gelu's is close to) restores the roughly halved second
 * moment. Each shard is the block of the full weight at its global position,
 * so t shards hold exactly the full layer's values.
 * The two projections that feed the residual stream (Wo, W2) are further
 * scaled by 1/sqrt(2L) (GPT-2's residual scaling), so the stream's variance
 * grows by a bounded factor over L layers instead of doubling per block. */
int pb_layer_impl_init_weights(pb_layer *ly, uint64_t seed)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t h = sh->h, hl = local_hidden(sh), r = sh->tp_rank, kvl = local_kv(sh);
    int64_t kv = pb_layer_kv_heads(sh) * head_dim(sh), ffn = pb_layer_ffn(sh), fl = pb_layer_impl_ffn_local(sh);
    float s_h = sqrtf(3.0f / (float)h), s_down = sqrtf(6.0f / (float)ffn), a = ly->resid_scale;
    /* QKV: Q, K and V are column-sharded separately; the full weight's columns are Q (h) | K (kv) | V (kv). */
    PB_TRY(fill_block(ly, seed, PB_W_QKV, 0, h, hl, 0, r * hl, s_h));
    PB_TRY(fill_block(ly, seed, PB_W_QKV, hl, h, kvl, 0, h + r * kvl, s_h));
    PB_TRY(fill_block(ly, seed, PB_W_QKV, hl + kvl, h, kvl, 0, h + kv + r * kvl, s_h));
    PB_TRY(fill_block(ly, seed, PB_W_O, 0, hl, h, r * hl, 0, s_h * a));
    /* W1: gelu's one block, or SwiGLU's gate then up, each column-sharded (full: gate (ffn) | up (ffn)). */
    PB_TRY(fill_block(ly, seed, PB_W_UP, 0, h, fl, 0, r * fl, s_h));
    if (sh->gated) PB_TRY(fill_block(ly, seed, PB_W_UP, fl, h, fl, 0, ffn + r * fl, s_h));
    return fill_block(ly, seed, PB_W_DOWN, 0, fl, h, r * fl, 0, s_down * a);
}

/* ---- blocks --------------------------------------------------------------- */

static const void *weight(const pb_layer *ly, enum pb_weight w)
{
    return at(ly->w, pb_layer_weight_offset(&ly->sh, w), ly->sh.dtype);
}

static int gemm(const pb_layer *ly, pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k, float alpha,
                const void *a, int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc)
{
    return ly->eng->gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, 0.0f, c, ldc, ly->sh.dtype);
}

/* dW = A^T B over the N tokens, into the gradient buffer (overwrite or add).
 * When the gradient type differs from the compute type, the GEMM runs in the
 * compute type in scratch and is converted. */
static int grad_gemm(pb_layer *ly, enum pb_weight w, const void *a, int64_t lda, const void *b, int64_t ldb,
                     int accumulate)
{
    const pb_compute *E = ly->eng;
    pb_dtype ct = ly->sh.dtype;
    int64_t rows, cols, n = tokens(&ly->sh);
    pb_layer_weight_dims(&ly->sh, w, &rows, &cols);
    void *g = at(ly->g, pb_layer_weight_offset(&ly->sh, w), ly->gt);
    float beta = accumulate ? 1.0f : 0.0f;
    if (ly->gt == ct) return E->gemm(PB_TRANS, PB_NOTRANS, rows, cols, n, 1.0f, a, lda, b, ldb, beta, g, cols, ct);
    void *tmp = ly->sc->gconv;
    if (accumulate) PB_TRY(E->convert(tmp, ct, g, ly->gt, (size_t)(rows * cols)));
    PB_TRY(E->gemm(PB_TRANS, PB_NOTRANS, rows, cols, n, 1.0f, a, lda, b, ldb, beta, tmp, cols, ct));
    return E->convert(g, ly->gt, tmp, ct, (size_t)(rows * cols));
}

/* Attention of one (sequence, head): P = softmax(c Q K^T), O = P V, with the
 * usual c = 1/sqrt(hd). Softmax (not counted in FLOPs, docs/compute.md) makes
 * O a convex combination of V rows: without it O is cubic in X and a deep
 * stack overflows. No causal mask: the GEMMs run on the full s x s. */
static float score_scale(const pb_layer_shape *sh)
{
    return 1.0f / sqrtf((float)head_dim(sh)); /* exact: heads divides h */
}

/* Views of sequence bi's first local head (first KV head for K and V)
 * inside the saved activations; the batched GEMMs (head_gemms) reach the
 * other heads by their strides. */
typedef struct head_view {
    void *q, *k, *v, *s, *o;
} head_view;

static head_view head(const pb_layer *ly, void *qkv, void *scores, void *o, int64_t bi)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t s = sh->s, hl = local_hidden(sh), w = pb_layer_impl_qkv_cols(sh), kvl = local_kv(sh);
    head_view v;
    v.q = at(qkv, bi * s * w, sh->dtype);
    v.k = at(v.q, hl, sh->dtype);
    v.v = at(v.q, hl + kvl, sh->dtype);
    v.s = scores ? at(scores, bi * local_heads(sh) * s * s, sh->dtype) : NULL;
    v.o = at(o, bi * s * hl, sh->dtype);
    return v;
}

static pb_attn_operand per_head(const void *p, int64_t ld, int64_t stride) { return pb_attn_per_head(p, ld, stride); }
static pb_attn_operand per_kv(const void *p, int64_t ld, int64_t stride) { return pb_attn_per_kv(p, ld, stride); }

/* The GEMM of every local query head of one sequence (attn.h's batches
 * over the local KV heads). A per-KV result (dK, dV) sums over its group. */
static int head_gemms(pb_layer *ly, pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k,
                      float alpha, pb_attn_operand a, pb_attn_operand b, pb_attn_operand c)
{
    const pb_layer_shape *sh = &ly->sh;
    return pb_attn_head_gemms(ly->eng, sh->dtype, group_size(sh), local_kv_heads(sh), ta, tb, m, n, k, alpha, 0.0f,
                              a, b, c);
}

/* Per sequence: S = c Q K^T for all local heads, softmax over their rows (one
 * call), O = P V. */
static int scores_forward(pb_layer *ly, pb_layer_acts *sv)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t s = sh->s, hl = local_hidden(sh), hd = head_dim(sh), w = pb_layer_impl_qkv_cols(sh);
    float c = score_scale(sh);
    for (int64_t bi = 0; bi < sh->b; bi++) {
        head_view v = head(ly, sv->qkv, sv->scores, sv->o, bi);
        PB_TRY(head_gemms(ly, PB_NOTRANS, PB_TRANS, s, s, hd, c, per_head(v.q, w, hd), per_kv(v.k, w, hd),
                          per_head(v.s, s, s * s)));
        PB_TRY(ly->eng->softmax_fwd(sh->dtype, local_heads(sh) * s, s, v.s, v.s)); /* P replaces S in the slot */
        PB_TRY(head_gemms(ly, PB_NOTRANS, PB_NOTRANS, s, hd, s, 1.0f, per_head(v.s, s, s * s), per_kv(v.v, w, hd),
                          per_head(v.o, hl, hd)));
    }
    return PB_OK;
}

/* Operand x moved to KV head g's share: its own head for a KV operand, the
 * first of its group of query heads for a query operand. */
static pb_attn_operand kv_group(pb_attn_operand x, int64_t g, int64_t group, pb_dtype t)
{
    x.p = at(x.p, (x.per_kv ? g : g * group) * x.stride, t);
    return x;
}

/* The head GEMMs of one KV head's group of query heads (operands moved there by kv_group). */
static int group_gemms(pb_layer *ly, pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k,
                       float alpha, pb_attn_operand a, pb_attn_operand b, pb_attn_operand c)
{
    const pb_layer_shape *sh = &ly->sh;
    return pb_attn_head_gemms(ly->eng, sh->dtype, group_size(sh), 1, ta, tb, m, n, k, alpha, 0.0f, a, b, c);
}

/* dP = dO V^T, dV = P^T dO, dS = softmax'(dP), dQ = c dS K, dK = c dS^T Q,
 * into dqkv's columns, one KV head's group of query heads at a time, so that
 * the d_s scratch holds one group's dS (heads/kv_heads blocks of s x s), not
 * every local head's. */
static int scores_backward(pb_layer *ly, pb_layer_acts *sv, void *dqkv)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t s = sh->s, hl = local_hidden(sh), hd = head_dim(sh), w = pb_layer_impl_qkv_cols(sh), gs = group_size(sh);
    float c = score_scale(sh);
    pb_dtype t = sh->dtype;
    pb_attn_operand d_s = per_head(ly->sc->d_s, s, s * s);
    for (int64_t bi = 0; bi < sh->b; bi++) {
        head_view v = head(ly, sv->qkv, sv->scores, ly->sc->d_o, bi); /* v.o is dO here */
        head_view d = head(ly, dqkv, NULL, ly->sc->d_o, bi);
        for (int64_t g = 0; g < local_kv_heads(sh); g++) {
            pb_attn_operand d_o = kv_group(per_head(v.o, hl, hd), g, gs, t), p = kv_group(per_head(v.s, s, s * s), g, gs, t);
            pb_attn_operand q = kv_group(per_head(v.q, w, hd), g, gs, t), dq = kv_group(per_head(d.q, w, hd), g, gs, t);
            pb_attn_operand k = kv_group(per_kv(v.k, w, hd), g, gs, t), dk = kv_group(per_kv(d.k, w, hd), g, gs, t);
            pb_attn_operand vv = kv_group(per_kv(v.v, w, hd), g, gs, t), dv = kv_group(per_kv(d.v, w, hd), g, gs, t);
            PB_TRY(group_gemms(ly, PB_NOTRANS, PB_TRANS, s, s, hd, 1.0f, d_o, vv, d_s));
            PB_TRY(group_gemms(ly, PB_TRANS, PB_NOTRANS, s, hd, s, 1.0f, p, d_o, dv));
            PB_TRY(ly->eng->softmax_bwd(t, gs * s, s, p.p, d_s.p, d_s.p));
            PB_TRY(group_gemms(ly, PB_NOTRANS, PB_NOTRANS, s, hd, s, c, d_s, k, dq));
            PB_TRY(group_gemms(ly, PB_TRANS, PB_NOTRANS, s, hd, s, c, d_s, q, dk));
        }
    }
    return PB_OK;
}

/* c = resid + A B on tensor-parallel rank 0 and c = A B elsewhere, so that the
 * sum of the ranks' partial outputs carries the residual exactly once. Used
 * both for Y = X + f(X) and for its backward dX = dY + f'(X)^T dY. */
static int residual_gemm(const pb_layer *ly, pb_compute_trans tb, int64_t m, int64_t n, int64_t k, const void *a,
                         int64_t lda, const void *b, int64_t ldb, const void *resid, void *c)
{
    float beta = 0.0f;
    if (ly->sh.tp_rank == 0) {
        PB_TRY(ly->eng->copy(c, resid, (size_t)(m * n) * pb_dtype_size(ly->sh.dtype)));
        beta = 1.0f;
    }
    return ly->eng->gemm(PB_NOTRANS, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, n, ly->sh.dtype);
}

/* The attention output O and its leading dimension: saved O with scores,
 * otherwise the Q columns of QKV (as wide as O whatever the KV heads). */
static const void *attn_out(const pb_layer *ly, const pb_layer_acts *sv, int64_t *ld)
{
    *ld = ly->sh.attn_scores ? local_hidden(&ly->sh) : pb_layer_impl_qkv_cols(&ly->sh);
    return ly->sh.attn_scores ? sv->o : sv->qkv;
}

int pb_layer_attn_forward(pb_layer *ly, pb_layer_acts *sv, const void *x, void *y)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t n = tokens(sh), h = sh->h, hl = local_hidden(sh), w = pb_layer_impl_qkv_cols(sh), ldo;
    if (x != sv->x_attn) PB_TRY(ly->eng->copy(sv->x_attn, x, (size_t)(n * h) * pb_dtype_size(sh->dtype)));
    PB_TRY(gemm(ly, PB_NOTRANS, PB_NOTRANS, n, w, h, 1.0f, sv->x_attn, h, weight(ly, PB_W_QKV), w, sv->qkv, w));
    if (sh->attn_scores) PB_TRY(scores_forward(ly, sv));
    const void *o = attn_out(ly, sv, &ldo);
    return residual_gemm(ly, PB_NOTRANS, n, h, hl, o, ldo, weight(ly, PB_W_O), h, sv->x_attn, y);
}

int pb_layer_attn_backward(pb_layer *ly, pb_layer_acts *sv, const void *dy, void *dx, int accumulate)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t n = tokens(sh), h = sh->h, hl = local_hidden(sh), w = pb_layer_impl_qkv_cols(sh), ldo;
    void *dqkv = ly->sc->big;
    const void *o = attn_out(ly, sv, &ldo);
    PB_TRY(grad_gemm(ly, PB_W_O, o, ldo, dy, h, accumulate));
    if (sh->attn_scores) {
        /* selective recomputation: P again from the kept QKV (O comes out as it was) */
        if (sh->recompute == PB_LAYER_RECOMPUTE_SELECTIVE) PB_TRY(scores_forward(ly, sv));
        PB_TRY(gemm(ly, PB_NOTRANS, PB_TRANS, n, hl, h, 1.0f, dy, h, weight(ly, PB_W_O), h, ly->sc->d_o, hl));
        PB_TRY(scores_backward(ly, sv, dqkv));
    } else {
        /* O = Q: K and V do not reach the output, so their gradient is zero. */
        PB_TRY(ly->eng->memset(dqkv, 0, (size_t)(n * w) * pb_dtype_size(sh->dtype)));
        PB_TRY(gemm(ly, PB_NOTRANS, PB_TRANS, n, hl, h, 1.0f, dy, h, weight(ly, PB_W_O), h, dqkv, w));
    }
    PB_TRY(grad_gemm(ly, PB_W_QKV, sv->x_attn, h, dqkv, w, accumulate));
    return residual_gemm(ly, PB_TRANS, n, h, w, dqkv, w, weight(ly, PB_W_QKV), w, dy, dx);
}

/* H = act(Z) into dense n x ffn/t: gelu(Z), or silu(gate) * up. */
static int mlp_activation(pb_layer *ly, const void *z, void *act)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t n = tokens(sh), fl = pb_layer_impl_ffn_local(sh);
    if (sh->gated) return ly->eng->swiglu_fwd(sh->dtype, n, fl, z, act);
    return ly->eng->gelu_fwd(sh->dtype, (size_t)(n * fl), z, act);
}

int pb_layer_mlp_forward(pb_layer *ly, pb_layer_acts *sv, const void *x, void *y)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t n = tokens(sh), h = sh->h, fl = pb_layer_impl_ffn_local(sh), u = pb_layer_impl_up_cols(sh);
    if (x != sv->x_mlp) PB_TRY(ly->eng->copy(sv->x_mlp, x, (size_t)(n * h) * pb_dtype_size(sh->dtype)));
    void *act = ly->sc->big; /* the saved slot keeps Z for the backward */
    PB_TRY(gemm(ly, PB_NOTRANS, PB_NOTRANS, n, u, h, 1.0f, sv->x_mlp, h, weight(ly, PB_W_UP), u, sv->hmlp, u));
    PB_TRY(mlp_activation(ly, sv->hmlp, act));
    return residual_gemm(ly, PB_NOTRANS, n, h, fl, act, fl, weight(ly, PB_W_DOWN), h, sv->x_mlp, y);
}

/* dZ from dH (n x ffn/t) in the big scratch: gelu'(Z) * dH in place, or
 * SwiGLU's backward, which needs dH laid out with W1's row width (u). */
int pb_layer_mlp_backward(pb_layer *ly, pb_layer_acts *sv, const void *dy, void *dx, int accumulate)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t n = tokens(sh), h = sh->h, fl = pb_layer_impl_ffn_local(sh), u = pb_layer_impl_up_cols(sh);
    void *d = ly->sc->big;
    /* H is recomputed from the saved Z for dW2, then its slot takes dH and dZ. */
    PB_TRY(mlp_activation(ly, sv->hmlp, d));
    PB_TRY(grad_gemm(ly, PB_W_DOWN, d, fl, dy, h, accumulate));
    PB_TRY(gemm(ly, PB_NOTRANS, PB_TRANS, n, fl, h, 1.0f, dy, h, weight(ly, PB_W_DOWN), h, d, u));
    if (sh->gated) PB_TRY(ly->eng->swiglu_bwd(sh->dtype, n, fl, sv->hmlp, d));
    else PB_TRY(ly->eng->gelu_bwd(sh->dtype, (size_t)(n * fl), sv->hmlp, d, d));
    PB_TRY(grad_gemm(ly, PB_W_UP, sv->x_mlp, h, d, u, accumulate));
    return residual_gemm(ly, PB_TRANS, n, h, u, d, u, weight(ly, PB_W_UP), u, dy, dx);
}
