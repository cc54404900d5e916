/* A Megatron transformer layer built only from compute-engine primitives, so
 * it runs unchanged on BLAS or cuBLAS. See docs/compute.md.
 *
 * A layer is two blocks, the unit between which tensor parallelism talks:
 *   attention: X -> QKV = X Wqkv            (column-parallel, h x (h + 2 kv)/t,
 *                 kv = kv_heads * h/heads: grouped-query attention shares
 *                 each K/V head among heads/kv_heads query heads)
 *              -> per local head O = softmax(Q K^T / sqrt(hd)) V  (only with
 *                 attn_scores; without, O = Q: the head's query passes through)
 *              -> Y = X + O Wo              (row-parallel, (h/t) x h: a PARTIAL sum)
 *   MLP:       X -> H = gelu(X W1)          (column-parallel, h x ffn/t; gelu's
 *                 tanh form, as in GPT-2 and Megatron-LM), or with `gated`
 *                 H = silu(X Wg) * (X Wu)   (SwiGLU, LLaMA: W1 = [Wg | Wu], h x 2 ffn/t)
 *              -> Y = X + H W2              (row-parallel, (ffn/t) x h: a PARTIAL sum)
 * With t > 1 the caller all-reduces (or reduce-scatters) each block's output
 * and the input gradient of each block's backward. The residual X (and dY in
 * backward) is added by TP rank 0 only, so the SUM of the partials is right.
 * There are no layer norms or biases (O(h) work that does not change the
 * communication); Wo and W2 are scaled by 1/sqrt(2L) so the residual stream
 * stays O(1) without norms (see docs/compute.md).
 *
 * All activations use one row-major [N x width] layout with N = b*s tokens.
 * Per layer the weights and their gradients are stored in this order:
 *   Wqkv [h x (h + 2kv)/t] (columns: Q heads | K heads | V heads of this rank),
 *   Wo [h/t x h], W1 [h x ffn/t, or 2 ffn/t gated: gate | up], W2 [ffn/t x h],
 * and the gradients of all layers of a stack form ONE flat buffer, layer 0
 * first, so data parallelism can all-reduce any byte range of it. */
#ifndef PB_LAYER_H
#define PB_LAYER_H

#include "compute/compute.h"

#include <stddef.h>
#include <stdint.h>

/* What a layer's backward computes again instead of keeping from its forward
 * (Megatron-LM's activation recomputation, Korthikanti et al. 2022):
 *   NONE       every slot below is kept for each micro-batch;
 *   SELECTIVE  the attention core (the s x s scores, the largest slot) is
 *              recomputed from the kept QKV: 4*b*s^2*h/t more FLOPs;
 *   FULL       only each layer's input is kept, and the whole layer's forward
 *              runs again before its backward (whole-layer passes only: the
 *              blocks of tensor parallelism would need its communication again).
 * What is not kept lives in one set of slots the stack's layers share. */
typedef enum { PB_LAYER_RECOMPUTE_NONE, PB_LAYER_RECOMPUTE_SELECTIVE, PB_LAYER_RECOMPUTE_FULL } pb_layer_recompute;

typedef struct pb_layer_shape {
    int64_t b, s, h, heads; /* micro-batch, sequence, hidden, attention (query) heads */
    int64_t kv_heads;       /* key/value heads; 0: heads (multi-head attention) */
    int64_t ffn;            /* the MLP's inner width; 0: 4h */
    int gated;              /* 1: SwiGLU MLP (three matrices), 0: GELU (two) */
    int tp_size, tp_rank;   /* tensor-parallel group size t and this rank's index */
    int attn_scores;        /* 1: run the Q K^T and S V GEMMs (4*b*s^2*h/t FLOPs forward) */
    pb_dtype dtype;         /* activations and weights (what the engine really computes in) */
    int recompute;          /* pb_layer_recompute (0: none) */
} pb_layer_shape;

/* "none", "selective", "full", NULL: the names of pb_layer_recompute, in order. */
const char *const *pb_layer_recompute_names(void);

