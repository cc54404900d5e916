#include "coll/p2p_rounds.h"

#include "core/error.h"
#include "core/watchdog.h"

#include <stdlib.h>
#include <string.h>

#define TAG_ROUND 7703

/* This rank's pair in the round, or -1. */
static int my_pair(const pb_p2p_schedule *s, int first, int count, int me)
{
    for (int k = 0; k < count; k++)
        if (s->pairs[first + k].a == me || s->pairs[first + k].b == me) return k;
    return -1;
}

/* One phase of the round (latency or bw) on this rank's pair, if any; then
 * every rank waits for the phase to end, so that a pair's latency is never
 * measured under another pair's bandwidth traffic. */
static int phase(const pb_p2p_rounds_setup *su, const pb_p2p_schedule_pair *p, int me, const pb_p2p_cfg *cfg, size_t bytes,
                 int status, pb_p2p_result *out)
{
    if (p && status == PB_OK) {
        pb_watchdog_what(pb_p2p_mode_name(cfg->mode), bytes);
        pb_buffers_fit(su->sbuf, bytes);
        pb_buffers_fit(su->rbuf, bytes);
        status = pb_p2p_measure(su->be, su->comm, su->world, p->a, me == p->a ? p->b : p->a, bytes, cfg, su->sbuf,
                                su->rbuf, out);
    }
    pb_p2p_sleepy_barrier(su->world);
    return status;
}

int pb_p2p_rounds_run(const pb_p2p_rounds_setup *su, const pb_p2p_schedule *s, int first, int count, pb_p2p_rounds_measure *out)
{
    int me;
    MPI_Comm_rank(su->world, &me);
    int k = my_pair(s, first, count, me);
    const pb_p2p_schedule_pair *p = k >= 0 ? &s->pairs[first + k] : NULL;
    pb_p2p_rounds_measure mine = {0};
    int status = phase(su, p, me, &su->lat, su->lat_bytes, PB_OK, &mine.lat);
    status = phase(su, p, me, &su->bw, su->bw_bytes, status, &mine.bw);
    mine.status = status;
    /* The initiators (a) send their results to rank 0, which sleeps while it waits. */
    if (p && p->a == me && me != 0)
        MPI_Send(&mine, sizeof mine, MPI_BYTE, 0, TAG_ROUND, su->world);
    if (me == 0) {
        MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(count > 0 ? count : 1));
        if (!reqs) status = pb_fail(PB_ERR_ENV, "out of memory for %d requests", count);
        for (int j = 0; reqs && j < count; j++) {
            int initiator = s->pairs[first + j].a;
            if (initiator == 0) out[j] = mine, reqs[j] = MPI_REQUEST_NULL;
            else MPI_Irecv(&out[j], sizeof out[j], MPI_BYTE, initiator, TAG_ROUND, su->world, &reqs[j]);
        }
        for (int j = 0; reqs && j < count; j++) pb_p2p_sleepy_wait(&reqs[j]);
        for (int j = 0; reqs && j < count; j++)
            if (out[j].status != PB_OK && status == PB_OK) status = out[j].status;
        free(reqs);
    }
    /* Everyone learns the round's worst status. */
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, su->world);
    return status;
}
