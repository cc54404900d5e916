/* The gradient size whose all-reduce takes a target share of the compute.
 *
 * dp_allreduce --target-ratio R measures, in its own process, with the step's
 * own buffers and ranks, the no-overlap step's loop (the all-reduce alone and
 * the forward + backward compute alone) for a candidate gradient size (a
 * probe), and searches the
 * size whose comm/compute is R. The search is kept apart from the probing so
 * a unit test can drive it with a known comm(size) curve.
 *
 * Search: a probe at `start`; while the target is not bracketed, the next size
 * is on the secant through the last two probes (exact where the all-reduce
 * takes alpha + bytes/bw), the first one scaled by R / ratio, each within
 * x1/16..x16 of the last; once bracketed, linear
 * interpolation between the bracket's ends, kept inside its middle three
 * quarters so the bracket always shrinks, with the Illinois rule: an end kept
 * by two probes in a row has its distance from R halved, so that a curved
 * comm(size) does not hold one end while the other creeps. It stops at the
 * first probe within `tol` of R, after `max_probes`, when the bracket is one
 * `align` wide, or when its sizes are within `tol` of each other.
 * Noise may give a probe that contradicts the bracket; the bracket then keeps
 * the newer point. The answer is the probe nearest R. */
#ifndef PB_DP_TARGET_H
#define PB_DP_TARGET_H

#include <stdint.h>

typedef struct pb_dp_target_cfg {
    double target;       /* comm/compute sought, > 0 */
    double tol;          /* relative: |ratio/target - 1| <= tol stops the search */
    uint64_t start;      /* first candidate size (bytes) */
    uint64_t align;      /* every candidate is a multiple of it; 0 is taken as 1 */
    uint64_t max_bytes;  /* no candidate above it */
    int max_probes;      /* >= 1 */
} pb_dp_target_cfg;

typedef struct pb_dp_target_result {
    uint64_t grad_bytes; /* the probe nearest the target */
    double ratio;        /* its measured comm/compute */
    int probes;          /* probes made */
    int converged;       /* its ratio is within tol of the target */
} pb_dp_target_result;

/* Measures comm/compute at `grad_bytes`; returns a PB_ status (an error ends the search with it). */
typedef int (*pb_dp_target_probe_fn)(void *ctx, uint64_t grad_bytes, double *ratio);

int pb_dp_target_search(const pb_dp_target_cfg *cfg, pb_dp_target_probe_fn probe, void *ctx, pb_dp_target_result *out);

#endif
