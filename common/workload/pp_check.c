/* Validation of a pipeline against one rank running the same layers: the
 * stages are built from the same seeds with model_layers = L, so a correct
 * pipeline reproduces the single stack's output and input gradient. */
#include "workload/pp.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/mem.h"

#include <math.h>
#include <stdlib.h>

static pb_layer_stack_config whole_model(const pb_pp_stack_config *cfg)
{
    return (pb_layer_stack_config){.eng = cfg->eng, .shape = cfg->shape, .layer0 = 0, .nlayers = cfg->layers,
                             .model_layers = cfg->layers, .seed = cfg->seed, .grad_dtype = cfg->grad_dtype};
}

uint64_t pb_pp_reference_bytes(const pb_pp_stack_config *cfg)
{
    pb_layer_stack_config sc = whole_model(cfg);
    pb_layer_shape sh = cfg->shape;
    sh.dtype = cfg->eng->gemm_dtype(sh.dtype);
    uint64_t tensor = pb_mem_mul(pb_mem_mul((uint64_t)(sh.b * sh.s), (uint64_t)sh.h), pb_dtype_size(sh.dtype));
    return pb_mem_add(pb_mem_add(pb_layer_stack_bytes(&sc), pb_layer_act_bytes(&sh, cfg->layers)), pb_mem_mul(4, tensor));
}

/* Count elements of got differing from want (both n elements of type t, host). */
static long long compare(pb_dtype t, const void *got, const void *want, size_t n, double tol)
{
    long long bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = pb_dtype_get(t, got, i), w = pb_dtype_get(t, want, i);
        if (!(fabs(g - w) <= tol * (1.0 + fabs(w)))) bad++;
    }
    return bad;
}

typedef struct ref_bufs {
    void *x, *y, *dy, *dx; /* engine */
    void *host;            /* one tensor on the host */
} ref_bufs;

static int one_mb(pb_layer_stack *st, const pb_pp_stack_config *cfg, ref_bufs *b, int mb, const void *out,
                  const void *din, double tol, long long *wrong)
{
    const pb_compute *eng = cfg->eng;
    const pb_layer_shape *sh = pb_layer_stack_shape(st);
    int64_t tokens = sh->b * sh->s;
    size_t n = (size_t)(tokens * sh->h), bytes = n * pb_dtype_size(sh->dtype);
    pb_layer_saved *acts = NULL;
    PB_TRY(pb_layer_saved_alloc(st, &acts));
    int status = pb_pp_fill_input(eng, sh->dtype, b->x, tokens, sh->h, cfg->seed, mb);
    if (status == PB_OK) status = pb_layer_stack_forward(st, acts, b->x, b->y);
    if (status == PB_OK) status = eng->to_host(b->host, b->y, bytes);
    if (status == PB_OK) *wrong += compare(sh->dtype, out, b->host, n, tol);
    if (status == PB_OK) status = pb_pp_fill_loss_grad(eng, sh->dtype, b->dy, tokens, sh->h, cfg->seed, mb);
    if (status == PB_OK) status = pb_layer_stack_backward(st, acts, b->dy, b->dx, 0, NULL, NULL);
    if (status == PB_OK) status = eng->to_host(b->host, b->dx, bytes);
    if (status == PB_OK) *wrong += compare(sh->dtype, din, b->host, n, tol);
    pb_layer_saved_free(st, acts);
    return status;
}

int pb_pp_reference_check(const pb_pp_stack_config *cfg, int m, const void *const *outputs,
                          const void *const *input_grads, double tol, int corrupt, long long *wrong)
{
    pb_layer_stack_config sc = whole_model(cfg);
    pb_layer_stack *st = NULL;
    PB_TRY(pb_layer_stack_create(&sc, &st));
    const pb_layer_shape *sh = pb_layer_stack_shape(st);
    size_t n = (size_t)(sh->b * sh->s * sh->h), bytes = n * pb_dtype_size(sh->dtype);
    ref_bufs b = {0};
    const pb_compute *eng = cfg->eng;
    int status = eng->alloc(&b.x, bytes);
    if (status == PB_OK) status = eng->alloc(&b.y, bytes);
    if (status == PB_OK) status = eng->alloc(&b.dy, bytes);
    if (status == PB_OK) status = eng->alloc(&b.dx, bytes);
    b.host = malloc(bytes);
    void *bad = malloc(bytes);
    int have = b.host && bad;
    if (status == PB_OK && !have) status = pb_fail(PB_ERR_ENV, "validation: out of host memory");
    *wrong = 0;
    for (int k = 0; have && k < m && status == PB_OK; k++) {
        const void *out = outputs[k];
        if (corrupt && k == 0) { /* a copy with one element off, so the caller's data stays intact */
            for (size_t i = 0; i < bytes; i++) ((unsigned char *)bad)[i] = ((const unsigned char *)out)[i];
            pb_dtype_set(sh->dtype, bad, n / 2, pb_dtype_get(sh->dtype, bad, n / 2) + 1.0);
            out = bad;
        }
        status = one_mb(st, cfg, &b, k, out, input_grads[k], tol, wrong);
    }
    free(bad);
    free(b.host);
    void *bufs[] = {b.x, b.y, b.dy, b.dx};
    for (int i = 0; i < 4; i++)
        if (bufs[i]) eng->free(bufs[i]);
    pb_layer_stack_destroy(st);
    return status;
}
