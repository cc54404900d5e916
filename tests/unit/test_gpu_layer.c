/* The GPU logic that runs without a GPU: against a fake GPU layer
 * (pb_gpu_ops_set), and pure functions.
 *  - host-to-device copies are complete on return in both device backends
 *    (the MPI device backend and NCCL's; CUDA builds): the fake copy "lands"
 *    only when the legacy stream is synchronised, as a DMA from pageable
 *    memory may land after cudaMemcpy returned;
 *  - binding: rank -> GPU modulo the count, remembered, set again per thread;
 *  - more ranks per node than GPUs: exit 3 for NCCL, allowed when shared;
 *  - the NCCL version: alltoall native from 2.28.3 only, and version text;
 *  - where each rank's NCCL log goes.
 * (The DP communication thread's binding is in test_dp.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend/gpu.h"
#include "backend/nccl_version.h"
#include "core/error.h"
#include "harness/bench.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fake GPU: copies wait in a queue until the legacy stream is synchronised ---- */

static _Thread_local int current = -1;
static int set_calls;
static struct {
    void *dst;
    const void *src;
    size_t bytes;
} pending[8];
static int npending, nsyncs;

static int f_count(void) { return 2; }
static int f_set(int dev)
{
    current = dev;
    set_calls++;
    return PB_OK;
}
static int f_describe(int dev, int n, char *d, size_t len) { return snprintf(d, len, "fake %d/%d", dev, n), PB_OK; }
static size_t f_cache(void) { return 1u << 20; }
static int f_copy(void *dst, const void *src, size_t bytes)
{
    assert_true(npending < 8);
    pending[npending].dst = dst, pending[npending].src = src, pending[npending].bytes = bytes;
    npending++;
    return PB_OK;
}
static int f_sync(void)
{
    for (int i = 0; i < npending; i++) memcpy(pending[i].dst, pending[i].src, pending[i].bytes);
    npending = 0;
    nsyncs++;
    return PB_OK;
}
static const pb_gpu_ops fake = {.count = f_count, .set_device = f_set, .describe = f_describe,
                                .cache_bytes = f_cache, .copy_h2d = f_copy, .sync_legacy = f_sync};

static int setup(void **state)
{
    (void)state;
    pb_gpu_ops_set(&fake);
    npending = nsyncs = set_calls = 0;
    current = -1;
    return 0;
}
static int teardown(void **state)
{
    (void)state;
    pb_gpu_ops_set(NULL);
    return 0;
}

static void check_landed(int (*from_host)(void *, const void *, size_t))
{
    char src[64], dst[64];
    for (int i = 0; i < 64; i++) src[i] = (char)i, dst[i] = 0;
    nsyncs = 0;
    assert_int_equal(from_host(dst, src, sizeof src), PB_OK);
    assert_int_equal(npending, 0);
    assert_true(nsyncs >= 1);
    assert_memory_equal(dst, src, sizeof src); /* landed before the call returned */
    assert_int_equal(from_host(dst, src, 0), PB_OK);
}

static void test_from_host_is_complete(void **state)
{
    (void)state;
    check_landed(pb_gpu_from_host);
}

#ifdef PB_HAVE_CUDA
#include "backend/comm.h"

static void test_device_backends_order_h2d(void **state)
{
    (void)state;
    check_landed(pb_comm_backend_mpi_device()->from_host);
    check_landed(pb_comm_backend_nccl()->from_host);
}
#endif

static void *thread_bind(void *arg)
{
    (void)arg;
    int *dev = malloc(sizeof *dev);
    *dev = current; /* a new thread starts unbound */
    assert_int_equal(*dev, -1);
    assert_int_equal(pb_gpu_thread_bind(), PB_OK);
    *dev = current;
    return dev;
}

static void test_bind_and_threads(void **state)
{
    (void)state;
    char desc[64];
    assert_int_equal(pb_gpu_bound(), -1);
    assert_int_equal(pb_gpu_thread_bind(), PB_OK); /* nothing bound: nothing done */
    assert_int_equal(set_calls, 0);
    assert_int_equal(pb_gpu_bind(3, 0, desc, sizeof desc), PB_OK); /* 3 mod 2 */
    assert_int_equal(pb_gpu_bound(), 1);
    assert_string_equal(desc, "fake 1/2");
    assert_int_equal(pb_gpu_bind(0, -3, desc, sizeof desc), PB_OK); /* (0 - 3) mod 2, never negative */
    assert_int_equal(pb_gpu_bound(), 1);
    assert_int_equal(current, 1);
    pthread_t t;
    void *got = NULL;
    assert_int_equal(pthread_create(&t, NULL, thread_bind, NULL), 0);
    assert_int_equal(pthread_join(t, &got), 0);
    assert_int_equal(*(int *)got, 1);
    free(got);
    assert_int_equal(pb_gpu_cache_bytes(), 1u << 20);
}

