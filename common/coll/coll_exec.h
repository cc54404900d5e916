/* Running one collective through a backend, and knowing its right answer.
 *
 * Buffer sizes follow nccl-tests: the size S of a row is the full buffer (for
 * allgather the gathered output, for reducescatter the input, for alltoall
 * either), so algbw = S / t compares with nccl-tests and busbw with the
 * factors of coll.h. */
#ifndef PB_COLL_EXEC_H
#define PB_COLL_EXEC_H

#include "coll/coll.h"
#include "backend/comm.h"

typedef struct pb_coll_exec_shape {
    size_t count;      /* elements of the full buffer (S / type size) */
    size_t bytes;      /* S actually used: count * type size */
    size_t send_count; /* elements in each rank's send buffer */
    size_t recv_count; /* elements in each rank's receive buffer */
    size_t param;      /* the count argument passed to the backend */
    double skew;       /* alltoallv's --skew F (coll_skew.h); 1: even */
} pb_coll_exec_shape;

/* Shape of collective `c` for a requested size in bytes. The count is rounded
 * down to a multiple of nranks where the collective splits the buffer (and up
 * to at least one element per rank), as nccl-tests does. */
void pb_coll_exec_shape_of(pb_coll c, size_t bytes, pb_dtype t, int nranks, pb_coll_exec_shape *out);

/* The same at skew F for this rank: a collective with a skewed receive
 * (alltoallv) rounds its count to a multiple of PB_COLL_SKEW_UNIT * nranks
 * and receives pb_coll_skew_recv_count elements; F must be valid for nranks
 * (pb_coll_skew_valid). Other collectives: pb_coll_exec_shape_of. */
void pb_coll_exec_shape_skewed(pb_coll c, size_t bytes, pb_dtype t, int nranks, int rank, double skew,
                               pb_coll_exec_shape *out);

/* The count the expected values of this shape are a function of: the full
 * buffer, or a skewed receive buffer's own count (coll.h, PB_SPAN_SKEWED). */
size_t pb_coll_exec_expect_count(pb_coll c, const pb_coll_exec_shape *sh);

/* Issue collective `c` on `comm` (completion needs backend->sync).
 * sendrecv sends to rank+1 and receives from rank-1, as nccl-tests' sendrecv. */
int pb_coll_exec_issue(const pb_comm_backend *b, pb_comm *comm, pb_coll c, const pb_coll_exec_shape *sh, const void *send,
                  void *recv, pb_dtype t, pb_dtype_redop op, int root);

/* In-place buffers as NCCL defines them (the table's in_place form, coll.h),
 * inside one buffer `buf` of the full size (count elements): allreduce,
 * broadcast, reduce: send = recv = buf;
 * allgather: recv = buf, send = buf + rank * send_count (this rank's block of
 * the output); reducescatter: send = buf, recv = buf + rank * recv_count.
 * Alltoall and sendrecv have no in-place form: PB_ERR_USAGE naming `option`. */
int pb_coll_exec_in_place(const char *option, pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, int rank,
                          void *buf, void **send, void **recv);

/* Device time of one operation (the `devtime` column), as nccl-tests
 * measures it: `n` operations, op(ctx, 0) .. op(ctx, n-1), issued back to back
 * between one CUDA-event span on the backend's stream, then sync;
 * *us_per_op = span / n. Only the first operation's start can wait on the
 * host's launch: later ones are queued while earlier ones run, so the launch
 * cost is amortised over n instead of landing in every sample. The batch size
 * is n unless PARABENCH_DEVTIME_BATCH=B (1 <= B < n) asks for spans of B
 * operations with a sync after each: B = 1 is the older one-pair-per-operation
 * measure on an idle stream, kept for comparison (scripts/gpu-check.sh).
 * NaN when the backend has no spans or n < 1. */
typedef int (*pb_coll_exec_op_fn)(void *ctx, int i);
int pb_coll_exec_device_time(const pb_comm_backend *b, pb_comm *comm, int n, pb_coll_exec_op_fn op, void *ctx,
                             double *us_per_op);
/* Operations per span for n operations: n, or PARABENCH_DEVTIME_BATCH within 1..n. */
int pb_coll_exec_devtime_batch(int n);
/* Operations to time for devtime after `done` timed iterations: a quarter of
 * them, at least 4 (all when fewer), so the batch adds at most about a quarter
 * to a size's time and its per-size cap still bounds it. */
int pb_coll_exec_devtime_ops(int done);

/* Validation. Inputs are small integers, v(rank, i) in -1..4 (coll_expect.h),
 * so every partial sum is an integer of magnitude at most 4 * nranks and exact
 * in every type (bf16 up to 64 ranks, fp16 up to 512; beyond that a tolerance
 * applies, and pb_coll_exec_tolerance says so). */
double pb_coll_exec_input_value(int rank, size_t i);

/* Fill this rank's host-side send buffer (send_count elements). */
void pb_coll_exec_fill(pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, int rank, int nranks, int root, void *host_send);

/* Elements of this rank's receive buffer (recv_count elements, on the host)
 * that differ from the exact answer by more than the tolerance. Ranks whose
 * output is undefined (non-root ranks of reduce) report 0. */
size_t pb_coll_exec_count_wrong(pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, pb_dtype_redop op, int rank, int nranks,
                           int root, const void *host_recv);

/* Absolute tolerance used when checking a reduction over nranks. */
double pb_coll_exec_tolerance(pb_dtype t, int nranks);

#endif
