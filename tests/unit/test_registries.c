/* The backend and engine tables (backend.c, compute.c): names, the --backend
 * check and help, --mem combinations, defaults and selection; and the
 * per-collective buffer rules of the collective table that coll_op.c applies
 * (broadcast's one buffer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend/comm.h"
#include "coll/coll_op.h"
#include "compute/compute.h"
#include "core/error.h"

#include <string.h>

static void test_backend_names_and_help(void **state)
{
    /* A new backend adds a name: what is checked is that of the two built in. */
    const char *const *names = pb_comm_backend_names();
    assert_string_equal(names[0], "mpi");
    assert_string_equal(names[1], "nccl"); /* mpi's two memories are one name */
    const char *help = pb_comm_backend_help();
    assert_true(strncmp(help, "mpi (host memory)", 17) == 0);
    assert_non_null(strstr(help, "nccl (GPU memory)"));
    assert_non_null(strstr(help, "; default nccl where GPUs are visible"));
    assert_int_equal(pb_comm_backend_check_name("--backend", "mpi"), PB_OK);
    assert_int_equal(pb_comm_backend_check_name("--backend", "nccl"), PB_OK);
    assert_int_equal(pb_comm_backend_check_name("--backend", "tcp"), PB_ERR_USAGE);
    assert_string_equal(pb_comm_backend_default(0), "mpi");
#ifdef PB_HAVE_CUDA
    assert_string_equal(pb_comm_backend_default(1), "nccl");
#else
    assert_string_equal(pb_comm_backend_default(1), "mpi"); /* no NCCL in this build */
#endif
}

static void test_backend_select(void **state)
{
    const pb_comm_backend *b = NULL;
    assert_int_equal(pb_comm_backend_select("mpi", NULL, &b), PB_OK);
    assert_ptr_equal(b, pb_comm_backend_mpi());
    b = NULL;
    assert_int_equal(pb_comm_backend_select("mpi", "host", &b), PB_OK);
    assert_ptr_equal(b, pb_comm_backend_mpi());
    assert_int_equal(pb_comm_backend_select("nccl", "host", &b), PB_ERR_USAGE); /* NCCL has no host memory */
    assert_int_equal(pb_comm_backend_select("tcp", NULL, &b), PB_ERR_USAGE);
#ifdef PB_HAVE_CUDA
    assert_int_equal(pb_comm_backend_select("mpi", "device", &b), PB_OK);
    assert_string_equal(b->name, "mpi");
    assert_int_equal(b->mem, PB_MEM_DEVICE);
    assert_int_equal(pb_comm_backend_select("nccl", NULL, &b), PB_OK);
    assert_int_equal(b->mem, PB_MEM_DEVICE);
    assert_true(b->one_gpu_per_rank && b->library_log);
#else
    /* The refusal names what asked for the GPU: the memory kind, or the backend itself. */
    assert_int_equal(pb_comm_backend_select("mpi", "device", &b), PB_ERR_ENV);
    assert_non_null(strstr(pb_error_last(), "--mem device: this build has no CUDA/NCCL support"));
    assert_int_equal(pb_comm_backend_select("nccl", NULL, &b), PB_ERR_ENV);
    assert_non_null(strstr(pb_error_last(), "--backend nccl: this build has no CUDA/NCCL support"));
#endif
    assert_false(pb_comm_backend_mpi()->one_gpu_per_rank || pb_comm_backend_mpi()->library_log);
}

static void test_engine_table(void **state)
{
    const char *const *names = pb_compute_names();
    assert_string_equal(names[0], "blas");
    assert_string_equal(names[1], "cublas");
    assert_string_equal(pb_compute_default(PB_MEM_HOST), "blas");
    assert_string_equal(pb_compute_default(PB_MEM_DEVICE), "cublas");
    assert_int_equal(pb_compute_check_name("--engine", "blas"), PB_OK);
    assert_int_equal(pb_compute_check_name("--engine", "mkl"), PB_ERR_USAGE);
    const pb_compute *e = NULL;
    assert_int_equal(pb_compute_select("--engine", "blas", &e), PB_OK);
    assert_ptr_equal(e, pb_compute_blas());
    assert_string_equal(e->name, names[0]); /* the row's name is the table's own */
}

/* coll_op.c: a broadcast on a backend whose broadcast has one buffer receives
 * into its send buffer; every other collective, and every collective on other
 * backends, into its own. */
static void test_broadcast_one_buffer(void **state)
{
    pb_comm_backend two_buffers = *pb_comm_backend_mpi();
    two_buffers.broadcast_in_place = 0;
    const pb_comm_backend *backends[] = {pb_comm_backend_mpi(), &two_buffers};
    for (int k = 0; k < 2; k++) {
        pb_coll_op op = {.be = backends[k], .dtype = PB_FLOAT32};
        assert_int_equal(pb_buffers_alloc(op.be, 64, 0, &op.send), PB_OK);
        assert_int_equal(pb_buffers_alloc(op.be, 64, 0, &op.recv), PB_OK);
        for (int c = 0; c < PB_COLL_COUNT; c++) {
            op.coll = (pb_coll)c;
            void *send, *recv;
            pb_coll_op_slots(&op, 0, &send, &recv);
            int one = c == PB_COLL_BROADCAST && op.be->broadcast_in_place;
            assert_int_equal(pb_coll_desc_of((pb_coll)c)->one_buffer_broadcast, c == PB_COLL_BROADCAST);
            assert_ptr_equal(send, pb_buffers_slot(&op.send, 0));
            assert_ptr_equal(recv, one ? send : pb_buffers_slot(&op.recv, 0));
        }
        pb_buffers_free(&op.send);
        pb_buffers_free(&op.recv);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backend_names_and_help),
        cmocka_unit_test(test_backend_select),
        cmocka_unit_test(test_engine_table),
        cmocka_unit_test(test_broadcast_one_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
