/* Validation of the context-parallel step (cp.h): one step, then this
 * rank's O, dQ and its block's dK, dV against attention over the whole
 * sequence computed on the host in double from every rank's inputs. The
 * reference is split as the ring splits the work: each rank takes its own
 * rows (queries) against every column, and the dK, dV its rows add to every
 * block are summed at the block's owner (a reduce-scatter), so a ring of c
 * ranks checks in about 1/c of the time one rank would take for all rows.
 * At sizes where even that is too long (cfg.check_rows, pb_cp_check_rows),
 * only a sample of each head's rows is checked: their O and dQ exactly, while
 * dK and dV, sums over every row, are left unchecked. */
#include "workload/cp_impl.h"

#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An engine buffer of n elements of type t as fp32 on the host. */
static int fetch(const pb_cp *f, const void *src, uint64_t n, float *dst)
{
    PB_TRY(f->cfg.eng->to_host(dst, src, (size_t)n * f->es));
    if (f->blk.t == PB_FLOAT32) return PB_OK;
    /* bf16 in the first half: converted from the end, each value read before its bytes are written */
    for (uint64_t i = n; i-- > 0;) {
        uint16_t h;
        memcpy(&h, (const char *)dst + 2 * i, sizeof h);
        dst[i] = pb_dtype_bf16_to_float(h);
    }
    return PB_OK;
}

/* What the reference reads: this rank's Q and dO, every rank's K and V
 * (block r at r * kvn). */
typedef struct inputs {
    float *q, *d_o, *k, *v;
} inputs;

/* The reference for this rank's checked rows: their scores against every
 * column, the softmax, O, D = dO . O and dS; O and dQ kept, and when every
 * row is checked what the rows add to dK and dV of every column summed into
 * `part` (block r's dK at r * 2 kvn, its dV kvn after), to be summed over
 * the ring at each block's owner. */
typedef struct reference {
    double *o, *dq; /* this rank's layouts */
    double *part;   /* c blocks of (dK, dV) contributions; NULL when rows are sampled */
    int64_t n;      /* rows checked of each head's sq */
} reference;

static void reference_head(const pb_cp *f, const inputs *in, int64_t bi, int64_t h, reference *ref, double *p,
                           double *ds, double *o_row)
{
    const pb_attn_block *a = &f->blk;
    int64_t sq = a->sq, hd = a->hd, s = sq * f->c, g = h / (a->heads / a->kv_heads);
    double scale = 1.0 / sqrt((double)hd);
#define KROW(arr, j) ((arr) + ((uint64_t)((j) / sq) * f->kvn + (uint64_t)(((bi * a->kv_heads + g) * sq + (j) % sq) * hd)))
#define PART(j) (ref->part + (uint64_t)((j) / sq) * 2 * f->kvn + (uint64_t)(((bi * a->kv_heads + g) * sq + (j) % sq) * hd))
    for (int64_t k = 0; k < ref->n; k++) {
        uint64_t qoff = (uint64_t)(((bi * a->heads + h) * sq + pb_cp_check_row(k, ref->n, sq)) * hd);
        const float *qi = in->q + qoff, *doi = in->d_o + qoff;
        double mx = -INFINITY, sum = 0, d = 0;
        for (int64_t j = 0; j < s; j++) {
            const float *kj = KROW(in->k, j);
            double x = 0;
            for (int64_t e = 0; e < hd; e++) x += (double)qi[e] * kj[e];
            p[j] = x * scale;
            mx = fmax(mx, p[j]);
        }
        for (int64_t j = 0; j < s; j++) sum += (p[j] = exp(p[j] - mx));
        for (int64_t e = 0; e < hd; e++) o_row[e] = 0;
        for (int64_t j = 0; j < s; j++) {
            const float *vj = KROW(in->v, j);
            p[j] /= sum;
            for (int64_t e = 0; e < hd; e++) o_row[e] += p[j] * vj[e];
        }
        for (int64_t e = 0; e < hd; e++) d += doi[e] * o_row[e];
        for (int64_t j = 0; j < s; j++) {
            const float *vj = KROW(in->v, j);
            double dpj = 0;
            for (int64_t e = 0; e < hd; e++) dpj += (double)doi[e] * vj[e];
            ds[j] = p[j] * (dpj - d);
        }
        for (int64_t e = 0; e < hd; e++) {
            ref->o[qoff + (uint64_t)e] = o_row[e];
            double x = 0;
            for (int64_t j = 0; j < s; j++) x += ds[j] * KROW(in->k, j)[e];
            ref->dq[qoff + (uint64_t)e] = x * scale;
        }
        for (int64_t j = 0; ref->part && j < s; j++) {
            double *dk = PART(j), *dv = dk + f->kvn;
            for (int64_t e = 0; e < hd; e++) {
                dk[e] += ds[j] * qi[e] * scale;
                dv[e] += p[j] * doi[e];
            }
        }
    }
#undef KROW
#undef PART
}

