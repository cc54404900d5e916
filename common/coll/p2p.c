#include "coll/p2p.h"

#include "coll/coll_check.h"
#include "core/error.h"
#include "core/faults.h"
#include "core/timing.h"
#include "core/watchdog.h"

#include <stdlib.h>
#include <time.h>

#define TAG_CTRL 7701

static const char *const mode_names[PB_P2P_MODES + 1] = {"latency", "bw", "bibw", NULL};

const char *pb_p2p_mode_name(pb_p2p_mode m) { return mode_names[m]; }
const char *const *pb_p2p_mode_names(void) { return mode_names; }

void pb_p2p_sleepy_wait(MPI_Request *req)
{
    int done = 0;
    struct timespec nap = {0, 100 * 1000};
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        nanosleep(&nap, NULL);
    }
}

void pb_p2p_sleepy_barrier(MPI_Comm comm)
{
    MPI_Request req;
    MPI_Ibarrier(comm, &req);
    pb_p2p_sleepy_wait(&req);
}

typedef struct pair {
    const pb_comm_backend *be;
    pb_comm *comm;
    int me, peer, initiator;
    size_t bytes;
    const pb_p2p_cfg *cfg;
    const pb_buffers *sbuf, *rbuf;
    int skip; /* test-only: this rank skips its operations (PARABENCH_TEST_SKIP) */
    int slow; /* test-only: this rank sleeps before each iteration (PARABENCH_TEST_SLOW) */
} pair;

static int post_window(pair *p, int sends, int recvs, int iter)
{
    PB_TRY(p->be->group_start(p->comm));
    for (int k = 0; k < recvs; k++) PB_TRY(p->be->recv(p->comm, pb_buffers_slot(p->rbuf, iter), p->bytes, PB_BYTE, p->peer));
    for (int k = 0; k < sends; k++) PB_TRY(p->be->send(p->comm, pb_buffers_slot(p->sbuf, iter), p->bytes, PB_BYTE, p->peer));
    PB_TRY(p->be->group_end(p->comm));
    return p->be->sync(p->comm);
}

/* The small ack, in the receive buffer's slot 0 (its content does not matter). */
static int ack(pair *p, int send)
{
    void *buf = pb_buffers_slot(p->rbuf, 0);
    PB_TRY(send ? p->be->send(p->comm, buf, 4, PB_BYTE, p->peer) : p->be->recv(p->comm, buf, 4, PB_BYTE, p->peer));
    return p->be->sync(p->comm);
}

/* One message each way, blocking where the backend has blocking calls (the
 * calls OSU's latency test makes), else posted and synchronized. */
static int ping_pong(pair *p, int lead, int iter)
{
    const pb_comm_backend *be = p->be;
    void *s = pb_buffers_slot(p->sbuf, iter), *r = pb_buffers_slot(p->rbuf, iter);
    if (!be->send_blocking) {
        PB_TRY(post_window(p, lead, !lead, iter));
        return post_window(p, !lead, lead, iter);
    }
    if (lead) {
        PB_TRY(be->send_blocking(p->comm, s, p->bytes, PB_BYTE, p->peer));
        return be->recv_blocking(p->comm, r, p->bytes, PB_BYTE, p->peer);
    }
    PB_TRY(be->recv_blocking(p->comm, r, p->bytes, PB_BYTE, p->peer));
    return be->send_blocking(p->comm, s, p->bytes, PB_BYTE, p->peer);
}

/* One iteration, as seen by this rank. */
static int iteration(pair *p, int iter)
{
    if (p->skip) return PB_OK; /* leave the peer waiting, for the watchdog test */
    if (p->slow) nanosleep(&(struct timespec){0, PB_FAULTS_SLOW_US * 1000L}, NULL);
    int lead = p->me == p->initiator, w = p->cfg->window;
    switch (p->cfg->mode) {
    case PB_P2P_LATENCY: return ping_pong(p, lead, iter);
    case PB_P2P_BW:
        PB_TRY(post_window(p, lead ? w : 0, lead ? 0 : w, iter));
        return ack(p, !lead);
    case PB_P2P_BIBW: return post_window(p, w, w, iter);
    default: return pb_fail(PB_ERR_USAGE, "unknown p2p mode %d", (int)p->cfg->mode);
    }
}

