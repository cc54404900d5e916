/* The MoE layer (moe.h): buffers, the all-to-alls of rows, the router, the
 * experts' GEMMs forward and backward, and the step over L layers. */
#include "workload/moe_impl.h"

#include "coll/coll_alltoallv.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/timing.h"

#include <math.h>
#include <stdlib.h>

static void *at(void *p, int64_t elems, size_t es) { return (char *)p + (size_t)elems * es; }

void pb_moe_route_of(const pb_moe_config *cfg, pb_moe_route *out)
{
    *out = (pb_moe_route){.tokens = cfg->tokens, .experts = cfg->experts, .top_k = cfg->top_k,
                          .ep = cfg->be->size(cfg->ep_comm), .skew = cfg->skew};
}

/* Elements of one layer's weights: Wr, then per local expert W1 and W2. */
static int64_t layer_elems(const pb_moe_config *c, int local)
{
    int64_t f1 = c->gated ? 2 * c->ffn : c->ffn;
    return c->hidden * c->experts + (int64_t)local * (c->hidden * f1 + c->ffn * c->hidden);
}

void pb_moe_bytes(const pb_moe_config *cfg, uint64_t *engine_bytes, uint64_t *host_bytes)
{
    pb_moe_route r, even;
    pb_moe_route_of(cfg, &r);
    even = r;
    even.skew = 1.0;
    uint64_t es = pb_dtype_size(cfg->eng->gemm_dtype(cfg->dtype)), L = (uint64_t)cfg->nlayers;
    uint64_t T = (uint64_t)cfg->tokens, h = (uint64_t)cfg->hidden, f = (uint64_t)cfg->ffn, f1 = cfg->gated ? 2 * f : f;
    uint64_t Tk = T * (uint64_t)cfg->top_k, R = 0, Re = 0; /* the heaviest rank's rows: the figure every rank checks */
    for (int d = 0; d < r.ep; d++) {
        uint64_t got = (uint64_t)pb_moe_recv_rows(&r, d), eg = (uint64_t)pb_moe_recv_rows(&even, d);
        R = got > R ? got : R;
        Re = eg > Re ? eg : Re;
    }
    uint64_t ck = Tk > Re ? Tk : Re, most = ck > R ? ck : R;
    uint64_t weights = pb_mem_mul(2 * L, (uint64_t)layer_elems(cfg, cfg->experts / r.ep));
    uint64_t saved = pb_mem_add(pb_mem_mul((L + 1) * T, h), pb_mem_mul(L * R, h + f1 + f));
    uint64_t scratch = T * (uint64_t)cfg->experts + Tk * h + R * h + ck * h + R * f1 + R * h + 3 * T * h + Tk;
    uint64_t e = pb_mem_mul(es, pb_mem_add(pb_mem_add(weights, saved), scratch));
    *engine_bytes = pb_staging_needed(cfg->eng, cfg->be) ? pb_mem_add(e, pb_mem_mul(2 * es, most * h)) : e;
    *host_bytes = pb_mem_mul(es * h, Tk + R);
}

/* ---- the all-to-alls ------------------------------------------------------------ */

typedef struct rows_ctx {
    const int64_t *to;
    int64_t h;
} rows_ctx;

static size_t elems_to(const void *ctx, int d)
{
    const rows_ctx *c = ctx;
    return (size_t)(c->to[d] * c->h);
}

/* The per-expert counts, as a dispatch first exchanges them; the host reads
 * them (it sizes the all-to-all with them) and counts those that differ. */
static int exchange_counts(pb_moe *m, int even)
{
    const pb_comm_backend *be = m->cfg.be;
    PB_TRY(be->alltoall(m->cfg.ep_comm, m->cnt_send, m->cnt_recv, (size_t)m->local, PB_INT32));
    PB_TRY(be->sync(m->cfg.ep_comm));
    PB_TRY(be->to_host(m->cnt_host, m->cnt_recv, sizeof(int32_t) * (size_t)m->cfg.experts));
    for (int e = 0; e < m->cfg.experts && !even; e++) m->wrong_counts += m->cnt_host[e] != m->cnt_want[e];
    return PB_OK;
}

