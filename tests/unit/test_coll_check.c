/* Validation values (coll_expect.h, the arithmetic the host check and the
 * device kernels share) and the check module (coll_check.h).
 *
 * Every build: hand-computed inputs and outputs of every collective; the O(1)
 * reduction over ranks against the loop over ranks; the host check finds no
 * wrong element in the result of a host simulation of each collective (every
 * type, reduction and 1..5 ranks), and finds an injected wrong value, a NaN
 * and the test-only corruption.
 * CUDA=1 without a GPU: the device path refuses with PB_ERR_ENV and a message.
 * CUDA=1 with a GPU: the device path gives the host path's counts on the same
 * data, including the injected values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "coll/coll_check.h"
#include "coll/coll_exec.h"
#include "coll/coll_expect.h"
#include "coll/coll_skew.h"
#include "backend/comm.h"
#include "core/dtype.h"
#include "core/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef PB_HAVE_CUDA
#include "backend/gpu.h"

#include <cuda_runtime.h>
#endif

#define MAXN 5
#define MAXC 64

/* ---- hand-computed values ------------------------------------------------ */

static void expect_all(pb_coll c, pb_dtype_redop op, size_t count, int nranks, int rank, int root, const int *want,
                       size_t n)
{
    for (size_t j = 0; j < n; j++) {
        int got = pb_coll_expect_expected(c, op, count, nranks, rank, root, j);
        if (got != want[j]) fail_msg("%s op %d, %d ranks, rank %d, element %zu: %d, expected %d", pb_coll_name(c),
                                     (int)op, nranks, rank, j, got, want[j]);
    }
}

static void inputs(void **state)
{
    (void)state;
    /* v(r, i) = ((r + 2i) mod 3) - 1 + (i mod 4) */
    static const int v[3][4] = {{-1, 2, 2, 2}, {0, 0, 3, 3}, {1, 1, 1, 4}};
    for (int r = 0; r < 3; r++)
        for (size_t i = 0; i < 4; i++) {
            assert_int_equal(pb_coll_expect_input(r, i), v[r][i]);
            assert_true(pb_coll_exec_input_value(r, i) == v[r][i]);
        }
    /* allgather ranks send their own chunk: count 6 over 3 ranks, rank 1 sends elements 2, 3 */
    assert_int_equal(pb_coll_expect_send_index(pb_coll_desc_of(PB_COLL_ALLGATHER)->send, 6, 3, 1, 0), 2);
    assert_int_equal(pb_coll_expect_send_value(pb_coll_desc_of(PB_COLL_ALLGATHER)->send, 6, 3, 1, 1), v[1][3]);
    assert_int_equal(pb_coll_expect_send_index(pb_coll_desc_of(PB_COLL_ALLTOALL)->send, 6, 3, 1, 4), 4);
    /* The device check's guard (host-callable): every collective of the table, nothing past either end. */
    for (int c = 0; c < (int)PB_COLL_COUNT; c++) assert_true(pb_coll_expect_known((pb_coll)c));
    assert_false(pb_coll_expect_known((pb_coll)-1));
    assert_false(pb_coll_expect_known(PB_COLL_COUNT));
}

