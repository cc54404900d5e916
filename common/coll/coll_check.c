#include "coll/coll_check.h"

#include "coll/coll_expect.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

#ifdef PB_HAVE_CUDA
#include "coll/coll_check_cuda.h"
#include "backend/cuda_status.h"

/* The kernels run on the legacy default stream, which the backends' own
 * copies (cudaMemcpy) also use; each launcher synchronises it before
 * returning. The backends' non-blocking streams are not ordered with it, so
 * the callers fill before issuing and count after the backend's sync(). */
#define CHECK_STREAM ((cudaStream_t)0)

#endif

static int on_device(const pb_comm_backend *be)
{
#ifdef PB_HAVE_CUDA
    return be->mem == PB_MEM_DEVICE;
#else
    (void)be;
    return 0;
#endif
}

const char *pb_coll_check_where(const pb_comm_backend *be) { return on_device(be) ? "device" : "host"; }

/* A host buffer of n elements of size ts (at least one byte, so malloc(0) is never asked). */
static void *host_buffer(size_t n, size_t ts) { return malloc(n * ts + 1); }

/* Test-only: one wrong value in element 0 of the backend buffer `buf`. */
static int corrupt_first(const pb_comm_backend *be, pb_dtype t, double value, void *buf)
{
    unsigned char one[8];
    pb_dtype_set(t, one, 0, value);
    return be->from_host(buf, one, pb_dtype_size(t));
}

int pb_coll_check_fill(const pb_comm_backend *be, pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, int rank, int nranks,
                       void *send)
{
#ifdef PB_HAVE_CUDA
    if (on_device(be)) {
        PB_CUDA_TRY(pb_coll_check_cuda_fill(send, t, c, sh->count, sh->send_count, rank, nranks, CHECK_STREAM),
                    "data validation on the device: filling the send buffer");
        return PB_OK;
    }
#endif
    size_t ts = pb_dtype_size(t);
    void *host = host_buffer(sh->send_count, ts);
    PB_CHECK(host, PB_ERR_ENV, "out of host memory for validation (%zu bytes)", sh->send_count * ts);
    pb_coll_exec_fill(c, sh, t, rank, nranks, 0, host);
    int status = be->from_host(send, host, sh->send_count * ts);
    free(host);
    return status;
}

int pb_coll_check_count(const pb_comm_backend *be, pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, pb_dtype_redop op, int rank,
                        int nranks, int root, int corrupt, void *recv, long long *wrong)
{
    *wrong = 0;
    if (!pb_coll_output_defined(c, rank, root)) return PB_OK;
    if (corrupt && sh->recv_count > 0) PB_TRY(corrupt_first(be, t, 12345.0, recv));
    if (sh->recv_count == 0) return PB_OK; /* an alltoallv receiver that gets nothing */
#ifdef PB_HAVE_CUDA
    if (on_device(be)) {
        unsigned long long n = 0;
        PB_CUDA_TRY(pb_coll_check_cuda_count_wrong(recv, t, c, op, pb_coll_exec_expect_count(c, sh), sh->recv_count, rank,
                                                   nranks, root, CHECK_STREAM, &n),
                    "data validation on the device: counting wrong elements");
        *wrong = (long long)n;
        return PB_OK;
    }
#endif
    size_t ts = pb_dtype_size(t);
    void *host = host_buffer(sh->recv_count, ts);
    PB_CHECK(host, PB_ERR_ENV, "out of host memory for validation (%zu bytes)", sh->recv_count * ts);
    int status = be->to_host(host, recv, sh->recv_count * ts);
    if (status == PB_OK) *wrong = (long long)pb_coll_exec_count_wrong(c, sh, t, op, rank, nranks, root, host);
    free(host);
    return status;
}

int pb_coll_check_bytes_fill(const pb_comm_backend *be, void *buf, size_t bytes, int rank)
{
#ifdef PB_HAVE_CUDA
    if (on_device(be)) {
        PB_CUDA_TRY(pb_coll_check_cuda_bytes_fill(buf, bytes, rank, CHECK_STREAM),
                    "data validation on the device: filling the send buffer");
        return PB_OK;
    }
#endif
    unsigned char *host = host_buffer(bytes, 1);
    PB_CHECK(host, PB_ERR_ENV, "out of host memory for validation (%zu bytes)", bytes);
    for (size_t i = 0; i < bytes; i++) host[i] = pb_coll_expect_byte(rank, i);
    int status = be->from_host(buf, host, bytes);
    free(host);
    return status;
}

int pb_coll_check_bytes_count(const pb_comm_backend *be, int sender, int corrupt, void *buf, size_t bytes, long long *wrong)
{
    *wrong = 0;
    if (corrupt && bytes > 0) PB_TRY(corrupt_first(be, PB_BYTE, (double)(unsigned char)~pb_coll_expect_byte(sender, 0), buf));
#ifdef PB_HAVE_CUDA
    if (on_device(be)) {
        unsigned long long n = 0;
        PB_CUDA_TRY(pb_coll_check_cuda_bytes_count_wrong(buf, bytes, sender, CHECK_STREAM, &n),
                    "data validation on the device: counting wrong bytes");
        *wrong = (long long)n;
        return PB_OK;
    }
#endif
    unsigned char *host = host_buffer(bytes, 1);
    PB_CHECK(host, PB_ERR_ENV, "out of host memory for validation (%zu bytes)", bytes);
    int status = be->to_host(host, buf, bytes);
    for (size_t i = 0; status == PB_OK && i < bytes; i++) *wrong += host[i] != pb_coll_expect_byte(sender, i);
    free(host);
    return status;
}
