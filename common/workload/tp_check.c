/* Validation of the sharded stack against the unsharded one: same seeded
 * weights (a shard is exactly a slice of the full weights), same input and
 * loss gradient, so y and dx must agree up to summation order. */
#include "workload/tp.h"

#include "core/error.h"
#include "core/mem.h"
#include "core/world.h"

#include <math.h>
#include <stdlib.h>

pb_layer_stack_config pb_tp_reference_config(const pb_tp_config *cfg)
{
    pb_layer_shape sh = cfg->shape;
    sh.tp_size = 1;
    sh.tp_rank = 0;
    return (pb_layer_stack_config){.eng = cfg->eng, .shape = sh, .layer0 = cfg->layer0, .nlayers = cfg->nlayers,
                             .model_layers = cfg->model_layers, .seed = cfg->seed, .grad_dtype = cfg->grad_dtype,
                             .grads = NULL};
}

uint64_t pb_tp_reference_bytes(const pb_layer_stack_config *rc)
{
    pb_layer_shape rs = rc->shape;
    rs.dtype = rc->eng->gemm_dtype(rs.dtype);
    return pb_mem_add(pb_mem_add(pb_layer_stack_bytes(rc), pb_mem_mul(2, pb_layer_act_bytes(&rs, rc->nlayers))),
                      pb_mem_mul(8, pb_layer_io_bytes(&rs)));
}

/* Seeded streams of the validation input and loss gradient (pb_layer_fill_input's
 * index), apart from the small indices timed runs use. */
#define IDX_X 0x7e570000u
#define IDX_DY 0x7e570001u

enum { B_X, B_DY, B_YREF, B_DXREF, B_Y, B_DX, B_COUNT };

typedef struct check_run {
    pb_tp *tp;
    pb_layer_stack *ref;
    const pb_compute *eng;
    pb_dtype dt;
    size_t es;
    int64_t n, h, rows, row0; /* tokens, hidden, this rank's rows and the first of them */
    void *buf[B_COUNT];       /* engine memory */
    pb_layer_saved *ref_acts, *tp_acts;
} check_run;

static int setup(check_run *c)
{
    const pb_layer_shape *sh = pb_tp_shape(c->tp);
    const pb_tp_config *cfg = pb_tp_cfg(c->tp);
    c->eng = cfg->eng;
    c->dt = sh->dtype;
    c->es = pb_dtype_size(c->dt);
    c->n = sh->b * sh->s;
    c->h = sh->h;
    c->rows = pb_tp_io_rows(cfg);
    c->row0 = cfg->mode == PB_TP_SP ? sh->tp_rank * c->rows : 0;
    PB_CHECK(pb_layer_stack_shape(c->ref)->dtype == c->dt, PB_ERR_USAGE, "tp validate: reference computes in %s, not %s",
             pb_dtype_name(pb_layer_stack_shape(c->ref)->dtype), pb_dtype_name(c->dt));
    size_t full = (size_t)(c->n * c->h) * c->es, io = (size_t)(c->rows * c->h) * c->es;
    for (int i = 0; i < B_COUNT; i++) PB_TRY(c->eng->alloc(&c->buf[i], i >= B_Y ? io : full));
    PB_TRY(pb_layer_saved_alloc(c->ref, &c->ref_acts));
    PB_TRY(pb_tp_acts_alloc(c->tp, &c->tp_acts));
    uint64_t seed = cfg->seed;
    PB_TRY(pb_layer_fill_input(c->eng, c->dt, c->buf[B_X], c->n, c->h, seed, IDX_X));
    return pb_layer_fill_input(c->eng, c->dt, c->buf[B_DY], c->n, c->h, seed, IDX_DY);
}

static void teardown(check_run *c)
{
    for (int i = 0; i < B_COUNT; i++)
        if (c->buf[i]) c->eng->free(c->buf[i]);
    if (c->ref_acts) pb_layer_saved_free(c->ref, c->ref_acts);
    if (c->tp_acts) pb_tp_acts_free(c->tp, c->tp_acts);
}

