/* Stacks of layers (weights, flat gradient buffer, scratch), per-micro-batch
 * saved activations with a counting pool, and whole-layer passes. */
#include "compute/layer_impl.h"

#include "core/error.h"
#include "core/mem.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- activation pool ------------------------------------------------------ */

typedef struct act_block {
    void *ptr;
    uint64_t bytes;
    int in_use;
} act_block;

struct pb_layer_act_pool {
    const pb_compute *eng;
    act_block *blocks;
    size_t count, cap;
    uint64_t held, peak;
};

int pb_layer_act_pool_create(const pb_compute *eng, pb_layer_act_pool **out)
{
    pb_layer_act_pool *p = calloc(1, sizeof *p);
    PB_CHECK(p, PB_ERR_ENV, "activation pool: out of memory");
    p->eng = eng;
    *out = p;
    return PB_OK;
}

void pb_layer_act_pool_destroy(pb_layer_act_pool *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->count; i++) p->eng->free(p->blocks[i].ptr);
    free(p->blocks);
    free(p);
}

/* Reusing a free block of the same size keeps the engine's allocator (a
 * synchronising cudaMalloc on GPUs) out of the timed loop. */
int pb_layer_act_alloc(pb_layer_act_pool *p, uint64_t bytes, void **ptr)
{
    act_block *b = NULL;
    for (size_t i = 0; i < p->count && !b; i++)
        if (!p->blocks[i].in_use && p->blocks[i].bytes == bytes) b = &p->blocks[i];
    if (!b) {
        if (p->count == p->cap) {
            size_t cap = p->cap ? 2 * p->cap : 8;
            act_block *nb = realloc(p->blocks, cap * sizeof *nb);
            PB_CHECK(nb, PB_ERR_ENV, "activation pool: out of memory");
            p->blocks = nb;
            p->cap = cap;
        }
        void *mem = NULL;
        PB_TRY(p->eng->alloc(&mem, (size_t)bytes));
        b = &p->blocks[p->count++];
        *b = (act_block){.ptr = mem, .bytes = bytes};
    }
    b->in_use = 1;
    p->held += bytes;
    if (p->held > p->peak) p->peak = p->held;
    *ptr = b->ptr;
    return PB_OK;
}

void pb_layer_act_free(pb_layer_act_pool *p, void *ptr)
{
    for (size_t i = 0; ptr && i < p->count; i++) {
        if (p->blocks[i].ptr == ptr && p->blocks[i].in_use) {
            p->blocks[i].in_use = 0;
            p->held -= p->blocks[i].bytes;
            return;
        }
    }
}

uint64_t pb_layer_act_held(const pb_layer_act_pool *p) { return p->held; }
uint64_t pb_layer_act_peak(const pb_layer_act_pool *p) { return p->peak; }
void pb_layer_act_reset_peak(pb_layer_act_pool *p) { p->peak = p->held; }

/* ---- stack ---------------------------------------------------------------- */

struct pb_layer_stack {
    const pb_compute *eng;
    pb_layer_stack_config cfg; /* cfg.shape.dtype = effective */
    void *weights, *grads;
    int own_grads;
    pb_layer_impl_scratch sc;
    pb_layer *layers;
    pb_layer_act_pool *pool;
};

struct pb_layer_saved {
    void *base;
    int64_t n;
    pb_layer_acts *layers;
};

static pb_layer_shape effective_shape(const pb_layer_stack_config *cfg)
{
    pb_layer_shape sh = cfg->shape;
    sh.dtype = cfg->eng->gemm_dtype(sh.dtype);
    return sh;
}

/* Elements of the largest weight of the layer: gconv holds any one of them. */
static uint64_t largest_weight(const pb_layer_shape *sh)
{
    uint64_t most = 0;
    for (int w = 0; w < PB_W_COUNT; w++) {
        int64_t r, c;
        pb_layer_weight_dims(sh, (enum pb_weight)w, &r, &c);
        uint64_t e = pb_mem_mul((uint64_t)r, (uint64_t)c);
        if (e > most) most = e;
    }
    return most;
}

/* Scratch buffers: big, d_o, d_s, gconv, mid, pp0, pp1, the shared activation
 * slots recomputation does not keep, and the replayed forward's output. */
enum { SCRATCH_WORK = 7, SCRATCH_REPLAY_Y = SCRATCH_WORK + PB_LAYER_SLOTS, SCRATCH_COUNT };

static void **scratch_slot(pb_layer_impl_scratch *sc, int i)
{
    void **fixed[SCRATCH_WORK] = {&sc->big, &sc->d_o, &sc->d_s, &sc->gconv, &sc->mid, &sc->pp[0], &sc->pp[1]};
    if (i < SCRATCH_WORK) return fixed[i];
    return i < SCRATCH_REPLAY_Y ? &sc->work[i - SCRATCH_WORK] : &sc->replay_y;
}

