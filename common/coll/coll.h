/* Collective operations: names and nccl-tests bus-bandwidth factors.
 *
 * One enum for every module that names a collective (the sweeps, the model,
 * the planner), so a new collective is added here once. */
#ifndef PB_COLL_H
#define PB_COLL_H

typedef enum {
    PB_COLL_ALLREDUCE,
    PB_COLL_ALLGATHER,
    PB_COLL_REDUCESCATTER,
    PB_COLL_BROADCAST,
    PB_COLL_REDUCE,
    PB_COLL_ALLTOALL,
    PB_COLL_SENDRECV,
    PB_COLL_COUNT
} pb_coll;

/* "allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
 * "sendrecv"; NULL for an out-of-range value. */
const char *pb_coll_name(pb_coll c);

/* Every name, in enum order, NULL-terminated (for option lists). */
const char *const *pb_coll_names(void);

/* Name -> enum. Returns PB_OK, or PB_ERR_USAGE without printing (callers know
 * which option the name came from and report it themselves). */
int pb_coll_from_name(const char *name, pb_coll *out);

/* busbw = algbw * factor (DESIGN.md, nccl-tests' PERFORMANCE.md):
 * allreduce 2(n-1)/n; allgather, reducescatter, alltoall (n-1)/n;
 * broadcast, reduce, sendrecv 1. Returns 0 for nranks < 1 or an unknown c. */
double pb_busbw_factor(pb_coll c, int nranks);

#endif
