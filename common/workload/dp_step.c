/* The data-parallel training step on a layer stack: forward, backward with
 * the synchronizer's ready callback, and the gradient all-reduce, over a
 * gradient buffer whose size may differ from the stack's (dp.h). */
#include "workload/dp.h"

#include "workload/bucket.h"
#include "core/error.h"
#include "core/mem.h"
#include "workload/staging.h"

#include <stdlib.h>
#include <string.h>

struct pb_dp_step {
    pb_dp_step_config cfg;
    pb_layer_shape eff;   /* dtype = what the engine computes in */
    pb_layer_stack *st;
    pb_layer_saved *acts;
    void *x, *y, *dy;     /* tokens x h */
    void *grads;          /* the all-reduced buffer, cfg.grad_bytes */
    uint64_t real, real_in_buf;
    uint64_t *shares;     /* each layer's share of grads */
    pb_dp *dp;
    void *host_local;     /* validation: this rank's contribution */
};

static pb_layer_stack_config stack_config(const pb_dp_step_config *c, void *grads)
{
    return (pb_layer_stack_config){.eng = c->eng, .shape = c->shape, .layer0 = 0, .nlayers = c->nlayers,
                             .model_layers = c->nlayers, .seed = c->seed, .grad_dtype = c->grad_dtype,
                             .grads = grads};
}

uint64_t pb_dp_step_real_bytes(const pb_dp_step_config *cfg)
{
    pb_layer_stack_config sc = stack_config(cfg, NULL);
    return pb_layer_stack_grad_bytes(&sc);
}

static uint64_t grad_bytes(const pb_dp_step_config *cfg)
{
    return cfg->grad_bytes ? cfg->grad_bytes : pb_dp_step_real_bytes(cfg);
}

static uint64_t token_bytes(const pb_dp_step_config *c, pb_layer_shape *eff)
{
    *eff = c->shape;
    eff->dtype = c->eng->gemm_dtype(c->shape.dtype);
    return pb_mem_mul(pb_mem_mul((uint64_t)(eff->b * eff->s), (uint64_t)eff->h), pb_dtype_size(eff->dtype));
}

void pb_dp_step_bytes(const pb_dp_step_config *cfg, uint64_t *engine_bytes, uint64_t *host_bytes)
{
    uint64_t g = grad_bytes(cfg), real = pb_dp_step_real_bytes(cfg);
    /* pb_layer_stack_bytes only asks whether grads are provided: any non-NULL pointer says so. */
    pb_layer_stack_config sc = stack_config(cfg, real <= g ? (void *)cfg : NULL);
    pb_layer_shape eff;
    uint64_t tokens = token_bytes(cfg, &eff);
    uint64_t e = pb_mem_add(pb_layer_stack_bytes(&sc), pb_layer_act_bytes(&eff, cfg->nlayers));
    e = pb_mem_add(pb_mem_add(e, pb_mem_mul(3, tokens)), g);
    /* A staging bucket when engine and backend memory differ (counted here, as an upper bound). */
    *engine_bytes = pb_staging_needed(cfg->eng, cfg->be) ? pb_mem_add(e, g) : e;
    *host_bytes = cfg->check ? pb_mem_add(g, ((uint64_t)1 << 20) * (pb_dtype_size(cfg->grad_dtype) + 16)) : 0;
}

static int make_inputs(pb_dp_step *s)
{
    const pb_dp_step_config *c = &s->cfg;
    uint64_t bytes = token_bytes(c, &s->eff);
    int64_t tokens = s->eff.b * s->eff.s;
    PB_TRY(c->eng->alloc(&s->x, (size_t)bytes));
    PB_TRY(c->eng->alloc(&s->y, (size_t)bytes));
    PB_TRY(c->eng->alloc(&s->dy, (size_t)bytes));
    /* Inputs and loss gradients differ per rank, weights do not: as in DP. */
    PB_TRY(pb_layer_fill_input(c->eng, s->eff.dtype, s->x, tokens, s->eff.h, c->seed, 2 * (uint64_t)c->rank));
    return pb_layer_fill_input(c->eng, s->eff.dtype, s->dy, tokens, s->eff.h, c->seed, 2 * (uint64_t)c->rank + 1);
}

static int make_sync(pb_dp_step *s, uint64_t g)
{
    const pb_dp_step_config *c = &s->cfg;
    int64_t n = c->nlayers;
    uint64_t *real = malloc(sizeof(uint64_t) * (size_t)n);
    s->shares = malloc(sizeof(uint64_t) * (size_t)n);
    if (!real || !s->shares) {
        free(real); /* s->shares, if any, goes with the step (pb_dp_step_destroy) */
        return pb_fail(PB_ERR_ENV, "dp: out of memory for the layout");
    }
    for (int64_t i = 0; i < n; i++) real[i] = s->real / (uint64_t)n;
    int status = pb_dp_layout(real, n, g, pb_dtype_size(c->grad_dtype), s->shares);
    free(real);
    PB_TRY(status);
    pb_dp_config dc = {.be = c->be, .comm = c->comm, .eng = c->eng, .grads = s->grads, .bytes = g,
                       .dtype = c->grad_dtype, .overlap = c->overlap, .bucket_bytes = c->bucket_bytes,
                       .layer_bytes = s->shares, .nlayers = n, .layer0 = 0};
    return pb_dp_create(&dc, &s->dp);
}

