/* Validation of a pipeline against one rank running the same layers: the
 * stages are built from the same seeds with model_layers = L, so a correct
 * pipeline reproduces the single stack's output and input gradient. */
#include "workload/pp.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/world.h"

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
        if (!out || !input_grads[k]) { /* a stage that did not capture (pb_pp_stack_set_capture) */
            status = pb_fail(PB_ERR_CHECK, "validation: micro-batch %d has no captured output or input gradient", k);
            break;
        }
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

/* Stage 0 receives the last stage's outputs (control plane) and compares them
 * and its input gradients with one whole stack; the other stages only send. */
static int check_outputs(MPI_Comm pipe, pb_pp_stack *st, const pb_pp_stack_config *cfg, int m, size_t bytes,
                         const void **outs, const void **dins, void *recvd, int corrupt, long long *wrong)
{
    int stage, p;
    MPI_Comm_rank(pipe, &stage);
    MPI_Comm_size(pipe, &p);
    if (stage == p - 1 && p > 1) MPI_Send(pb_pp_stack_output(st, 0), (int)(bytes * (size_t)m), MPI_BYTE, 0, 0, pipe);
    if (stage != 0) return PB_OK;
    if (p > 1) MPI_Recv(recvd, (int)(bytes * (size_t)m), MPI_BYTE, p - 1, 0, pipe, MPI_STATUS_IGNORE);
    for (int k = 0; k < m; k++) {
        outs[k] = p > 1 ? (const unsigned char *)recvd + bytes * (size_t)k : pb_pp_stack_output(st, k);
        dins[k] = pb_pp_stack_input_grad(st, k);
    }
    double tol = pb_pp_stack_dtype(st) == PB_FLOAT32 ? 1e-4 : 3e-2;
    return pb_pp_reference_check(cfg, m, outs, dins, tol, corrupt, wrong);
}

int pb_pp_validate_step(const pb_world *w, MPI_Comm pipe, pb_pp_exec *ex, const pb_pp_schedule_plan *plan,
                        pb_pp_stack *st, const pb_pp_stack_config *cfg, int m, int corrupt, long long *wrong)
{
    pb_pp_stats s;
    pb_pp_stack_set_capture(st, 1);
    int status = pb_pp_exec_step(ex, plan, pb_pp_stack_ops(), st, &s, NULL);
    pb_pp_stack_set_capture(st, 0);
    status = pb_world_agree(w, status);
    if (status != PB_OK) return status;
    int stage, p;
    MPI_Comm_rank(pipe, &stage);
    MPI_Comm_size(pipe, &p);
    size_t n = plan->n ? (size_t)(cfg->shape.b * cfg->shape.s * cfg->shape.h) : 0;
    size_t bytes = n * pb_dtype_size(pb_pp_stack_dtype(st));
    size_t total = bytes * (size_t)m;
    int gather = stage == 0 && p > 1;
    const void **outs = calloc((size_t)m, sizeof *outs), **dins = calloc((size_t)m, sizeof *dins);
    void *recvd = gather ? malloc(total ? total : 1) : NULL; /* malloc(0) may return NULL */
    int have = outs && dins && (recvd || !gather);
    if (!have) status = pb_fail(PB_ERR_ENV, "validation: out of memory");
    /* agree before the transfer: the last stage must not send to a stage 0 that gave up */
    status = pb_world_agree(w, status);
    *wrong = 0;
    if (have && status == PB_OK) status = check_outputs(pipe, st, cfg, m, bytes, outs, dins, recvd, corrupt, wrong);
    free(recvd);
    free(outs);
    free(dins);
    MPI_Allreduce(MPI_IN_PLACE, wrong, 1, MPI_LONG_LONG, MPI_SUM, w->comm);
    return pb_world_agree(w, status);
}
