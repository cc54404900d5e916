/* An uneven all-to-all in which every sender uses the same per-destination
 * counts, as coll_sweep's alltoallv (coll_skew.h) and a mixture-of-experts
 * dispatch (workload/moe.h) put it on the network, issued as nccl-tests
 * builds alltoall where there is no native call: one group of a send and a
 * receive per peer, through any backend's send/recv.
 *
 * With to(d) the elements every sender sends to rank d and `me` this rank:
 *   forward: the send buffer holds the blocks for ranks 0..n-1 back to back
 *            (to(0), to(1), ...); rank p's block for me lands at p * to(me)
 *            in the receive buffer (n blocks of to(me));
 *   reverse: its inverse, what a combine does: block p of to(me) elements at
 *            p * to(me) goes back to rank p, and rank p's to(p) elements land
 *            where forward sent them from.
 * Empty blocks are skipped on both sides. Complete after the backend's sync. */
#ifndef PB_COLL_ALLTOALLV_H
#define PB_COLL_ALLTOALLV_H

#include "backend/comm.h"

#include <stddef.h>

/* Elements every sender sends to rank d. */
typedef size_t (*pb_coll_alltoallv_counts)(const void *ctx, int d);

int pb_coll_alltoallv(const pb_comm_backend *b, pb_comm *comm, const void *send, void *recv, pb_dtype t,
                      pb_coll_alltoallv_counts to, const void *ctx, int reverse);

#endif
