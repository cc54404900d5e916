/* The CUDA runtime behind pb_gpu_ops (gpu.c holds the logic). */
#include "backend/gpu.h"

#include "backend/cuda_status.h"
#include "core/error.h"

#include <cuda_runtime.h>
#include <stdio.h>

const pb_gpu_ops *pb_gpu_cuda_ops(void);

static cudaError_t count_status = cudaSuccess;

static int cuda_count(void)
{
    int n = 0;
    count_status = cudaGetDeviceCount(&n);
    if (count_status != cudaSuccess) {
        (void)cudaGetLastError(); /* clear the sticky "no device" error */
        return 0;
    }
    return n;
}

/* A driver older than the runtime reads "no GPU" to cudaGetDeviceCount's
 * caller: its error text tells the two apart. */
static const char *cuda_count_error(void)
{
    return count_status == cudaSuccess ? NULL : cudaGetErrorString(count_status);
}

static int cuda_set(int dev)
{
    cudaError_t e = cudaSetDevice(dev);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return pb_fail(PB_ERR_ENV, "cudaSetDevice(%d): %s", dev, cudaGetErrorString(e));
    }
    return PB_OK;
}

static int cuda_describe(int dev, int n, char *desc, size_t len)
{
    struct cudaDeviceProp p;
    char pci[32] = "?";
    if (cudaGetDeviceProperties(&p, dev) == cudaSuccess) {
        if (cudaDeviceGetPCIBusId(pci, sizeof pci, dev) != cudaSuccess) (void)cudaGetLastError();
        snprintf(desc, len, "GPU %d of %d: %s, %.0f GiB, PCI %s", dev, n, p.name,
                 (double)p.totalGlobalMem / (1 << 30), pci);
    } else {
        (void)cudaGetLastError();
        snprintf(desc, len, "GPU %d of %d", dev, n);
    }
    return PB_OK;
}

static size_t cuda_cache(void)
{
    int dev = 0, l2 = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return l2 > 0 ? (size_t)l2 : 0;
}

static int cuda_copy_h2d(void *dst, const void *src, size_t bytes)
{
    PB_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cudaStreamLegacy),
                "cudaMemcpyAsync (host to device)");
    return PB_OK;
}

static int cuda_sync_legacy(void)
{
    PB_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy), "cudaStreamSynchronize (host to device copy)");
    return PB_OK;
}

static const pb_gpu_ops cuda_ops = {.count = cuda_count, .count_error = cuda_count_error, .set_device = cuda_set, .describe = cuda_describe,
                                    .cache_bytes = cuda_cache, .copy_h2d = cuda_copy_h2d,
                                    .sync_legacy = cuda_sync_legacy};

const pb_gpu_ops *pb_gpu_cuda_ops(void) { return &cuda_ops; }