static void reductions_by_hand(void **state)
{
    (void)state;
    /* 2 ranks: element 0 is {-1, 0}, 1 is {2, 0}, 2 is {2, 3} */
    expect_all(PB_COLL_ALLREDUCE, PB_SUM, 3, 2, 0, 0, (const int[]){-1, 2, 5}, 3);
    expect_all(PB_COLL_ALLREDUCE, PB_MAX, 3, 2, 1, 0, (const int[]){0, 2, 3}, 3);
    expect_all(PB_COLL_ALLREDUCE, PB_MIN, 3, 2, 1, 0, (const int[]){-1, 0, 2}, 3);
    /* 3 ranks: element i is {-1, 0, 1} + (i mod 4), so the results still vary with i */
    expect_all(PB_COLL_ALLREDUCE, PB_SUM, 4, 3, 2, 0, (const int[]){0, 3, 6, 9}, 4);
    expect_all(PB_COLL_ALLREDUCE, PB_MAX, 4, 3, 0, 0, (const int[]){1, 2, 3, 4}, 4);
    expect_all(PB_COLL_ALLREDUCE, PB_MIN, 4, 3, 1, 0, (const int[]){-1, 0, 1, 2}, 4);
    /* 4 ranks: element 0 is {-1, 0, 1, -1}, 1 is {2, 0, 1, 2}, 2 is {2, 3, 1, 2} */
    expect_all(PB_COLL_ALLREDUCE, PB_SUM, 3, 4, 3, 0, (const int[]){-1, 5, 8}, 3);
    expect_all(PB_COLL_REDUCE, PB_SUM, 3, 4, 1, 1, (const int[]){-1, 5, 8}, 3);
    /* 1 rank: the input itself */
    expect_all(PB_COLL_ALLREDUCE, PB_MAX, 3, 1, 0, 0, (const int[]){-1, 2, 2}, 3);
    /* reducescatter, 2 ranks, count 4 (chunk 2): rank 1 gets elements 2, 3 reduced */
    expect_all(PB_COLL_REDUCESCATTER, PB_SUM, 4, 2, 1, 0, (const int[]){5, 5}, 2);
    expect_all(PB_COLL_REDUCESCATTER, PB_MIN, 4, 2, 1, 0, (const int[]){2, 2}, 2);
    /* 4 ranks, count 8: rank 1 gets elements 2, 3 */
    expect_all(PB_COLL_REDUCESCATTER, PB_SUM, 8, 4, 1, 0, (const int[]){8, 11}, 2);
}

static void data_movement_by_hand(void **state)
{
    (void)state;
    /* 3 ranks, count 6, chunk 2 */
    /* allgather: element j comes from rank j / 2, which sent its element j */
    expect_all(PB_COLL_ALLGATHER, PB_SUM, 6, 3, 1, 0, (const int[]){-1, 2, 3, 3, 0, 0}, 6);
    /* alltoall, rank 1: block q is elements 2, 3 of rank q's input */
    expect_all(PB_COLL_ALLTOALL, PB_SUM, 6, 3, 1, 0, (const int[]){2, 2, 3, 3, 1, 4}, 6);
    /* alltoall, rank 0: block q is elements 0, 1 of rank q's input */
    expect_all(PB_COLL_ALLTOALL, PB_SUM, 6, 3, 0, 0, (const int[]){-1, 2, 0, 0, 1, 1}, 6);
    /* broadcast from root 2, seen on rank 0 */
    expect_all(PB_COLL_BROADCAST, PB_SUM, 3, 3, 0, 2, (const int[]){1, 1, 1}, 3);
    /* sendrecv: from rank - 1 (rank 0 from rank 2) */
    expect_all(PB_COLL_SENDRECV, PB_SUM, 3, 3, 0, 0, (const int[]){1, 1, 1}, 3);
    expect_all(PB_COLL_SENDRECV, PB_SUM, 3, 3, 1, 0, (const int[]){-1, 2, 2}, 3);
    /* reduce: only the root's output is defined */
    assert_false(pb_coll_output_defined(PB_COLL_REDUCE, 0, 1));
    assert_true(pb_coll_output_defined(PB_COLL_REDUCE, 1, 1));
    assert_true(pb_coll_output_defined(PB_COLL_ALLREDUCE, 0, 1));
    assert_false(pb_coll_expect_known(PB_COLL_COUNT));
}

static void closed_form_reduction_is_the_loop(void **state)
{
    (void)state;
    for (int n = 1; n <= 40; n++)
        for (size_t i = 0; i < 30; i++)
            for (int op = 0; op < PB_REDOP_COUNT; op++) {
                int acc = pb_coll_expect_input(0, i);
                for (int r = 1; r < n; r++) {
                    int v = pb_coll_expect_input(r, i);
                    acc = op == PB_SUM ? acc + v : op == PB_MAX ? (v > acc ? v : acc) : (v < acc ? v : acc);
                }
                assert_int_equal(pb_coll_expect_reduced((pb_dtype_redop)op, n, i), acc);
            }
}

static void tolerance(void **state)
{
    (void)state;
    /* partial results reach 4 * nranks: exact while that fits the mantissa */
    assert_true(pb_coll_expect_tolerance(PB_BFLOAT16, 64) == 0.0);
    assert_true(pb_coll_expect_tolerance(PB_BFLOAT16, 65) > 0.0);
    assert_true(pb_coll_expect_tolerance(PB_FLOAT16, 512) == 0.0);
    assert_true(pb_coll_expect_tolerance(PB_FLOAT16, 513) > 0.0);
    assert_true(pb_coll_expect_tolerance(PB_FLOAT32, 1 << 20) == 0.0);
    assert_true(pb_coll_exec_tolerance(PB_INT32, 3) == pb_coll_expect_tolerance(PB_INT32, 3));
    assert_true(pb_coll_expect_is_wrong(NAN, 0.0, 1.0));
    assert_true(pb_coll_expect_is_wrong(1.0, 0.0, 0.0));
    assert_false(pb_coll_expect_is_wrong(-1.0, -1.0, 0.0));
}

