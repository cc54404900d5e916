/* GPU selection for builds without CUDA: no GPU, and a clear message. */
#ifndef PB_HAVE_CUDA
#include "backend/gpu.h"

#include "core/error.h"

#include <stdio.h>

int pb_gpu_count(void) { return 0; }

size_t pb_gpu_cache_bytes(void) { return 0; }

int pb_gpu_bind(int local_rank, int offset, char *desc, size_t len)
{
    (void)local_rank;
    (void)offset;
    snprintf(desc, len, "none");
    return pb_fail(PB_ERR_ENV, "this build has no CUDA support (rebuild where nvcc, cuBLAS and NCCL are found, "
                               "or with `make CUDA=1`)");
}
#else
typedef int pb_gpu_c_is_empty_with_cuda; /* gpu_cuda.c provides the functions */
#endif
