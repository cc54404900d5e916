/* Validation of a pipeline, chunk by chunk. Each stage runs each of its chunks'
 * layers again as a stack of their own, built from the same seeds with
 * model_layers = L at the place the chunk's virtual stage holds in the model,
 * on the inputs and upstream gradients the chunk received, and compares what
 * the chunk sent. The links between chunks are compared exactly, by hashes.
 * A correct pipeline then computes the L-layer model: chunk 0 starts from the
 * seeded inputs, each chunk computes its layers on what the one before it
 * sent, and the backward runs the same way down from the seeded loss
 * gradients. The reference needs one chunk's memory, never the whole model's. */
#include "workload/pp.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/mem.h"
#include "core/world.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t chunk_layers(const pb_pp_stack_config *cfg) { return cfg->layers / (cfg->p * cfg->v); }

/* Virtual stage j = c * p + stage holds layers [j * L/(p v), (j + 1) * L/(p v)): said here
 * again rather than taken from the stage, so that a stage holding the wrong layers is seen. */
static pb_layer_stack_config chunk_reference(const pb_pp_stack_config *cfg, int c, pb_layer_recompute rc)
{
    pb_layer_shape sh = cfg->shape;
    sh.recompute = rc;
    int64_t j = (int64_t)c * cfg->p + cfg->stage;
    return (pb_layer_stack_config){.eng = cfg->eng, .shape = sh, .layer0 = j * chunk_layers(cfg),
                                   .nlayers = chunk_layers(cfg), .model_layers = cfg->layers, .seed = cfg->seed,
                                   .grad_dtype = cfg->grad_dtype};
}

static uint64_t tensor_bytes(const pb_pp_stack_config *cfg)
{
    pb_layer_shape sh = cfg->shape;
    sh.dtype = cfg->eng->gemm_dtype(sh.dtype);
    return pb_layer_io_bytes(&sh);
}

uint64_t pb_pp_reference_bytes(const pb_pp_stack_config *cfg, pb_layer_recompute rc)
{
    pb_layer_stack_config sc = chunk_reference(cfg, 0, rc);
    pb_layer_shape sh = sc.shape;
    sh.dtype = cfg->eng->gemm_dtype(sh.dtype);
    uint64_t bytes = pb_mem_add(pb_layer_stack_bytes(&sc), pb_layer_act_bytes(&sh, sc.nlayers));
    return pb_mem_add(bytes, pb_mem_mul(4, tensor_bytes(cfg)));
}