/* Scratch sizes in bytes, in scratch_slot's order (0: not needed). */
static void scratch_sizes(const pb_layer_stack_config *cfg, uint64_t sz[SCRATCH_COUNT])
{
    pb_layer_shape sh = effective_shape(cfg);
    uint64_t es = pb_dtype_size(sh.dtype), n = pb_mem_mul((uint64_t)sh.b, (uint64_t)sh.s), h = (uint64_t)sh.h;
    uint64_t hl = h / (uint64_t)sh.tp_size, s = (uint64_t)sh.s;
    uint64_t up = (uint64_t)pb_layer_impl_up_cols(&sh), qkv = (uint64_t)pb_layer_impl_qkv_cols(&sh);
    uint64_t slots[PB_LAYER_SLOTS];
    sz[0] = pb_mem_mul(pb_mem_mul(n, up > qkv ? up : qkv), es);
    sz[1] = sh.attn_scores ? pb_mem_mul(pb_mem_mul(n, hl), es) : 0;
    /* dS of one KV head's query heads (layer.c's backward goes a group at a time) */
    sz[2] = sh.attn_scores ? pb_mem_mul(pb_mem_mul((uint64_t)(sh.heads / pb_layer_kv_heads(&sh)), s * s), es) : 0;
    sz[3] = cfg->grad_dtype != sh.dtype ? pb_mem_mul(largest_weight(&sh), es) : 0;
    sz[4] = sz[5] = sz[6] = pb_mem_mul(pb_mem_mul(n, h), es);
    pb_layer_impl_act_slots(&sh, slots);
    for (int k = 0; k < PB_LAYER_SLOTS; k++) sz[SCRATCH_WORK + k] = pb_layer_impl_slot_kept(&sh, k) ? 0 : slots[k];
    sz[SCRATCH_REPLAY_Y] = sh.recompute == PB_LAYER_RECOMPUTE_FULL ? sz[4] : 0;
}

uint64_t pb_layer_stack_grad_bytes(const pb_layer_stack_config *cfg)
{
    pb_layer_shape sh = effective_shape(cfg);
    return pb_mem_mul(pb_mem_mul((uint64_t)cfg->nlayers, (uint64_t)pb_layer_params_local(&sh)),
                      pb_dtype_size(cfg->grad_dtype));
}

uint64_t pb_layer_stack_bytes(const pb_layer_stack_config *cfg)
{
    pb_layer_shape sh = effective_shape(cfg);
    uint64_t sz[SCRATCH_COUNT], sum = pb_mem_mul(pb_mem_mul((uint64_t)cfg->nlayers, (uint64_t)pb_layer_params_local(&sh)),
                                                 pb_dtype_size(sh.dtype));
    scratch_sizes(cfg, sz);
    for (int i = 0; i < SCRATCH_COUNT; i++) sum = pb_mem_add(sum, sz[i]);
    return pb_mem_add(sum, cfg->grads ? 0 : pb_layer_stack_grad_bytes(cfg));
}

static int alloc_scratch(pb_layer_stack *st)
{
    uint64_t sz[SCRATCH_COUNT];
    scratch_sizes(&st->cfg, sz);
    for (int i = 0; i < SCRATCH_COUNT; i++)
        if (sz[i]) PB_TRY(st->eng->alloc(scratch_slot(&st->sc, i), (size_t)sz[i]));
    return PB_OK;
}

static int check_config(const pb_layer_stack_config *cfg)
{
    PB_CHECK(cfg->eng, PB_ERR_USAGE, "layer stack: no compute engine");
    PB_TRY(pb_layer_shape_check(&cfg->shape));
    if (cfg->nlayers <= 0 || cfg->layer0 < 0)
        return pb_error_usage("--layers", "a stage needs at least one layer, got %lld from layer %lld",
                        (long long)cfg->nlayers, (long long)cfg->layer0);
    if (cfg->model_layers != 0 && cfg->model_layers < cfg->layer0 + cfg->nlayers)
        return pb_error_usage("--layers", "the model has %lld layers but the stage ends at layer %lld",
                        (long long)cfg->model_layers, (long long)cfg->layer0 + (long long)cfg->nlayers);
    if (cfg->grad_dtype != PB_FLOAT32 && cfg->grad_dtype != PB_BFLOAT16)
        return pb_error_usage("--grad-dtype", "gradient type %s not supported; expected float or bfloat16",
                        pb_dtype_name(cfg->grad_dtype));
    return PB_OK;
}