/* The initiator decides a count and tells its peer (one control message). */
static int share_count(pair *p, MPI_Comm ctrl, int *n)
{
    if (p->me == p->initiator) return MPI_Send(n, 1, MPI_INT, p->peer, TAG_CTRL, ctrl) == MPI_SUCCESS ? PB_OK : PB_ERR_ENV;
    return MPI_Recv(n, 1, MPI_INT, p->peer, TAG_CTRL, ctrl, MPI_STATUS_IGNORE) == MPI_SUCCESS ? PB_OK : PB_ERR_ENV;
}

/* The worse of the two ranks' statuses, on both (one control message each
 * way): a rank that failed alone must not leave its peer in the exchange. */
static int pair_agree(pair *p, MPI_Comm ctrl, int status)
{
    int theirs = PB_OK;
    MPI_Sendrecv(&status, 1, MPI_INT, p->peer, TAG_CTRL, &theirs, 1, MPI_INT, p->peer, TAG_CTRL, ctrl,
                 MPI_STATUS_IGNORE);
    return status != PB_OK ? status : theirs;
}

/* Iterations of `per_us` each that fit in `budget_us`, between lo and hi. */
static int fitting(double budget_us, double per_us, int lo, int hi)
{
    double n = per_us > 0 ? budget_us / per_us : hi;
    return n < lo ? lo : n > hi ? hi : (int)n;
}

int pb_p2p_warmup_more(double cap_us, double first_us, int warmup)
{
    int more = warmup > 1 ? warmup - 1 : 0;
    return cap_us > 0 ? fitting(cap_us * PB_WARMUP_SHARE - first_us, first_us, 0, more) : more;
}

/* At least PB_P2P_MIN_TIMED: a pair's figure has only its own samples to show its noise, and one shows none. */
int pb_p2p_timed_iters(double cap_us, double spent_us, int warm, int iters)
{
    int least = iters < PB_P2P_MIN_TIMED ? iters : PB_P2P_MIN_TIMED;
    return cap_us > 0 ? fitting(cap_us - spent_us, spent_us / warm, least, iters) : iters;
}

/* Warm up inside the time cap, then agree on the timed count: the initiator
 * times one warm-up iteration, runs as many more as fit in PB_WARMUP_SHARE
 * of the cap (at most the warm-up asked for), and gives the timed iterations
 * what is left of the cap at the rate seen in warm-up. */
static int warm_up(pair *p, MPI_Comm ctrl, int *iters)
{
    double t0 = pb_timing_now_us(), cap = p->cfg->max_seconds * 1e6;
    pb_watchdog_arm(-1, "warm-up");
    PB_TRY(iteration(p, -1)); /* always one: the decisions need a time */
    int more = pb_p2p_warmup_more(cap, pb_timing_now_us() - t0, p->cfg->warmup);
    pb_watchdog_arm(0, "agree on warm-up");
    PB_TRY(share_count(p, ctrl, &more));
    for (int i = 0; i < more; i++) {
        pb_watchdog_arm(-1 - i, "warm-up");
        PB_TRY(iteration(p, -1));
    }
    int n = pb_p2p_timed_iters(cap, pb_timing_now_us() - t0, 1 + more, p->cfg->iters);
    pb_watchdog_arm(0, "agree on iterations");
    PB_TRY(share_count(p, ctrl, &n));
    *iters = n;
    return PB_OK;
}

/* One exchange each way with known bytes (coll_check.h: checked on the device
 * when the buffers are there); returns wrong bytes seen by both ranks (on the initiator). */
