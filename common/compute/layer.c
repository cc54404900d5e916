/* Transformer layer blocks and their formulas. Only engine primitives touch
 * engine memory; pointer arithmetic on engine buffers (sub-matrices) is fine,
 * dereferencing them is not. */
#include "compute/layer_impl.h"

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
    if (sh->tp_rank < 0 || sh->tp_rank >= sh->tp_size)
        return pb_error_usage("--tp", "rank %d is outside the tensor-parallel group of %d", sh->tp_rank, sh->tp_size);
    if (sh->dtype != PB_FLOAT32 && sh->dtype != PB_BFLOAT16)
        return pb_error_usage("--dtype", "compute type %s not supported; expected float or bfloat16",
                        pb_dtype_name(sh->dtype));
    return PB_OK;
}

void pb_layer_weight_dims(const pb_layer_shape *sh, enum pb_weight w, int64_t *rows, int64_t *cols)
{
    int64_t h = sh->h, hl = local_hidden(sh);
    static const int64_t mult[PB_W_COUNT] = {3, 1, 4, 4};
    int col_parallel = w == PB_W_QKV || w == PB_W_UP;
    *rows = col_parallel ? h : mult[w] * hl;
    *cols = col_parallel ? mult[w] * hl : h;
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
    return pb_flops_layer_fwd(b, s, h, sh->tp_size, sh->attn_scores) +
           pb_flops_layer_bwd(b, s, h, sh->tp_size, sh->attn_scores);
}

/* Rounded up to PB_ACT_ALIGN; a need past 2^64 stays PB_MEM_HUGE. */
static uint64_t align_up(uint64_t bytes)
{
    return bytes >= PB_MEM_HUGE - PB_ACT_ALIGN ? PB_MEM_HUGE : (bytes + PB_ACT_ALIGN - 1) / PB_ACT_ALIGN * PB_ACT_ALIGN;
}

/* a * b * c * d bytes, saturating (pb_mem_mul): model shapes multiply past 2^64. */
static uint64_t mul4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) { return pb_mem_mul(pb_mem_mul(a, b), pb_mem_mul(c, d)); }

void pb_layer_impl_act_slots(const pb_layer_shape *sh, uint64_t sizes[6])
{
    uint64_t n = pb_mem_mul((uint64_t)sh->b, (uint64_t)sh->s), h = (uint64_t)sh->h, hl = (uint64_t)local_hidden(sh);
    uint64_t es = pb_dtype_size(sh->dtype), sc = sh->attn_scores ? 1 : 0;
    uint64_t nhl = (uint64_t)(sh->heads / sh->tp_size), s = (uint64_t)sh->s;
    sizes[0] = align_up(mul4(n, h, es, 1));                         /* x_attn */
    sizes[1] = align_up(mul4(n, 3, hl, es));                        /* qkv */
    sizes[2] = sc * align_up(mul4(pb_mem_mul((uint64_t)sh->b, nhl), s, s, es)); /* scores */
    sizes[3] = sc * align_up(mul4(n, hl, es, 1));                   /* o */
    sizes[4] = align_up(mul4(n, h, es, 1));                         /* x_mlp */
    sizes[5] = align_up(mul4(n, 4, hl, es));                        /* hmlp */
}