/* |x - ref| within tol (1 + |ref|): fp32 sums of a few hundred terms, or bf16 storage. */
static long long count_wrong(const float *x, const double *ref, uint64_t n, pb_dtype t)
{
    double tol = t == PB_FLOAT32 ? 1e-3 : 5e-2;
    long long bad = 0;
    for (uint64_t i = 0; i < n; i++) bad += !(fabs((double)x[i] - ref[i]) <= tol * (1.0 + fabs(ref[i])));
    return bad;
}

/* count_wrong over the checked rows of every head of a [b][heads][sq][hd] layout. */
static long long count_wrong_rows(const pb_cp *f, int64_t n, const float *x, const double *ref)
{
    const pb_attn_block *a = &f->blk;
    long long bad = 0;
    for (int64_t bh = 0; bh < a->b * a->heads; bh++)
        for (int64_t k = 0; k < n; k++) {
            uint64_t off = (uint64_t)((bh * a->sq + pb_cp_check_row(k, n, a->sq)) * a->hd);
            bad += count_wrong(x + off, ref + off, (uint64_t)a->hd, a->t);
        }
    return bad;
}

/* Collective: the gather runs whatever the fetch did. */
static int gather(const pb_cp *f, MPI_Comm ring, const void *src, uint64_t n, float *mine, float *all)
{
    int status = fetch(f, src, n, mine);
    MPI_Allgather(mine, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, ring);
    return status;
}

int pb_cp_validate(pb_cp *f, MPI_Comm ring, int corrupt, long long *wrong_out, long long *wrong_grads)
{
    *wrong_out = *wrong_grads = 0;
    PB_TRY(pb_cp_step(f));
    uint64_t qn = f->qn, kvn = f->kvn, c = (uint64_t)f->c, s = (uint64_t)(f->blk.sq * f->c);
    int64_t n = f->cfg.check_rows > 0 && f->cfg.check_rows < f->blk.sq ? f->cfg.check_rows : f->blk.sq;
    int every_row = n == f->blk.sq; /* dK and dV sum over every row: checked only then */
    inputs in = {malloc(sizeof(float) * qn), malloc(sizeof(float) * qn), malloc(sizeof(float) * kvn * c),
                 malloc(sizeof(float) * kvn * c)};
    float *mine = malloc(sizeof(float) * (qn > 2 * kvn ? qn : 2 * kvn));
    reference ref = {calloc(qn, sizeof(double)), calloc(qn, sizeof(double)),
                     every_row ? calloc(2 * kvn * c, sizeof(double)) : NULL, n};
    double *dkv = every_row ? malloc(sizeof(double) * 2 * kvn) : NULL; /* this block's dK then dV, summed over the ring */
    double *rows = malloc(sizeof(double) * (2 * s + (uint64_t)f->blk.hd));
    int ok = in.q && in.d_o && in.k && in.v && mine && ref.o && ref.dq && (!every_row || (ref.part && dkv)) && rows;
    int status = ok ? PB_OK : pb_fail(PB_ERR_ENV, "cp: out of memory for validation");
    /* The ranks agree to go on (every buffer there) before the collectives
     * below; each rank then takes part in every one, whatever its status. */
    int have = ok;
    MPI_Allreduce(MPI_IN_PLACE, &have, 1, MPI_INT, MPI_MIN, ring);
    if (!have && status == PB_OK) status = pb_fail(PB_ERR_ENV, "cp: another rank is out of memory for validation");
    int st[2] = {PB_OK, PB_OK};
    if (have) {
        st[0] = gather(f, ring, f->kv_own, kvn, mine, in.k);
        st[1] = gather(f, ring, (char *)f->kv_own + kvn * f->es, kvn, mine, in.v);
    }
    for (int i = 0; i < 2; i++)
        if (status == PB_OK) status = st[i];
    if (ok && status == PB_OK) status = fetch(f, f->q, qn, in.q);
    if (ok && status == PB_OK) status = fetch(f, f->d_o, qn, in.d_o);
    for (int64_t bi = 0; ok && status == PB_OK && bi < f->blk.b; bi++)
        for (int64_t h = 0; h < f->blk.heads; h++) reference_head(f, &in, bi, h, &ref, rows, rows + s, rows + 2 * s);
    if (have && every_row) MPI_Reduce_scatter_block(ref.part, dkv, (int)(2 * kvn), MPI_DOUBLE, MPI_SUM, ring);
    if (ok && status == PB_OK) status = fetch(f, f->o, qn, mine);
    if (ok && status == PB_OK) {
        if (corrupt) mine[0] += 1.0f;
        *wrong_out = count_wrong_rows(f, n, mine, ref.o);
        status = fetch(f, f->dq, qn, mine);
    }
    if (ok && status == PB_OK) {
        *wrong_grads = count_wrong_rows(f, n, mine, ref.dq);
        if (every_row) status = fetch(f, pb_cp_impl_result_dkv(f), 2 * kvn, mine);
    }
    if (ok && status == PB_OK && every_row) {
        if (corrupt) mine[2 * kvn - 1] += 1.0f; /* dV's last element: the dK/dV check is on */
        *wrong_grads += count_wrong(mine, dkv, 2 * kvn, f->blk.t);
    }
    free(in.q), free(in.d_o), free(in.k), free(in.v), free(mine);
    free(ref.o), free(ref.dq), free(ref.part), free(dkv), free(rows);
    return status;
}
