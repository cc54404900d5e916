/* Internals shared by layer.c (blocks, formulas) and layer_stack.c (stack,
 * activation pool). Not for benchmarks: they use layer.h. */
#ifndef PB_LAYER_IMPL_H
#define PB_LAYER_IMPL_H

#include "compute/layer.h"

/* The activation slots of pb_layer_acts, in its order. */
#define PB_LAYER_SLOTS 6

/* Scratch shared by all layers of a stack (they run one at a time). */
typedef struct pb_layer_impl_scratch {
    void *big;   /* N x max(W1's, Wqkv's columns): the MLP's activation and dZ, attention's dQKV */
    void *d_o;   /* N x h/t: dO of attention */
    void *d_s;   /* heads/kv_heads x s x s: dS of one sequence's query heads of one KV head */
    void *gconv; /* largest weight, compute type: dW before conversion to grad type */
    void *mid;   /* N x h: between the blocks of a whole layer */
    void *pp[2]; /* N x h: gradients between layers of a stack */
    void *work[PB_LAYER_SLOTS]; /* the activation slots recomputation does not keep (NULL: kept) */
    void *replay_y; /* N x h: the output of a layer's forward run again (full recomputation) */
} pb_layer_impl_scratch;

struct pb_layer {
    const pb_compute *eng;
    pb_layer_shape sh; /* dtype = effective compute type */
    int64_t global;    /* global layer index */
    void *w;           /* weights, layout in layer.h */
    void *g;           /* gradients, same layout, in gt */
    pb_dtype gt;
    float resid_scale; /* 1/sqrt(2 * model layers), on Wo and W2 */
    pb_layer_impl_scratch *sc;
};

struct pb_layer_acts {
    void *x_attn; /* N x h       attention input */
    void *qkv;    /* N x (h + 2kv)/t */
    void *scores; /* b x heads/t x s x s (attn_scores only) */
    void *o;      /* N x h/t     (attn_scores only; else O is the Q columns of qkv) */
    void *x_mlp;  /* N x h       MLP input */
    void *hmlp;   /* N x W1's columns: Z = X_mlp W1, the activation's input */
};

/* This rank's columns of Wqkv ((h + 2kv)/t) and of W1 (ffn/t, 2 ffn/t gated),
 * and its rows of W2 (ffn/t). */
int64_t pb_layer_impl_qkv_cols(const pb_layer_shape *sh);
int64_t pb_layer_impl_up_cols(const pb_layer_shape *sh);
int64_t pb_layer_impl_ffn_local(const pb_layer_shape *sh);

/* Byte sizes of the slots above, each rounded up to PB_ACT_ALIGN. */
#define PB_ACT_ALIGN 256
void pb_layer_impl_act_slots(const pb_layer_shape *sh, uint64_t sizes[PB_LAYER_SLOTS]);
/* 1 when the shape's recomputation keeps slot k for each micro-batch; 0 when
 * the stack's layers share one (pb_layer_impl_scratch.work). */
int pb_layer_impl_slot_kept(const pb_layer_shape *sh, int k);

/* Fill layer `ly`'s weights from (seed, global layer, global row, global col). */
int pb_layer_impl_init_weights(pb_layer *ly, uint64_t seed);

#endif