static int check_exchange(pair *p, MPI_Comm ctrl, long long *wrong)
{
    int status = pb_coll_check_bytes_fill(p->be, pb_buffers_slot(p->sbuf, 0), p->bytes, p->me);
    int lead = p->me == p->initiator;
    pb_watchdog_arm(0, "validate");
    int skip = pb_faults_skip_validate_rank() == p->me; /* test only: the peer then waits here */
    for (int turn = 0; turn < 2 && status == PB_OK && !skip; turn++) {
        int sending = (turn == 0) == lead;
        status = post_window(p, sending, !sending, 0);
    }
    long long mine = 0, theirs = 0;
    if (status == PB_OK)
        status = pb_coll_check_bytes_count(p->be, p->peer, pb_faults_corrupt_rank() == p->me, pb_buffers_slot(p->rbuf, 0),
                                      p->bytes, &mine);
    MPI_Sendrecv(&mine, 1, MPI_LONG_LONG, p->peer, TAG_CTRL, &theirs, 1, MPI_LONG_LONG, p->peer, TAG_CTRL, ctrl,
                 MPI_STATUS_IGNORE);
    pb_watchdog_disarm();
    *wrong = mine + theirs;
    return status;
}

int pb_p2p_measure(const pb_comm_backend *be, pb_comm *comm, MPI_Comm ctrl, int initiator, int peer, size_t bytes,
                   const pb_p2p_cfg *cfg, const pb_buffers *sbuf, const pb_buffers *rbuf, pb_p2p_result *out)
{
    pair p = {be, comm, be->rank(comm), peer, initiator, bytes, cfg, sbuf, rbuf, 0, 0};
    p.skip = pb_faults_skip_rank() == p.me;
    p.slow = pb_faults_slow_rank() == p.me;
    int n;
    PB_TRY(warm_up(&p, ctrl, &n));
    /* Small-message latency is timed in batches of round trips, one clock
     * read per batch (as nccl-tests times batches): a clock read per round
     * trip would add tens of nanoseconds to a few hundred. Both ranks round n alike. */
    int batch = cfg->mode == PB_P2P_LATENCY && bytes <= PB_LARGE_MESSAGE ? PB_P2P_LATENCY_BATCH : 1;
    if (batch > n) batch = n;
    n -= n % batch;
    double *samples = pb_faults_fail("samples") ? NULL : malloc(sizeof(double) * (size_t)(n / batch));
    int status = pair_agree(&p, ctrl, samples ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory for %d samples", n / batch));
    if (status != PB_OK || !samples) return free(samples), status; /* !samples implies a failure; said for the analyzer */
    int done = 0;
    /* Back-to-back clock reads: the samples add up to the whole loop's time,
     * which is what OSU divides by its iterations. */
    double per = cfg->mode == PB_P2P_LATENCY ? 2.0 * batch : batch, prev = pb_timing_now_us();
    for (int i = 0; i < n && status == PB_OK;) {
        pb_watchdog_arm_at(i, "operation", prev);
        for (int end = i + batch; i < end && status == PB_OK; i++) status = iteration(&p, i);
        double now = pb_timing_now_us();
        samples[done++] = (now - prev) / per;
        prev = now;
    }
    pb_watchdog_disarm();
    pb_stats_of(samples, (size_t)done, &out->st);
    free(samples);
    out->iters = done * batch;
    double moved = (double)bytes * (cfg->mode == PB_P2P_LATENCY ? 1 : cfg->window) * (cfg->mode == PB_P2P_BIBW ? 2 : 1);
    out->bw_GBps = out->st.mean > 0 ? moved / out->st.mean / 1e3 : 0;
    out->wrong = -1;
    if (status == PB_OK && cfg->check) status = check_exchange(&p, ctrl, &out->wrong);
    return status;
}

static const pb_options_iter_policy policies[PB_P2P_MODES] = {
    [PB_P2P_LATENCY] = {10000, 100, 1000, 10, PB_LARGE_MESSAGE + 1},
    [PB_P2P_BW] = {100, 10, 20, 2, PB_LARGE_MESSAGE + 1},
    [PB_P2P_BIBW] = {100, 10, 20, 2, PB_LARGE_MESSAGE + 1},
};

const pb_options_iter_policy *pb_p2p_policy(pb_p2p_mode m) { return &policies[m]; }
