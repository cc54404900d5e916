// Device kernels of the cuBLAS engine: elementwise gelu, row-wise softmax,
// fp32 <-> bf16 conversion and the deterministic fill. Deliberately simple:
// grid-stride loops with size_t indices, fp32 math, one 256-thread block per
// softmax row with a shared-memory tree reduction. They are O(n) next to the
// GEMMs, so clarity wins over speed here.
#include "compute/kernels_cuda.h"

#include "compute/gelu.h"
#include "compute/silu.h"
#include "core/rng.h"

#include <cuda_bf16.h>
#include <math.h>

namespace {

constexpr int kThreads = 256;      // power of two: block_reduce relies on it
constexpr size_t kMaxBlocks = 4096; // grid-stride loops cover the rest

// Storage type <-> fp32. Stores round to nearest even, as pb_dtype_float_to_bf16 does.
__device__ __forceinline__ float load(const float *p, size_t i) { return p[i]; }
__device__ __forceinline__ float load(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store(float *p, size_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__nv_bfloat16 *p, size_t i, float v) { p[i] = __float2bfloat16_rn(v); }

size_t blocks_for(size_t n)
{
    size_t b = (n + kThreads - 1) / kThreads;
    return b < kMaxBlocks ? b : kMaxBlocks;
}

// No __restrict__ anywhere: outputs may alias inputs (y == x, dx == dy), and
// every thread reads element i before it writes element i.
template <typename T> __global__ void gelu_fwd_kernel(size_t n, const T *x, T *y)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        store(y, i, pb_gelu(load(x, i)));
}

template <typename T> __global__ void gelu_bwd_kernel(size_t n, const T *x, const T *dy, T *dx)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        store(dx, i, pb_gelu_grad(load(x, i)) * load(dy, i));
}

// Element i of the rows x f output: row i / f, column i % f of the gate;
// the up value sits f columns further in the same row of z.
template <typename T> __global__ void swiglu_fwd_kernel(size_t n, size_t f, const T *z, T *y)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t g = i / f * 2 * f + i % f;
        store(y, i, pb_silu(load(z, g)) * load(z, g + f));
    }
}

// In place: the thread of (row, column) reads dY at the gate's position and
// writes both halves of dZ there, and no other thread touches them.
template <typename T> __global__ void swiglu_bwd_kernel(size_t n, size_t f, const T *z, T *d)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t g = i / f * 2 * f + i % f;
        const float gate = load(z, g), up = load(z, g + f), dy = load(d, g);
        store(d, g, dy * up * pb_silu_grad(gate));
        store(d, g + f, dy * pb_silu(gate));
    }
}

template <typename D, typename S> __global__ void convert_kernel(size_t n, const S *src, D *dst)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        store(dst, i, load(src, i));
}

// Same expression as compute_blas.c's fill, so the values are bit-identical:
// the hash is integer arithmetic, its float is exact (24 bits times 2^-23),
// and scale * u is one IEEE single multiply on both sides (no FMA to form).
template <typename T>
__global__ void fill_kernel(T *p, int64_t rows, int64_t cols, int64_t ld, uint64_t seed, uint64_t rs, int64_t row0,
                            int64_t col0, float scale)
{
    const size_t total = (size_t)rows * (size_t)cols, c = (size_t)cols;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        const size_t i = idx / c, j = idx % c;
        const float u = pb_rng_hash_uniform(seed, rs, (uint64_t)(row0 + (int64_t)i), (uint64_t)(col0 + (int64_t)j));
        store(p, i * (size_t)ld + j, scale * u);
    }
}

// Block-wide max or sum of one value per thread; every thread gets the
// result. Must be called by all threads of the block (it synchronises).
template <bool kMax> __device__ float block_reduce(float v, float *sh)
{
    const unsigned t = threadIdx.x;
    sh[t] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) sh[t] = kMax ? fmaxf(sh[t], sh[t + s]) : sh[t] + sh[t + s];
        __syncthreads();
    }
    const float r = sh[0];
    __syncthreads(); // everyone has read sh[0] before sh is reused
    return r;
}

