// Data validation on the device: fill a send buffer with the known inputs and
// count the wrong elements of a receive buffer, so that only an 8-byte count
// crosses to the host instead of the buffer. The per-element arithmetic is
// coll_expect.h's, the same the host check (coll_exec.c) runs and the unit
// tests pin down. The host wrappers read the collective table (coll.h); the
// kernels cannot call its function pointers (host code), so the count kernel
// reaches the expected values through pb_coll_expect_expected, coll_expect.h's one
// switch on pb_coll. Deliberately simple: grid-stride loops with size_t indices,
// one count per thread, a shared-memory tree sum per block, one atomicAdd per
// block into a zeroed device counter.
#include "coll/coll_check_cuda.h"

#include "coll/coll_expect.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace {

constexpr int kThreads = 256;       // power of two: the block sum relies on it
constexpr size_t kMaxBlocks = 4096; // grid-stride loops cover the rest

using bf16 = __nv_bfloat16;

// Storage type <-> value. The values stored are small integers (-1, 0, 1), so
// every conversion is exact; loads widen to double as pb_dtype_get does, so a
// NaN stays a NaN and an int32 compares exactly.
__device__ __forceinline__ double load(const float *p, size_t i) { return p[i]; }
__device__ __forceinline__ double load(const bf16 *p, size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ double load(const __half *p, size_t i) { return __half2float(p[i]); }
__device__ __forceinline__ double load(const int32_t *p, size_t i) { return p[i]; }
__device__ __forceinline__ void store(float *p, size_t i, int v) { p[i] = (float)v; }
__device__ __forceinline__ void store(bf16 *p, size_t i, int v) { p[i] = __float2bfloat16_rn((float)v); }
__device__ __forceinline__ void store(__half *p, size_t i, int v) { p[i] = __float2half_rn((float)v); }
__device__ __forceinline__ void store(int32_t *p, size_t i, int v) { p[i] = v; }

size_t blocks_for(size_t n)
{
    size_t b = (n + kThreads - 1) / kThreads;
    return b < kMaxBlocks ? b : kMaxBlocks;
}

// Adds the block's sum of `mine` (one value per thread) to *total with one
// atomicAdd. Must be called by every thread of the block (it synchronises);
// sh holds blockDim.x values.
__device__ void add_block_sum(unsigned long long mine, unsigned long long *sh, unsigned long long *total)
{
    const unsigned t = threadIdx.x;
    sh[t] = mine;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] += sh[t + s];
        __syncthreads();
    }
    if (t == 0 && sh[0] != 0) atomicAdd(total, sh[0]);
}

template <typename T>
__global__ void coll_fill_kernel(T *p, size_t n, pb_coll_span send, size_t count, int nranks, int rank)
{
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x)
        store(p, j, pb_coll_expect_send_value(send, count, nranks, rank, j));
}

template <typename T>
__global__ void coll_count_kernel(const T *p, size_t n, pb_coll c, pb_dtype_redop op, size_t count, int nranks, int rank,
                                  int root, double tol, unsigned long long *wrong)
{
    __shared__ unsigned long long sh[kThreads];
    unsigned long long mine = 0;
    for (size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < n; j += (size_t)gridDim.x * blockDim.x) {
        const double want = pb_coll_expect_expected(c, op, count, nranks, rank, root, j);
        mine += (unsigned long long)pb_coll_expect_is_wrong(load(p, j), want, tol); // NaN is wrong
    }
    add_block_sum(mine, sh, wrong);
}

__global__ void bytes_fill_kernel(unsigned char *p, size_t n, int rank)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = pb_coll_expect_byte(rank, i);
}

__global__ void bytes_count_kernel(const unsigned char *p, size_t n, int sender, unsigned long long *wrong)
{
    __shared__ unsigned long long sh[kThreads];
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        mine += p[i] != pb_coll_expect_byte(sender, i) ? 1 : 0;
    add_block_sum(mine, sh, wrong);
}

bool supported(pb_dtype t) { return t == PB_FLOAT32 || t == PB_BFLOAT16 || t == PB_FLOAT16 || t == PB_INT32; }

// The shape arguments make sense: a rank of nranks, and at least one element
// per rank where the collective splits the buffer (j / chunk divides by it).
bool valid_shape(pb_coll c, size_t count, int nranks, int rank, int root)
{
    if (!pb_coll_expect_known(c) || nranks < 1 || rank < 0 || rank >= nranks || root < 0 || root >= nranks) return false;
    return !pb_coll_splits(c) || count >= (size_t)nranks;
}