uint64_t pb_layer_act_bytes(const pb_layer_shape *sh, int64_t nlayers)
{
    uint64_t sizes[6], sum = 0;
    pb_layer_impl_act_slots(sh, sizes);
    for (int i = 0; i < 6; i++) sum = pb_mem_add(sum, sizes[i]);
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
 * input's; after gelu, sqrt(6/fan_in) (He, derived for relu, whose second
 * moment gelu's is close to) restores the roughly halved second moment.
 * The two projections that feed the residual stream (Wo, W2) are further
 * scaled by 1/sqrt(2L) (GPT-2's residual scaling), so the stream's variance
 * grows by a bounded factor over L layers instead of doubling per block. */
int pb_layer_impl_init_weights(pb_layer *ly, uint64_t seed)
{
    int64_t h = ly->sh.h, hl = local_hidden(&ly->sh), r = ly->sh.tp_rank;
    float s_h = sqrtf(3.0f / (float)h), s_down = sqrtf(6.0f / (float)(4 * h)), a = ly->resid_scale;
    /* QKV: each of Q, K, V is column-sharded separately (columns p*h + r*hl ..). */
    for (int64_t p = 0; p < 3; p++)
        PB_TRY(fill_block(ly, seed, PB_W_QKV, p * hl, h, hl, 0, p * h + r * hl, s_h));
    PB_TRY(fill_block(ly, seed, PB_W_O, 0, hl, h, r * hl, 0, s_h * a));
    PB_TRY(fill_block(ly, seed, PB_W_UP, 0, h, 4 * hl, 0, r * 4 * hl, s_h));
    return fill_block(ly, seed, PB_W_DOWN, 0, 4 * hl, h, r * 4 * hl, 0, s_down * a);
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
    int64_t hd = sh->h / sh->heads; /* exact: heads divides h */
    return 1.0f / sqrtf((float)hd);
}

/* Views of sequence bi's first local head inside the saved activations; the
 * batched GEMMs (head_gemms) reach the other heads by their strides. */
typedef struct head_view {
    void *q, *k, *v, *s, *o;
} head_view;

static head_view head(const pb_layer *ly, void *qkv, void *scores, void *o, int64_t bi)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t s = sh->s, hl = local_hidden(sh), nhl = sh->heads / sh->tp_size;
    head_view v;
    v.q = at(qkv, bi * s * 3 * hl, sh->dtype);
    v.k = at(v.q, hl, sh->dtype);
    v.v = at(v.q, 2 * hl, sh->dtype);
    v.s = scores ? at(scores, bi * nhl * s * s, sh->dtype) : NULL;
    v.o = at(o, bi * s * hl, sh->dtype);
    return v;
}

/* The GEMM of every local head of one sequence as one strided batch: head
 * j + 1's operands start hd columns (Q, K, V, O: within a row) or s*s elements
 * (scores, dS: one block per head) after head j's. */
static int head_gemms(pb_layer *ly, pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k,
                      float alpha, const void *a, int64_t lda, int64_t stride_a, const void *b, int64_t ldb,
                      int64_t stride_b, void *c, int64_t ldc, int64_t stride_c)
{
    const pb_layer_shape *sh = &ly->sh;
    pb_compute_gemm_batch g = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .alpha = alpha, .beta = 0.0f,
                               .a = a, .lda = lda, .stride_a = stride_a, .b = b, .ldb = ldb, .stride_b = stride_b,
                               .c = c, .ldc = ldc, .stride_c = stride_c, .count = sh->heads / sh->tp_size,
                               .t = sh->dtype};
    return pb_compute_gemm_batched(ly->eng, &g);
}

/* Per sequence: S = c Q K^T for all local heads (one batch), softmax over
 * their rows (one call), O = P V (one batch). */
static int scores_forward(pb_layer *ly, pb_layer_acts *sv)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t s = sh->s, hl = local_hidden(sh), hd = sh->h / sh->heads, nhl = sh->heads / sh->tp_size;
    float c = score_scale(sh);
    for (int64_t bi = 0; bi < sh->b; bi++) {
        head_view v = head(ly, sv->qkv, sv->scores, sv->o, bi);
        PB_TRY(head_gemms(ly, PB_NOTRANS, PB_TRANS, s, s, hd, c, v.q, 3 * hl, hd, v.k, 3 * hl, hd, v.s, s, s * s));
        PB_TRY(ly->eng->softmax_fwd(sh->dtype, nhl * s, s, v.s, v.s)); /* P replaces S in the slot */
        PB_TRY(head_gemms(ly, PB_NOTRANS, PB_NOTRANS, s, hd, s, 1.0f, v.s, s, s * s, v.v, 3 * hl, hd, v.o, hl, hd));
    }
    return PB_OK;
}

/* dP = dO V^T, dV = P^T dO, dS = softmax'(dP), dQ = c dS K, dK = c dS^T Q,
 * into dqkv's columns; each a batch over the local heads of one sequence
 * (dS of all of them in the d_s scratch). */
static int scores_backward(pb_layer *ly, pb_layer_acts *sv, void *dqkv)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t s = sh->s, hl = local_hidden(sh), hd = sh->h / sh->heads, nhl = sh->heads / sh->tp_size;
    float c = score_scale(sh);
    void *ds = ly->sc->d_s;
    for (int64_t bi = 0; bi < sh->b; bi++) {
        head_view v = head(ly, sv->qkv, sv->scores, ly->sc->d_o, bi); /* v.o is dO here */
        head_view d = head(ly, dqkv, NULL, ly->sc->d_o, bi);
        PB_TRY(head_gemms(ly, PB_NOTRANS, PB_TRANS, s, s, hd, 1.0f, v.o, hl, hd, v.v, 3 * hl, hd, ds, s, s * s));
        PB_TRY(head_gemms(ly, PB_TRANS, PB_NOTRANS, s, hd, s, 1.0f, v.s, s, s * s, v.o, hl, hd, d.v, 3 * hl, hd));
        PB_TRY(ly->eng->softmax_bwd(sh->dtype, nhl * s, s, v.s, ds, ds));
        PB_TRY(head_gemms(ly, PB_NOTRANS, PB_NOTRANS, s, hd, s, c, ds, s, s * s, v.k, 3 * hl, hd, d.q, 3 * hl, hd));
        PB_TRY(head_gemms(ly, PB_TRANS, PB_NOTRANS, s, hd, s, c, ds, s, s * s, v.q, 3 * hl, hd, d.k, 3 * hl, hd));
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
 * otherwise the V columns of QKV. */
static const void *attn_out(const pb_layer *ly, const pb_layer_acts *sv, int64_t *ld)
{
    int64_t hl = local_hidden(&ly->sh);
    *ld = ly->sh.attn_scores ? hl : 3 * hl;
    return ly->sh.attn_scores ? sv->o : at(sv->qkv, 2 * hl, ly->sh.dtype);
}

int pb_layer_attn_forward(pb_layer *ly, pb_layer_acts *sv, const void *x, void *y)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t n = tokens(sh), h = sh->h, hl = local_hidden(sh), ldo;
    if (x != sv->x_attn) PB_TRY(ly->eng->copy(sv->x_attn, x, (size_t)(n * h) * pb_dtype_size(sh->dtype)));
    PB_TRY(gemm(ly, PB_NOTRANS, PB_NOTRANS, n, 3 * hl, h, 1.0f, sv->x_attn, h, weight(ly, PB_W_QKV), 3 * hl,
                sv->qkv, 3 * hl));
    if (sh->attn_scores) PB_TRY(scores_forward(ly, sv));
    const void *o = attn_out(ly, sv, &ldo);
    return residual_gemm(ly, PB_NOTRANS, n, h, hl, o, ldo, weight(ly, PB_W_O), h, sv->x_attn, y);
}

