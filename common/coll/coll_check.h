/* Data validation through a backend, where the data is: on the device (CUDA
 * kernels, coll_check_cuda.cu) when the backend's buffers live there and the
 * build has CUDA, else on the host (copy the buffer, check it there).
 *
 * The device path fills the send buffer in a kernel and counts wrong elements
 * in a kernel: 8 bytes come back to the host instead of the buffer. Both paths
 * use the same per-element arithmetic (coll_expect.h), so the host path's
 * tests cover the values the kernels check.
 *
 * Fault injection (test-only, faults.h) is the caller's decision: a non-zero
 * `corrupt` writes one wrong value into element 0 of the backend's receive
 * buffer before counting, on either path, so the count includes it. */
#ifndef PB_COLL_CHECK_H
#define PB_COLL_CHECK_H

#include "coll/coll_exec.h"
#include "backend/comm.h"

/* Where the check runs for backend be: "device" or "host". */
const char *pb_coll_check_where(const pb_comm_backend *be);

/* Fill this rank's send buffer (backend memory, sh->send_count elements) with
 * the known inputs of collective c. Complete on return. */
int pb_coll_check_fill(const pb_comm_backend *be, pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, int rank, int nranks,
                       void *send);

/* Elements of this rank's receive buffer (backend memory, sh->recv_count
 * elements) that differ from the exact answer by more than
 * pb_coll_exec_tolerance; NaN counts as wrong. Ranks whose output is undefined
 * (non-root ranks of reduce) report 0 and are never corrupted. The backend's
 * operations must be complete (after its sync()). */
int pb_coll_check_count(const pb_comm_backend *be, pb_coll c, const pb_coll_exec_shape *sh, pb_dtype t, pb_dtype_redop op, int rank,
                        int nranks, int root, int corrupt, void *recv, long long *wrong);

/* Point-to-point payloads: `bytes` bytes of the pattern that `rank` sends. */
int pb_coll_check_bytes_fill(const pb_comm_backend *be, void *buf, size_t bytes, int rank);

/* Bytes of buf that differ from the pattern `sender` sent. */
int pb_coll_check_bytes_count(const pb_comm_backend *be, int sender, int corrupt, void *buf, size_t bytes, long long *wrong);

#endif