int pb_moe_impl_a2a(pb_moe *m, const void *send, void *recv, int reverse, int even, int counts)
{
    const pb_comm_backend *be = m->cfg.be;
    rows_ctx c = {even ? m->even_to : m->to, m->h};
    size_t spread = (size_t)(m->T * m->k * m->h) * m->es, blocks = (size_t)(m->ep * c.to[m->index] * m->h) * m->es;
    void **sb = m->stage.buf;
    int staged = sb[0] != NULL;
    PB_TRY(m->cfg.eng->synchronize()); /* the rows are computed */
    double t0 = pb_timing_now_us();
    if (counts) PB_TRY(exchange_counts(m, even));
    if (staged) PB_TRY(pb_staging_in(&m->stage, 0, send, reverse ? blocks : spread));
    PB_TRY(pb_coll_alltoallv(be, m->cfg.ep_comm, staged ? sb[0] : send, staged ? sb[1] : recv, m->t, elems_to, &c,
                             reverse));
    PB_TRY(be->sync(m->cfg.ep_comm));
    if (staged) PB_TRY(pb_staging_out(&m->stage, 1, recv, reverse ? spread : blocks));
    double us = pb_timing_now_us() - t0;
    if (reverse) m->timing.combine_us += us;
    else m->timing.dispatch_us += us;
    if (m->timing.a2as < 4 * m->cfg.nlayers) m->a2a_us[m->timing.a2as] = us;
    m->timing.a2as++;
    return PB_OK;
}

/* ---- the experts ------------------------------------------------------------------ */

static void *w1(pb_moe *m, void **w, int64_t i, int j)
{
    return at(w[i], m->h * m->cfg.experts + (int64_t)j * (m->h * m->f1 + m->f * m->h), m->es);
}
static void *w2(pb_moe *m, void **w, int64_t i, int j) { return at(w1(m, w, i, j), m->h * m->f1, m->es); }

/* C = A B for local expert j's rows of every sender at once: A's and C's
 * blocks are Rp rows apart, B is the expert's weight. */
static int expert_gemm(pb_moe *m, int j, const void *a, int64_t lda, pb_compute_trans tb, const void *b,
                       int64_t ldb, void *c, int64_t ldc, int64_t n, int64_t k)
{
    int64_t off = m->first[j];
    pb_compute_gemm_batch g = {.ta = PB_NOTRANS, .tb = tb, .m = m->rows[j], .n = n, .k = k, .alpha = 1.0f,
                               .beta = 0.0f, .a = at((void *)a, off * lda, m->es), .lda = lda,
                               .stride_a = m->Rp * lda, .b = b, .ldb = ldb, .stride_b = 0,
                               .c = at(c, off * ldc, m->es), .ldc = ldc, .stride_c = m->Rp * ldc, .count = m->ep,
                               .t = m->t};
    return pb_compute_gemm_batched(m->cfg.eng, &g);
}

/* dW = sum over senders of A_p^T B_p for local expert j's rows. */
static int expert_wgrad(pb_moe *m, int j, const void *a, int64_t lda, const void *b, int64_t ldb, void *dw)
{
    const pb_compute *E = m->cfg.eng;
    for (int p = 0; p < m->ep; p++) {
        int64_t row = (int64_t)p * m->Rp + m->first[j];
        PB_TRY(E->gemm(PB_TRANS, PB_NOTRANS, lda, ldb, m->rows[j], 1.0f, at((void *)a, row * lda, m->es), lda,
                       at((void *)b, row * ldb, m->es), ldb, p ? 1.0f : 0.0f, dw, ldb, m->t));
    }
    return PB_OK;
}

static int experts_forward(pb_moe *m, int64_t i)
{
    const pb_compute *E = m->cfg.eng;
    for (int j = 0; j < m->local; j++)
        if (m->rows[j]) PB_TRY(expert_gemm(m, j, m->recv[i], m->h, PB_NOTRANS, w1(m, m->w, i, j), m->f1, m->z[i], m->f1, m->f1, m->h));
    if (m->R) {
        if (m->cfg.gated) PB_TRY(E->swiglu_fwd(m->t, m->R, m->f, m->z[i], m->hid[i]));
        else PB_TRY(E->gelu_fwd(m->t, (size_t)(m->R * m->f), m->z[i], m->hid[i]));
    }
    for (int j = 0; j < m->local; j++)
        if (m->rows[j]) PB_TRY(expert_gemm(m, j, m->hid[i], m->f, PB_NOTRANS, w2(m, m->w, i, j), m->h, m->eout, m->h, m->h, m->f));
    return PB_OK;
}