enum pb_weight { PB_W_QKV, PB_W_O, PB_W_UP, PB_W_DOWN, PB_W_COUNT };

/* PB_OK, or PB_ERR_USAGE naming the option (--hidden, --heads, --tp, ...). */
int pb_layer_shape_check(const pb_layer_shape *sh);

/* The shape's KV heads and MLP width with their defaults applied (0: heads, 4h). */
int64_t pb_layer_kv_heads(const pb_layer_shape *sh);
int64_t pb_layer_ffn(const pb_layer_shape *sh);

/* Rows and columns of this rank's shard of weight w. */
void pb_layer_weight_dims(const pb_layer_shape *sh, enum pb_weight w, int64_t *rows, int64_t *cols);
/* Elements before weight w inside one layer's block. */
int64_t pb_layer_weight_offset(const pb_layer_shape *sh, enum pb_weight w);
/* Parameters of one layer held by this rank: core/flops.h's count / t. */
int64_t pb_layer_params_local(const pb_layer_shape *sh);

/* FLOPs one rank executes for one layer's forward and backward of one
 * micro-batch of shape sh: core/flops.h's count, with the shape's t and
 * attn_scores, and what its recomputation runs again. */
double pb_layer_step_flops(const pb_layer_shape *sh);

/* Bytes one micro-batch's saved activations take for `nlayers` layers (what a
 * pipeline stage holds per micro-batch in flight; pb_layer_saved_alloc takes
 * exactly this): the slots the shape's recomputation keeps. */
uint64_t pb_layer_act_bytes(const pb_layer_shape *sh, int64_t nlayers);
/* Bytes of one b x s x h tensor of the shape's type: a layer's input or output. */
uint64_t pb_layer_io_bytes(const pb_layer_shape *sh);

/* ---- Activation pool: counts bytes held now and the peak --------------- */

typedef struct pb_layer_act_pool pb_layer_act_pool;
int pb_layer_act_pool_create(const pb_compute *eng, pb_layer_act_pool **out);
/* Frees every cached block; blocks still held by the caller are freed too. */
void pb_layer_act_pool_destroy(pb_layer_act_pool *pool);
/* Engine memory of `bytes`; a freed block of the same size is reused. */
int pb_layer_act_alloc(pb_layer_act_pool *pool, uint64_t bytes, void **ptr);
void pb_layer_act_free(pb_layer_act_pool *pool, void *ptr);
uint64_t pb_layer_act_held(const pb_layer_act_pool *pool);
uint64_t pb_layer_act_peak(const pb_layer_act_pool *pool);
void pb_layer_act_reset_peak(pb_layer_act_pool *pool); /* peak = held */

/* ---- Stack: the layers of one pipeline stage (or the whole model) ------- */

typedef struct pb_layer_stack_config {
    const pb_compute *eng;
    pb_layer_shape shape; /* shape.dtype is the REQUESTED type; see pb_layer_stack_shape */
    int64_t layer0;       /* global index of the first layer (seeds weights) */
    int64_t nlayers;
    int64_t model_layers; /* layers of the whole model (residual scaling); 0 = layer0 + nlayers */
    uint64_t seed;
    pb_dtype grad_dtype;  /* PB_FLOAT32 or PB_BFLOAT16 */
    void *grads;          /* engine memory of pb_layer_stack_grad_bytes(), or NULL to allocate */
} pb_layer_stack_config;

typedef struct pb_layer_stack pb_layer_stack;
typedef struct pb_layer pb_layer;        /* one layer's weights, grads and scratch */
typedef struct pb_layer_saved pb_layer_saved;          /* one micro-batch's saved activations */
typedef struct pb_layer_acts pb_layer_acts;

/* Engine memory the stack itself takes (weights, grads unless provided,
 * scratch), for pb_mem_require before pb_layer_stack_create. Activations excluded. */
uint64_t pb_layer_stack_bytes(const pb_layer_stack_config *cfg);
/* Flat gradient buffer size: nlayers * pb_layer_params_local * sizeof(grad_dtype). */
uint64_t pb_layer_stack_grad_bytes(const pb_layer_stack_config *cfg);

