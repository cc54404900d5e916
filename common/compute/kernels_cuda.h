/* Device kernels of the cuBLAS engine (kernels_cuda.cu), callable from C.
 *
 * Every launcher enqueues its work on `stream` and returns the launch status
 * (cudaGetLastError after the launch; cudaSuccess with nothing launched when
 * there is no element). Execution errors appear at the next synchronisation.
 * Pointers are device memory; element types are PB_FLOAT32 or PB_BFLOAT16,
 * anything else answers cudaErrorInvalidValue. Semantics are those of the
 * same-named primitives in compute.h (fp32 math, bf16 rounded to nearest
 * even on store). */
#ifndef PB_KERNELS_CUDA_H
#define PB_KERNELS_CUDA_H

#include "core/dtype.h"

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = gelu(x) (compute/gelu.h); y may be x. */
cudaError_t pb_kernels_cuda_gelu_fwd(pb_dtype t, size_t n, const void *x, void *y, cudaStream_t stream);
/* dx = gelu'(x) * dy (x the forward input); dx may be dy. */
cudaError_t pb_kernels_cuda_gelu_bwd(pb_dtype t, size_t n, const void *x, const void *dy, void *dx,
                                     cudaStream_t stream);
/* SwiGLU forward and in-place backward (compute.h's swiglu_fwd, swiglu_bwd). */
cudaError_t pb_kernels_cuda_swiglu_fwd(pb_dtype t, int64_t rows, int64_t f, const void *z, void *y,
                                       cudaStream_t stream);
cudaError_t pb_kernels_cuda_swiglu_bwd(pb_dtype t, int64_t rows, int64_t f, const void *z, void *d,
                                       cudaStream_t stream);
/* Row-wise softmax, dense rows x cols; y may be x. */
cudaError_t pb_kernels_cuda_softmax_fwd(pb_dtype t, int64_t rows, int64_t cols, const void *x, void *y,
                                        cudaStream_t stream);
/* dx = y * (dy - rowsum(y * dy)); dx may be dy. */
cudaError_t pb_kernels_cuda_softmax_bwd(pb_dtype t, int64_t rows, int64_t cols, const void *y, const void *dy, void *dx,
                                        cudaStream_t stream);
/* Online softmax over row blocks, its end and its backward (compute.h's
 * softmax_online, softmax_online_end, softmax_online_bwd); stats: 2 floats per row. */
cudaError_t pb_kernels_cuda_softmax_online(pb_dtype t, int64_t rows, int64_t cols, void *s, void *o, int64_t ocols,
                                           float *stats, cudaStream_t stream);
cudaError_t pb_kernels_cuda_softmax_online_end(pb_dtype t, int64_t rows, int64_t ocols, void *o, float *stats,
                                               cudaStream_t stream);
cudaError_t pb_kernels_cuda_softmax_online_bwd(pb_dtype t, int64_t rows, int64_t cols, void *s, void *dp,
                                               const void *o, const void *d_o, int64_t ocols, const float *stats,
                                               cudaStream_t stream);
/* y += x, n elements. */
cudaError_t pb_kernels_cuda_add(pb_dtype t, size_t n, const void *x, void *y, cudaStream_t stream);
/* dst[i] = src[i] converted (fp32 <-> bf16); dst_t == src_t is a copy. */
cudaError_t pb_kernels_cuda_convert(void *dst, pb_dtype dst_t, const void *src, pb_dtype src_t, size_t n,
                                    cudaStream_t stream);
/* Element (i, j), i < rows, j < cols, at ptr[i * ld + j] becomes
 * scale * pb_rng_hash_uniform(seed, rng_stream, row0 + i, col0 + j)  (rng.h),
 * bit for bit what the BLAS engine's fill stores. */
cudaError_t pb_kernels_cuda_fill(void *ptr, pb_dtype t, int64_t rows, int64_t cols, int64_t ld, uint64_t seed,
                                 uint64_t rng_stream, int64_t row0, int64_t col0, float scale, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