/* ---- the check, on the host, against a simulation of each collective ------- */

static int h_to_host(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    return PB_OK;
}

static const pb_comm_backend host_be = {.name = "test", .mem = PB_MEM_HOST, .to_host = h_to_host, .from_host = h_to_host};

static double apply(pb_dtype_redop op, double a, double b) { return op == PB_SUM ? a + b : op == PB_MAX ? fmax(a, b) : fmin(a, b); }

/* Rank `rank`'s receive buffer after c over every rank's send buffer (values
 * read back from the typed buffers the check module filled), by the
 * collective's definition, not by coll_expect.h. */
static void simulate(pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, pb_dtype_redop op, int n, int rank, int root,
                     unsigned char send[][MAXC * 4], double *out)
{
    size_t chunk = sh->count / (size_t)n;
    for (size_t j = 0; j < sh->recv_count; j++) {
        switch (c) {
        case PB_COLL_ALLREDUCE:
        case PB_COLL_REDUCE:
        case PB_COLL_REDUCESCATTER: {
            size_t at = c == PB_COLL_REDUCESCATTER ? (size_t)rank * chunk + j : j;
            out[j] = pb_dtype_get(t, send[0], at);
            for (int r = 1; r < n; r++) out[j] = apply(op, out[j], pb_dtype_get(t, send[r], at));
            break;
        }
        case PB_COLL_ALLGATHER: out[j] = pb_dtype_get(t, send[j / chunk], j % chunk); break;
        case PB_COLL_BROADCAST: out[j] = pb_dtype_get(t, send[root], j); break;
        case PB_COLL_ALLTOALL: out[j] = pb_dtype_get(t, send[j / chunk], (size_t)rank * chunk + j % chunk); break;
        case PB_COLL_SENDRECV: out[j] = pb_dtype_get(t, send[(rank - 1 + n) % n], j); break;
        case PB_COLL_ALLTOALLV: { /* block s from sender s, from where s's block for this rank starts */
            size_t block = sh->recv_count / (size_t)n, at = 0;
            for (int d = 0; d < rank; d++) at += pb_coll_skew_count_to(sh->count, n, sh->skew, d);
            out[j] = pb_dtype_get(t, send[j / block], at + j % block);
            break;
        }
        default: out[j] = NAN; break;
        }
    }
}

static long long wrong_of(const pb_comm_backend *be, pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, pb_dtype_redop op, int rank,
                       int n, int root, int corrupt, void *recv)
{
    long long wrong = -1;
    assert_int_equal(pb_coll_check_count(be, c, sh, t, op, rank, n, root, corrupt, recv, &wrong), PB_OK);
    return wrong;
}

static void host_check_of_simulated_collectives(void **state)
{
    (void)state;
    assert_string_equal(pb_coll_check_where(&host_be), "host");
    static unsigned char send[MAXN][MAXC * 4], recv[MAXC * 4];
    double out[MAXC];
    for (int n = 1; n <= MAXN; n++)
        for (int c = 0; c < PB_COLL_COUNT; c++)
            for (int t = 0; t < PB_BYTE; t++)
                for (int op = 0; op < PB_REDOP_COUNT; op++) {
                    pb_coll_exec_shape sh;
                    pb_coll_exec_shape_of((pb_coll)c, 48 * pb_dtype_size((pb_dtype)t), (pb_dtype)t, n, &sh);
                    assert_true(sh.send_count <= MAXC && sh.recv_count <= MAXC);
                    for (int r = 0; r < n; r++)
                        assert_int_equal(pb_coll_check_fill(&host_be, (pb_coll)c, &sh, (pb_dtype)t, r, n, send[r]),
                                         PB_OK);
                    for (int rank = 0; rank < n; rank++) {
                        int root = n - 1;
                        simulate((pb_coll)c, &sh, (pb_dtype)t, (pb_dtype_redop)op, n, rank, root, send, out);
                        for (size_t j = 0; j < sh.recv_count; j++) pb_dtype_set((pb_dtype)t, recv, j, out[j]);
                        assert_int_equal(wrong_of(&host_be, (pb_coll)c, &sh, (pb_dtype)t, (pb_dtype_redop)op, rank, n, root,
                                               0, recv),
                                         0);
                        assert_int_equal(pb_coll_exec_count_wrong((pb_coll)c, &sh, (pb_dtype)t, (pb_dtype_redop)op, rank, n,
                                                             root, recv),
                                         0);
                    }
                }
}

