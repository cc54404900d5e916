/* Internals shared by layer.c (blocks, formulas) and layer_stack.c (stack,
 * activation pool). Not for benchmarks: they use layer.h. */
#ifndef PB_LAYER_IMPL_H
#define PB_LAYER_IMPL_H

#include "compute/layer.h"

/* Scratch shared by all layers of a stack (they run one at a time). */
typedef struct pb_layer_impl_scratch {
    void *big;   /* N x 4h/t: gelu(Z) and dH of the MLP, dQKV (N x 3h/t) of attention */
    void *d_o;   /* N x h/t: dO of attention */
    void *d_s;   /* heads/t x s x s: dS of one sequence's local heads */
    void *gconv; /* largest weight, compute type: dW before conversion to grad type */
    void *mid;   /* N x h: between the blocks of a whole layer */
    void *pp[2]; /* N x h: gradients between layers of a stack */
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
    void *qkv;    /* N x 3h/t */
    void *scores; /* b x heads/t x s x s (attn_scores only) */
    void *o;      /* N x h/t     (attn_scores only; else O is the V columns of qkv) */
    void *x_mlp;  /* N x h       MLP input */
    void *hmlp;   /* N x 4h/t    Z = X_mlp W1, gelu's input */
};

/* Byte sizes of the slots above, each rounded up to PB_ACT_ALIGN. */
#define PB_ACT_ALIGN 256
void pb_layer_impl_act_slots(const pb_layer_shape *sh, uint64_t sizes[6]);

/* Fill layer `ly`'s weights from (seed, global layer, global row, global col). */
int pb_layer_impl_init_weights(pb_layer *ly, uint64_t seed);

#endif
