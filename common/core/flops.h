/* FLOPs of one transformer layer for one micro-batch (Narayanan et al. 2021,
 * appendix): the linear GEMMs 2*b*s*12h^2 (attention 4h^2, MLP 8h^2) plus,
 * with the score GEMMs (Q K^T and S V), 4*b*s^2*h. A rank of a t-way
 * tensor-parallel group does 1/t of it. The planner's model and the compute
 * layers both count with these. */
#ifndef PB_FLOPS_H
#define PB_FLOPS_H

/* Forward FLOPs per rank; scores 0 leaves out the score GEMMs. */
double pb_flops_layer_fwd(double b, double s, double h, int t, int scores);
/* Backward = 2x forward (a dX and a dW GEMM per weight). */
double pb_flops_layer_bwd(double b, double s, double h, int t, int scores);

#endif
