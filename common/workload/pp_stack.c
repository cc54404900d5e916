/* The default pipeline stage: one pb_layer_stack per virtual chunk, no tensor
 * parallelism. Its activation pools measure the peak memory a schedule holds. */
#include "workload/pp.h"

#include "core/dtype.h"
#include "core/error.h"
#include "core/mem.h"

#include <stdlib.h>
#include <string.h>

/* Weight gradients travel and are compared in pieces of at most this many
 * bytes (pb_pp_stack_grad_piece_bytes), so the host buffers stay small
 * whatever the model. */
#define GRAD_PIECE ((size_t)16 << 20)

struct pb_pp_stack {
    pb_pp_stack_config cfg;
    pb_layer_stack **chunk;      /* v stacks */
    pb_layer_saved **acts;        /* [chunk * max_mb + mb] */
    int *accumulated;      /* per chunk: a backward already ran this step */
    uint64_t peak;         /* of the sum over the chunks' pools */
    int64_t tokens;
    pb_dtype dtype;        /* effective */
    size_t act_bytes;      /* one N x h tensor */
    unsigned char *cap;    /* host copies: [chunk][mb][PB_PP_CAPTURED] tensors */
    int capturing;
    int corrupt_received;  /* test fault: alter what chunk 0 and chunk v-1 of micro-batch 0 receive */
};

int64_t pb_pp_chunk_layer0(const pb_pp_stack_config *cfg, int chunk)
{
    int64_t per = cfg->layers / (cfg->p * cfg->v);
    return ((int64_t)chunk * cfg->p + cfg->stage) * per;
}

static pb_layer_stack_config chunk_config(const pb_pp_stack_config *cfg, int chunk)
{
    return (pb_layer_stack_config){.eng = cfg->eng, .shape = cfg->shape, .layer0 = pb_pp_chunk_layer0(cfg, chunk),
                             .nlayers = cfg->layers / (cfg->p * cfg->v), .model_layers = cfg->layers,
                             .seed = cfg->seed, .grad_dtype = cfg->grad_dtype};
}

uint64_t pb_pp_stack_bytes(const pb_pp_stack_config *cfg, int in_flight)
{
    pb_layer_stack_config c = chunk_config(cfg, 0);
    pb_layer_shape sh = cfg->shape;
    sh.dtype = cfg->eng->gemm_dtype(sh.dtype);
    return pb_mem_add(pb_mem_mul((uint64_t)cfg->v, pb_layer_stack_bytes(&c)),
                      pb_mem_mul((uint64_t)in_flight, pb_layer_act_bytes(&sh, c.nlayers)));
}

/* Each chunk's tensors of each micro-batch, in and out of its forward and backward. */
static uint64_t capture_count(const pb_pp_stack_config *cfg)
{
    return pb_mem_mul(pb_mem_mul((uint64_t)cfg->v, (uint64_t)cfg->max_mb), PB_PP_CAPTURED);
}

uint64_t pb_pp_stack_capture_bytes(const pb_pp_stack_config *cfg)
{
    pb_layer_shape sh = cfg->shape;
    sh.dtype = cfg->eng->gemm_dtype(sh.dtype);
    return cfg->capture ? pb_mem_mul(capture_count(cfg), pb_layer_io_bytes(&sh)) : 0;
}

uint64_t pb_pp_stack_chunk_grad_bytes(const pb_pp_stack_config *cfg)
{
    pb_layer_stack_config c = chunk_config(cfg, 0);
    return pb_layer_stack_grad_bytes(&c);
}

uint64_t pb_pp_stack_grad_piece_bytes(const pb_pp_stack_config *cfg)
{
    uint64_t chunk = pb_pp_stack_chunk_grad_bytes(cfg);
    return chunk < GRAD_PIECE ? chunk : GRAD_PIECE;
}

void pb_pp_stack_destroy(pb_pp_stack *st)
{
    if (!st) return;
    for (int c = 0; st->chunk && c < st->cfg.v; c++) {
        for (int k = 0; st->acts && k < st->cfg.max_mb; k++)
            if (st->acts[c * st->cfg.max_mb + k]) pb_layer_saved_free(st->chunk[c], st->acts[c * st->cfg.max_mb + k]);
        pb_layer_stack_destroy(st->chunk[c]);
    }
    free(st->chunk);
    free(st->acts);
    free(st->accumulated);
    free(st->cap);
    free(st);
}

