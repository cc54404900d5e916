/* 3D parallelism: one training step on a TP x PP x DP grid, composed from the
 * same modules the single-axis benchmarks use:
 *   - each pipeline stage is a tensor-parallel stack (tp.h) over its TP group;
 *   - the pipeline executor (pp.h) runs a 1F1B (or GPipe) schedule over the
 *     PP group, with the TP stack as the stage's compute (callbacks below);
 *   - after the pipeline step, the data-parallel synchronizer (dp.h)
 *     all-reduces the stage's gradients over the DP group.
 * Which world rank holds which grid position is a placement (placement.h). */
#ifndef PB_HYBRID_H
#define PB_HYBRID_H

#include "backend/comm.h"
#include "compute/compute.h"
#include "workload/dp.h"
#include "workload/placement.h"
#include "workload/pp.h"
#include "workload/tp.h"
#include "core/world.h"

typedef struct pb_hybrid_config {
    const pb_compute *eng;
    const pb_comm_backend *be;
    const pb_world *w;
    int T, P, D;
    const int *rank_at;    /* grid position -> world rank (placement.h) */
    pb_layer_shape shape;  /* b, s, h, heads, attn_scores, requested dtype (tp fields set here) */
    int64_t layers;        /* L of the whole model; P must divide it */
    pb_tp_mode tp_mode;
    pb_pp_sched sched;
    int micro_batches;
    uint64_t seed;
    pb_dtype grad_dtype;
} pb_hybrid_config;

/* What one step cost this rank, per axis. */
typedef struct pb_hybrid_stats {
    double step_us;       /* pipeline step + DP all-reduce, wall time */
    double compute_us;    /* TP stack compute (forward + backward GEMMs) */
    double tp_comm_us;    /* TP collectives */
    double pp_wait_us;    /* waiting for pipeline receives and sends */
    double dp_comm_us;    /* the gradient all-reduce */
    double tp_bytes, pp_bytes, dp_bytes; /* sent by this rank */
} pb_hybrid_stats;

typedef struct pb_hybrid pb_hybrid;

/* This rank's grid coordinates and the link class of each of its groups. */
typedef struct pb_hybrid_coords {
    int t, p, d;
    const char *tp_link, *pp_link, *dp_link;
} pb_hybrid_coords;

/* Engine and backend bytes this rank will allocate (pb_mem_require first). */
uint64_t pb_hybrid_bytes(const pb_hybrid_config *cfg);

/* Collective over the world: split the groups, create the TP stack, the
 * pipeline executor and the DP synchronizer. */
int pb_hybrid_create(const pb_hybrid_config *cfg, pb_hybrid **out);
void pb_hybrid_destroy(pb_hybrid *h);
/* Communicators pb_hybrid_create makes on every rank, all freed by
 * pb_hybrid_destroy: the TP group's, the DP group's and the pipeline's
 * (pb_pp_exec_comms, no ring). */
int pb_hybrid_comms(int P);
void pb_hybrid_get_coords(const pb_hybrid *h, pb_hybrid_coords *out);

/* One training step (collective over the world). */
int pb_hybrid_step(pb_hybrid *h, pb_hybrid_stats *stats);

/* After the timed steps: every replica's gradient after a full step must be
 * the sum over its DP group of the replicas' local gradients (each computed
 * again by a step without the all-reduce), and identical across the group.
 * Collective; *wrong counts the ranks whose gradients are wrong or differ from
 * their replica group's first rank. `corrupt` falsifies this rank's result. */
int pb_hybrid_check(pb_hybrid *h, int corrupt, long long *wrong);

/* pb_link_name of the class over all groups of one axis (collective):
 * intra if every group is intra, inter if every group is inter. */
const char *pb_hybrid_axis_link(const pb_world *w, pb_link_class mine);

#endif