/* Layers of the whole model (for the residual scaling): every pipeline stage
 * must use the same value to build its slice of the same model. */
static int64_t model_layers(const pb_layer_stack_config *cfg)
{
    return cfg->model_layers > 0 ? cfg->model_layers : cfg->layer0 + cfg->nlayers;
}

static int stack_build(pb_layer_stack *st)
{
    const pb_layer_shape *sh = &st->cfg.shape;
    uint64_t per = (uint64_t)pb_layer_params_local(sh);
    PB_TRY(st->eng->alloc(&st->weights, (size_t)(st->cfg.nlayers * per * pb_dtype_size(sh->dtype))));
    if (st->own_grads) PB_TRY(st->eng->alloc(&st->grads, (size_t)pb_layer_stack_grad_bytes(&st->cfg)));
    PB_TRY(st->eng->memset(st->grads, 0, (size_t)pb_layer_stack_grad_bytes(&st->cfg)));
    PB_TRY(alloc_scratch(st));
    PB_TRY(pb_layer_act_pool_create(st->eng, &st->pool));
    st->layers = calloc((size_t)st->cfg.nlayers, sizeof *st->layers);
    PB_CHECK(st->layers, PB_ERR_ENV, "layer stack: out of memory");
    for (int64_t i = 0; i < st->cfg.nlayers; i++) {
        pb_layer *ly = &st->layers[i];
        *ly = (pb_layer){.eng = st->eng, .sh = *sh, .global = st->cfg.layer0 + i, .gt = st->cfg.grad_dtype,
                         .resid_scale = 1.0f / sqrtf(2.0f * (float)model_layers(&st->cfg)), .sc = &st->sc};
        ly->w = (char *)st->weights + (size_t)(i * per * pb_dtype_size(sh->dtype));
        ly->g = (char *)st->grads + (size_t)pb_layer_stack_grad_offset(st, i);
        PB_TRY(pb_layer_impl_init_weights(ly, st->cfg.seed));
    }
    return PB_OK;
}

int pb_layer_stack_create(const pb_layer_stack_config *cfg, pb_layer_stack **out)
{
    *out = NULL;
    PB_TRY(check_config(cfg));
    pb_layer_stack *st = calloc(1, sizeof *st);
    PB_CHECK(st, PB_ERR_ENV, "layer stack: out of memory");
    st->eng = cfg->eng;
    st->cfg = *cfg;
    st->cfg.shape = effective_shape(cfg);
    st->grads = cfg->grads;
    st->own_grads = cfg->grads == NULL;
    int status = stack_build(st);
    if (status != PB_OK) {
        pb_layer_stack_destroy(st);
        return status;
    }
    *out = st;
    return PB_OK;
}

void pb_layer_stack_destroy(pb_layer_stack *st)
{
    if (!st) return;
    if (st->weights) st->eng->free(st->weights);
    if (st->own_grads && st->grads) st->eng->free(st->grads);
    for (int i = 0; i < SCRATCH_COUNT; i++)
        if (*scratch_slot(&st->sc, i)) st->eng->free(*scratch_slot(&st->sc, i));
    pb_layer_act_pool_destroy(st->pool);
    free(st->layers);
    free(st);
}

const pb_layer_shape *pb_layer_stack_shape(const pb_layer_stack *st) { return &st->cfg.shape; }
pb_layer *pb_layer_stack_layer(pb_layer_stack *st, int64_t i) { return i >= 0 && i < st->cfg.nlayers ? &st->layers[i] : NULL; }
void *pb_layer_stack_grads(pb_layer_stack *st) { return st->grads; }
pb_layer_act_pool *pb_layer_stack_pool(pb_layer_stack *st) { return st->pool; }
const void *pb_layer_weights(const pb_layer *ly) { return ly->w; }
const void *pb_layer_grads(const pb_layer *ly) { return ly->g; }
void pb_layer_bind_weights(pb_layer *ly, const void *w) { ly->w = (void *)w; }

uint64_t pb_layer_stack_grad_offset(const pb_layer_stack *st, int64_t i)
{
    return (uint64_t)i * (uint64_t)pb_layer_params_local(&st->cfg.shape) * pb_dtype_size(st->cfg.grad_dtype);
}

int pb_layer_fill_input(const pb_compute *eng, pb_dtype t, void *x, int64_t n, int64_t h, uint64_t seed, uint64_t index)
{
    /* High bit set: a stream no weight (layer * 4 + w) uses. */
    pb_compute_fill_spec spec = {.seed = seed, .stream = ((uint64_t)1 << 63) | index, .scale = 1.7320508f};
    return eng->fill(x, t, n, h, h, &spec);
}

/* ---- per-micro-batch activations ------------------------------------------ */

