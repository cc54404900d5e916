/* The pipeline executor (workload/pp.h) on one stage: each step's stats are
 * that step's alone, whatever the caller's struct held before, and count the
 * compute actions the schedule holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "backend/comm.h"
#include "core/error.h"
#include "workload/pp.h"
#include "workload/pp_schedule.h"

#include <mpi.h>
#include <string.h>

typedef struct {
    int begins, fwd, bwd;
} counts;

static int begin(void *u) { ((counts *)u)->begins++; return PB_OK; }
static int hold(void *u, int chunk, int mb) { (void)u, (void)chunk, (void)mb; return PB_OK; }
static void release(void *u, int chunk, int mb) { (void)u, (void)chunk, (void)mb; }
static int fwd(void *u, int chunk, int mb, const void *in, void *out)
{
    (void)chunk, (void)mb, (void)in, (void)out;
    ((counts *)u)->fwd++;
    return PB_OK;
}
static int bwd(void *u, int chunk, int mb, const void *dout, void *din)
{
    (void)chunk, (void)mb, (void)dout, (void)din;
    ((counts *)u)->bwd++;
    return PB_OK;
}
static int input(void *u, int mb, void *x) { (void)u, (void)mb, (void)x; return PB_OK; }
static uint64_t peak(void *u) { (void)u; return 0; }

static const pb_pp_ops ops = {begin, hold, release, fwd, bwd, input, input, peak};

/* An executor of one stage (MPI_COMM_SELF) and its plan of 4 micro-batches. */
static pb_pp_exec *one_stage(pb_pp_sched sched, pb_pp_schedule_plan *plan)
{
    pb_pp_config cfg = {.be = pb_comm_backend_mpi(), .group = MPI_COMM_SELF, .act_count = 16,
                        .act_dtype = PB_FLOAT32, .max_sends = 4};
    pb_pp_exec *ex = NULL;
    assert_int_equal(pb_pp_exec_create(&cfg, &ex), PB_OK);
    assert_int_equal(pb_pp_schedule_plan_build(sched, 1, 4, 1, 0, plan), PB_OK);
    return ex;
}

/* The MPI backend, counting the communicators made and freed through it. */
static int made, freed;
static pb_comm_backend counting;
static int count_create(MPI_Comm group, pb_comm **out)
{
    made++;
    return pb_comm_backend_mpi()->comm_create(group, out);
}
static void count_destroy(pb_comm *c)
{
    freed++;
    pb_comm_backend_mpi()->comm_destroy(c);
}

/* One communicator per link colour some link has and direction (2 colours
 * unless an odd ring needs a third; fewer links, fewer colours), each freed
 * with the executor: a stage alone has no link, and makes none. */
static void communicators_per_colour(void **state)
{
    (void)state;
    counting = *pb_comm_backend_mpi();
    counting.comm_create = count_create, counting.comm_destroy = count_destroy;
    made = freed = 0;
    pb_pp_config cfg = {.be = &counting, .group = MPI_COMM_SELF, .act_count = 16, .act_dtype = PB_FLOAT32,
                        .max_sends = 4};
    pb_pp_exec *ex = NULL;
    assert_int_equal(pb_pp_exec_create(&cfg, &ex), PB_OK);
    assert_int_equal(made, pb_pp_exec_comms(1, 0));
    assert_int_equal(made, 0);
    pb_pp_exec_destroy(ex);
    assert_int_equal(freed, made);
    const int want[][3] = {{1, 0, 0}, {2, 0, 2}, {3, 0, 4}, {8, 0, 4}, {2, 1, 4}, {3, 1, 6}, {4, 1, 4}, {9, 1, 6}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        assert_int_equal(pb_pp_exec_comms(want[k][0], want[k][1]), want[k][2]);
}

/* A stage's two links (in from the previous stage, out to the next) never share
 * a colour, on a chain or a ring of any length, and every colour has its
 * communicator. */
static void neighbouring_links_differ(void **state)
{
    (void)state;
    for (int ring = 0; ring <= 1; ring++)
        for (int p = 2; p <= 9; p++) {
            int nc = pb_pp_link_colors(p, ring), links = ring ? p : p - 1;
            assert_int_equal(nc, ring && p % 2 ? 3 : 2);
            for (int i = 0; i < links; i++) {
                int c = pb_pp_link_color(i, p, nc), next = (i + 1) % p;
                assert_true(c >= 0 && c < nc);
                if (next < links) assert_int_not_equal(c, pb_pp_link_color(next, p, nc));
            }
        }
}

static void stats_are_one_steps(void **state)
{
    (void)state;
    pb_pp_schedule_plan plan;
    pb_pp_exec *ex = one_stage(PB_PP_1F1B, &plan);
    counts c = {0};
    pb_pp_stats st;
    for (int step = 1; step <= 3; step++) {
        memset(&st, 0x55, sizeof st); /* a caller's stale struct: the step must not add to it */
        assert_int_equal(pb_pp_exec_step(ex, &plan, &ops, &c, &st, NULL), PB_OK);
        assert_int_equal(c.begins, step);
        assert_int_equal(st.nfwd, 4);
        assert_int_equal(st.nbwd, 4);
        assert_true(st.bytes_sent == 0 && st.bytes_recv == 0); /* one stage: nothing to send */
        assert_true(st.fwd_us >= 0 && st.bwd_us >= 0 && st.wait_us >= 0);
        assert_true(st.fwd_us + st.bwd_us <= st.step_us); /* busy time within the step's wall time */
    }
    assert_int_equal(c.fwd, 12);
    assert_int_equal(c.bwd, 12);
    pb_pp_schedule_plan_free(&plan);
    pb_pp_exec_destroy(ex);
}

/* A traced one-stage step: one fwd and one bwd event per micro-batch, in
 * the schedule's order, each inside the step; freed, the trace is empty
 * (and the sanitized run of this test sees no leak: test_unit_sanitized). */
static void trace_records_the_step(void **state)
{
    (void)state;
    pb_pp_schedule_plan plan;
    pb_pp_exec *ex = one_stage(PB_PP_GPIPE, &plan);
    counts c = {0};
    pb_pp_stats st;
    pb_pp_trace t = {0};
    assert_int_equal(pb_pp_trace_origin(MPI_COMM_SELF, &t), PB_OK);
    for (int step = 0; step < 2; step++) { /* the second step's events replace the first's */
        pb_pp_trace_clear(&t);
        assert_int_equal(pb_pp_exec_step(ex, &plan, &ops, &c, &st, &t), PB_OK);
        assert_int_equal(t.n, 8);
        for (int i = 0; i < 8; i++) { /* gpipe: F0..F3, then B0..B3 */
            assert_int_equal(t.ev[i].kind, i < 4 ? PB_PP_EV_FWD : PB_PP_EV_BWD);
            assert_int_equal(t.ev[i].mb, i % 4);
            assert_true(t.ev[i].end_us >= t.ev[i].start_us && t.ev[i].start_us >= 0);
            if (i > 0) assert_true(t.ev[i].start_us >= t.ev[i - 1].end_us);
        }
    }
    pb_pp_trace_free(&t);
    assert_true(t.ev == NULL && t.n == 0 && t.cap == 0);
    pb_pp_schedule_plan_free(&plan);
    pb_pp_exec_destroy(ex);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(communicators_per_colour), cmocka_unit_test(neighbouring_links_differ), cmocka_unit_test(stats_are_one_steps),
                                       cmocka_unit_test(trace_records_the_step)};
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return failed;
}