// One block per row (rows beyond the grid loop over blocks). The reductions'
// barriers also order every read of x before the first write of y, so y may
// be x.
template <typename T> __global__ void softmax_fwd_kernel(int64_t rows, int64_t cols, const T *x, T *y)
{
    __shared__ float sh[kThreads];
    const size_t c = (size_t)cols;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) { // uniform per block: barriers are safe
        const size_t o = (size_t)r * c;
        float mx = -INFINITY;
        for (size_t j = threadIdx.x; j < c; j += blockDim.x) mx = fmaxf(mx, load(x, o + j));
        mx = block_reduce<true>(mx, sh);
        float sum = 0.0f;
        for (size_t j = threadIdx.x; j < c; j += blockDim.x) sum += expf(load(x, o + j) - mx);
        sum = block_reduce<false>(sum, sh);
        for (size_t j = threadIdx.x; j < c; j += blockDim.x) store(y, o + j, expf(load(x, o + j) - mx) / sum);
    }
}

template <typename T> __global__ void softmax_bwd_kernel(int64_t rows, int64_t cols, const T *y, const T *dy, T *dx)
{
    __shared__ float sh[kThreads];
    const size_t c = (size_t)cols;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const size_t o = (size_t)r * c;
        float dot = 0.0f;
        for (size_t j = threadIdx.x; j < c; j += blockDim.x) dot += load(y, o + j) * load(dy, o + j);
        dot = block_reduce<false>(dot, sh); // after this barrier all reads of dy for dot are done
        for (size_t j = threadIdx.x; j < c; j += blockDim.x) {
            const float yv = load(y, o + j);
            store(dx, o + j, yv * (load(dy, o + j) - dot));
        }
    }
}

// Online softmax, one block per row as softmax_fwd_kernel. Every thread reads
// the row's stats before the first reduction's barriers; thread 0 writes them
// after the last one, so no thread reads a value already updated.
template <typename T>
__global__ void softmax_online_kernel(int64_t rows, int64_t cols, T *s, T *o, int64_t ocols, float *stats)
{
    __shared__ float sh[kThreads];
    const size_t c = (size_t)cols, oc = (size_t)ocols;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const size_t so = (size_t)r * c, oo = (size_t)r * oc;
        const float m = stats[2 * r], l = stats[2 * r + 1];
        float mx = -INFINITY;
        for (size_t j = threadIdx.x; j < c; j += blockDim.x) mx = fmaxf(mx, load(s, so + j));
        mx = block_reduce<true>(mx, sh);
        const float m_new = l > 0.0f ? fmaxf(m, mx) : mx, corr = l > 0.0f ? expf(m - m_new) : 0.0f;
        float sum = 0.0f;
        for (size_t j = threadIdx.x; j < c; j += blockDim.x) {
            const float e = expf(load(s, so + j) - m_new);
            store(s, so + j, e);
            sum += e;
        }
        sum = block_reduce<false>(sum, sh);
        for (size_t j = threadIdx.x; j < oc; j += blockDim.x) store(o, oo + j, l > 0.0f ? load(o, oo + j) * corr : 0.0f);
        if (threadIdx.x == 0) stats[2 * r] = m_new, stats[2 * r + 1] = l * corr + sum;
    }
}

template <typename T> __global__ void softmax_online_end_kernel(int64_t rows, int64_t ocols, T *o, float *stats)
{
    const size_t n = (size_t)rows * (size_t)ocols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        store(o, i, load(o, i) / stats[2 * (i / (size_t)ocols) + 1]);
}

// After softmax_online_end_kernel's divisions (the same stream): m += log(l).
__global__ void softmax_online_lse_kernel(int64_t rows, float *stats)
{
    for (size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x; r < (size_t)rows; r += (size_t)gridDim.x * blockDim.x)
        stats[2 * r] += logf(stats[2 * r + 1]);
}

template <typename T>
__global__ void softmax_online_bwd_kernel(int64_t rows, int64_t cols, T *s, T *dp, const T *o, const T *d_o,
                                          int64_t ocols, const float *stats)
{
    __shared__ float sh[kThreads];
    const size_t c = (size_t)cols, oc = (size_t)ocols;
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        const size_t so = (size_t)r * c, oo = (size_t)r * oc;
        float d = 0.0f;
        for (size_t j = threadIdx.x; j < oc; j += blockDim.x) d += load(d_o, oo + j) * load(o, oo + j);
        d = block_reduce<false>(d, sh);
        const float lse = stats[2 * r];
        for (size_t j = threadIdx.x; j < c; j += blockDim.x) {
            const float p = expf(load(s, so + j) - lse);
            store(s, so + j, p);
            store(dp, so + j, p * (load(dp, so + j) - d));
        }
    }
}

template <typename T> __global__ void add_kernel(size_t n, const T *x, T *y)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        store(y, i, load(y, i) + load(x, i));
}

bool supported(pb_dtype t) { return t == PB_FLOAT32 || t == PB_BFLOAT16; }

