/* One round of an all-pairs schedule (p2p_schedule.h): the pairs of the round
 * measure at the same time, first all their latencies at one size, then (after
 * a barrier) all their bandwidths at another, so no latency is measured under
 * bandwidth traffic; ranks without a pair in the round wait without taking a
 * core; the results come to rank 0. */
#ifndef PB_P2P_ROUNDS_H
#define PB_P2P_ROUNDS_H

#include "coll/p2p.h"
#include "coll/p2p_schedule.h"

typedef struct pb_p2p_rounds_measure {
    pb_p2p_result lat, bw; /* zeroed when not measured */
    int status;
} pb_p2p_rounds_measure;

typedef struct pb_p2p_rounds_setup {
    const pb_comm_backend *be;
    pb_comm *comm;     /* backend communicator over `world` */
    MPI_Comm world;    /* control messages and the results */
    pb_p2p_cfg lat, bw;
    size_t lat_bytes, bw_bytes;
    pb_buffers *sbuf, *rbuf; /* allocated on every rank for bw_bytes */
} pb_p2p_rounds_setup;

/* Measure round `round` (its pairs are s->pairs[first .. first + count - 1]).
 * On rank 0, out[k] gets pair first + k. Every rank of `world` calls it; the
 * status returned is the worst of the round, agreed by all ranks. */
int pb_p2p_rounds_run(const pb_p2p_rounds_setup *su, const pb_p2p_schedule *s, int first, int count, pb_p2p_rounds_measure *out);

#endif