/* eout holds the output gradients of the rows received; dxr gets their input gradients. */
static int experts_backward(pb_moe *m, int64_t i)
{
    const pb_compute *E = m->cfg.eng;
    for (int j = 0; j < m->local && m->R; j++) {
        if (!m->rows[j]) continue;
        PB_TRY(expert_gemm(m, j, m->eout, m->h, PB_TRANS, w2(m, m->w, i, j), m->h, m->dz, m->f1, m->f, m->h));
        PB_TRY(expert_wgrad(m, j, m->hid[i], m->f, m->eout, m->h, w2(m, m->g, i, j)));
    }
    if (m->R) {
        if (m->cfg.gated) PB_TRY(E->swiglu_bwd(m->t, m->R, m->f, m->z[i], m->dz));
        else PB_TRY(E->gelu_bwd(m->t, (size_t)(m->R * m->f), m->z[i], m->dz, m->dz));
    }
    for (int j = 0; j < m->local; j++) {
        if (!m->rows[j]) continue;
        PB_TRY(expert_wgrad(m, j, m->recv[i], m->h, m->dz, m->f1, w1(m, m->g, i, j)));
        PB_TRY(expert_gemm(m, j, m->dz, m->f1, PB_TRANS, w1(m, m->w, i, j), m->f1, m->dxr, m->h, m->h, m->f1));
    }
    return PB_OK;
}

/* ---- a layer ----------------------------------------------------------------------- */

static int forward(pb_moe *m, int64_t i)
{
    const pb_compute *E = m->cfg.eng;
    int64_t Th = m->T * m->h, nE = m->cfg.experts;
    PB_TRY(E->gemm(PB_NOTRANS, PB_NOTRANS, m->T, nE, m->h, 1.0f, m->xs[i], m->h, m->w[i], nE, 0.0f, m->logits, nE,
                   m->t));
    for (int64_t j = 0; j < m->k; j++) PB_TRY(E->copy(at(m->xk, j * Th, m->es), m->xs[i], (size_t)Th * m->es));
    PB_TRY(pb_moe_impl_a2a(m, m->xk, m->recv[i], 0, 0, 1));
    PB_TRY(experts_forward(m, i));
    PB_TRY(pb_moe_impl_a2a(m, m->eout, m->ck, 1, 0, 0));
    /* Y = (1/k) sum of the k choices: ones (1 x k) times the k blocks (k x T*h). */
    return E->gemm(PB_NOTRANS, PB_NOTRANS, 1, Th, m->k, 1.0f / (float)m->k, m->ones, m->k, m->ck, Th, 0.0f,
                   m->xs[i + 1], Th, m->t);
}

static int backward(pb_moe *m, int64_t i, const void *dy, void *dx)
{
    const pb_compute *E = m->cfg.eng;
    int64_t Th = m->T * m->h, nE = m->cfg.experts;
    /* Each choice's gradient: dY / k, the k blocks as ones (k x 1) times dY (1 x T*h). */
    PB_TRY(E->gemm(PB_NOTRANS, PB_NOTRANS, m->k, Th, 1, 1.0f / (float)m->k, m->ones, 1, dy, Th, 0.0f, m->xk, Th,
                   m->t));
    PB_TRY(pb_moe_impl_a2a(m, m->xk, m->eout, 0, 0, 0));
    PB_TRY(experts_backward(m, i));
    PB_TRY(pb_moe_impl_a2a(m, m->dxr, m->ck, 1, 0, 0));
    PB_TRY(E->gemm(PB_NOTRANS, PB_NOTRANS, 1, Th, m->k, 1.0f, m->ones, m->k, m->ck, Th, 0.0f, dx, Th, m->t));
    /* The router's backward; its logits stand in for their gradient (the choice does not read them). */
    PB_TRY(E->gemm(PB_TRANS, PB_NOTRANS, m->h, nE, m->T, 1.0f, m->xs[i], m->h, m->logits, nE, 0.0f, m->g[i], nE,
                   m->t));
    return E->gemm(PB_NOTRANS, PB_TRANS, m->T, m->h, nE, 1.0f, m->logits, nE, m->w[i], nE, 1.0f, dx, m->h, m->t);
}

