/* Walks the collective table (coll.h): every row is complete, its busbw
 * factor is nccl-tests' formula, names round-trip, buffer shapes and cost
 * terms are the ones nccl-tests and the model use, the host's expected values
 * are the device switch's, and each row calls the backend operation it names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "coll/coll.h"
#include "coll/coll_exec.h"
#include "coll/coll_expect.h"
#include "core/error.h"

#include <math.h>
#include <string.h>

#define CLOSE(x, want) assert_true(fabs((x) - (want)) <= 1e-12 * fmax(1.0, fabs(want)))

static const int ranks[] = {1, 2, 3, 4, 5, 7, 8, 16, 64, 1000};
#define NRANKS ((int)(sizeof ranks / sizeof ranks[0]))

static int is(pb_coll c, const char *name) { return strcmp(pb_coll_name(c), name) == 0; }

static void test_rows_complete(void **state)
{
    (void)state;
    for (int c = 0; c < PB_COLL_COUNT; c++) {
        const pb_coll_desc *d = pb_coll_desc_of((pb_coll)c);
        assert_non_null(d);
        assert_non_null(d->name);
        assert_true(strlen(d->name) > 0);
        assert_non_null(d->busbw);
        assert_non_null(d->issue);
        assert_non_null(d->expected);
        assert_non_null(d->cost);
        for (int k = 0; k < c; k++) assert_string_not_equal(d->name, pb_coll_name((pb_coll)k));
    }
    assert_null(pb_coll_desc_of(PB_COLL_COUNT));
    assert_null(pb_coll_desc_of((pb_coll)-1));
}

/* The nccl-tests busbw definitions (docs/METRICS.md), written out again by name. */
static double nccl_tests_factor(pb_coll c, int n)
{
    if (is(c, "allreduce")) return 2.0 * (n - 1) / n;
    if (is(c, "allgather") || is(c, "reducescatter") || is(c, "alltoall")) return (double)(n - 1) / n;
    /* nccl-tests has no alltoallv: alltoall's factor on the mean block (docs/METRICS.md) */
    if (is(c, "alltoallv")) return (double)(n - 1) / n;
    if (is(c, "broadcast") || is(c, "reduce") || is(c, "sendrecv")) return 1.0;
    fail_msg("no nccl-tests factor for %s", pb_coll_name(c));
    return 0;
}

static void test_busbw_factors(void **state)
{
    (void)state;
    for (int c = 0; c < PB_COLL_COUNT; c++) {
        for (int i = 0; i < NRANKS; i++) {
            CLOSE(pb_coll_busbw_factor((pb_coll)c, ranks[i]), nccl_tests_factor((pb_coll)c, ranks[i]));
            CLOSE(pb_coll_desc_of((pb_coll)c)->busbw(ranks[i]), nccl_tests_factor((pb_coll)c, ranks[i]));
        }
        CLOSE(pb_coll_busbw_factor((pb_coll)c, 0), 0.0);
    }
    CLOSE(pb_coll_busbw_factor(PB_COLL_COUNT, 8), 0.0);
}

static void test_names_round_trip(void **state)
{
    (void)state;
    const char *const *names = pb_coll_names();
    char list[256] = "", expect[256] = "";
    for (int c = 0; c < PB_COLL_COUNT; c++) {
        pb_coll back = PB_COLL_COUNT;
        assert_int_equal(pb_coll_from_name(pb_coll_name((pb_coll)c), &back), PB_OK);
        assert_int_equal(back, c);
        assert_string_equal(names[c], pb_coll_name((pb_coll)c));
        strcat(expect, c ? ", " : "");
        strcat(expect, names[c]);
    }
    assert_null(names[PB_COLL_COUNT]);
    assert_string_equal(pb_coll_name_list(list, sizeof list), expect);
    /* The --coll help of coll_sweep was this text before it came from the table. */
    assert_string_equal(list, "allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv, alltoallv");
    char small[12];
    assert_string_equal(pb_coll_name_list(small, sizeof small), "allreduce, ");
    /* room for the terminator alone: an empty list, and nothing written past it (ASan's run) */
    char one[1] = {'x'};
    assert_string_equal(pb_coll_name_list(one, sizeof one), "");
}

