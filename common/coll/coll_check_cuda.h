/* Data validation on the device (coll_check_cuda.cu), callable from C; used by
 * coll_check.c for backends whose buffers are on the device.
 *
 * The values are coll_expect.h's, the same functions the host check uses.
 * Every launcher works on `stream` and returns after synchronising it, so its
 * work is complete (or its error known) on return; a launch or execution
 * error is returned as is. Pointers are device memory on the current device.
 * Element types: PB_FLOAT32, PB_BFLOAT16, PB_FLOAT16, PB_INT32; anything else,
 * or an unknown collective, answers cudaErrorInvalidValue. */
#ifndef PB_COLL_CHECK_CUDA_H
#define PB_COLL_CHECK_CUDA_H

#include "coll/coll.h"
#include "core/dtype.h"

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* send[j] = pb_coll_expect_send_value(c, count, nranks, rank, j) for j < send_count. */
cudaError_t pb_coll_check_cuda_fill(void *send, pb_dtype t, pb_coll c, size_t count, size_t send_count, int rank,
                                    int nranks, cudaStream_t stream);

/* *wrong = how many of recv[0..recv_count) differ from pb_coll_expect_expected(c, op,
 * count, nranks, rank, root, j) by more than pb_coll_expect_tolerance(t, nranks); NaN
 * counts as wrong. Only the 8-byte count comes back to the host. The caller
 * decides whether this rank's output is defined (pb_coll_output_defined). */
cudaError_t pb_coll_check_cuda_count_wrong(const void *recv, pb_dtype t, pb_coll c, pb_dtype_redop op, size_t count,
                                           size_t recv_count, int rank, int nranks, int root, cudaStream_t stream,
                                           unsigned long long *wrong);

/* Point-to-point payloads: buf[i] = pb_coll_expect_byte(rank, i) for i < bytes. */
cudaError_t pb_coll_check_cuda_bytes_fill(void *buf, size_t bytes, int rank, cudaStream_t stream);

/* *wrong = how many buf[i], i < bytes, differ from pb_coll_expect_byte(sender, i). */
cudaError_t pb_coll_check_cuda_bytes_count_wrong(const void *buf, size_t bytes, int sender, cudaStream_t stream,
                                                 unsigned long long *wrong);

#ifdef __cplusplus
}
#endif

#endif