/* alltoallv at every skew a rank count allows: the host check finds no wrong
 * element in the simulated result of every rank, and finds one changed. */
static void host_check_of_skewed_alltoallv(void **state)
{
    (void)state;
    static unsigned char send[MAXN][MAXC * 4], recv[MAXN * MAXC * 4];
    static double out[MAXN * MAXC];
    const double skews[] = {1.0, 1.5, 2.0, 2.5, 5.0};
    for (int n = 1; n <= MAXN; n++)
        for (size_t k = 0; k < sizeof skews / sizeof skews[0]; k++) {
            if (skews[k] > n) continue;
            for (int rank = 0; rank < n; rank++) {
                pb_coll_exec_shape sh;
                pb_coll_exec_shape_skewed(PB_COLL_ALLTOALLV, 48 * 4, PB_FLOAT32, n, rank, skews[k], &sh);
                assert_true(sh.send_count <= MAXC && sh.recv_count <= MAXN * MAXC);
                for (int r = 0; r < n; r++)
                    assert_int_equal(pb_coll_check_fill(&host_be, PB_COLL_ALLTOALLV, &sh, PB_FLOAT32, r, n, send[r]), PB_OK);
                simulate(PB_COLL_ALLTOALLV, &sh, PB_FLOAT32, PB_SUM, n, rank, 0, send, out);
                for (size_t j = 0; j < sh.recv_count; j++) pb_dtype_set(PB_FLOAT32, recv, j, out[j]);
                assert_int_equal(wrong_of(&host_be, PB_COLL_ALLTOALLV, &sh, PB_FLOAT32, PB_SUM, rank, n, 0, 0, recv), 0);
                if (sh.recv_count == 0) continue;
                pb_dtype_set(PB_FLOAT32, recv, sh.recv_count - 1, out[sh.recv_count - 1] + 1);
                assert_int_equal(wrong_of(&host_be, PB_COLL_ALLTOALLV, &sh, PB_FLOAT32, PB_SUM, rank, n, 0, 0, recv), 1);
            }
        }
}

/* A correct allreduce result on 3 ranks, in recv (type t, 48 elements). */
static void correct_allreduce(const pb_comm_backend *be, pb_dtype t, pb_coll_exec_shape *sh, void *recv)
{
    static unsigned char send[MAXN][MAXC * 4], host[MAXC * 4];
    double out[MAXC];
    pb_coll_exec_shape_of(PB_COLL_ALLREDUCE, 48 * pb_dtype_size(t), t, 3, sh);
    for (int r = 0; r < 3; r++)
        assert_int_equal(pb_coll_check_fill(&host_be, PB_COLL_ALLREDUCE, sh, t, r, 3, send[r]), PB_OK);
    simulate(PB_COLL_ALLREDUCE, sh, t, PB_SUM, 3, 1, 0, send, out);
    for (size_t j = 0; j < sh->recv_count; j++) pb_dtype_set(t, host, j, out[j]);
    assert_int_equal(be->from_host(recv, host, sh->recv_count * pb_dtype_size(t)), PB_OK);
}

/* Element j of the backend buffer becomes v. */
static void poke(const pb_comm_backend *be, pb_dtype t, void *buf, size_t j, double v)
{
    unsigned char one[8];
    pb_dtype_set(t, one, 0, v);
    size_t ts = pb_dtype_size(t);
    assert_int_equal(be->from_host((unsigned char *)buf + j * ts, one, ts), PB_OK);
}

/* Injected wrong values, a NaN and the test-only corruption are counted, on
 * backend be (host or device buffers). */