uint64_t pb_pp_check_host_bytes(const pb_pp_stack_config *cfg)
{
    pb_pp_stack_config capturing = *cfg;
    capturing.capture = 1;
    uint64_t own = pb_mem_add(pb_mem_mul(2, tensor_bytes(cfg)), pb_mem_mul(2, pb_pp_stack_grad_piece_bytes(cfg)));
    return pb_mem_add(pb_pp_stack_capture_bytes(&capturing), own);
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

/* The reference's buffers, the same for every chunk, and the chunk's stack. */
typedef struct reference {
    const pb_compute *eng;
    pb_pp_stack *stage;
    pb_dtype dtype;        /* effective */
    size_t n, bytes;       /* elements and bytes of one tensor */
    double tol;
    int corrupt;
    pb_layer_stack *st;    /* the chunk being checked */
    void *x, *y, *dy, *dx; /* engine */
    void *host, *bad;      /* one tensor each */
    void *mine, *want;     /* one gradient piece each */
} reference;

static void reference_free(reference *r)
{
    void *bufs[] = {r->x, r->y, r->dy, r->dx};
    for (int i = 0; i < 4; i++)
        if (bufs[i]) r->eng->free(bufs[i]);
    free(r->host);
    free(r->bad);
    free(r->mine);
    free(r->want);
}

static int reference_create(const pb_pp_stack_config *cfg, pb_pp_stack *stage, int corrupt, reference *r)
{
    pb_dtype t = pb_pp_stack_dtype(stage);
    size_t bytes = pb_pp_stack_act_bytes(stage), piece = (size_t)pb_pp_stack_grad_piece_bytes(cfg);
    *r = (reference){.eng = cfg->eng, .stage = stage, .dtype = t, .n = bytes / pb_dtype_size(t), .bytes = bytes,
                     .tol = t == PB_FLOAT32 ? 1e-4 : 3e-2, .corrupt = corrupt};
    void **bufs[] = {&r->x, &r->y, &r->dy, &r->dx};
    int status = PB_OK;
    for (int i = 0; i < 4 && status == PB_OK; i++) status = r->eng->alloc(bufs[i], bytes);
    r->host = malloc(bytes);
    r->bad = malloc(bytes);
    r->mine = malloc(piece);
    r->want = malloc(piece);
    if (status == PB_OK && !(r->host && r->bad && r->mine && r->want))
        status = pb_fail(PB_ERR_ENV, "validation: out of host memory");
    return status;
}

/* The stage's captured `which`, or a failure naming it (a stage that did not capture). */
static int stage_captured(const reference *r, int c, int mb, pb_pp_captured which, const void **out)
{
    *out = pb_pp_stack_captured(r->stage, c, mb, which);
    return *out ? PB_OK : pb_fail(PB_ERR_CHECK, "validation: chunk %d, micro-batch %d has no capture", c, mb);
}

/* What the reference computed (engine) against what the stage sent (host); under the
 * test fault, a copy of the stage's with one element off (its own data stays intact). */
static int compare_sent(reference *r, const void *computed, const void *sent, int fault, long long *wrong)
{
    PB_TRY(r->eng->to_host(r->host, computed, r->bytes));
    if (fault) {
        memcpy(r->bad, sent, r->bytes);
        pb_dtype_set(r->dtype, r->bad, r->n / 2, pb_dtype_get(r->dtype, r->bad, r->n / 2) + 1.0);
        sent = r->bad;
    }
    *wrong += compare(r->dtype, sent, r->host, r->n, r->tol);
    return PB_OK;
}

/* Micro-batch mb through chunk c's reference: forward from what the chunk received, backward
 * from the gradient it received (its weight gradients added to the earlier micro-batches'). */
static int one_mb(reference *r, int c, int mb, int last_chunk, long long *wrong)
{
    const void *in, *out, *dout, *din;
    PB_TRY(stage_captured(r, c, mb, PB_PP_IN, &in));
    PB_TRY(stage_captured(r, c, mb, PB_PP_OUT, &out));
    PB_TRY(stage_captured(r, c, mb, PB_PP_DOUT, &dout));
    PB_TRY(stage_captured(r, c, mb, PB_PP_DIN, &din));
    pb_layer_saved *acts = NULL;
    PB_TRY(pb_layer_saved_alloc(r->st, &acts));
    int fault = r->corrupt && mb == 0;
    int status = r->eng->from_host(r->x, in, r->bytes);
    if (status == PB_OK) status = pb_layer_stack_forward(r->st, acts, r->x, r->y);
    if (status == PB_OK) status = compare_sent(r, r->y, out, fault && c == last_chunk, wrong);
    if (status == PB_OK) status = r->eng->from_host(r->dy, dout, r->bytes);
    if (status == PB_OK) status = pb_layer_stack_backward(r->st, acts, r->dy, r->dx, mb > 0, NULL, NULL);
    if (status == PB_OK) status = compare_sent(r, r->dx, din, fault && c == 0, wrong);
    pb_layer_saved_free(r->st, acts);
    return status;
}

/* Chunk c's weight gradients against its reference's, piece by piece. */
static int compare_grads(reference *r, const pb_pp_stack_config *cfg, int c, long long *wrong)
{
    uint64_t chunk = pb_pp_stack_chunk_grad_bytes(cfg);
    size_t step = (size_t)pb_pp_stack_grad_piece_bytes(cfg), es = pb_dtype_size(cfg->grad_dtype);
    const char *mine = pb_pp_stack_chunk_grads(r->stage, c), *want = pb_layer_stack_grads(r->st);
    for (uint64_t off = 0; off < chunk; off += step) {
        size_t len = chunk - off < step ? (size_t)(chunk - off) : step;
        PB_TRY(r->eng->to_host(r->mine, mine + off, len));
        PB_TRY(r->eng->to_host(r->want, want + off, len));
        if (r->corrupt && c == 0 && off == 0)
            pb_dtype_set(cfg->grad_dtype, r->mine, 0, pb_dtype_get(cfg->grad_dtype, r->mine, 0) + 1.0);
        *wrong += compare(cfg->grad_dtype, r->mine, r->want, len / es, r->tol);
    }
    return PB_OK;
}

static int check_chunk(reference *r, const pb_pp_stack_config *cfg, pb_layer_recompute rc, int c, int m,
                       long long *wrong)
{
    pb_layer_stack_config sc = chunk_reference(cfg, c, rc);
    PB_TRY(pb_layer_stack_create(&sc, &r->st));
    int status = PB_OK;
    for (int k = 0; k < m && status == PB_OK; k++) status = one_mb(r, c, k, cfg->v - 1, wrong);
    if (status == PB_OK) status = compare_grads(r, cfg, c, wrong);
    pb_layer_stack_destroy(r->st);
    r->st = NULL;
    return status;
}

/* ---- the links ------------------------------------------------------------ */

/* Index of (stage, chunk, mb, which) in the pipeline's gathered hashes. */
static size_t link_at(const pb_pp_stack_config *cfg, int m, int stage, int c, int mb, pb_pp_captured which)
{
    return (((size_t)stage * (size_t)cfg->v + (size_t)c) * (size_t)m + (size_t)mb) * PB_PP_CAPTURED + which;
}

/* The captured tensor against the seeded one (filled by `fill`), exactly: 1 when they differ. */
static int differs_from_seeded(reference *r, const pb_pp_stack_config *cfg, const void *captured, int mb,
                               int (*fill)(const pb_compute *, pb_dtype, void *, int64_t, int64_t, uint64_t, int),
                               long long *wrong)
{
    PB_TRY(fill(r->eng, r->dtype, r->x, cfg->shape.b * cfg->shape.s, cfg->shape.h, cfg->seed, mb));
    PB_TRY(r->eng->to_host(r->host, r->x, r->bytes));
    *wrong += memcmp(captured, r->host, r->bytes) != 0;
    return PB_OK;
}

/* This stage's links, each micro-batch: what each of its chunks received against what the
 * virtual stage before (forward) or after (backward) it sent, or against the seeded tensors
 * at the ends of the model. `all` holds every stage's hashes (link_at). */
static int check_links(reference *r, const pb_pp_stack_config *cfg, const uint64_t *all, int m, long long *wrong)
{
    int p = cfg->p, last = p * cfg->v - 1, s = cfg->stage;
    for (int c = 0; c < cfg->v; c++) {
        int j = c * p + s;
        for (int k = 0; k < m; k++) {
            const void *in, *dout;
            PB_TRY(stage_captured(r, c, k, PB_PP_IN, &in));
            PB_TRY(stage_captured(r, c, k, PB_PP_DOUT, &dout));
            uint64_t got_in = all[link_at(cfg, m, s, c, k, PB_PP_IN)];
            uint64_t got_dout = all[link_at(cfg, m, s, c, k, PB_PP_DOUT)];
            if (j == 0) PB_TRY(differs_from_seeded(r, cfg, in, k, pb_pp_fill_input, wrong));
            else *wrong += got_in != all[link_at(cfg, m, (j - 1) % p, (j - 1) / p, k, PB_PP_OUT)];
            if (j == last) PB_TRY(differs_from_seeded(r, cfg, dout, k, pb_pp_fill_loss_grad, wrong));
            else *wrong += got_dout != all[link_at(cfg, m, (j + 1) % p, (j + 1) / p, k, PB_PP_DIN)];
        }
    }
    return PB_OK;
}

/* Every stage's hashes of its captures, gathered on every stage of the pipeline (all: room
 * for p stages, this stage's part written in place). Collective. */
static void gather_links(const pb_pp_stack_config *cfg, MPI_Comm pipe, const pb_pp_stack *stage, int m, uint64_t *all)
{
    for (int c = 0; c < cfg->v; c++)
        for (int k = 0; k < m; k++)
            for (int w = 0; w < PB_PP_CAPTURED; w++) {
                const void *t = pb_pp_stack_captured(stage, c, k, (pb_pp_captured)w);
                if (t) all[link_at(cfg, m, cfg->stage, c, k, (pb_pp_captured)w)] =
                    pb_hash_fnv1a(PB_HASH_FNV1A_START, t, pb_pp_stack_act_bytes(stage));
            }
    int per_stage = (int)link_at(cfg, m, 1, 0, 0, PB_PP_IN);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, per_stage, MPI_UINT64_T, pipe);
}