static void test_flags(void **state)
{
    (void)state;
    for (int c = 0; c < PB_COLL_COUNT; c++) {
        const pb_coll_desc *d = pb_coll_desc_of((pb_coll)c);
        assert_int_equal(d->has_op, is(c, "allreduce") || is(c, "reducescatter") || is(c, "reduce"));
        assert_int_equal(d->has_root, is(c, "broadcast") || is(c, "reduce"));
        assert_int_equal(d->root_only_output, is(c, "reduce"));
        assert_int_equal(pb_coll_output_defined((pb_coll)c, 1, 0), !is(c, "reduce"));
        assert_true(pb_coll_output_defined((pb_coll)c, 0, 0));
    }
}

/* nccl-tests' per-rank counts for a buffer of `count` elements. */
static void test_shapes(void **state)
{
    (void)state;
    const size_t sizes[] = {1, 4, 100, 1000, 4096, 1 << 20};
    for (int c = 0; c < PB_COLL_COUNT; c++) {
        int split = is(c, "allgather") || is(c, "reducescatter") || is(c, "alltoall") || is(c, "alltoallv");
        size_t unit = is(c, "alltoallv") ? 12 : 1; /* whole units of the input pattern's period */
        assert_int_equal(pb_coll_splits((pb_coll)c), split);
        for (int i = 0; i < NRANKS; i++) {
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                size_t n = (size_t)ranks[i];
                pb_coll_exec_shape sh;
                pb_coll_exec_shape_of((pb_coll)c, sizes[s], PB_FLOAT32, ranks[i], &sh);
                assert_int_equal(sh.bytes, sh.count * 4);
                assert_true(sh.count >= 1);
                if (split) {
                    assert_int_equal(sh.count % (unit * n), 0);
                    assert_true(sh.count >= unit * n);
                }
                size_t chunk = sh.count / n;
                size_t send = is(c, "allgather") ? chunk : sh.count;
                size_t recv = is(c, "reducescatter") ? chunk : sh.count;
                size_t param = split && !is(c, "alltoallv") ? chunk : sh.count; /* alltoallv: no one count */
                assert_int_equal(sh.send_count, send);
                assert_int_equal(sh.recv_count, recv);
                assert_int_equal(sh.param, param);
            }
        }
    }
}

/* The model's alpha-beta terms (model.h): ring 2(n-1) / 2(n-1)/n, ring and
 * pairwise n-1 / (n-1)/n, tree ceil(log2 n) / ceil(log2 n), p2p 1 / 1. */
static void test_costs(void **state)
{
    (void)state;
    for (int c = 0; c < PB_COLL_COUNT; c++) {
        for (int i = 0; i < NRANKS; i++) {
            int n = ranks[i];
            double k = n - 1, depth = 0, steps, bytes;
            while ((1 << (int)depth) < n) depth++;
            if (is(c, "allreduce")) steps = 2 * k, bytes = 2 * k / n;
            else if (is(c, "broadcast") || is(c, "reduce")) steps = bytes = depth;
            else if (is(c, "sendrecv")) steps = bytes = 1;
            else steps = k, bytes = k / n;
            pb_coll_cost got = pb_coll_cost_of((pb_coll)c, n);
            CLOSE(got.steps, steps);
            CLOSE(got.bytes, bytes);
        }
    }
    const pb_coll_desc *ar = pb_coll_desc_of(PB_COLL_ALLREDUCE), *a2a = pb_coll_desc_of(PB_COLL_ALLTOALL);
    assert_int_equal(ar->algo, PB_ALGO_RING);
    assert_int_equal(a2a->algo, PB_ALGO_PAIRWISE); /* the planner does not fit it as a ring */
    assert_int_equal(pb_coll_desc_of(PB_COLL_BROADCAST)->algo, PB_ALGO_TREE);
}

/* The host check goes through the table, the device check through
 * pb_coll_expect_expected's switch: they must agree everywhere. */
static void test_expected_matches_device_switch(void **state)
{
    (void)state;
    for (int c = 0; c < PB_COLL_COUNT; c++)
        for (int op = 0; op < PB_REDOP_COUNT; op++)
            for (int n = 1; n <= 6; n++)
                for (int rank = 0; rank < n; rank++)
                    for (size_t j = 0; j < 24 / (size_t)n * (size_t)n; j++) {
                        int root = n - 1;
                        size_t count = 24 / (size_t)n * (size_t)n;
                        assert_int_equal(pb_coll_desc_of((pb_coll)c)->expected((pb_dtype_redop)op, count, n, rank, root, j),
                                         pb_coll_expect_expected((pb_coll)c, (pb_dtype_redop)op, count, n, rank, root, j));
                    }
}