int pb_layer_stack_create(const pb_layer_stack_config *cfg, pb_layer_stack **out);
void pb_layer_stack_destroy(pb_layer_stack *st);
const pb_layer_shape *pb_layer_stack_shape(const pb_layer_stack *st); /* dtype = effective */
pb_layer *pb_layer_stack_layer(pb_layer_stack *st, int64_t local_index);
void *pb_layer_stack_grads(pb_layer_stack *st);
/* Byte offset of layer i's gradients in the flat buffer (i = local index). */
uint64_t pb_layer_stack_grad_offset(const pb_layer_stack *st, int64_t local_index);
pb_layer_act_pool *pb_layer_stack_pool(pb_layer_stack *st);
/* Weights of one layer (engine memory, layout above); for validation. */
const void *pb_layer_weights(const pb_layer *ly);
const void *pb_layer_grads(const pb_layer *ly);
/* Point layer ly at weights held elsewhere (its layout, the effective
 * compute type): sharded data parallelism gathers each layer's weights into
 * a buffer of its own before the layer runs. */
void pb_layer_bind_weights(pb_layer *ly, const void *w);

/* Fill a tokens x h input deterministically from (seed, micro-batch index),
 * values ~U(-sqrt3, sqrt3) (unit variance). */
int pb_layer_fill_input(const pb_compute *eng, pb_dtype t, void *x, int64_t tokens, int64_t h, uint64_t seed,
                  uint64_t index);

/* One micro-batch's activations for every layer of the stack, from its pool. */
int pb_layer_saved_alloc(pb_layer_stack *st, pb_layer_saved **out);
void pb_layer_saved_free(pb_layer_stack *st, pb_layer_saved *acts);
pb_layer_acts *pb_layer_saved_layer(pb_layer_saved *acts, int64_t local_index);

/* ---- Blocks (tensor parallelism runs these one by one) ----------------- */
/* x, dy: N x h, replicated on the TP group. y, dx: N x h partial sums to reduce.
 * Forward saves what backward needs in `saved` (x is copied in).
 * accumulate: 0 overwrites the layer's gradients, 1 adds (micro-batches).
 * With selective recomputation the attention backward first runs the
 * attention core again; full recomputation is for whole layers only. */
int pb_layer_attn_forward(pb_layer *ly, pb_layer_acts *saved, const void *x, void *y);
int pb_layer_attn_backward(pb_layer *ly, pb_layer_acts *saved, const void *dy, void *dx, int accumulate);
int pb_layer_mlp_forward(pb_layer *ly, pb_layer_acts *saved, const void *x, void *y);
int pb_layer_mlp_backward(pb_layer *ly, pb_layer_acts *saved, const void *dy, void *dx, int accumulate);

/* ---- Whole layers (tp_size 1 only: no communication between blocks) --- */

/* Called after layer `layer` (global index) has its weight gradients
 * queued on the engine: bytes [offset, offset+bytes) of the flat gradient
 * buffer. They may still be in flight (GPU engines): a callback that hands
 * them to a communicator orders it first (ordering.h). A non-zero return stops
 * backward and is returned. */
typedef int (*pb_layer_grad_ready_fn)(void *user, int64_t layer, uint64_t offset, uint64_t bytes);

int pb_layer_forward(pb_layer *ly, pb_layer_acts *saved, const void *x, void *y);
/* With full recomputation, runs the layer's forward again from its kept input first. */
int pb_layer_backward(pb_layer *ly, pb_layer_acts *saved, const void *dy, void *dx, int accumulate);
/* x -> all layers -> y. */
int pb_layer_stack_forward(pb_layer_stack *st, pb_layer_saved *acts, const void *x, void *y);
/* dy -> layers last..first -> dx (dx may be NULL: computed into scratch).
 * `ready` (may be NULL) runs after each layer's weight gradients. */
int pb_layer_stack_backward(pb_layer_stack *st, pb_layer_saved *acts, const void *dy, void *dx, int accumulate,
                      pb_layer_grad_ready_fn ready, void *user);

#endif