static void finds_injected_values(const pb_comm_backend *be, void *recv, void *bytes)
{
    for (int t = 0; t < PB_BYTE; t++) {
        pb_coll_exec_shape sh;
        correct_allreduce(be, (pb_dtype)t, &sh, recv);
        assert_int_equal(wrong_of(be, PB_COLL_ALLREDUCE, &sh, (pb_dtype)t, PB_SUM, 1, 3, 0, 0, recv), 0);
        poke(be, (pb_dtype)t, recv, 5, 7.0);
        assert_int_equal(wrong_of(be, PB_COLL_ALLREDUCE, &sh, (pb_dtype)t, PB_SUM, 1, 3, 0, 0, recv), 1);
        if (t != PB_INT32) { /* NaN is wrong, whatever the tolerance */
            poke(be, (pb_dtype)t, recv, 47, NAN);
            assert_int_equal(wrong_of(be, PB_COLL_ALLREDUCE, &sh, (pb_dtype)t, PB_SUM, 1, 3, 0, 0, recv), 2);
        }
        correct_allreduce(be, (pb_dtype)t, &sh, recv);
        assert_int_equal(wrong_of(be, PB_COLL_ALLREDUCE, &sh, (pb_dtype)t, PB_SUM, 1, 3, 0, 1, recv), 1);
        /* reduce on a non-root rank: undefined output, neither counted nor corrupted */
        assert_int_equal(wrong_of(be, PB_COLL_REDUCE, &sh, (pb_dtype)t, PB_SUM, 1, 3, 0, 1, recv), 0);
    }
    unsigned char host[100];
    long long wrong = -1;
    assert_int_equal(pb_coll_check_bytes_fill(be, bytes, sizeof host, 4), PB_OK);
    assert_int_equal(be->to_host(host, bytes, sizeof host), PB_OK);
    for (size_t i = 0; i < sizeof host; i++) assert_int_equal(host[i], pb_coll_expect_byte(4, i));
    assert_int_equal(pb_coll_check_bytes_count(be, 4, 0, bytes, sizeof host, &wrong), PB_OK);
    assert_int_equal(wrong, 0);
    assert_int_equal(pb_coll_check_bytes_count(be, 3, 0, bytes, sizeof host, &wrong), PB_OK);
    assert_true(wrong > 0); /* another sender's pattern */
    host[99] ^= 1;
    assert_int_equal(be->from_host(bytes, host, sizeof host), PB_OK);
    assert_int_equal(pb_coll_check_bytes_count(be, 4, 0, bytes, sizeof host, &wrong), PB_OK);
    assert_int_equal(wrong, 1);
    assert_int_equal(pb_coll_check_bytes_count(be, 4, 1, bytes, sizeof host, &wrong), PB_OK);
    assert_int_equal(wrong, 2);
}

static void host_check_finds_injected_values(void **state)
{
    (void)state;
    static unsigned char recv[MAXC * 4], bytes[100];
    finds_injected_values(&host_be, recv, bytes);
}

/* ---- the device path ------------------------------------------------------- */

#ifdef PB_HAVE_CUDA
static int d_to_host(void *dst, const void *src, size_t bytes)
{
    return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) == cudaSuccess ? PB_OK : PB_ERR_ENV;
}

static int d_from_host(void *dst, const void *src, size_t bytes)
{
    return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice) == cudaSuccess ? PB_OK : PB_ERR_ENV;
}

static const pb_comm_backend device_be = {.name = "test", .mem = PB_MEM_DEVICE, .to_host = d_to_host, .from_host = d_from_host};

static void device_path_without_gpu_refuses(void **state)
{
    (void)state;
    assert_string_equal(pb_coll_check_where(&device_be), "device");
    if (pb_gpu_count() > 0) return; /* a GPU: device_path_matches_host_path covers it (no skip on a GPU node) */
    static unsigned char not_device[MAXC * 4];
    pb_coll_exec_shape sh;
    long long wrong = -1;
    pb_coll_exec_shape_of(PB_COLL_ALLREDUCE, 64, PB_FLOAT32, 2, &sh);
    assert_int_equal(pb_coll_check_fill(&device_be, PB_COLL_ALLREDUCE, &sh, PB_FLOAT32, 0, 2, not_device),
                     PB_ERR_ENV);
    assert_int_equal(pb_coll_check_count(&device_be, PB_COLL_ALLREDUCE, &sh, PB_FLOAT32, PB_SUM, 0, 2, 0, 0,
                                         not_device, &wrong),
                     PB_ERR_ENV);
    assert_int_equal(pb_coll_check_bytes_fill(&device_be, not_device, 10, 0), PB_ERR_ENV);
    assert_int_equal(pb_coll_check_bytes_count(&device_be, 0, 0, not_device, 10, &wrong), PB_ERR_ENV);
}

