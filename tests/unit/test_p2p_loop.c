/* p2p_sweep's latency loop times the ping-pong as OSU's osu_latency does: the
 * timed round trips back to back, with nothing between them (no alignment,
 * no control message), and time_us is that loop's time over its count. On
 * one rank (an MPI singleton) paired with itself through a fake backend whose
 * blocking calls are traced (S: send, R: receive; each receive takes 200 us);
 * the MPI calls the measurement makes are traced too (A: a collective, C: a
 * control message), by definitions that take the library's place. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/p2p.h"
#include "core/error.h"
#include "core/timing.h"

#include <mpi.h>
#include <string.h>
#include <time.h>

enum { RECV_US = 200, ITERS = 32 };

static char trace[1024];
static double first_timed_us, last_us; /* the first of the timed calls' start, the last one's end */
static int calls;

static void mark(char c)
{
    size_t n = strlen(trace);
    if (n + 1 < sizeof trace) trace[n] = c, trace[n + 1] = '\0';
}

/* A count sent to itself would be left unreceived: the initiator's half is all that runs here. */
int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    (void)buf, (void)count, (void)t, (void)dest, (void)tag, (void)comm;
    mark('C');
    return MPI_SUCCESS;
}

int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int stag, void *rb, int rc, MPI_Datatype rt,
                 int src, int rtag, MPI_Comm comm, MPI_Status *status)
{
    mark('C');
    return PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc, rt, src, rtag, comm, status);
}

int MPI_Barrier(MPI_Comm comm)
{
    mark('A');
    return PMPI_Barrier(comm);
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    mark('A');
    return PMPI_Ibarrier(comm, req);
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    mark('A');
    return PMPI_Allreduce(s, r, n, t, op, comm);
}

static int fake_rank(const pb_comm *c) { return (void)c, 0; }

static int fake_send(pb_comm *c, const void *buf, size_t n, pb_dtype t, int peer)
{
    (void)c, (void)buf, (void)n, (void)t, (void)peer;
    if (++calls == 2 * 2 + 1) first_timed_us = pb_timing_now_us(); /* after 2 warm-up round trips */
    mark('S');
    return PB_OK;
}

static int fake_recv(pb_comm *c, void *buf, size_t n, pb_dtype t, int peer)
{
    (void)c, (void)buf, (void)n, (void)t, (void)peer;
    calls++;
    mark('R');
    nanosleep(&(struct timespec){0, RECV_US * 1000L}, NULL);
    last_us = pb_timing_now_us();
    return PB_OK;
}

static const pb_comm_backend fake = {.name = "fake", .rank = fake_rank, .send_blocking = fake_send,
                                     .recv_blocking = fake_recv};

static void latency_is_the_whole_loop(void **state)
{
    (void)state;
    static char buf[2][64];
    pb_buffers s = {.be = &fake, .base = buf[0], .pool = 64, .stride = 64, .slots = 1};
    pb_buffers r = {.be = &fake, .base = buf[1], .pool = 64, .stride = 64, .slots = 1};
    pb_p2p_cfg cfg = {PB_P2P_LATENCY, ITERS, 2, 1, 0, 0};
    pb_p2p_result out;
    int dummy;
    assert_int_equal(pb_p2p_measure(&fake, (pb_comm *)&dummy, MPI_COMM_WORLD, 0, 0, 8, &cfg, &s, &r, &out), PB_OK);
    assert_int_equal(out.iters, ITERS);
    /* warm-up, a count, warm-up, the timed count, the pair's agreement on its samples, then the
     * timed round trips back to back: nothing between them */
    char want[1024] = "SRCSRCC";
    for (int i = 0; i < ITERS; i++) strcat(want, "SR");
    assert_string_equal(trace, want);
    /* time_us is half of each round trip, from the loop's time: its ITERS round trips cover the span
     * from the first timed call to the last one's end, and little more */
    double span = last_us - first_timed_us, timed = out.st.mean * 2 * ITERS;
    assert_true(out.st.mean >= RECV_US / 2.0);
    assert_true(timed >= span && timed <= span + 1000);
}

int main(void)
{
    MPI_Init(NULL, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(latency_is_the_whole_loop),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return failed;
}