static void test_ranks_per_gpu(void **state)
{
    (void)state;
    assert_int_equal(pb_gpu_check_ranks(8, 8, 1), PB_OK);
    assert_int_equal(pb_gpu_check_ranks(1, 8, 1), PB_OK);
    assert_int_equal(pb_gpu_check_ranks(9, 8, 1), PB_ERR_ENV); /* NCCL: would wrap to a duplicate GPU */
    assert_int_equal(pb_gpu_check_ranks(2, 1, 1), PB_ERR_ENV);
    assert_int_equal(pb_gpu_check_ranks(4, 1, 0), PB_OK);      /* MPI on device buffers shares */
    assert_int_equal(pb_gpu_check_ranks(1, 0, 0), PB_ERR_ENV); /* no GPU at all */
    assert_int_equal(pb_gpu_check_ranks(1, 0, 1), PB_ERR_ENV);
}

/* A driver older than the runtime: cudaGetDeviceCount fails, and the message
 * says so instead of a bare "no GPU is visible". */
static int f_none(void) { return 0; }
static const char *f_driver_old(void) { return "CUDA driver version is insufficient for CUDA runtime version"; }
static void test_no_gpu_says_why(void **state)
{
    (void)state;
    static const pb_gpu_ops old_driver = {.count = f_none, .count_error = f_driver_old};
    pb_gpu_ops_set(&old_driver);
    char desc[64];
    assert_int_equal(pb_gpu_bind(0, 0, desc, sizeof desc), PB_ERR_ENV);
    assert_non_null(strstr(pb_error_last(), "cudaGetDeviceCount: CUDA driver version is insufficient"));
    assert_int_equal(pb_gpu_check_ranks(1, 0, 1), PB_ERR_ENV);
    assert_non_null(strstr(pb_error_last(), "cudaGetDeviceCount: CUDA driver version is insufficient"));
    static const pb_gpu_ops none_known = {.count = f_none}; /* a table without count_error */
    pb_gpu_ops_set(&none_known);
    assert_int_equal(pb_gpu_bind(0, 0, desc, sizeof desc), PB_ERR_ENV);
    assert_null(strstr(pb_error_last(), "cudaGetDeviceCount"));
    pb_gpu_ops_set(NULL);
}

/* Slurm --gpus-per-task=1: 8 ranks on a node, each sees one GPU ("GPU 0 of
 * 1"), each a different one. Counting visible GPUs per rank (8 > 1) would
 * refuse; by bus id they are distinct. */
static int per_task_gpu; /* the physical GPU behind this "rank"'s device 0 */
static int f_one(void) { return 1; }
static int f_describe_pci(int dev, int n, char *d, size_t len)
{
    return snprintf(d, len, "GPU %d of %d: fake, 80 GiB, PCI 0000:%02x:00.0", dev, n, per_task_gpu + dev), PB_OK;
}
static void test_gpu_per_task(void **state)
{
    (void)state;
    static const pb_gpu_ops one_each = {.count = f_one, .describe = f_describe_pci};
    pb_gpu_ops_set(&one_each);
    char ids[8][PB_GPU_ID_MAX];
    int node_of[8] = {0}, a = -1, b = -1;
    for (int r = 0; r < 8; r++) {
        per_task_gpu = 0x10 + r;
        pb_gpu_identity(r, 0, ids[r], PB_GPU_ID_MAX);
    }
    assert_string_equal(ids[3], "PCI 0000:13:00.0");
    assert_int_equal(pb_gpu_shared(ids[0], PB_GPU_ID_MAX, node_of, 8, &a, &b), 0);
    /* two tasks given the same GPU: found, the first pair named */
    strcpy(ids[6], ids[2]);
    assert_int_equal(pb_gpu_shared(ids[0], PB_GPU_ID_MAX, node_of, 8, &a, &b), 1);
    assert_int_equal(a, 2);
    assert_int_equal(b, 6);
    /* the same bus id on two nodes is two GPUs */
    for (int r = 4; r < 8; r++) node_of[r] = 1, strcpy(ids[r], ids[r - 4]);
    assert_int_equal(pb_gpu_shared(ids[0], PB_GPU_ID_MAX, node_of, 8, &a, &b), 0);
    /* every rank sees all 2 GPUs: local rank picks the device, ranks 0 and 2 share */
    static const pb_gpu_ops two = {.count = f_count, .describe = f_describe_pci};
    pb_gpu_ops_set(&two);
    per_task_gpu = 0x20;
    for (int r = 0; r < 3; r++) pb_gpu_identity(r, 0, ids[r], PB_GPU_ID_MAX), node_of[r] = 0;
    assert_int_equal(pb_gpu_shared(ids[0], PB_GPU_ID_MAX, node_of, 3, &a, &b), 1);
    assert_int_equal(a, 0);
    assert_int_equal(b, 2);
    /* no bus id known: "" (the count of visible GPUs then decides) */
    pb_gpu_ops_set(&fake);
    pb_gpu_identity(0, 0, ids[0], PB_GPU_ID_MAX);
    assert_string_equal(ids[0], "");
    pb_gpu_ops_set(NULL);
}