int pb_moe_step(pb_moe *m)
{
    int64_t L = m->cfg.nlayers;
    m->timing = (pb_moe_timing){0};
    for (int64_t i = 0; i < L; i++) PB_TRY(forward(m, i));
    const void *dy = m->dy0;
    for (int64_t i = L - 1; i >= 0; i--) {
        PB_TRY(backward(m, i, dy, m->dys[i & 1]));
        dy = m->dys[i & 1];
    }
    return m->cfg.eng->synchronize();
}

int pb_moe_a2a_only(pb_moe *m, int even)
{
    m->timing = (pb_moe_timing){0};
    /* Uniform: from the k copies into ck (sized for it) and back; the layer's load: its own buffers. */
    void *spread = m->xk, *blocks = even ? m->ck : m->eout;
    for (int64_t i = 0; i < m->cfg.nlayers; i++)
        for (int pass = 0; pass < 2; pass++) { /* forward, backward: a dispatch and a combine each */
            PB_TRY(pb_moe_impl_a2a(m, spread, blocks, 0, even, pass == 0));
            PB_TRY(pb_moe_impl_a2a(m, blocks, spread, 1, even, 0));
        }
    return PB_OK;
}

void pb_moe_last_timing(const pb_moe *m, pb_moe_timing *out) { *out = m->timing; }
const double *pb_moe_a2a_times(const pb_moe *m) { return m->a2a_us; }
long long pb_moe_wrong_counts(const pb_moe *m) { return m->wrong_counts; }
double pb_moe_a2a_bytes(const pb_moe *m) { return (double)(m->T * m->k * m->h) * (double)m->es; }

double pb_moe_expert_flops(const pb_moe *m)
{
    /* Forward 2 R h f1 + 2 R f h; backward twice that. */
    return (double)m->cfg.nlayers * 3.0 * 2.0 * (double)m->R * (double)m->h * (double)(m->f1 + m->f);
}

double pb_moe_other_flops(const pb_moe *m)
{
    /* Router: 2 T h E forward, twice that backward; the three (1 x k) x (k x T h) sums. */
    double T = (double)m->T, h = (double)m->h;
    return (double)m->cfg.nlayers * (3.0 * 2.0 * T * h * m->cfg.experts + 3.0 * 2.0 * T * h * (double)m->k);
}

/* ---- create and destroy ------------------------------------------------------------- */

static int alloc_zero(const pb_compute *E, void **p, int64_t elems, size_t es)
{
    size_t bytes = (size_t)(elems > 0 ? elems : 1) * es; /* one element at least: a rank may receive no rows */
    PB_TRY(E->alloc(p, bytes));
    return E->memset(*p, 0, bytes);
}

/* The routing's arrays: what every sender sends each EP rank, this rank's experts' rows, the counts. */
static int make_routing(pb_moe *m)
{
    int ep = m->ep, nE = m->cfg.experts;
    m->to = calloc((size_t)ep, sizeof *m->to);
    m->even_to = calloc((size_t)ep, sizeof *m->even_to);
    m->rows = calloc((size_t)m->local, sizeof *m->rows);
    m->first = calloc((size_t)m->local, sizeof *m->first);
    m->cnt_host = calloc((size_t)nE, sizeof *m->cnt_host);
    m->cnt_want = calloc((size_t)nE, sizeof *m->cnt_want);
    m->a2a_us = calloc(4 * (size_t)m->cfg.nlayers, sizeof *m->a2a_us);
    int32_t *counts = calloc((size_t)nE, sizeof *counts);
    int ok = m->to && m->even_to && m->rows && m->first && m->cnt_host && m->cnt_want && m->a2a_us && counts;
    for (int d = 0; ok && d < ep; d++) {
        m->to[d] = pb_moe_rank_rows(&m->route, d);
        m->even_to[d] = pb_moe_rank_rows(&m->even, d);
    }
    int64_t off = 0;
    for (int j = 0; ok && j < m->local; j++) {
        m->rows[j] = pb_moe_expert_rows(&m->route, m->index * m->local + j);
        m->first[j] = off;
        off += m->rows[j];
    }
    for (int e = 0; ok && e < nE; e++) {
        counts[e] = (int32_t)pb_moe_expert_rows(&m->route, e);
        m->cnt_want[e] = (int32_t)pb_moe_expert_rows(&m->route, m->index * m->local + e % m->local);
    }
    int status = ok ? PB_OK : pb_fail(PB_ERR_ENV, "moe: out of memory");
    const pb_comm_backend *be = m->cfg.be;
    size_t cb = sizeof(int32_t) * (size_t)nE;
    if (status == PB_OK) status = be->alloc(cb, &m->cnt_send);
    if (status == PB_OK) status = be->alloc(cb, &m->cnt_recv);
    if (status == PB_OK) status = be->from_host(m->cnt_send, counts, cb);
    free(counts);
    return status;
}

