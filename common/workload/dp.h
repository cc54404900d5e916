/* Data parallelism: the gradient synchronizer and the DP training step.
 *
 * The synchronizer (pb_dp) all-reduces ONE flat gradient buffer (engine
 * memory) over a backend communicator of the DP group, in one of two modes:
 *   none:   everything after backward, from pb_dp_finish (the documents' model);
 *   bucket: DDP-style buckets (bucket.h). Each becomes ready when backward has
 *           queued its bytes (pb_dp_grad_ready, a pb_layer_grad_ready_fn) and is
 *           all-reduced at once while backward goes on; pb_dp_finish waits
 *           for the rest.
 * How a bucket runs beside backward follows ordering.h:
 *   host order (MPI backends, BLAS engine): the engine synchronizes, and a
 *     dedicated communication thread reduces the bucket while the main thread
 *     queues more backward. The thread calls the backend, i.e. MPI, while the
 *     main thread may call MPI too (hybrid_3d's PP/TP traffic), so bucket mode
 *     requires MPI_THREAD_MULTIPLE (PB_ERR_ENV otherwise);
 *   stream order (NCCL with cuBLAS): the all-reduce is queued on the
 *     communication stream behind a CUDA event on the compute stream, as
 *     PyTorch DDP does; no thread, the host never waits until pb_dp_finish,
 *     and busy_us is the device time of the all-reduces (event spans).
 *
 * The buffer's byte layout is given per layer (`layer_bytes`, backward runs the
 * last layer first). A gradient larger or smaller than the stack that
 * computes it (--grad-bytes, --params) is mapped onto the layers in
 * proportion, pb_dp_layout; docs/dp_allreduce.md states the rule.
 *
 * When the engine's memory is not the backend's (cuBLAS engine with the MPI
 * backend, BLAS engine with NCCL), each bucket is staged through one buffer
 * of the backend's memory. */
#ifndef PB_DP_H
#define PB_DP_H

#include "backend/comm.h"
#include "compute/compute.h"
#include "compute/layer.h"
#include "workload/ordering.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { PB_DP_OVERLAP_NONE, PB_DP_OVERLAP_BUCKET, PB_DP_OVERLAP_COUNT } pb_dp_overlap;

const char *pb_dp_overlap_name(pb_dp_overlap m); /* "none", "bucket" */

typedef struct pb_dp_config {
    const pb_comm_backend *be;
    pb_comm *comm;              /* the DP group's backend communicator */
    const pb_compute *eng;      /* owner of `grads` */
    void *grads;                /* engine memory, `bytes` long, reduced in place (sum) */
    uint64_t bytes;
    pb_dtype dtype;             /* PB_FLOAT32 or PB_BFLOAT16 */
    pb_dp_overlap overlap;
    uint64_t bucket_bytes;      /* bucket cap; 0 = PB_DDP_BUCKET_BYTES */
    const uint64_t *layer_bytes;/* each layer's share of the buffer, layer 0 first; sum = bytes */
    int64_t nlayers;
    int64_t layer0;             /* global index of layer 0, as the ready callback receives it */
} pb_dp_config;

/* Accounting of the last step (or pb_dp_reduce_all), this rank, microseconds. */
typedef struct pb_dp_timing {
    double busy_us;       /* sum over buckets of issue..completion, staging included (stream order: device time) */
    double wait_us;       /* time pb_dp_finish blocked the caller: the exposed tail */
    double first_post_us; /* first bucket handed to the comm thread, after pb_dp_begin */
    double last_done_us;  /* last bucket complete, after pb_dp_begin */
    size_t buckets;
} pb_dp_timing;

typedef struct pb_dp pb_dp;

/* Collective over cfg->comm (every rank passes the same layout). */
int pb_dp_create(const pb_dp_config *cfg, pb_dp **out);
void pb_dp_destroy(pb_dp *dp);
size_t pb_dp_bucket_count(const pb_dp *dp);
/* Largest bucket in bytes (the whole buffer, in chunks MPI's int counts allow, for none). */
uint64_t pb_dp_max_bucket(const pb_dp *dp);

/* Start a step: reset readiness and accounting. */
int pb_dp_begin(pb_dp *dp);
/* pb_layer_grad_ready_fn: `user` is the pb_dp. `layer` is global; offset/bytes
 * are ignored: the buffer's own layout decides which buckets are ready. */
int pb_dp_grad_ready(void *user, int64_t layer, uint64_t offset, uint64_t bytes);
/* Post whatever is not posted yet and wait until every bucket is reduced. */
int pb_dp_finish(pb_dp *dp);
/* Communication alone: every bucket back to back on the calling thread (none:
 * the whole buffer at once). Fills the timing as a step would. */
int pb_dp_reduce_all(pb_dp *dp);
void pb_dp_last_timing(const pb_dp *dp, pb_dp_timing *out);

/* ---- pure arithmetic (dp_layout.c) ---- */