int pb_layer_saved_alloc(pb_layer_stack *st, pb_layer_saved **out)
{
    const pb_layer_shape *sh = &st->cfg.shape;
    pb_layer_saved *a = calloc(1, sizeof *a);
    PB_CHECK(a, PB_ERR_ENV, "activations: out of memory");
    a->n = st->cfg.nlayers;
    a->layers = calloc((size_t)a->n, sizeof *a->layers);
    if (!a->layers) {
        free(a);
        return pb_fail(PB_ERR_ENV, "activations: out of memory");
    }
    int status = pb_layer_act_alloc(st->pool, pb_layer_act_bytes(sh, a->n), &a->base);
    if (status != PB_OK) {
        free(a->layers);
        free(a);
        return status;
    }
    uint64_t sizes[PB_LAYER_SLOTS];
    pb_layer_impl_act_slots(sh, sizes);
    char *p = a->base;
    for (int64_t i = 0; i < a->n; i++) {
        void **slot[PB_LAYER_SLOTS] = {&a->layers[i].x_attn, &a->layers[i].qkv, &a->layers[i].scores,
                                       &a->layers[i].o,      &a->layers[i].x_mlp, &a->layers[i].hmlp};
        for (int k = 0; k < PB_LAYER_SLOTS; k++) {
            int kept = pb_layer_impl_slot_kept(sh, k);
            *slot[k] = !sizes[k] ? NULL : kept ? p : st->sc.work[k]; /* not kept: the slot the layers share */
            p += kept ? sizes[k] : 0;
        }
    }
    *out = a;
    return PB_OK;
}

void pb_layer_saved_free(pb_layer_stack *st, pb_layer_saved *a)
{
    if (!a) return;
    pb_layer_act_free(st->pool, a->base);
    free(a->layers);
    free(a);
}

pb_layer_acts *pb_layer_saved_layer(pb_layer_saved *a, int64_t i) { return i >= 0 && i < a->n ? &a->layers[i] : NULL; }

/* ---- whole layers ---------------------------------------------------------- */

static int need_single_rank(const pb_layer_shape *sh)
{
    if (sh->tp_size == 1) return PB_OK;
    return pb_fail(PB_ERR_USAGE, "whole-layer passes need tp_size 1 (got %d): run the blocks one by one and "
                                 "reduce their partial outputs in between", sh->tp_size);
}

int pb_layer_forward(pb_layer *ly, pb_layer_acts *sv, const void *x, void *y)
{
    PB_TRY(need_single_rank(&ly->sh));
    PB_TRY(pb_layer_attn_forward(ly, sv, x, sv->x_mlp));
    return pb_layer_mlp_forward(ly, sv, sv->x_mlp, y);
}

int pb_layer_backward(pb_layer *ly, pb_layer_acts *sv, const void *dy, void *dx, int accumulate)
{
    PB_TRY(need_single_rank(&ly->sh));
    /* full recomputation: the forward again from the kept input fills the shared slots */
    if (ly->sh.recompute == PB_LAYER_RECOMPUTE_FULL) PB_TRY(pb_layer_forward(ly, sv, sv->x_attn, ly->sc->replay_y));
    PB_TRY(pb_layer_mlp_backward(ly, sv, dy, ly->sc->mid, accumulate));
    return pb_layer_attn_backward(ly, sv, ly->sc->mid, dx, accumulate);
}

int pb_layer_stack_forward(pb_layer_stack *st, pb_layer_saved *acts, const void *x, void *y)
{
    int64_t n = st->cfg.nlayers;
    for (int64_t i = 0; i < n; i++) {
        /* Each layer writes straight into the next one's saved input. */
        const void *in = i == 0 ? x : acts->layers[i].x_attn;
        void *out = i == n - 1 ? y : acts->layers[i + 1].x_attn;
        PB_TRY(pb_layer_forward(&st->layers[i], &acts->layers[i], in, out));
    }
    return PB_OK;
}

int pb_layer_stack_backward(pb_layer_stack *st, pb_layer_saved *acts, const void *dy, void *dx, int accumulate,
                      pb_layer_grad_ready_fn ready, void *user)
{
    int64_t n = st->cfg.nlayers;
    uint64_t layer_bytes = pb_layer_stack_grad_offset(st, 1);
    const void *in = dy;
    for (int64_t i = n - 1; i >= 0; i--) {
        void *out = i == 0 && dx ? dx : st->sc.pp[i & 1];
        PB_TRY(pb_layer_backward(&st->layers[i], &acts->layers[i], in, out, accumulate));
        if (ready) PB_TRY(ready(user, st->cfg.layer0 + i, pb_layer_stack_grad_offset(st, i), layer_bytes));
        in = out;
    }
    return PB_OK;
}