static void device_path_matches_host_path(void **state)
{
    (void)state;
    if (pb_gpu_count() == 0) skip();
    void *recv = NULL, *bytes = NULL, *send = NULL;
    assert_int_equal(cudaMalloc(&recv, MAXC * 4), cudaSuccess);
    assert_int_equal(cudaMalloc(&bytes, 100), cudaSuccess);
    finds_injected_values(&device_be, recv, bytes);
    /* The device fill is the host fill, and the device count of a simulated
     * result is the host count, for every collective and type on 3 ranks. */
    assert_int_equal(cudaMalloc(&send, MAXC * 4), cudaSuccess);
    static unsigned char hsend[MAXN][MAXC * 4], dsend[MAXC * 4], hrecv[MAXC * 4];
    double out[MAXC];
    for (int c = 0; c < PB_COLL_COUNT; c++)
        for (int t = 0; t < PB_BYTE; t++) {
            pb_coll_exec_shape sh;
            size_t ts = pb_dtype_size((pb_dtype)t);
            pb_coll_exec_shape_of((pb_coll)c, 48 * ts, (pb_dtype)t, 3, &sh);
            for (int r = 0; r < 3; r++) {
                assert_int_equal(pb_coll_check_fill(&host_be, (pb_coll)c, &sh, (pb_dtype)t, r, 3, hsend[r]), PB_OK);
                assert_int_equal(pb_coll_check_fill(&device_be, (pb_coll)c, &sh, (pb_dtype)t, r, 3, send), PB_OK);
                assert_int_equal(d_to_host(dsend, send, sh.send_count * ts), PB_OK);
                assert_memory_equal(dsend, hsend[r], sh.send_count * ts);
            }
            for (int rank = 0; rank < 3; rank++) {
                simulate((pb_coll)c, &sh, (pb_dtype)t, PB_MAX, 3, rank, 2, hsend, out);
                for (size_t j = 0; j < sh.recv_count; j++) pb_dtype_set((pb_dtype)t, hrecv, j, out[j]);
                if (rank == 1) pb_dtype_set((pb_dtype)t, hrecv, 0, -5.0); /* one wrong element */
                assert_int_equal(d_from_host(recv, hrecv, sh.recv_count * ts), PB_OK);
                long long want = wrong_of(&host_be, (pb_coll)c, &sh, (pb_dtype)t, PB_MAX, rank, 3, 2, 0, hrecv);
                assert_int_equal(wrong_of(&device_be, (pb_coll)c, &sh, (pb_dtype)t, PB_MAX, rank, 3, 2, 0, recv), want);
            }
        }
    cudaFree(send);
    cudaFree(recv);
    cudaFree(bytes);
}
#endif

/* Byte checks of point-to-point data: the test-only corruption flips exactly the first byte, at
 * every size down to one byte, and an intact buffer counts nothing. */
static void bytes_corruption_at_every_size(void **state)
{
    (void)state;
    unsigned char buf[64];
    const size_t sizes[] = {1, 2, 3, 64};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int corrupt = 0; corrupt < 2; corrupt++) {
            long long wrong = -1;
            assert_int_equal(pb_coll_check_bytes_fill(&host_be, buf, sizes[k], 3), PB_OK);
            assert_int_equal(pb_coll_check_bytes_count(&host_be, 3, corrupt, buf, sizes[k], &wrong), PB_OK);
            assert_int_equal(wrong, corrupt);
        }
}

int main(void)
{
    pb_error_set_quiet_usage(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inputs),
        cmocka_unit_test(reductions_by_hand),
        cmocka_unit_test(data_movement_by_hand),
        cmocka_unit_test(closed_form_reduction_is_the_loop),
        cmocka_unit_test(tolerance),
        cmocka_unit_test(host_check_of_simulated_collectives), cmocka_unit_test(host_check_of_skewed_alltoallv),
        cmocka_unit_test(host_check_finds_injected_values),
        cmocka_unit_test(bytes_corruption_at_every_size),
#ifdef PB_HAVE_CUDA
        cmocka_unit_test(device_path_without_gpu_refuses),
        cmocka_unit_test(device_path_matches_host_path),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