// A zeroed device counter for a count kernel, queued on s.
cudaError_t counter_begin(unsigned long long **d, cudaStream_t s)
{
    *d = nullptr;
    cudaError_t e = cudaMalloc(d, sizeof **d);
    if (e != cudaSuccess) {
        *d = nullptr;
        return e;
    }
    return cudaMemsetAsync(*d, 0, sizeof **d, s);
}

// After the kernel launch (status e): the launch status, then the counter's 8
// bytes to the host, a stream sync (where execution errors appear), free.
cudaError_t counter_end(cudaError_t e, unsigned long long *d, cudaStream_t s, unsigned long long *wrong)
{
    unsigned long long h = 0;
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e == cudaSuccess) e = cudaMemcpyAsync(&h, d, sizeof h, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e == cudaSuccess) *wrong = h;
    if (d) cudaFree(d);
    return e;
}

// The launch status, then a stream sync so that the work is complete.
cudaError_t launched(cudaStream_t s)
{
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? cudaStreamSynchronize(s) : e;
}

} // namespace

extern "C" cudaError_t pb_coll_check_cuda_fill(void *send, pb_dtype t, pb_coll c, size_t count, size_t send_count,
                                               int rank, int nranks, cudaStream_t s)
{
    if (!supported(t) || !valid_shape(c, count, nranks, rank, 0)) return cudaErrorInvalidValue;
    if (send_count == 0) return cudaSuccess;
    const unsigned g = (unsigned)blocks_for(send_count);
    const pb_coll_span sp = pb_coll_desc_of(c)->send; // host side: the table (valid_shape checked c)
    switch (t) {
    case PB_FLOAT32: coll_fill_kernel<<<g, kThreads, 0, s>>>((float *)send, send_count, sp, count, nranks, rank); break;
    case PB_BFLOAT16: coll_fill_kernel<<<g, kThreads, 0, s>>>((bf16 *)send, send_count, sp, count, nranks, rank); break;
    case PB_FLOAT16: coll_fill_kernel<<<g, kThreads, 0, s>>>((__half *)send, send_count, sp, count, nranks, rank); break;
    default: coll_fill_kernel<<<g, kThreads, 0, s>>>((int32_t *)send, send_count, sp, count, nranks, rank); break;
    }
    return launched(s);
}

extern "C" cudaError_t pb_coll_check_cuda_count_wrong(const void *recv, pb_dtype t, pb_coll c, pb_dtype_redop op,
                                                      size_t count, size_t recv_count, int rank, int nranks, int root,
                                                      cudaStream_t s, unsigned long long *wrong)
{
    *wrong = 0;
    if (!supported(t) || !valid_shape(c, count, nranks, rank, root)) return cudaErrorInvalidValue;
    if (recv_count == 0) return cudaSuccess;
    unsigned long long *d;
    cudaError_t e = counter_begin(&d, s);
    if (e == cudaSuccess) {
        const unsigned g = (unsigned)blocks_for(recv_count);
        const double tol = pb_coll_expect_tolerance(t, nranks);
        const size_t n = recv_count;
        switch (t) {
        case PB_FLOAT32:
            coll_count_kernel<<<g, kThreads, 0, s>>>((const float *)recv, n, c, op, count, nranks, rank, root, tol, d);
            break;
        case PB_BFLOAT16:
            coll_count_kernel<<<g, kThreads, 0, s>>>((const bf16 *)recv, n, c, op, count, nranks, rank, root, tol, d);
            break;
        case PB_FLOAT16:
            coll_count_kernel<<<g, kThreads, 0, s>>>((const __half *)recv, n, c, op, count, nranks, rank, root, tol, d);
            break;
        default:
            coll_count_kernel<<<g, kThreads, 0, s>>>((const int32_t *)recv, n, c, op, count, nranks, rank, root, tol, d);
            break;
        }
    }
    return counter_end(e, d, s, wrong);
}

extern "C" cudaError_t pb_coll_check_cuda_bytes_fill(void *buf, size_t bytes, int rank, cudaStream_t s)
{
    if (bytes == 0) return cudaSuccess;
    bytes_fill_kernel<<<(unsigned)blocks_for(bytes), kThreads, 0, s>>>((unsigned char *)buf, bytes, rank);
    return launched(s);
}

extern "C" cudaError_t pb_coll_check_cuda_bytes_count_wrong(const void *buf, size_t bytes, int sender, cudaStream_t s,
                                                            unsigned long long *wrong)
{
    *wrong = 0;
    if (bytes == 0) return cudaSuccess;
    unsigned long long *d;
    cudaError_t e = counter_begin(&d, s);
    if (e == cudaSuccess)
        bytes_count_kernel<<<(unsigned)blocks_for(bytes), kThreads, 0, s>>>((const unsigned char *)buf, bytes, sender, d);
    return counter_end(e, d, s, wrong);
}