/* This rank's rows of a full N x h engine buffer. */
static const void *my_rows(const check_run *c, const void *full)
{
    return (const char *)full + (size_t)(c->row0 * c->h) * c->es;
}

static int run_both(check_run *c)
{
    PB_TRY(pb_layer_stack_forward(c->ref, c->ref_acts, c->buf[B_X], c->buf[B_YREF]));
    PB_TRY(pb_layer_stack_backward(c->ref, c->ref_acts, c->buf[B_DY], c->buf[B_DXREF], 0, NULL, NULL));
    PB_TRY(pb_tp_forward(c->tp, c->tp_acts, my_rows(c, c->buf[B_X]), c->buf[B_Y]));
    return pb_tp_backward(c->tp, c->tp_acts, my_rows(c, c->buf[B_DY]), c->buf[B_DX], 0, NULL, NULL);
}

int pb_tp_compare(pb_dtype dt, const void *ref, size_t nref, size_t off, const void *got, size_t ngot, int corrupt,
                  long long *wrong, double *max_err)
{
    if (off > nref || ngot > nref - off)
        return pb_fail(PB_ERR_CHECK, "tp validate: values %zu..%zu outside the reference's %zu", off, off + ngot, nref);
    double scale = 0;
    for (size_t i = 0; i < nref; i++) scale = fmax(scale, fabs(pb_dtype_get(dt, ref, i)));
    if (scale == 0) scale = 1;
    double tol = pb_tp_tolerance(dt);
    for (size_t i = 0; i < ngot; i++) {
        double g = pb_dtype_get(dt, got, i), r = pb_dtype_get(dt, ref, off + i);
        if (corrupt && i == 0) g += 1e3 * scale;
        double err = fabs(g - r) / scale;
        if (!isfinite(g) || !(err <= tol)) (*wrong)++;
        if (isfinite(err) && err > *max_err) *max_err = err;
    }
    return PB_OK;
}

/* Copy `got` (this rank's rows) and the full reference to the host and compare them. */
static int compare(const check_run *c, const void *got, const void *ref, int corrupt, long long *wrong,
                   double *max_err)
{
    size_t nfull = (size_t)(c->n * c->h), nrows = (size_t)(c->rows * c->h), off = (size_t)(c->row0 * c->h);
    char *href = malloc(nfull * c->es + 1), *hgot = malloc(nrows * c->es + 1);
    int status = href && hgot ? PB_OK : pb_fail(PB_ERR_ENV, "tp validate: out of host memory");
    if (status == PB_OK) status = c->eng->to_host(href, ref, nfull * c->es);
    if (status == PB_OK) status = c->eng->to_host(hgot, got, nrows * c->es);
    if (status == PB_OK) status = pb_tp_compare(c->dt, href, nfull, off, hgot, nrows, corrupt, wrong, max_err);
    free(href);
    free(hgot);
    return status;
}

int pb_tp_validate(pb_tp *tp, pb_layer_stack *ref, MPI_Comm all, int corrupt, long long *wrong, double *max_err)
{
    check_run c = {.tp = tp, .ref = ref};
    *wrong = 0;
    *max_err = 0;
    int status = setup(&c);
    if (all != MPI_COMM_NULL) status = pb_world_agree_at(all, status, "tp validate");
    if (status == PB_OK) status = run_both(&c);
    if (all != MPI_COMM_NULL) status = pb_world_agree_after_step(all, status, PB_STEP_GRACE_S, NULL);
    if (status == PB_OK) status = compare(&c, c.buf[B_Y], c.buf[B_YREF], corrupt & 1, wrong, max_err);
    if (status == PB_OK) status = compare(&c, c.buf[B_DX], c.buf[B_DXREF], corrupt & 2, wrong, max_err);
    teardown(&c);
    return status;
}
