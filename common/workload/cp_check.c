/* Validation of the context-parallel step (cp.h): one step, then this
 * rank's O, dQ and its block's dK, dV against attention over the whole
 * sequence computed on the host in double from every rank's inputs. */
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

/* Every rank's block of one tensor, block r at r * n. */
typedef struct all_blocks {
    float *q, *d_o, *k, *v;
} all_blocks;

/* The reference for this rank: for every row of the sequence, its scores
 * against every column, the softmax, O, D = dO . O and dS; O and dQ kept for
 * this rank's rows, dK and dV summed for its block's columns. */
typedef struct reference {
    double *o, *dq, *dk, *dv; /* this rank's layouts */
} reference;

static void reference_head(const pb_cp *f, const all_blocks *all, int64_t bi, int64_t h, reference *ref, double *p,
                           double *ds, double *o_row)
{
    const pb_attn_block *a = &f->blk;
    int64_t sq = a->sq, hd = a->hd, s = sq * f->c, g = h / (a->heads / a->kv_heads);
    double scale = 1.0 / sqrt((double)hd);
#define QROW(arr, i) ((arr) + ((uint64_t)((i) / sq) * f->qn + (uint64_t)(((bi * a->heads + h) * sq + (i) % sq) * hd)))
#define KROW(arr, j) ((arr) + ((uint64_t)((j) / sq) * f->kvn + (uint64_t)(((bi * a->kv_heads + g) * sq + (j) % sq) * hd)))
    for (int64_t i = 0; i < s; i++) {
        const float *qi = QROW(all->q, i), *doi = QROW(all->d_o, i);
        double mx = -INFINITY, sum = 0, d = 0;
        for (int64_t j = 0; j < s; j++) {
            const float *kj = KROW(all->k, j);
            double x = 0;
            for (int64_t e = 0; e < hd; e++) x += (double)qi[e] * kj[e];
            p[j] = x * scale;
            mx = fmax(mx, p[j]);
        }
        for (int64_t j = 0; j < s; j++) sum += (p[j] = exp(p[j] - mx));
        for (int64_t e = 0; e < hd; e++) o_row[e] = 0;
        for (int64_t j = 0; j < s; j++) {
            const float *vj = KROW(all->v, j);
            p[j] /= sum;
            for (int64_t e = 0; e < hd; e++) o_row[e] += p[j] * vj[e];
        }
        for (int64_t e = 0; e < hd; e++) d += doi[e] * o_row[e];
        for (int64_t j = 0; j < s; j++) {
            const float *vj = KROW(all->v, j);
            double dpj = 0;
            for (int64_t e = 0; e < hd; e++) dpj += (double)doi[e] * vj[e];
            ds[j] = p[j] * (dpj - d);
        }
        int own_row = i / sq == f->index;
        uint64_t qoff = (uint64_t)(((bi * a->heads + h) * sq + i % sq) * hd);
        for (int64_t e = 0; own_row && e < hd; e++) {
            ref->o[qoff + (uint64_t)e] = o_row[e];
            double x = 0;
            for (int64_t j = 0; j < s; j++) x += ds[j] * KROW(all->k, j)[e];
            ref->dq[qoff + (uint64_t)e] = x * scale;
        }
        for (int64_t jj = 0; jj < sq; jj++) { /* this rank's block of columns */
            int64_t j = (int64_t)f->index * sq + jj;
            uint64_t koff = (uint64_t)(((bi * a->kv_heads + g) * sq + jj) * hd);
            for (int64_t e = 0; e < hd; e++) {
                ref->dk[koff + (uint64_t)e] += ds[j] * qi[e] * scale;
                ref->dv[koff + (uint64_t)e] += p[j] * doi[e];
            }
        }
    }
#undef QROW
#undef KROW
}

/* |x - ref| within tol (1 + |ref|): fp32 sums of a few hundred terms, or bf16 storage. */
static long long count_wrong(const float *x, const double *ref, uint64_t n, pb_dtype t)
{
    double tol = t == PB_FLOAT32 ? 1e-3 : 5e-2;
    long long bad = 0;
    for (uint64_t i = 0; i < n; i++) bad += !(fabs((double)x[i] - ref[i]) <= tol * (1.0 + fabs(ref[i])));
    return bad;
}

static int gather(const pb_cp *f, MPI_Comm ring, const void *src, uint64_t n, float *mine, float *all)
{
    PB_TRY(fetch(f, src, n, mine));
    MPI_Allgather(mine, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT, ring);
    return PB_OK;
}

int pb_cp_validate(pb_cp *f, MPI_Comm ring, int corrupt, long long *wrong_out, long long *wrong_grads)
{
    *wrong_out = *wrong_grads = 0;
    PB_TRY(pb_cp_step(f));
    uint64_t qn = f->qn, kvn = f->kvn, c = (uint64_t)f->c, s = (uint64_t)(f->blk.sq * f->c);
    all_blocks all = {malloc(sizeof(float) * qn * c), malloc(sizeof(float) * qn * c), malloc(sizeof(float) * kvn * c),
                      malloc(sizeof(float) * kvn * c)};
    float *mine = malloc(sizeof(float) * (qn > 2 * kvn ? qn : 2 * kvn));
    reference ref = {calloc(qn, sizeof(double)), calloc(qn, sizeof(double)), calloc(kvn, sizeof(double)),
                     calloc(kvn, sizeof(double))};
    double *rows = malloc(sizeof(double) * (2 * s + (uint64_t)f->blk.hd));
    int status = all.q && all.d_o && all.k && all.v && mine && ref.o && ref.dq && ref.dk && ref.dv && rows
                     ? PB_OK
                     : pb_fail(PB_ERR_ENV, "cp: out of memory for validation");
    /* Every rank takes part in every gather, whatever its status. */
    int st[4];
    st[0] = gather(f, ring, f->q, qn, mine, all.q);
    st[1] = gather(f, ring, f->d_o, qn, mine, all.d_o);
    st[2] = gather(f, ring, f->kv_own, kvn, mine, all.k);
    st[3] = gather(f, ring, (char *)f->kv_own + kvn * f->es, kvn, mine, all.v);
    for (int i = 0; i < 4; i++)
        if (status == PB_OK) status = st[i];
    for (int64_t bi = 0; status == PB_OK && bi < f->blk.b; bi++)
        for (int64_t h = 0; h < f->blk.heads; h++) reference_head(f, &all, bi, h, &ref, rows, rows + s, rows + 2 * s);
    if (status == PB_OK) status = fetch(f, f->o, qn, mine);
    if (status == PB_OK) {
        if (corrupt) mine[0] += 1.0f;
        *wrong_out = count_wrong(mine, ref.o, qn, f->blk.t);
        status = fetch(f, f->dq, qn, mine);
    }
    if (status == PB_OK) {
        *wrong_grads = count_wrong(mine, ref.dq, qn, f->blk.t);
        status = fetch(f, pb_cp_impl_result_dkv(f), 2 * kvn, mine);
    }
    if (status == PB_OK)
        *wrong_grads += count_wrong(mine, ref.dk, kvn, f->blk.t) + count_wrong(mine + kvn, ref.dv, kvn, f->blk.t);
    free(all.q), free(all.d_o), free(all.k), free(all.v), free(mine);
    free(ref.o), free(ref.dq), free(ref.dk), free(ref.dv), free(rows);
    return status;
}
