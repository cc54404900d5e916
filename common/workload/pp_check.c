/* Validation of a pipeline against one rank running the same layers: the
 * stages are built from the same seeds with model_layers = L, so a correct
 * pipeline reproduces the single stack's outputs, input gradients and, summed
 * over the step's micro-batches, its weight gradients. */
#include "workload/pp.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/mem.h"
#include "core/world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The reference's shape: the stages' with the reference's recomputation
 * (none: keeping every activation, -c then also checks the stages'). */
static pb_layer_shape keeping(const pb_pp_stack_config *cfg, pb_layer_recompute rc)
{
    pb_layer_shape sh = cfg->shape;
    sh.recompute = rc;
    return sh;
}

static pb_layer_stack_config whole_model(const pb_pp_stack_config *cfg, pb_layer_recompute rc)
{
    return (pb_layer_stack_config){.eng = cfg->eng, .shape = keeping(cfg, rc), .layer0 = 0, .nlayers = cfg->layers,
                             .model_layers = cfg->layers, .seed = cfg->seed, .grad_dtype = cfg->grad_dtype};
}

uint64_t pb_pp_reference_bytes(const pb_pp_stack_config *cfg, pb_layer_recompute rc)
{
    pb_layer_stack_config sc = whole_model(cfg, rc);
    pb_layer_shape sh = keeping(cfg, rc);
    sh.dtype = cfg->eng->gemm_dtype(sh.dtype);
    uint64_t tensor = pb_mem_mul(pb_mem_mul((uint64_t)(sh.b * sh.s), (uint64_t)sh.h), pb_dtype_size(sh.dtype));
    uint64_t bytes = pb_mem_add(pb_layer_stack_bytes(&sc), pb_layer_act_bytes(&sh, cfg->layers));
    return pb_mem_add(pb_mem_add(bytes, pb_mem_mul(4, tensor)), pb_pp_stack_grad_piece_bytes(cfg));
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

/* The whole model on stage 0, with its buffers. */
typedef struct reference {
    const pb_compute *eng;
    pb_layer_stack *st;
    void *x, *y, *dy, *dx; /* engine */
    void *host, *bad;      /* one activation tensor each */
    void *want;            /* one gradient piece */
} reference;

static void reference_free(reference *r)
{
    void *bufs[] = {r->x, r->y, r->dy, r->dx};
    for (int i = 0; i < 4; i++)
        if (bufs[i]) r->eng->free(bufs[i]);
    free(r->host);
    free(r->bad);
    free(r->want);
    pb_layer_stack_destroy(r->st);
}

static int reference_create(const pb_pp_stack_config *cfg, pb_layer_recompute rc, reference *r)
{
    *r = (reference){.eng = cfg->eng};
    pb_layer_stack_config sc = whole_model(cfg, rc);
    PB_TRY(pb_layer_stack_create(&sc, &r->st));
    const pb_layer_shape *sh = pb_layer_stack_shape(r->st);
    size_t bytes = (size_t)(sh->b * sh->s * sh->h) * pb_dtype_size(sh->dtype);
    void **bufs[] = {&r->x, &r->y, &r->dy, &r->dx};
    int status = PB_OK;
    for (int i = 0; i < 4 && status == PB_OK; i++) status = r->eng->alloc(bufs[i], bytes);
    r->host = malloc(bytes);
    r->bad = malloc(bytes);
    r->want = malloc((size_t)pb_pp_stack_grad_piece_bytes(cfg));
    if (status == PB_OK && !(r->host && r->bad && r->want))
        status = pb_fail(PB_ERR_ENV, "validation: out of host memory");
    return status;
}

/* Micro-batch mb through the whole model: compare its output and input
 * gradient, and add its weight gradients to the reference's (mb > 0). */
static int one_mb(reference *r, const pb_pp_stack_config *cfg, int mb, const void *out, const void *din, double tol,
                  long long *wrong)
{
    const pb_compute *eng = cfg->eng;
    const pb_layer_shape *sh = pb_layer_stack_shape(r->st);
    int64_t tokens = sh->b * sh->s;
    size_t n = (size_t)(tokens * sh->h), bytes = n * pb_dtype_size(sh->dtype);
    pb_layer_saved *acts = NULL;
    PB_TRY(pb_layer_saved_alloc(r->st, &acts));
    int status = pb_pp_fill_input(eng, sh->dtype, r->x, tokens, sh->h, cfg->seed, mb);
    if (status == PB_OK) status = pb_layer_stack_forward(r->st, acts, r->x, r->y);
    if (status == PB_OK) status = eng->to_host(r->host, r->y, bytes);
    if (status == PB_OK) *wrong += compare(sh->dtype, out, r->host, n, tol);
    if (status == PB_OK) status = pb_pp_fill_loss_grad(eng, sh->dtype, r->dy, tokens, sh->h, cfg->seed, mb);
    if (status == PB_OK) status = pb_layer_stack_backward(r->st, acts, r->dy, r->dx, mb > 0, NULL, NULL);
    if (status == PB_OK) status = eng->to_host(r->host, r->dx, bytes);
    if (status == PB_OK) *wrong += compare(sh->dtype, din, r->host, n, tol);
    pb_layer_saved_free(r->st, acts);
    return status;
}

static int run_reference(reference *r, const pb_pp_stack_config *cfg, int m, const void *const *outputs,
                         const void *const *input_grads, double tol, int corrupt, long long *wrong)
{
    const pb_layer_shape *sh = pb_layer_stack_shape(r->st);
    size_t n = (size_t)(sh->b * sh->s * sh->h), bytes = n * pb_dtype_size(sh->dtype);
    int status = PB_OK;
    for (int k = 0; k < m && status == PB_OK; k++) {
        const void *out = outputs[k];
        if (!out || !input_grads[k]) /* a stage that did not capture (pb_pp_stack_set_capture) */
            return pb_fail(PB_ERR_CHECK, "validation: micro-batch %d has no captured output or input gradient", k);
        if (corrupt && k == 0 && r->bad) { /* a copy with one element off: the caller's data stays intact */
            memcpy(r->bad, out, bytes);
            pb_dtype_set(sh->dtype, r->bad, n / 2, pb_dtype_get(sh->dtype, r->bad, n / 2) + 1.0);
            out = r->bad;
        }
        status = one_mb(r, cfg, k, out, input_grads[k], tol, wrong);
    }
    return status;
}

/* Stage 0 receives the last stage's outputs (control plane) and runs the
 * reference over them and its input gradients; the other stages only send. */
static int check_activations(MPI_Comm pipe, pb_pp_stack *st, const pb_pp_stack_config *cfg, reference *ref, int m,
                             size_t bytes, void *recvd, int corrupt, double tol, long long *wrong)
{
    int stage, p;
    MPI_Comm_rank(pipe, &stage);
    MPI_Comm_size(pipe, &p);
    if (stage == p - 1 && p > 1) MPI_Send(pb_pp_stack_output(st, 0), (int)(bytes * (size_t)m), MPI_BYTE, 0, 0, pipe);
    if (stage != 0) return PB_OK;
    if (p > 1) MPI_Recv(recvd, (int)(bytes * (size_t)m), MPI_BYTE, p - 1, 0, pipe, MPI_STATUS_IGNORE);
    const void **outs = calloc((size_t)m, sizeof *outs), **dins = calloc((size_t)m, sizeof *dins);
    if (!outs || !dins) {
        free(outs);
        free(dins);
        return pb_fail(PB_ERR_ENV, "validation: out of memory");
    }
    for (int k = 0; k < m; k++) {
        outs[k] = p > 1 ? (const unsigned char *)recvd + bytes * (size_t)k : pb_pp_stack_output(st, k);
        dins[k] = pb_pp_stack_input_grad(st, k);
    }
    int status = run_reference(ref, cfg, m, outs, dins, tol, corrupt, wrong);
    free(outs);
    free(dins);
    return status;
}

/* Every stage's weight gradients against the reference's layers at the same
 * place, piece by piece; stage 0 compares. Every send and receive runs
 * whatever the status, so no stage waits on one that gave up; the caller
 * agrees afterwards. */
static int check_weight_grads(MPI_Comm pipe, pb_pp_stack *st, const pb_pp_stack_config *cfg, reference *ref,
                              void *piece, int corrupt, double tol, long long *wrong)
{
    const pb_compute *eng = cfg->eng;
    int stage, p;
    MPI_Comm_rank(pipe, &stage);
    MPI_Comm_size(pipe, &p);
    uint64_t chunk = pb_pp_stack_chunk_grad_bytes(cfg);
    size_t step = (size_t)pb_pp_stack_grad_piece_bytes(cfg), es = pb_dtype_size(cfg->grad_dtype);
    int status = PB_OK;
    for (int s = 0; s < p; s++) {
        if (stage != 0 && stage != s) continue;
        pb_pp_stack_config at = *cfg;
        at.stage = s;
        for (int c = 0; c < cfg->v; c++) {
            const char *mine = stage == s ? pb_pp_stack_chunk_grads(st, c) : NULL;
            const char *want = stage == 0 ? (const char *)pb_layer_stack_grads(ref->st) +
                                                pb_layer_stack_grad_offset(ref->st, pb_pp_chunk_layer0(&at, c))
                                          : NULL;
            for (uint64_t off = 0; off < chunk; off += step) {
                size_t len = chunk - off < step ? (size_t)(chunk - off) : step;
                int got = PB_OK;
                if (mine) got = eng->to_host(piece, mine + off, len);
                if (mine && corrupt && s != 0 && c == 0 && off == 0)
                    pb_dtype_set(cfg->grad_dtype, piece, 0, pb_dtype_get(cfg->grad_dtype, piece, 0) + 1.0);
                if (stage == s && s != 0) MPI_Send(piece, (int)len, MPI_BYTE, 0, 1 + c, pipe);
                if (stage == 0 && s != 0) MPI_Recv(piece, (int)len, MPI_BYTE, s, 1 + c, pipe, MPI_STATUS_IGNORE);
                if (want && got == PB_OK) got = eng->to_host(ref->want, want + off, len);
                if (want && got == PB_OK) *wrong += compare(cfg->grad_dtype, piece, ref->want, len / es, tol);
                if (status == PB_OK) status = got;
            }
        }
    }
    return status;
}

int pb_pp_validate_step(const pb_world *w, MPI_Comm pipe, pb_pp_exec *ex, const pb_pp_schedule_plan *plan,
                        pb_pp_stack *st, const pb_pp_stack_config *cfg, pb_layer_recompute ref_rc, int m, int corrupt,
                        long long *wrong)
{
    pb_pp_stats s;
    pb_pp_stack_set_capture(st, 1);
    int status = pb_pp_exec_step(ex, plan, pb_pp_stack_ops(), st, &s, NULL);
    pb_pp_stack_set_capture(st, 0);
    status = pb_world_agree_after_step(w->comm, status, PB_STEP_GRACE_S, NULL); /* a stage may wait inside it */
    if (status != PB_OK) return status;
    int stage, p;
    MPI_Comm_rank(pipe, &stage);
    MPI_Comm_size(pipe, &p);
    size_t n = plan->n ? (size_t)(cfg->shape.b * cfg->shape.s * cfg->shape.h) : 0;
    size_t bytes = n * pb_dtype_size(pb_pp_stack_dtype(st));
    size_t total = bytes * (size_t)m;
    int gather = stage == 0 && p > 1;
    void *recvd = gather ? malloc(total ? total : 1) : NULL; /* malloc(0) may return NULL */
    void *piece = malloc((size_t)pb_pp_stack_grad_piece_bytes(cfg));
    reference ref = {.eng = cfg->eng};
    if ((!recvd && gather) || !piece) status = pb_fail(PB_ERR_ENV, "validation: out of memory");
    if (status == PB_OK && stage == 0) status = reference_create(cfg, ref_rc, &ref);
    /* agree before each transfer: no stage may send to a stage 0 that gave up */
    status = pb_world_agree(w, status);
    double tol = pb_pp_stack_dtype(st) == PB_FLOAT32 ? 1e-4 : 3e-2;
    *wrong = 0;
    if (status == PB_OK) status = check_activations(pipe, st, cfg, &ref, m, bytes, recvd, corrupt, tol, wrong);
    status = pb_world_agree(w, status);
    if (status == PB_OK) status = check_weight_grads(pipe, st, cfg, &ref, piece, corrupt, tol, wrong);
    reference_free(&ref);
    free(recvd);
    free(piece);
    MPI_Allreduce(MPI_IN_PLACE, wrong, 1, MPI_LONG_LONG, MPI_SUM, w->comm);
    return pb_world_agree(w, status);
}
