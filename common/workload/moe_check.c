/* Validation of the MoE all-to-alls (moe.h): one dispatch and one combine of
 * rows whose values name their origin rank, their permuted row and their
 * column; every receiver checks the rows it got and marks them with their
 * expert, and every origin checks what came back. Values are small integers,
 * exact in bfloat16 as in float. */
#include "workload/moe_impl.h"

#include "core/error.h"

#include <stdlib.h>

/* Element c of permuted row s of rank `origin`: in [-30, 30]. */
static double pattern(int origin, int64_t s, int64_t c) { return (double)((origin * 37 + s * 11 + c * 3) % 61) - 30.0; }

/* What an expert adds to each row it holds: in [1, 64]. */
static double mark(int expert) { return (double)(expert % 64 + 1); }

static int host_buffers(pb_moe *m)
{
    size_t row = (size_t)m->h * m->es;
    if (!m->host_a) m->host_a = malloc(row * (size_t)(m->T * m->k) + 1);
    if (!m->host_b) m->host_b = malloc(row * (size_t)m->R + 1);
    PB_CHECK(m->host_a && m->host_b, PB_ERR_ENV, "moe: out of host memory for validation");
    return PB_OK;
}

/* The rows received from every sender: each should be row first + r of its
 * sender's permuted order, for one of this rank's experts; then marked. */
static long long check_received(pb_moe *m, int corrupt)
{
    long long wrong = 0;
    int64_t first = pb_moe_rank_first(&m->route, m->index);
    for (int p = 0; p < m->ep; p++) {
        int origin = m->cfg.group * m->ep + p;
        for (int64_t r = 0; r < m->Rp; r++) {
            int64_t s = first + r, base = ((int64_t)p * m->Rp + r) * m->h;
            int expert = pb_moe_row_expert(&m->route, s);
            for (int64_t c = 0; c < m->h; c++) {
                double got = pb_dtype_get(m->t, m->host_b, (size_t)(base + c));
                wrong += got != pattern(origin, s, c);
                pb_dtype_set(m->t, m->host_b, (size_t)(base + c), got + mark(expert));
            }
        }
    }
    if (corrupt && m->R > 0) pb_dtype_set(m->t, m->host_b, 0, pb_dtype_get(m->t, m->host_b, 0) + 1.0);
    return wrong;
}

int pb_moe_validate(pb_moe *m, int corrupt, long long *wrong_rows)
{
    *wrong_rows = 0;
    PB_TRY(host_buffers(m));
    const pb_compute *E = m->cfg.eng;
    int64_t Tk = m->T * m->k;
    size_t spread = (size_t)(Tk * m->h) * m->es, blocks = (size_t)(m->R * m->h) * m->es;
    for (int64_t s = 0; s < Tk; s++)
        for (int64_t c = 0; c < m->h; c++) pb_dtype_set(m->t, m->host_a, (size_t)(s * m->h + c), pattern(m->cfg.rank, s, c));
    PB_TRY(E->from_host(m->xk, m->host_a, spread));
    PB_TRY(pb_moe_impl_a2a(m, m->xk, m->eout, 0, 0, 1));
    PB_TRY(E->to_host(m->host_b, m->eout, blocks));
    *wrong_rows += check_received(m, corrupt);
    PB_TRY(E->from_host(m->eout, m->host_b, blocks));
    PB_TRY(pb_moe_impl_a2a(m, m->eout, m->ck, 1, 0, 0));
    PB_TRY(E->to_host(m->host_a, m->ck, spread));
    for (int64_t s = 0; s < Tk; s++) {
        double add = mark(pb_moe_row_expert(&m->route, s));
        for (int64_t c = 0; c < m->h; c++)
            *wrong_rows += pb_dtype_get(m->t, m->host_a, (size_t)(s * m->h + c)) != pattern(m->cfg.rank, s, c) + add;
    }
    return PB_OK;
}
