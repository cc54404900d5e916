#include "p2p.h"

#include "coll_check.h"
#include "error.h"
#include "faults.h"
#include "timing.h"
#include "watchdog.h"

#include <stdlib.h>
#include <time.h>

#define TAG_CTRL 7701

static const char *const mode_names[PB_P2P_MODES + 1] = {"latency", "bw", "bibw", NULL};

const char *pb_p2p_mode_name(pb_p2p_mode m) { return mode_names[m]; }
const char *const *pb_p2p_mode_names(void) { return mode_names; }

void pb_sleepy_wait(MPI_Request *req)
{
    int done = 0;
    struct timespec nap = {0, 100 * 1000};
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        nanosleep(&nap, NULL);
    }
}

void pb_sleepy_barrier(MPI_Comm comm)
{
    MPI_Request req;
    MPI_Ibarrier(comm, &req);
    pb_sleepy_wait(&req);
}

typedef struct pair {
    const pb_backend *be;
    pb_comm *comm;
    int me, peer, initiator;
    size_t bytes;
    const pb_p2p_cfg *cfg;
    const pb_rotbuf *sbuf, *rbuf;
    int skip; /* test-only: this rank skips its operations (PARABENCH_TEST_SKIP) */
} pair;

static int post_window(pair *p, int sends, int recvs, int iter)
{
    PB_TRY(p->be->group_start(p->comm));
    for (int k = 0; k < recvs; k++) PB_TRY(p->be->recv(p->comm, pb_rotbuf_slot(p->rbuf, iter), p->bytes, PB_BYTE, p->peer));
    for (int k = 0; k < sends; k++) PB_TRY(p->be->send(p->comm, pb_rotbuf_slot(p->sbuf, iter), p->bytes, PB_BYTE, p->peer));
    PB_TRY(p->be->group_end(p->comm));
    return p->be->sync(p->comm);
}

/* The small ack, in the receive buffer's slot 0 (its content does not matter). */
static int ack(pair *p, int send)
{
    void *buf = pb_rotbuf_slot(p->rbuf, 0);
    PB_TRY(send ? p->be->send(p->comm, buf, 4, PB_BYTE, p->peer) : p->be->recv(p->comm, buf, 4, PB_BYTE, p->peer));
    return p->be->sync(p->comm);
}

/* One iteration, as seen by this rank. */
static int iteration(pair *p, int iter)
{
    if (p->skip) return PB_OK; /* leave the peer waiting, for the watchdog test */
    int lead = p->me == p->initiator, w = p->cfg->window;
    switch (p->cfg->mode) {
    case PB_P2P_LATENCY:
        if (lead) {
            PB_TRY(post_window(p, 1, 0, iter));
            return post_window(p, 0, 1, iter);
        }
        PB_TRY(post_window(p, 0, 1, iter));
        return post_window(p, 1, 0, iter);
    case PB_P2P_BW:
        PB_TRY(post_window(p, lead ? w : 0, lead ? 0 : w, iter));
        return ack(p, !lead);
    case PB_P2P_BIBW: return post_window(p, w, w, iter);
    default: return pb_fail(PB_ERR_USAGE, "unknown p2p mode %d", (int)p->cfg->mode);
    }
}

/* Warm up, then let the initiator decide how many timed iterations fit in the cap. */
static int agree_iterations(pair *p, MPI_Comm ctrl, int *iters)
{
    double t0 = pb_now_us();
    int warm = p->cfg->warmup > 0 ? p->cfg->warmup : 1;
    for (int i = -warm; i < 0; i++) {
        pb_watch_arm(i, "warm-up");
        PB_TRY(iteration(p, i));
    }
    pb_watch_arm(0, "agree on iterations");
    int n = p->cfg->iters;
    if (p->me == p->initiator) {
        double per_iter = (pb_now_us() - t0) / warm, cap = p->cfg->max_seconds * 1e6;
        if (cap > 0 && per_iter * n > cap) n = (int)(cap / (per_iter > 0 ? per_iter : 1));
        if (n < 1) n = 1;
        MPI_Send(&n, 1, MPI_INT, p->peer, TAG_CTRL, ctrl);
    } else {
        MPI_Recv(&n, 1, MPI_INT, p->peer, TAG_CTRL, ctrl, MPI_STATUS_IGNORE);
    }
    *iters = n;
    return PB_OK;
}

/* One exchange each way with known bytes (coll_check.h: checked on the device
 * when the buffers are there); returns wrong bytes seen by both ranks (on the initiator). */
static int check_exchange(pair *p, MPI_Comm ctrl, long long *wrong)
{
    int status = pb_bytes_check_fill(p->be, pb_rotbuf_slot(p->sbuf, 0), p->bytes, p->me);
    int lead = p->me == p->initiator;
    pb_watch_arm(0, "validate");
    for (int turn = 0; turn < 2 && status == PB_OK; turn++) {
        int sending = (turn == 0) == lead;
        status = post_window(p, sending, !sending, 0);
    }
    long long mine = 0, theirs = 0;
    if (status == PB_OK)
        status = pb_bytes_check_count(p->be, p->peer, pb_test_corrupt_rank() == p->me, pb_rotbuf_slot(p->rbuf, 0),
                                      p->bytes, &mine);
    MPI_Sendrecv(&mine, 1, MPI_LONG_LONG, p->peer, TAG_CTRL, &theirs, 1, MPI_LONG_LONG, p->peer, TAG_CTRL, ctrl,
                 MPI_STATUS_IGNORE);
    pb_watch_disarm();
    *wrong = mine + theirs;
    return status;
}

int pb_p2p_measure(const pb_backend *be, pb_comm *comm, MPI_Comm ctrl, int initiator, int peer, size_t bytes,
                   const pb_p2p_cfg *cfg, const pb_rotbuf *sbuf, const pb_rotbuf *rbuf, pb_p2p_result *out)
{
    pair p = {be, comm, be->rank(comm), peer, initiator, bytes, cfg, sbuf, rbuf, 0};
    p.skip = pb_test_skip_rank() == p.me;
    int n;
    PB_TRY(agree_iterations(&p, ctrl, &n));
    double *samples = malloc(sizeof(double) * (size_t)n);
    PB_CHECK(samples, PB_ERR_ENV, "out of memory for %d samples", n);
    int status = PB_OK;
    for (int i = 0; i < n && status == PB_OK; i++) {
        pb_watch_arm(i, "operation");
        double t0 = pb_now_us();
        status = iteration(&p, i);
        samples[i] = pb_now_us() - t0;
        if (cfg->mode == PB_P2P_LATENCY) samples[i] /= 2;
    }
    pb_watch_disarm();
    pb_stats_of(samples, (size_t)n, &out->st);
    free(samples);
    out->iters = n;
    double moved = (double)bytes * (cfg->mode == PB_P2P_LATENCY ? 1 : cfg->window) * (cfg->mode == PB_P2P_BIBW ? 2 : 1);
    out->bw_GBps = out->st.mean > 0 ? moved / out->st.mean / 1e3 : 0;
    out->wrong = -1;
    if (status == PB_OK && cfg->check) status = check_exchange(&p, ctrl, &out->wrong);
    return status;
}
