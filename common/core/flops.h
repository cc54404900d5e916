/* FLOPs of one transformer layer for one micro-batch (Narayanan et al. 2021,
 * appendix, generalised to grouped-query attention and gated MLPs): every
 * linear weight costs 2 FLOPs per parameter per token forward, so the linear
 * GEMMs are 2*b*s*P with P the layer's linear parameters
 * (pb_flops_layer_linear_params); the score GEMMs (Q K^T and P V) add
 * 4*b*s^2*h whatever the number of KV heads. A rank of a t-way tensor-parallel
 * group does 1/t of it. The planner's model and the compute layers both count
 * with these. */
#ifndef PB_FLOPS_H
#define PB_FLOPS_H

/* Linear parameters of one layer:
 *   attention  Q h*h, K and V h*(kv_heads*h/heads) each, output h*h;
 *   MLP        2*h*ffn (GELU: up and down), 3*h*ffn when gated (SwiGLU:
 *              gate, up and down).
 * With kv_heads = heads and ffn = 4h (GPT) this is 12h^2. */
double pb_flops_layer_linear_params(double h, double heads, double kv_heads, double ffn, int gated);

/* Forward FLOPs per rank; scores 0 leaves out the score GEMMs. */
double pb_flops_layer_fwd(double b, double s, double h, double linear_params, int t, int scores);
/* Backward = 2x forward (a dX and a dW GEMM per weight). */
double pb_flops_layer_bwd(double b, double s, double h, double linear_params, int t, int scores);

#endif