int pb_layer_attn_backward(pb_layer *ly, pb_layer_acts *sv, const void *dy, void *dx, int accumulate)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t n = tokens(sh), h = sh->h, hl = local_hidden(sh), ldo;
    void *dqkv = ly->sc->big;
    const void *o = attn_out(ly, sv, &ldo);
    PB_TRY(grad_gemm(ly, PB_W_O, o, ldo, dy, h, accumulate));
    if (sh->attn_scores) {
        PB_TRY(gemm(ly, PB_NOTRANS, PB_TRANS, n, hl, h, 1.0f, dy, h, weight(ly, PB_W_O), h, ly->sc->d_o, hl));
        PB_TRY(scores_backward(ly, sv, dqkv));
    } else {
        /* O = V: Q and K do not reach the output, so their gradient is zero. */
        PB_TRY(ly->eng->memset(dqkv, 0, (size_t)(n * 3 * hl) * pb_dtype_size(sh->dtype)));
        PB_TRY(gemm(ly, PB_NOTRANS, PB_TRANS, n, hl, h, 1.0f, dy, h, weight(ly, PB_W_O), h,
                    at(dqkv, 2 * hl, sh->dtype), 3 * hl));
    }
    PB_TRY(grad_gemm(ly, PB_W_QKV, sv->x_attn, h, dqkv, 3 * hl, accumulate));
    return residual_gemm(ly, PB_TRANS, n, h, 3 * hl, dqkv, 3 * hl, weight(ly, PB_W_QKV), 3 * hl, dy, dx);
}

int pb_layer_mlp_forward(pb_layer *ly, pb_layer_acts *sv, const void *x, void *y)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t n = tokens(sh), h = sh->h, f = 4 * local_hidden(sh);
    if (x != sv->x_mlp) PB_TRY(ly->eng->copy(sv->x_mlp, x, (size_t)(n * h) * pb_dtype_size(sh->dtype)));
    void *act = ly->sc->big; /* gelu(Z): the saved slot keeps Z for the backward */
    PB_TRY(gemm(ly, PB_NOTRANS, PB_NOTRANS, n, f, h, 1.0f, sv->x_mlp, h, weight(ly, PB_W_UP), f, sv->hmlp, f));
    PB_TRY(ly->eng->gelu_fwd(sh->dtype, (size_t)(n * f), sv->hmlp, act));
    return residual_gemm(ly, PB_NOTRANS, n, h, f, act, f, weight(ly, PB_W_DOWN), h, sv->x_mlp, y);
}

int pb_layer_mlp_backward(pb_layer *ly, pb_layer_acts *sv, const void *dy, void *dx, int accumulate)
{
    const pb_layer_shape *sh = &ly->sh;
    int64_t n = tokens(sh), h = sh->h, f = 4 * local_hidden(sh);
    void *dh = ly->sc->big;
    /* gelu(Z) is recomputed from the saved Z for dW2, then its slot takes dH. */
    PB_TRY(ly->eng->gelu_fwd(sh->dtype, (size_t)(n * f), sv->hmlp, dh));
    PB_TRY(grad_gemm(ly, PB_W_DOWN, dh, f, dy, h, accumulate));
    PB_TRY(gemm(ly, PB_NOTRANS, PB_TRANS, n, f, h, 1.0f, dy, h, weight(ly, PB_W_DOWN), h, dh, f));
    PB_TRY(ly->eng->gelu_bwd(sh->dtype, (size_t)(n * f), sv->hmlp, dh, dh));
    PB_TRY(grad_gemm(ly, PB_W_UP, sv->x_mlp, h, dh, f, accumulate));
    return residual_gemm(ly, PB_TRANS, n, h, f, dh, f, weight(ly, PB_W_UP), f, dy, dx);
}
