/* GPU selection with the CUDA runtime. */
#include "backend/gpu.h"

#include "core/error.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

int pb_gpu_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no device" error */
        return 0;
    }
    return n;
}

int pb_gpu_bind(int local_rank, int offset, char *desc, size_t len)
{
    int n = pb_gpu_count();
    if (n == 0) {
        snprintf(desc, len, "none");
        return pb_fail(PB_ERR_ENV, "no GPU is visible to this process (CUDA_VISIBLE_DEVICES=%s)",
                       getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
    }
    int dev = ((local_rank + offset) % n + n) % n;
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess) return pb_fail(PB_ERR_ENV, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(e));
    struct cudaDeviceProp p;
    char pci[32] = "?";
    if (cudaGetDeviceProperties(&p, dev) == cudaSuccess) {
        cudaDeviceGetPCIBusId(pci, sizeof pci, dev);
        snprintf(desc, len, "GPU %d of %d: %s, %.0f GiB, PCI %s", dev, n, p.name,
                 (double)p.totalGlobalMem / (1 << 30), pci);
    } else {
        snprintf(desc, len, "GPU %d of %d", dev, n);
    }
    return PB_OK;
}

size_t pb_gpu_cache_bytes(void)
{
    int dev = 0, l2 = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return l2 > 0 ? (size_t)l2 : 0;
}