static void test_nccl_version(void **state)
{
    (void)state;
    assert_int_equal(pb_nccl_version_code(2, 28, 3), PB_NCCL_VERSION_ALLTOALL);
    assert_int_equal(pb_nccl_version_alltoall_choice(22803, 1), PB_NCCL_ALLTOALL_NATIVE);
    assert_int_equal(pb_nccl_version_alltoall_choice(22809, 1), PB_NCCL_ALLTOALL_NATIVE);
    assert_int_equal(pb_nccl_version_alltoall_choice(pb_nccl_version_code(3, 0, 0), 1), PB_NCCL_ALLTOALL_NATIVE);
    assert_int_equal(pb_nccl_version_alltoall_choice(22802, 1), PB_NCCL_ALLTOALL_GROUPED);
    assert_int_equal(pb_nccl_version_alltoall_choice(22707, 1), PB_NCCL_ALLTOALL_GROUPED);
    assert_int_equal(pb_nccl_version_alltoall_choice(2804, 1), PB_NCCL_ALLTOALL_GROUPED); /* 2.8.4, old encoding */
    assert_int_equal(pb_nccl_version_alltoall_choice(22803, 0), PB_NCCL_ALLTOALL_GROUPED); /* no symbol */
    assert_int_equal(pb_nccl_version_alltoall_choice(0, 1), PB_NCCL_ALLTOALL_GROUPED);     /* unknown */
    char t[32];
    pb_nccl_version_text(22803, t, sizeof t);
    assert_string_equal(t, "2.28.3");
    pb_nccl_version_text(21903, t, sizeof t);
    assert_string_equal(t, "2.19.3");
    pb_nccl_version_text(2804, t, sizeof t);
    assert_string_equal(t, "2.8.4");
    pb_nccl_version_text(0, t, sizeof t);
    assert_string_equal(t, "unknown");
}

static void test_nccl_log_path(void **state)
{
    (void)state;
    char p[256];
    pb_bench_nccl_log_path("results/run1/coll.csv", "coll_sweep", 3, p, sizeof p);
    assert_string_equal(p, "results/run1/nccl-coll_sweep-rank3.log");
    pb_bench_nccl_log_path("/abs/x.json", "tp_layer", 0, p, sizeof p);
    assert_string_equal(p, "/abs/nccl-tp_layer-rank0.log");
    pb_bench_nccl_log_path("coll.csv", "coll_sweep", 12, p, sizeof p);
    assert_string_equal(p, "nccl-coll_sweep-rank12.log");
    pb_bench_nccl_log_path(NULL, "coll_sweep", 1, p, sizeof p);
    assert_string_equal(p, "nccl-coll_sweep-rank1.log");
    /* The user's own NCCL_DEBUG_FILE and NCCL_DEBUG win. */
    setenv("NCCL_DEBUG_FILE", "/mine/%h.%p", 1);
    unsetenv("NCCL_DEBUG");
    pb_bench_nccl_log_env("out/a.csv", "coll_sweep", 2);
    assert_string_equal(getenv("NCCL_DEBUG_FILE"), "/mine/%h.%p");
    assert_string_equal(getenv("NCCL_DEBUG"), "WARN");
    unsetenv("NCCL_DEBUG_FILE");
    setenv("NCCL_DEBUG", "INFO", 1);
    pb_bench_nccl_log_env("out/a.csv", "coll_sweep", 2);
    assert_string_equal(getenv("NCCL_DEBUG_FILE"), "out/nccl-coll_sweep-rank2.log");
    assert_string_equal(getenv("NCCL_DEBUG"), "INFO");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_from_host_is_complete, setup, teardown),
#ifdef PB_HAVE_CUDA
        cmocka_unit_test_setup_teardown(test_device_backends_order_h2d, setup, teardown),
#endif
        cmocka_unit_test_setup_teardown(test_bind_and_threads, setup, teardown),
        cmocka_unit_test(test_ranks_per_gpu),
        cmocka_unit_test(test_no_gpu_says_why),
        cmocka_unit_test(test_gpu_per_task),
        cmocka_unit_test(test_nccl_version),
        cmocka_unit_test(test_nccl_log_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