static int make_weights(pb_moe *m, int64_t i)
{
    const pb_compute *E = m->cfg.eng;
    int64_t elems = layer_elems(&m->cfg, m->local), nE = m->cfg.experts;
    PB_TRY(alloc_zero(E, &m->w[i], elems, m->es));
    PB_TRY(alloc_zero(E, &m->g[i], elems, m->es));
    /* Scaled by 1/sqrt(fan-in), so activations stay O(1) through the layers. High bits: streams no other weight uses. */
    uint64_t base = ((uint64_t)3 << 61) | (uint64_t)i << 24;
    pb_compute_fill_spec spec = {.seed = m->cfg.seed, .stream = base, .scale = 1.0f / sqrtf((float)m->h)};
    PB_TRY(E->fill(m->w[i], m->t, m->h, nE, nE, &spec));
    for (int j = 0; j < m->local; j++) {
        uint64_t expert = (uint64_t)(m->index * m->local + j) + 1;
        spec.stream = base | expert << 1, spec.scale = 1.0f / sqrtf((float)m->h);
        PB_TRY(E->fill(w1(m, m->w, i, j), m->t, m->h, m->f1, m->f1, &spec));
        spec.stream = base | (expert << 1 | 1), spec.scale = 1.0f / sqrtf((float)m->f);
        PB_TRY(E->fill(w2(m, m->w, i, j), m->t, m->f, m->h, m->h, &spec));
    }
    return PB_OK;
}

static int build(pb_moe *m)
{
    const pb_compute *E = m->cfg.eng;
    int64_t L = m->cfg.nlayers, Th = m->T * m->h, Tk = m->T * m->k, R = m->R;
    int64_t ck = Tk > m->even_recv ? Tk : m->even_recv, most = ck > R ? ck : R;
    PB_TRY(make_routing(m));
    m->w = calloc((size_t)L, sizeof *m->w);
    m->g = calloc((size_t)L, sizeof *m->g);
    m->xs = calloc((size_t)L + 1, sizeof *m->xs);
    m->recv = calloc((size_t)L, sizeof *m->recv);
    m->z = calloc((size_t)L, sizeof *m->z);
    m->hid = calloc((size_t)L, sizeof *m->hid);
    PB_CHECK(m->w && m->g && m->xs && m->recv && m->z && m->hid, PB_ERR_ENV, "moe: out of memory");
    for (int64_t i = 0; i < L; i++) {
        PB_TRY(make_weights(m, i));
        PB_TRY(alloc_zero(E, &m->recv[i], R * m->h, m->es));
        PB_TRY(alloc_zero(E, &m->z[i], R * m->f1, m->es));
        PB_TRY(alloc_zero(E, &m->hid[i], R * m->f, m->es));
    }
    for (int64_t i = 0; i <= L; i++) PB_TRY(alloc_zero(E, &m->xs[i], Th, m->es));
    PB_TRY(alloc_zero(E, &m->logits, m->T * m->cfg.experts, m->es));
    PB_TRY(alloc_zero(E, &m->xk, Tk * m->h, m->es));
    PB_TRY(alloc_zero(E, &m->eout, R * m->h, m->es));
    PB_TRY(alloc_zero(E, &m->ck, ck * m->h, m->es));
    PB_TRY(alloc_zero(E, &m->dz, R * m->f1, m->es));
    PB_TRY(alloc_zero(E, &m->dxr, R * m->h, m->es));
    PB_TRY(alloc_zero(E, &m->dy0, Th, m->es));
    PB_TRY(alloc_zero(E, &m->dys[0], Th, m->es));
    PB_TRY(alloc_zero(E, &m->dys[1], Th, m->es));
    PB_TRY(alloc_zero(E, &m->ones, m->k, m->es));
    /* Inputs and output gradients differ per rank (its tokens), weights per expert. */
    uint64_t r = (uint64_t)m->cfg.rank;
    pb_compute_fill_spec in = {.seed = m->cfg.seed, .stream = ((uint64_t)1 << 63) | (2 * r), .scale = 1.7320508f};
    PB_TRY(E->fill(m->xs[0], m->t, m->T, m->h, m->h, &in));
    in.stream = ((uint64_t)1 << 63) | (2 * r + 1);
    PB_TRY(E->fill(m->dy0, m->t, m->T, m->h, m->h, &in));
    double one[1]; /* one element of the compute type, aligned for any */
    pb_dtype_set(m->t, one, 0, 1.0);
    for (int64_t j = 0; j < m->k; j++) PB_TRY(E->from_host(at(m->ones, j, m->es), one, m->es));
    PB_TRY(pb_staging_alloc(&m->stage, E, m->cfg.be, 2, (size_t)(most > 0 ? most : 1) * (size_t)m->h * m->es));
    return E->synchronize();
}

