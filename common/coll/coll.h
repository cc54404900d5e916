/* Collective operations: one descriptor per collective, in one table
 * (coll_table.c) indexed by pb_coll. Everything that differs between
 * collectives (name, busbw factor, reduction op, root, buffer shape, how the
 * backend is called, its in-place form, the expected result, the cost model)
 * is read from it, so
 * a new collective is one enum value, one table row and one expected-value
 * function (docs/ARCHITECTURE.md, "A collective").
 *
 * Plain C, no MPI: coll_expect.h and the device check (nvcc) include it. */
#ifndef PB_COLL_H
#define PB_COLL_H

#include "core/dtype.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PB_COLL_ALLREDUCE,
    PB_COLL_ALLGATHER,
    PB_COLL_REDUCESCATTER,
    PB_COLL_BROADCAST,
    PB_COLL_REDUCE,
    PB_COLL_ALLTOALL,
    PB_COLL_SENDRECV,
    PB_COLL_ALLTOALLV,
    PB_COLL_COUNT
} pb_coll;

/* Per-rank element count of a buffer: the full buffer, one rank's chunk of
 * it, or (alltoallv's receive buffer) nranks blocks whose size the skew sets
 * per rank (coll_skew.h); the expected values of a SKEWED receive buffer are
 * a function of its own count, not of the full buffer's. */
typedef enum { PB_SPAN_FULL, PB_SPAN_CHUNK, PB_SPAN_SKEWED } pb_coll_span;

/* The in-place form, as NCCL defines it, inside one buffer of the full size
 * (pb_coll_exec_in_place): none; send = recv = the buffer; the send buffer is
 * this rank's block of the output (allgather); the receive buffer is this
 * rank's block of the input (reducescatter). */
typedef enum { PB_IN_PLACE_NONE, PB_IN_PLACE_SAME, PB_IN_PLACE_SEND_BLOCK, PB_IN_PLACE_RECV_BLOCK } pb_coll_in_place;

/* The algorithm the cost model assumes (the planner fits only ring rows). */
typedef enum { PB_ALGO_RING, PB_ALGO_PAIRWISE, PB_ALGO_TREE, PB_ALGO_P2P } pb_coll_algo;

/* Alpha-beta cost: t = steps * alpha + bytes * S / B for a buffer of S bytes. */
typedef struct pb_coll_cost {
    double steps;
    double bytes;
} pb_coll_cost;

/* Tagged, not included: the backend and shape headers need MPI, and this one
 * is compiled by nvcc too. */
struct pb_comm_backend;
struct pb_comm;
struct pb_coll_exec_shape;

typedef struct pb_coll_desc {
    const char *name;
    double (*busbw)(int nranks); /* busbw = algbw * busbw(n), nranks >= 1 */
    int has_op;                  /* takes a reduction op (redop column) */
    int has_root;                /* takes a root (root column) */
    int root_only_output;        /* only the root's receive buffer is defined */
    pb_coll_span send, recv;     /* per-rank buffer counts */
    pb_coll_span param;          /* the count argument of the backend call */
    pb_coll_in_place in_place;   /* its in-place form (--in-place) */
    /* 1: issued with recv = send where the backend's broadcast has one buffer
     * (pb_comm_backend.broadcast_in_place), as OSU calls MPI_Bcast. */
    int one_buffer_broadcast;
    int (*issue)(const struct pb_comm_backend *b, struct pb_comm *comm, const struct pb_coll_exec_shape *sh, const void *send,
                 void *recv, pb_dtype t, pb_dtype_redop op, int root);
    /* Exact value of receive element j (coll_expect.h; the device check
     * reaches the same functions through pb_coll_expect_expected). */
    int (*expected)(pb_dtype_redop op, size_t count, int nranks, int rank, int root, size_t j);
    pb_coll_algo algo;
    pb_coll_cost (*cost)(int nranks);
} pb_coll_desc;

/* The descriptor of c; NULL for an out-of-range value. */
const pb_coll_desc *pb_coll_desc_of(pb_coll c);

/* "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
 * "sendrecv", "alltoallv"; NULL for an out-of-range value. */
const char *pb_coll_name(pb_coll c);

/* Every name, in enum order, NULL-terminated (for option lists). */
const char *const *pb_coll_names(void);

/* The names joined by ", " into buf (for help texts); returns buf. */
const char *pb_coll_name_list(char *buf, size_t size);

/* Name -> enum. Returns PB_OK, or PB_ERR_USAGE without printing (callers know
 * which option the name came from and report it themselves). */
int pb_coll_from_name(const char *name, pb_coll *out);

/* busbw = algbw * factor (docs/METRICS.md, the nccl-tests definitions):
 * allreduce 2(n-1)/n; allgather, reducescatter, alltoall, alltoallv (n-1)/n;
 * broadcast, reduce, sendrecv 1. Returns 0 for nranks < 1 or an unknown c. */
double pb_coll_busbw_factor(pb_coll c, int nranks);

/* The cost terms of c over nranks (zero for an unknown c). */
pb_coll_cost pb_coll_cost_of(pb_coll c, int nranks);

/* The same for a skewed receive (alltoallv at --skew F, coll_skew.h): the
 * heaviest receiver sets the time, so the bytes term is the even one times
 * the achieved imbalance of a buffer of `count` elements. Other collectives:
 * pb_coll_cost_of. */
pb_coll_cost pb_coll_cost_skewed(pb_coll c, int nranks, size_t count, double skew);

/* Whether c's receive counts follow --skew (PB_SPAN_SKEWED). */
int pb_coll_skewed(pb_coll c);

/* Whether the buffer is split among ranks (count rounded to a multiple of n). */
int pb_coll_splits(pb_coll c);

/* Whether this rank's receive buffer is defined after c (only the root's is,
 * for reduce). */
int pb_coll_output_defined(pb_coll c, int rank, int root);

#ifdef __cplusplus
}
#endif

#endif
