/* Sharded data parallelism (ZeRO-3, PyTorch FSDP) on a layer stack.
 *
 * Each rank of a shard group of n ranks holds 1/n of every layer's
 * parameters: the layer's P weights, flattened in the layer's own order
 * (layer.h) and padded with zeros to n*S, S = ceil(P/n), rank r holding
 * elements [r*S, (r+1)*S) (fsdp_shard.c). A training step, per layer:
 *   forward:   all-gather the layer's shards into a full buffer, run its
 *              forward on it;
 *   backward:  all-gather again (the full weights were freed after forward),
 *              run its backward, reduce-scatter its gradient (P, padded to
 *              n*S) so each rank keeps the sum of its shard.
 * With hybrid sharding (shard groups smaller than the world) each shard group
 * is one replica of the model, and the reduced gradient shard is then
 * all-reduced over the replicas (the ranks of the same index in every group).
 *
 * Prefetch (--prefetch):
 *   off: every collective completes before the compute that follows it
 *        starts; nothing is overlapped: step = compute + communication;
 *   on:  FSDP's forward and backward prefetch: the next layer's all-gather
 *        (into the second of two full buffers) is issued before the current
 *        layer's compute, and a layer's reduce-scatter runs during the next
 *        layer's backward; compute waits only for the gather it needs.
 * How the collectives run beside compute follows ordering.h: host order (MPI
 * backends, BLAS engine) runs them on a communication thread in issue order
 * (MPI_THREAD_MULTIPLE), the main thread waiting on a condition variable;
 * stream order (NCCL with cuBLAS) queues them on the communication stream,
 * ordered against the compute stream by CUDA events, the host never waiting
 * until the step ends. Where engine and backend memory differ, each
 * collective is staged through two backend buffers (staging.h).
 *
 * The stack keeps every layer's full weights too: they seed the shards, the
 * compute-alone pass runs on them, and validation compares each gathered
 * buffer with them. A real FSDP rank holds only its shards and two full
 * layers; the benchmark's memory is not FSDP's (docs/fsdp_step.md). */
#ifndef PB_FSDP_H
#define PB_FSDP_H

#include "backend/comm.h"
#include "compute/compute.h"
#include "compute/layer.h"

#include <mpi.h>
#include <stdint.h>

/* ---- pure arithmetic (fsdp_shard.c) ---- */

/* P parameters over a shard group of n ranks. */
typedef struct pb_fsdp_shard {
    uint64_t params;   /* P */
    int n;             /* ranks in the shard group */
    uint64_t per_rank; /* S = ceil(P / n): every rank's shard, padding included */
    uint64_t padded;   /* n * S: the full buffer a gather fills and a reduce-scatter reads */
} pb_fsdp_shard;

void pb_fsdp_shard_of(uint64_t params, int n, pb_fsdp_shard *out);
/* Elements of rank r's shard that are parameters, not padding:
 * min(S, max(0, P - r*S)). */
uint64_t pb_fsdp_shard_valid(const pb_fsdp_shard *s, int rank);

/* Shard groups of `size` consecutive ranks over `world` ranks: this rank's
 * group (which replica of the model) and index in it (which shard).
 * PB_ERR_USAGE naming --shard-group when size does not divide world. */
int pb_fsdp_group_of(int world, int size, int rank, int *group, int *index);

typedef enum { PB_FSDP_PREFETCH_OFF, PB_FSDP_PREFETCH_ON, PB_FSDP_PREFETCH_COUNT } pb_fsdp_prefetch;
const char *pb_fsdp_prefetch_name(pb_fsdp_prefetch p); /* "off", "on" */

/* Bytes one rank sends per step, as nccl-tests' bus bandwidth counts them:
 * 2 all-gathers and 1 reduce-scatter of S elements per rank per layer, each
 * S*(n-1) elements, and over r replicas an all-reduce of S elements,
 * 2*S*(r-1)/r. */
double pb_fsdp_step_bytes_sent(const pb_fsdp_shard *s, int64_t layers, size_t param_elem, size_t grad_elem,
                               int replicas);

/* ---- the step (fsdp_step.c) ---- */

typedef struct pb_fsdp_config {
    const pb_compute *eng;
    const pb_comm_backend *be;
    pb_comm *shard_comm;   /* the shard group: n ranks, this rank's index = its shard */
    pb_comm *replica_comm; /* the same index in every shard group; NULL with one group */
    pb_layer_shape shape;  /* requested dtype, tp_size 1 */
    int64_t nlayers;
    uint64_t seed;         /* weights: the same on every rank */
    int rank;              /* world rank: seeds this rank's inputs */
    pb_dtype grad_dtype;
    pb_fsdp_prefetch prefetch;
} pb_fsdp_config;

/* What the last step (or pb_fsdp_comm) took on this rank. */
typedef struct pb_fsdp_timing {
    double wait_us;    /* the host blocked on communication: host order, the collectives run inline
                        * (prefetch off) or the lane's waits (on); stream order, the step's final wait */
    double gather_us;  /* host order: the all-gathers, each issue to completion; 0 in stream order */
    double scatter_us; /* host order: the reduce-scatters (and replica all-reduces); 0 in stream order */
    int colls;         /* collectives issued */
} pb_fsdp_timing;

typedef struct pb_fsdp pb_fsdp;

/* The layer's shard arithmetic for this configuration (P, n, S). */
void pb_fsdp_layer_shard(const pb_fsdp_config *cfg, pb_fsdp_shard *out);
/* Engine bytes one rank needs (the stack, activations, shards, two full
 * buffers, staging); host bytes for validation. */
void pb_fsdp_bytes(const pb_fsdp_config *cfg, uint64_t *engine_bytes, uint64_t *host_bytes);

/* Collective over the shard group (and the replicas). */
int pb_fsdp_create(const pb_fsdp_config *cfg, pb_fsdp **out);
void pb_fsdp_destroy(pb_fsdp *f);
/* The full (unsharded) gradient buffer the backward writes, L * P elements
 * of the gradient type, layer 0 first (what DP would all-reduce). */
void *pb_fsdp_grads(pb_fsdp *f);
uint64_t pb_fsdp_grad_bytes(const pb_fsdp *f);
double pb_fsdp_flops(const pb_fsdp *f); /* forward + backward, this rank */

int pb_fsdp_compute(pb_fsdp *f); /* forward + backward on the full weights, no communication */
int pb_fsdp_comm(pb_fsdp *f);    /* the step's collectives back to back, no compute */
int pb_fsdp_step(pb_fsdp *f);    /* the step, overlapped as configured */
void pb_fsdp_last_timing(const pb_fsdp *f, pb_fsdp_timing *out);

/* One step with checks (collective over `world`, every rank): each gathered
 * buffer, when its layer's compute is about to read it, against the layer's
 * weights (bit for bit: *wrong_params), and each rank's gradient shards
 * against the sum over the world of every rank's full gradients, formed on
 * the control plane in double, within pb_dp_tolerance (*wrong_grads).
 * `corrupt`: this rank falsifies one gradient element (fault injection).
 * Counts are this rank's. */
int pb_fsdp_validate(pb_fsdp *f, MPI_Comm world, int corrupt, long long *wrong_params, long long *wrong_grads);

#endif