int pb_moe_create(const pb_moe_config *cfg, pb_moe **out)
{
    *out = NULL;
    PB_CHECK(cfg->eng && cfg->be && cfg->ep_comm, PB_ERR_USAGE, "moe: engine, backend and EP group needed");
    PB_CHECK(cfg->nlayers > 0 && cfg->tokens > 0 && cfg->hidden > 0 && cfg->ffn > 0, PB_ERR_USAGE,
             "moe: >= 1 layer, token, hidden and expert width");
    pb_moe *m = calloc(1, sizeof *m);
    PB_CHECK(m, PB_ERR_ENV, "moe: out of memory");
    m->cfg = *cfg;
    pb_moe_route_of(cfg, &m->route);
    m->even = m->route;
    m->even.skew = 1.0;
    int status = pb_moe_route_check(&m->route);
    if (status != PB_OK) {
        free(m);
        return status;
    }
    m->t = cfg->eng->gemm_dtype(cfg->dtype);
    m->es = pb_dtype_size(m->t);
    m->ep = m->route.ep;
    m->index = cfg->be->rank(cfg->ep_comm);
    m->local = cfg->experts / m->ep;
    m->T = cfg->tokens, m->h = cfg->hidden, m->f = cfg->ffn, m->f1 = cfg->gated ? 2 * cfg->ffn : cfg->ffn;
    m->k = cfg->top_k;
    m->Rp = pb_moe_rank_rows(&m->route, m->index);
    m->R = pb_moe_recv_rows(&m->route, m->index);
    m->even_recv = pb_moe_recv_rows(&m->even, m->index);
    status = build(m);
    if (status != PB_OK) {
        pb_moe_destroy(m);
        return status;
    }
    *out = m;
    return PB_OK;
}

void pb_moe_destroy(pb_moe *m)
{
    if (!m) return;
    const pb_compute *E = m->cfg.eng;
    for (int64_t i = 0; i < m->cfg.nlayers; i++) {
        void *per[] = {m->w ? m->w[i] : NULL, m->g ? m->g[i] : NULL, m->recv ? m->recv[i] : NULL,
                       m->z ? m->z[i] : NULL, m->hid ? m->hid[i] : NULL};
        for (size_t k = 0; k < sizeof per / sizeof per[0]; k++)
            if (per[k]) E->free(per[k]);
    }
    for (int64_t i = 0; m->xs && i <= m->cfg.nlayers; i++)
        if (m->xs[i]) E->free(m->xs[i]);
    void *bufs[] = {m->logits, m->xk, m->eout, m->ck, m->dz, m->dxr, m->dy0, m->dys[0], m->dys[1], m->ones};
    for (size_t k = 0; k < sizeof bufs / sizeof bufs[0]; k++)
        if (bufs[k]) E->free(bufs[k]);
    if (m->cnt_send) m->cfg.be->free(m->cnt_send);
    if (m->cnt_recv) m->cfg.be->free(m->cnt_recv);
    pb_staging_free(&m->stage);
    void *host[] = {m->w, m->g, m->xs, m->recv, m->z, m->hid, m->to, m->even_to, m->rows, m->first, m->cnt_host,
                    m->cnt_want, m->a2a_us, m->host_a, m->host_b};
    for (size_t k = 0; k < sizeof host / sizeof host[0]; k++) free(host[k]);
    free(m);
}