int pb_pp_stack_create(const pb_pp_stack_config *cfg, pb_pp_stack **out)
{
    PB_CHECK(cfg->shape.tp_size == 1, PB_ERR_USAGE, "pipeline stack: tp_size must be 1");
    PB_CHECK(cfg->layers % (cfg->p * cfg->v) == 0, PB_ERR_USAGE, "pipeline stack: %d x %d chunks do not divide %lld layers",
             cfg->p, cfg->v, (long long)cfg->layers);
    pb_pp_stack *st = calloc(1, sizeof *st);
    PB_CHECK(st, PB_ERR_ENV, "pipeline stack: out of memory");
    st->cfg = *cfg;
    /* tables of pointers: one stack per chunk, one activation pool per (chunk, micro-batch) */
    st->chunk = calloc((size_t)cfg->v, sizeof(pb_layer_stack *));
    st->acts = calloc((size_t)cfg->v * (size_t)cfg->max_mb, sizeof(pb_layer_saved *));
    st->accumulated = calloc((size_t)cfg->v, sizeof *st->accumulated);
    int have = st->chunk && st->acts && st->accumulated;
    int status = have ? PB_OK : pb_fail(PB_ERR_ENV, "pipeline stack: out of memory");
    for (int c = 0; have && c < cfg->v && status == PB_OK; c++) {
        pb_layer_stack_config sc = chunk_config(cfg, c);
        status = pb_layer_stack_create(&sc, &st->chunk[c]);
    }
    if (have && status == PB_OK) {
        const pb_layer_shape *sh = pb_layer_stack_shape(st->chunk[0]);
        st->dtype = sh->dtype;
        st->tokens = sh->b * sh->s;
        st->act_bytes = (size_t)st->tokens * (size_t)sh->h * pb_dtype_size(st->dtype);
    }
    if (status == PB_OK && cfg->capture) {
        st->cap = malloc(st->act_bytes * (size_t)capture_count(cfg));
        if (!st->cap) status = pb_fail(PB_ERR_ENV, "pipeline stack: out of memory for captures");
    }
    if (status != PB_OK) {
        pb_pp_stack_destroy(st);
        return status;
    }
    *out = st;
    return PB_OK;
}

pb_dtype pb_pp_stack_dtype(const pb_pp_stack *st) { return st->dtype; }

void pb_pp_stack_set_capture(pb_pp_stack *st, int on, int corrupt_received)
{
    st->capturing = on && st->cap;
    st->corrupt_received = st->capturing && corrupt_received;
}

static unsigned char *captured(const pb_pp_stack *st, int chunk, int mb, pb_pp_captured which)
{
    if (!st->cap || chunk < 0 || chunk >= st->cfg.v || mb < 0 || mb >= st->cfg.max_mb) return NULL;
    size_t k = ((size_t)chunk * (size_t)st->cfg.max_mb + (size_t)mb) * PB_PP_CAPTURED + which;
    return st->cap + k * st->act_bytes;
}

const void *pb_pp_stack_captured(const pb_pp_stack *st, int chunk, int mb, pb_pp_captured which)
{
    return captured(st, chunk, mb, which);
}

size_t pb_pp_stack_act_bytes(const pb_pp_stack *st) { return st->act_bytes; }

/* Take a copy of `src` (engine) as `which`; under the test fault, what micro-batch 0 received at
 * `chunk` is first altered in place by one element, so the stage computes on other values than
 * were sent: only the check of the links can see it. */
static int capture(pb_pp_stack *st, int chunk, int mb, pb_pp_captured which, const void *src, int fault_chunk)
{
    if (!st->capturing) return PB_OK; /* every timed step: nothing to do */
    unsigned char *dst = captured(st, chunk, mb, which);
    if (!dst) return PB_OK;
    PB_TRY(st->cfg.eng->to_host(dst, src, st->act_bytes));
    if (!st->corrupt_received || mb != 0 || chunk != fault_chunk) return PB_OK;
    size_t mid = st->act_bytes / pb_dtype_size(st->dtype) / 2;
    pb_dtype_set(st->dtype, dst, mid, pb_dtype_get(st->dtype, dst, mid) + 1.0);
    return st->cfg.eng->from_host((void *)src, dst, st->act_bytes); /* the received buffer: this stage's */
}

const void *pb_pp_stack_chunk_grads(pb_pp_stack *st, int chunk)
{
    return chunk >= 0 && chunk < st->cfg.v ? pb_layer_stack_grads(st->chunk[chunk]) : NULL;
}

