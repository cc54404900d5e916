#include "p2p_rounds.h"

#include "error.h"
#include "watchdog.h"

#include <stdlib.h>
#include <string.h>

#define TAG_ROUND 7703

/* This rank's pair in the round, or -1. */
static int my_pair(const pb_schedule *s, int first, int count, int me)
{
    for (int k = 0; k < count; k++)
        if (s->pairs[first + k].a == me || s->pairs[first + k].b == me) return k;
    return -1;
}

static int measure(const pb_round_setup *su, const pb_sched_pair *p, int me, pb_pair_measure *m)
{
    int peer = me == p->a ? p->b : p->a;
    memset(m, 0, sizeof *m);
    pb_watch_what("latency", su->lat_bytes);
    pb_rotbuf_fit(su->sbuf, su->lat_bytes);
    pb_rotbuf_fit(su->rbuf, su->lat_bytes);
    int status = pb_p2p_measure(su->be, su->comm, su->world, p->a, peer, su->lat_bytes, &su->lat, su->sbuf,
                                su->rbuf, &m->lat);
    pb_watch_what("bw", su->bw_bytes);
    pb_rotbuf_fit(su->sbuf, su->bw_bytes);
    pb_rotbuf_fit(su->rbuf, su->bw_bytes);
    if (status == PB_OK)
        status = pb_p2p_measure(su->be, su->comm, su->world, p->a, peer, su->bw_bytes, &su->bw, su->sbuf, su->rbuf,
                                &m->bw);
    m->status = status;
    return status;
}

int pb_p2p_round(const pb_round_setup *su, const pb_schedule *s, int first, int count, pb_pair_measure *out)
{
    int me;
    MPI_Comm_rank(su->world, &me);
    int k = my_pair(s, first, count, me), status = PB_OK;
    pb_pair_measure mine = {0};
    if (k >= 0) status = measure(su, &s->pairs[first + k], me, &mine);
    /* The initiators (a) send their results to rank 0, which sleeps while it waits. */
    if (k >= 0 && s->pairs[first + k].a == me && me != 0)
        MPI_Send(&mine, sizeof mine, MPI_BYTE, 0, TAG_ROUND, su->world);
    if (me == 0) {
        MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(count > 0 ? count : 1));
        if (!reqs) status = pb_fail(PB_ERR_ENV, "out of memory for %d requests", count);
        for (int j = 0; reqs && j < count; j++) {
            const pb_sched_pair *p = &s->pairs[first + j];
            if (p->a == 0) out[j] = mine, reqs[j] = MPI_REQUEST_NULL;
            else MPI_Irecv(&out[j], sizeof out[j], MPI_BYTE, p->a, TAG_ROUND, su->world, &reqs[j]);
        }
        for (int j = 0; reqs && j < count; j++) pb_sleepy_wait(&reqs[j]);
        for (int j = 0; reqs && j < count; j++)
            if (out[j].status != PB_OK && status == PB_OK) status = out[j].status;
        free(reqs);
    }
    /* Everyone waits for the round to end, then learns its worst status. */
    pb_sleepy_barrier(su->world);
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, su->world);
    return status;
}