/* Split `total` bytes over n layers in proportion to `real` (their real
 * gradient bytes), boundaries rounded down to `align`, the last share taking
 * the remainder: share i covers [floor(C_i * T / R), floor(C_{i+1} * T / R))
 * with C_i the real bytes before layer i, R their sum, T = total (all in
 * units of align). When T >= R every real byte lies in or after its own
 * layer's share, so no bucket is ready before its real gradients exist. */
int pb_dp_layout(const uint64_t *real, int64_t n, uint64_t total, uint64_t align, uint64_t *share);

typedef struct pb_dp_metrics {
    double exposed_us;         /* step - compute (negative: noise) */
    double overhead;           /* exposed / compute */
    double predicted_overhead; /* comm / compute: the no-overlap prediction */
    double hidden_fraction;    /* 1 - exposed/comm, clamped to [0, 1] */
} pb_dp_metrics;

void pb_dp_metrics_of(double compute_us, double comm_us, double step_us, pb_dp_metrics *out);

/* The overhead from paired iterations: the median over iterations i of
 * step_us[i] - compute_us[i], over the median of compute_us[i] (each the
 * slowest rank's time in iteration i). The mean-based overhead moves with any
 * iteration slowed in one phase only; the median of the pairs does not.
 * `scratch` holds n doubles; 0 when n <= 0 or the compute is 0. */
double pb_dp_paired_overhead(const double *compute_us, const double *step_us, int n, double *scratch);

/* ---- validation (dp_check.c) ---- */

/* Elements [from, to) of a gradient buffer get exact small integers,
 * 1 + (rank + i) % 8, so any sum over ranks is exact in fp32 and bf16. */
int pb_dp_fill_known(const pb_compute *eng, void *grads, pb_dtype t, uint64_t from, uint64_t to, int rank);

/* Compare the reduced buffer `result` (engine memory) with the sum over the
 * ranks of `group` of each rank's contribution (`local`, host memory, before
 * the all-reduce), formed on the control plane in double. An element is wrong
 * when |got - sum| > tol * sum|contributions| (+ 1e-30), tol = n * 2^-23 for
 * fp32, n * 2^-7 for bf16 (one rounding per reduction step), or not finite.
 * `corrupt`: this rank falsifies its first element (fault injection).
 * *wrong is this rank's count; *hash an FNV-1a hash of the result's bytes. */
int pb_dp_check(MPI_Comm group, const pb_compute *eng, const void *result, const void *local, uint64_t bytes,
                pb_dtype t, int corrupt, long long *wrong, uint64_t *hash);
double pb_dp_tolerance(pb_dtype t, int nranks);

/* ---- the DP training step on a layer stack (dp_step.c) ---- */

typedef struct pb_dp_step_config {
    const pb_compute *eng;
    const pb_comm_backend *be;
    pb_comm *comm;
    pb_layer_shape shape;  /* requested dtype; tp_size 1 */
    int64_t nlayers;
    uint64_t seed;         /* weights: same on every rank */
    int rank;              /* inputs: seeded by rank, so contributions differ */
    pb_dtype grad_dtype;
    uint64_t grad_bytes;   /* all-reduced per step; 0 = the stack's real gradients */
    pb_dp_overlap overlap;
    uint64_t bucket_bytes;
    int check;             /* keep a host copy for validation */
} pb_dp_step_config;

typedef struct pb_dp_step pb_dp_step;

/* Engine bytes one rank needs (stack, activations, inputs, gradient buffer,
 * staging) and host bytes for validation: call pb_mem_require before create. */
void pb_dp_step_bytes(const pb_dp_step_config *cfg, uint64_t *engine_bytes, uint64_t *host_bytes);
/* The stack's real gradient bytes (L * 12h^2 * grad dtype size). */
uint64_t pb_dp_step_real_bytes(const pb_dp_step_config *cfg);
int pb_dp_step_create(const pb_dp_step_config *cfg, pb_dp_step **out);
void pb_dp_step_destroy(pb_dp_step *s);
/* Real gradient bytes inside the all-reduced buffer (its first bytes), 0 when
 * the stack's gradients are larger than the buffer and kept apart. */
uint64_t pb_dp_step_real_in_buffer(const pb_dp_step *s);
pb_dp *pb_dp_step_sync(pb_dp_step *s);
double pb_dp_step_flops(const pb_dp_step *s); /* forward + backward, this rank */

int pb_dp_step_compute(pb_dp_step *s); /* forward + backward, no communication */
int pb_dp_step_comm(pb_dp_step *s);    /* the all-reduce alone */
int pb_dp_step_full(pb_dp_step *s);    /* forward + backward + all-reduce, overlapped as configured */
/* Zero the buffer so repeated in-place sums stay finite (timing phases). */
int pb_dp_step_zero(pb_dp_step *s);
/* Known contributions, a full step, and the comparison (collective). */
int pb_dp_step_validate(pb_dp_step *s, MPI_Comm group, int corrupt, long long *wrong, uint64_t *hash);

#endif