/* A backend that records which operation was called, with which count. */
static const char *called;
static size_t called_count;
static int called_peer[2];
static size_t sent_to[4], received_from[4]; /* elements per peer, for alltoallv */
static const char *sent_at[4], *received_at[4]; /* where each peer's block starts */

static int rec(const char *what, size_t count)
{
    called = what;
    called_count = count;
    return PB_OK;
}

static int f_allreduce(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, pb_dtype_redop op) { return rec("allreduce", n); }
static int f_allgather(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t) { return rec("allgather", n); }
static int f_reducescatter(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, pb_dtype_redop op)
{
    return rec("reducescatter", n);
}
static int f_broadcast(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, int root) { return rec("broadcast", n); }
static int f_reduce(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, pb_dtype_redop op, int root)
{
    return rec("reduce", n);
}
static int f_alltoall(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t) { return rec("alltoall", n); }
static int f_group(pb_comm *c) { return PB_OK; }
static int f_send(pb_comm *c, const void *b, size_t n, pb_dtype t, int peer)
{
    called_peer[0] = peer;
    sent_to[peer] += n;
    sent_at[peer] = b;
    return rec("sendrecv", n);
}
static int f_recv(pb_comm *c, void *b, size_t n, pb_dtype t, int peer)
{
    called_peer[1] = peer;
    received_from[peer] += n;
    received_at[peer] = b;
    return PB_OK;
}
static int f_rank(const pb_comm *c) { return 2; }
static int f_size(const pb_comm *c) { return 4; }

static const pb_comm_backend rec_be = {
    .name = "record", .rank = f_rank, .size = f_size, .allreduce = f_allreduce, .allgather = f_allgather,
    .reducescatter = f_reducescatter, .broadcast = f_broadcast, .reduce = f_reduce, .alltoall = f_alltoall,
    .group_start = f_group, .group_end = f_group, .send = f_send, .recv = f_recv,
};

/* alltoallv at --skew 2.5 over 4 ranks, as rank 2: count_to(p) to every p, count_to(2) from every p. */
static void test_alltoallv_issue(void **state)
{
    (void)state;
    pb_coll_exec_shape sh;
    pb_coll_exec_shape_skewed(PB_COLL_ALLTOALLV, 48 * 10 * 4, PB_FLOAT32, 4, 2, 2.5, &sh);
    assert_int_equal(sh.count, 480);
    for (int p = 0; p < 4; p++) sent_to[p] = received_from[p] = 0;
    static float send[480], recv[4 * 480];
    assert_int_equal(pb_coll_exec_issue(&rec_be, NULL, PB_COLL_ALLTOALLV, &sh, send, recv, PB_FLOAT32, PB_SUM, 0), PB_OK);
    /* 10 units a destination on average: 25 to rank 0, 15 shared by 3; blocks in rank order */
    const size_t want[4] = {25 * 12, 5 * 12, 5 * 12, 5 * 12};
    size_t at = 0;
    for (int p = 0; p < 4; p++) {
        assert_int_equal(sent_to[p], want[p]);
        assert_int_equal(received_from[p], want[2]);
        assert_ptr_equal(sent_at[p], (const char *)(send + at));
        assert_ptr_equal(received_at[p], (const char *)(recv + (size_t)p * want[2]));
        at += want[p];
    }
    assert_int_equal(sh.recv_count, 4 * want[2]);
}

static void test_issue_calls_its_operation(void **state)
{
    (void)state;
    for (int c = 0; c < PB_COLL_COUNT; c++) {
        pb_coll_exec_shape sh;
        pb_coll_exec_shape_of((pb_coll)c, 4096, PB_FLOAT32, 4, &sh);
        called = NULL;
        if (is(c, "alltoallv")) continue; /* grouped sends and receives: test_alltoallv_issue */
        assert_int_equal(pb_coll_exec_issue(&rec_be, NULL, (pb_coll)c, &sh, NULL, NULL, PB_FLOAT32, PB_SUM, 0), PB_OK);
        assert_non_null(called);
        assert_string_equal(called, pb_coll_name((pb_coll)c));
        assert_int_equal(called_count, sh.param);
    }
    assert_int_equal(called_peer[0], 3); /* sendrecv: to rank + 1 */
    assert_int_equal(called_peer[1], 1); /* from rank - 1 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_complete),
        cmocka_unit_test(test_busbw_factors),
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_costs),
        cmocka_unit_test(test_expected_matches_device_switch),
        cmocka_unit_test(test_issue_calls_its_operation),
        cmocka_unit_test(test_alltoallv_issue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
