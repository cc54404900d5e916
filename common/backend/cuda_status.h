/* CUDA runtime failures as parabench statuses, for the GPU-only sources. A
 * failed call also sets CUDA's "last error"; it is cleared here, so the next
 * kernel-launch check does not report this old failure as its own. */
#ifndef PB_CUDA_STATUS_H
#define PB_CUDA_STATUS_H

#include "core/error.h"

#include <cuda_runtime.h>

static inline int pb_cuda_status_fail_at(cudaError_t e, const char *file, int line, const char *what)
{
    (void)cudaGetLastError();
    return pb_error_fail_at(file, line, PB_ERR_ENV, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Return PB_ERR_ENV naming `what` when `call` fails. */
#define PB_CUDA_TRY(call, what)                                                                    \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) return pb_cuda_status_fail_at(e_, __FILE__, __LINE__, (what));             \
    } while (0)

#endif