/* Distinct streams of the counter-based generator for inputs and loss gradients. */
int pb_pp_fill_input(const pb_compute *eng, pb_dtype t, void *x, int64_t tokens, int64_t h, uint64_t seed, int mb)
{
    return pb_layer_fill_input(eng, t, x, tokens, h, seed, (uint64_t)mb);
}

int pb_pp_fill_loss_grad(const pb_compute *eng, pb_dtype t, void *dy, int64_t tokens, int64_t h, uint64_t seed,
                         int mb)
{
    return pb_layer_fill_input(eng, t, dy, tokens, h, seed ^ 0x9e3779b97f4a7c15ull, (uint64_t)mb);
}

/* ---- callbacks ----------------------------------------------------------- */

static int begin_step(void *user)
{
    pb_pp_stack *st = user;
    uint64_t held = 0;
    for (int c = 0; c < st->cfg.v; c++) {
        st->accumulated[c] = 0;
        pb_layer_act_reset_peak(pb_layer_stack_pool(st->chunk[c]));
        held += pb_layer_act_held(pb_layer_stack_pool(st->chunk[c]));
    }
    st->peak = held;
    return PB_OK;
}

static int act_alloc(void *user, int chunk, int mb)
{
    pb_pp_stack *st = user;
    PB_CHECK(mb < st->cfg.max_mb && !st->acts[chunk * st->cfg.max_mb + mb], PB_ERR_CHECK,
             "pipeline stack: micro-batch %d of chunk %d already held or beyond %d", mb, chunk, st->cfg.max_mb);
    PB_TRY(pb_layer_saved_alloc(st->chunk[chunk], &st->acts[chunk * st->cfg.max_mb + mb]));
    /* Peak of what the pools really hold, summed over the chunks at this moment. */
    uint64_t held = 0;
    for (int c = 0; c < st->cfg.v; c++) held += pb_layer_act_held(pb_layer_stack_pool(st->chunk[c]));
    if (held > st->peak) st->peak = held;
    return PB_OK;
}

static void act_free(void *user, int chunk, int mb)
{
    pb_pp_stack *st = user;
    pb_layer_saved **a = &st->acts[chunk * st->cfg.max_mb + mb];
    if (*a) pb_layer_saved_free(st->chunk[chunk], *a);
    *a = NULL;
}

static int forward(void *user, int chunk, int mb, const void *in, void *out)
{
    pb_pp_stack *st = user;
    PB_TRY(capture(st, chunk, mb, PB_PP_IN, in, 0));
    PB_TRY(pb_layer_stack_forward(st->chunk[chunk], st->acts[chunk * st->cfg.max_mb + mb], in, out));
    PB_TRY(st->cfg.eng->synchronize());
    return capture(st, chunk, mb, PB_PP_OUT, out, -1);
}

static int backward(void *user, int chunk, int mb, const void *dout, void *din)
{
    pb_pp_stack *st = user;
    PB_TRY(capture(st, chunk, mb, PB_PP_DOUT, dout, st->cfg.v - 1));
    PB_TRY(pb_layer_stack_backward(st->chunk[chunk], st->acts[chunk * st->cfg.max_mb + mb], dout, din,
                             st->accumulated[chunk], NULL, NULL));
    st->accumulated[chunk] = 1;
    PB_TRY(st->cfg.eng->synchronize());
    return capture(st, chunk, mb, PB_PP_DIN, din, -1);
}

static int input(void *user, int mb, void *x)
{
    pb_pp_stack *st = user;
    return pb_pp_fill_input(st->cfg.eng, st->dtype, x, st->tokens, st->cfg.shape.h, st->cfg.seed, mb);
}

static int loss_grad(void *user, int mb, void *dy)
{
    pb_pp_stack *st = user;
    return pb_pp_fill_loss_grad(st->cfg.eng, st->dtype, dy, st->tokens, st->cfg.shape.h, st->cfg.seed, mb);
}

static uint64_t act_peak(void *user) { return ((pb_pp_stack *)user)->peak; }

static const pb_pp_ops stack_ops = {
    .begin_step = begin_step, .act_alloc = act_alloc, .act_free = act_free, .forward = forward,
    .backward = backward, .input = input, .loss_grad = loss_grad, .act_peak = act_peak,
};

const pb_pp_ops *pb_pp_stack_ops(void) { return &stack_ops; }