using bf16 = __nv_bfloat16;

} // namespace

extern "C" cudaError_t pb_kernels_cuda_gelu_fwd(pb_dtype t, size_t n, const void *x, void *y, cudaStream_t s)
{
    if (!supported(t)) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const unsigned g = (unsigned)blocks_for(n);
    if (t == PB_FLOAT32) gelu_fwd_kernel<<<g, kThreads, 0, s>>>(n, (const float *)x, (float *)y);
    else gelu_fwd_kernel<<<g, kThreads, 0, s>>>(n, (const bf16 *)x, (bf16 *)y);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_gelu_bwd(pb_dtype t, size_t n, const void *x, const void *dy, void *dx,
                                                cudaStream_t s)
{
    if (!supported(t)) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const unsigned g = (unsigned)blocks_for(n);
    if (t == PB_FLOAT32) gelu_bwd_kernel<<<g, kThreads, 0, s>>>(n, (const float *)x, (const float *)dy, (float *)dx);
    else gelu_bwd_kernel<<<g, kThreads, 0, s>>>(n, (const bf16 *)x, (const bf16 *)dy, (bf16 *)dx);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_swiglu_fwd(pb_dtype t, int64_t rows, int64_t f, const void *z, void *y,
                                                  cudaStream_t s)
{
    if (!supported(t) || rows < 0 || f < 0) return cudaErrorInvalidValue;
    const size_t n = (size_t)rows * (size_t)f;
    if (n == 0) return cudaSuccess;
    const unsigned g = (unsigned)blocks_for(n);
    if (t == PB_FLOAT32) swiglu_fwd_kernel<<<g, kThreads, 0, s>>>(n, (size_t)f, (const float *)z, (float *)y);
    else swiglu_fwd_kernel<<<g, kThreads, 0, s>>>(n, (size_t)f, (const bf16 *)z, (bf16 *)y);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_swiglu_bwd(pb_dtype t, int64_t rows, int64_t f, const void *z, void *d,
                                                  cudaStream_t s)
{
    if (!supported(t) || rows < 0 || f < 0) return cudaErrorInvalidValue;
    const size_t n = (size_t)rows * (size_t)f;
    if (n == 0) return cudaSuccess;
    const unsigned g = (unsigned)blocks_for(n);
    if (t == PB_FLOAT32) swiglu_bwd_kernel<<<g, kThreads, 0, s>>>(n, (size_t)f, (const float *)z, (float *)d);
    else swiglu_bwd_kernel<<<g, kThreads, 0, s>>>(n, (size_t)f, (const bf16 *)z, (bf16 *)d);
    return cudaGetLastError();
}

// A row per block, at most kMaxBlocks blocks (they loop over the other rows).
static unsigned row_blocks(int64_t rows) { return (unsigned)((size_t)rows < kMaxBlocks ? (size_t)rows : kMaxBlocks); }

extern "C" cudaError_t pb_kernels_cuda_softmax_fwd(pb_dtype t, int64_t rows, int64_t cols, const void *x, void *y,
                                                   cudaStream_t s)
{
    if (!supported(t) || rows < 0 || cols < 0) return cudaErrorInvalidValue;
    if (rows == 0 || cols == 0) return cudaSuccess;
    const unsigned g = row_blocks(rows);
    if (t == PB_FLOAT32) softmax_fwd_kernel<<<g, kThreads, 0, s>>>(rows, cols, (const float *)x, (float *)y);
    else softmax_fwd_kernel<<<g, kThreads, 0, s>>>(rows, cols, (const bf16 *)x, (bf16 *)y);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_softmax_bwd(pb_dtype t, int64_t rows, int64_t cols, const void *y,
                                                   const void *dy, void *dx, cudaStream_t s)
{
    if (!supported(t) || rows < 0 || cols < 0) return cudaErrorInvalidValue;
    if (rows == 0 || cols == 0) return cudaSuccess;
    const unsigned g = row_blocks(rows);
    if (t == PB_FLOAT32)
        softmax_bwd_kernel<<<g, kThreads, 0, s>>>(rows, cols, (const float *)y, (const float *)dy, (float *)dx);
    else softmax_bwd_kernel<<<g, kThreads, 0, s>>>(rows, cols, (const bf16 *)y, (const bf16 *)dy, (bf16 *)dx);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_softmax_online(pb_dtype t, int64_t rows, int64_t cols, void *x, void *o,
                                                      int64_t ocols, float *stats, cudaStream_t s)
{
    if (!supported(t) || rows < 0 || cols < 0 || ocols < 0) return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;
    const unsigned g = row_blocks(rows);
    if (t == PB_FLOAT32) softmax_online_kernel<<<g, kThreads, 0, s>>>(rows, cols, (float *)x, (float *)o, ocols, stats);
    else softmax_online_kernel<<<g, kThreads, 0, s>>>(rows, cols, (bf16 *)x, (bf16 *)o, ocols, stats);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_softmax_online_end(pb_dtype t, int64_t rows, int64_t ocols, void *o,
                                                          float *stats, cudaStream_t s)
{
    if (!supported(t) || rows < 0 || ocols < 0) return cudaErrorInvalidValue;
    if (rows == 0) return cudaSuccess;
    const size_t n = (size_t)rows * (size_t)ocols;
    if (n > 0) {
        const unsigned g = (unsigned)blocks_for(n);
        if (t == PB_FLOAT32) softmax_online_end_kernel<<<g, kThreads, 0, s>>>(rows, ocols, (float *)o, stats);
        else softmax_online_end_kernel<<<g, kThreads, 0, s>>>(rows, ocols, (bf16 *)o, stats);
    }
    softmax_online_lse_kernel<<<(unsigned)blocks_for((size_t)rows), kThreads, 0, s>>>(rows, stats);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_softmax_online_bwd(pb_dtype t, int64_t rows, int64_t cols, void *x, void *dp,
                                                          const void *o, const void *d_o, int64_t ocols,
                                                          const float *stats, cudaStream_t s)
{
    if (!supported(t) || rows < 0 || cols < 0 || ocols < 0) return cudaErrorInvalidValue;
    if (rows == 0 || cols == 0) return cudaSuccess;
    const unsigned g = row_blocks(rows);
    if (t == PB_FLOAT32)
        softmax_online_bwd_kernel<<<g, kThreads, 0, s>>>(rows, cols, (float *)x, (float *)dp, (const float *)o,
                                                         (const float *)d_o, ocols, stats);
    else
        softmax_online_bwd_kernel<<<g, kThreads, 0, s>>>(rows, cols, (bf16 *)x, (bf16 *)dp, (const bf16 *)o,
                                                         (const bf16 *)d_o, ocols, stats);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_add(pb_dtype t, size_t n, const void *x, void *y, cudaStream_t s)
{
    if (!supported(t)) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    const unsigned g = (unsigned)blocks_for(n);
    if (t == PB_FLOAT32) add_kernel<<<g, kThreads, 0, s>>>(n, (const float *)x, (float *)y);
    else add_kernel<<<g, kThreads, 0, s>>>(n, (const bf16 *)x, (bf16 *)y);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_convert(void *dst, pb_dtype dst_t, const void *src, pb_dtype src_t, size_t n,
                                               cudaStream_t s)
{
    if (!supported(dst_t) || !supported(src_t)) return cudaErrorInvalidValue;
    if (n == 0) return cudaSuccess;
    if (dst_t == src_t)
        return dst == src ? cudaSuccess : cudaMemcpyAsync(dst, src, n * (dst_t == PB_FLOAT32 ? 4 : 2),
                                                          cudaMemcpyDeviceToDevice, s);
    const unsigned g = (unsigned)blocks_for(n);
    if (dst_t == PB_BFLOAT16) convert_kernel<<<g, kThreads, 0, s>>>(n, (const float *)src, (bf16 *)dst);
    else convert_kernel<<<g, kThreads, 0, s>>>(n, (const bf16 *)src, (float *)dst);
    return cudaGetLastError();
}

extern "C" cudaError_t pb_kernels_cuda_fill(void *ptr, pb_dtype t, int64_t rows, int64_t cols, int64_t ld,
                                            uint64_t seed, uint64_t rng_stream, int64_t row0, int64_t col0, float scale,
                                            cudaStream_t s)
{
    if (!supported(t) || rows < 0 || cols < 0 || ld < cols) return cudaErrorInvalidValue;
    if (rows == 0 || cols == 0) return cudaSuccess;
    const unsigned g = (unsigned)blocks_for((size_t)rows * (size_t)cols);
    if (t == PB_FLOAT32)
        fill_kernel<<<g, kThreads, 0, s>>>((float *)ptr, rows, cols, ld, seed, rng_stream, row0, col0, scale);
    else fill_kernel<<<g, kThreads, 0, s>>>((bf16 *)ptr, rows, cols, ld, seed, rng_stream, row0, col0, scale);
    return cudaGetLastError();
}