int pb_pp_validate_step(const pb_world *w, MPI_Comm pipe, pb_pp_exec *ex, const pb_pp_schedule_plan *plan,
                        pb_pp_stack *st, const pb_pp_stack_config *cfg, pb_layer_recompute ref_rc, int m, int corrupt,
                        long long *wrong)
{
    pb_pp_stats s;
    pb_pp_stack_set_capture(st, 1, corrupt);
    int status = pb_pp_exec_step(ex, plan, pb_pp_stack_ops(), st, &s, NULL);
    pb_pp_stack_set_capture(st, 0, 0);
    status = pb_world_agree_after_step(w->comm, status, PB_STEP_GRACE_S, NULL); /* a stage may wait inside it */
    if (status != PB_OK) return status;
    *wrong = 0;
    reference ref = {.eng = cfg->eng};
    uint64_t *all = calloc(link_at(cfg, m, cfg->p, 0, 0, PB_PP_IN), sizeof *all);
    status = all ? reference_create(cfg, st, corrupt, &ref) : pb_fail(PB_ERR_ENV, "validation: out of memory");
    status = pb_world_agree(w, status); /* every stage, or none, enters the gather */
    if (status == PB_OK && all) { /* !all implies a failure; said for the analyzer */
        gather_links(cfg, pipe, st, m, all);
        for (int c = 0; c < cfg->v && status == PB_OK; c++) status = check_chunk(&ref, cfg, ref_rc, c, m, wrong);
        if (status == PB_OK) status = check_links(&ref, cfg, all, m, wrong);
    }
    reference_free(&ref);
    free(all);
    MPI_Allreduce(MPI_IN_PLACE, wrong, 1, MPI_LONG_LONG, MPI_SUM, w->comm);
    return pb_world_agree(w, status);
}