static int build(pb_dp_step *s)
{
    const pb_dp_step_config *c = &s->cfg;
    uint64_t g = grad_bytes(c);
    PB_CHECK(g % pb_dtype_size(c->grad_dtype) == 0, PB_ERR_USAGE,
             "--grad-bytes: %llu is not a multiple of the gradient element (%zu bytes)", (unsigned long long)g,
             pb_dtype_size(c->grad_dtype));
    s->real = pb_dp_step_real_bytes(c);
    s->real_in_buf = s->real <= g ? s->real : 0;
    PB_TRY(c->eng->alloc(&s->grads, (size_t)g));
    PB_TRY(c->eng->memset(s->grads, 0, (size_t)g));
    pb_layer_stack_config sc = stack_config(c, s->real_in_buf ? s->grads : NULL);
    PB_TRY(pb_layer_stack_create(&sc, &s->st));
    PB_TRY(pb_layer_saved_alloc(s->st, &s->acts));
    PB_TRY(make_inputs(s));
    if (c->check) {
        s->host_local = malloc((size_t)g);
        PB_CHECK(s->host_local, PB_ERR_ENV, "dp: out of host memory for the validation copy (%llu bytes)",
                 (unsigned long long)g);
    }
    return make_sync(s, g);
}

int pb_dp_step_create(const pb_dp_step_config *cfg, pb_dp_step **out)
{
    *out = NULL;
    PB_CHECK(cfg->shape.tp_size == 1 && cfg->nlayers > 0, PB_ERR_USAGE, "dp step: one TP rank, >= 1 layer");
    pb_dp_step *s = calloc(1, sizeof *s);
    PB_CHECK(s, PB_ERR_ENV, "dp: out of memory");
    s->cfg = *cfg;
    int status = build(s);
    if (status != PB_OK) {
        pb_dp_step_destroy(s);
        return status;
    }
    *out = s;
    return PB_OK;
}

void pb_dp_step_destroy(pb_dp_step *s)
{
    if (!s) return;
    const pb_compute *e = s->cfg.eng;
    pb_dp_destroy(s->dp);
    if (s->acts) pb_layer_saved_free(s->st, s->acts);
    pb_layer_stack_destroy(s->st);
    void *bufs[] = {s->x, s->y, s->dy, s->grads};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i]) e->free(bufs[i]);
    free(s->shares);
    free(s->host_local);
    free(s);
}

uint64_t pb_dp_step_real_in_buffer(const pb_dp_step *s) { return s->real_in_buf; }
pb_dp *pb_dp_step_sync(pb_dp_step *s) { return s->dp; }

double pb_dp_step_flops(const pb_dp_step *s)
{
    return (double)s->cfg.nlayers * pb_layer_step_flops(&s->eff);
}

int pb_dp_step_compute(pb_dp_step *s)
{
    PB_TRY(pb_layer_stack_forward(s->st, s->acts, s->x, s->y));
    PB_TRY(pb_layer_stack_backward(s->st, s->acts, s->dy, NULL, 0, NULL, NULL));
    return s->cfg.eng->synchronize();
}

int pb_dp_step_comm(pb_dp_step *s) { return pb_dp_reduce_all(s->dp); }

int pb_dp_step_full(pb_dp_step *s)
{
    /* Only bucket mode needs the per-layer callback. pb_dp_finish orders the
     * rest of the all-reduce after backward and completes both. */
    int bucket = s->cfg.overlap == PB_DP_OVERLAP_BUCKET;
    PB_TRY(pb_dp_begin(s->dp));
    PB_TRY(pb_layer_stack_forward(s->st, s->acts, s->x, s->y));
    PB_TRY(pb_layer_stack_backward(s->st, s->acts, s->dy, NULL, 0, bucket ? pb_dp_grad_ready : NULL,
                             bucket ? s->dp : NULL));
    return pb_dp_finish(s->dp);
}

int pb_dp_step_zero(pb_dp_step *s) { return s->cfg.eng->memset(s->grads, 0, (size_t)grad_bytes(&s->cfg)); }

int pb_dp_step_validate(pb_dp_step *s, MPI_Comm group, int corrupt, long long *wrong, uint64_t *hash)
{
    const pb_dp_step_config *c = &s->cfg;
    uint64_t g = grad_bytes(c), es = pb_dtype_size(c->grad_dtype);
    PB_CHECK(s->host_local, PB_ERR_USAGE, "dp: validation needs check = 1 at create");
    /* The contribution: real gradients (deterministic, recomputed identically
     * by the step below) and exact integers in the rest of the buffer. */
    int status = pb_dp_fill_known(c->eng, s->grads, c->grad_dtype, s->real_in_buf / es, g / es, c->rank);
    if (status == PB_OK) status = pb_dp_step_compute(s);
    if (status == PB_OK) status = c->eng->to_host(s->host_local, s->grads, (size_t)g);
    /* Agree before the collectives below: a local failure must not leave the other ranks waiting in them. */
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, group);
    PB_TRY(status);
    PB_TRY(pb_dp_step_full(s));
    return pb_dp_check(group, c->eng, s->grads, s->host_local, g, c->grad_dtype, corrupt, wrong, hash);
}
