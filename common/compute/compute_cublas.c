/* The cuBLAS compute engine: device memory, GEMMs through cublasGemmEx with
 * fp32 accumulation (CUBLAS_COMPUTE_32F) on fp32 or bf16 storage, and the
 * small kernels of kernels_cuda.cu, all on one compute stream.
 *
 * It runs on the CURRENT device: the process chose it once with pb_gpu_bind
 * (gpu_cuda.c), which the NCCL backend shares; opts->device is ignored. The
 * stream is non-blocking, as the NCCL backend's is, so a buffer handed to a
 * backend must be ordered first: ordering.h either makes the backend's stream
 * wait on this queue (NCCL) or synchronizes (MPI). Row-major requests become
 * column-major cuBLAS calls through gemm_map.h. cuBLAS itself is loaded when
 * the engine starts (lib_cublas.h), so processes that never use it do not
 * pay for it. */
#include "compute/compute.h"

#include "backend/cuda_status.h"
#include "core/error.h"
#include "compute/gemm_map.h"
#include "compute/kernels_cuda.h"
#include "compute/lib_cublas.h"
#include "backend/spans_cuda.h"

#include <cuda_runtime.h>
#include <library_types.h>
#include <stdio.h>
#include <string.h>

const pb_compute *pb_compute_cublas(void); /* resolves compute.c's weak reference */

static const pb_lib_cublas *cb; /* set by the first init that loads it */

static struct {
    int ready;
    int device;
    cublasHandle_t handle;
    cudaStream_t stream;
    pb_spans_cuda spans; /* device time of engine work */
    char desc[512];
} cu;

#define CUBLAS_TRY(call, what)                                                                     \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                           \
            return pb_fail(PB_ERR_ENV, "%s: %s", (what), cb->GetStatusString(s_));                  \
    } while (0)

#define READY(what) PB_CHECK(cu.ready, PB_ERR_ENV, "%s: the cublas engine is not initialised (init failed or not called)", (what))

static int check_float_type(pb_dtype t, const char *what)
{
    PB_CHECK(t == PB_FLOAT32 || t == PB_BFLOAT16, PB_ERR_USAGE, "%s: type %s not supported (float or bfloat16)",
             what, pb_dtype_name(t));
    return PB_OK;
}

static void build_description(void)
{
    const char *why = NULL;
    const pb_lib_cublas *lib = pb_lib_cublas_get(&why);
    if (!lib) {
        snprintf(cu.desc, sizeof cu.desc, "cuBLAS not loaded (%s)", why);
        return;
    }
    int major = 0, minor = 0, patch = 0;
    lib->GetProperty(MAJOR_VERSION, &major);
    lib->GetProperty(MINOR_VERSION, &minor);
    lib->GetProperty(PATCH_LEVEL, &patch);
    struct cudaDeviceProp p;
    if (!cu.ready || cudaGetDeviceProperties(&p, cu.device) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(cu.desc, sizeof cu.desc, "cuBLAS %d.%d.%d, not initialised (no usable GPU)", major, minor, patch);
        return;
    }
    snprintf(cu.desc, sizeof cu.desc,
             "cuBLAS %d.%d.%d on %s (device %d), bf16 GEMMs with fp32 accumulation (cublasGemmEx, "
             "CUBLAS_COMPUTE_32F); fp32 GEMMs in full fp32 (no TF32)",
             major, minor, patch, p.name, cu.device);
}

static void cublas_finalize(void)
{
    if (!cu.ready) return;
    cudaStreamSynchronize(cu.stream);
    pb_spans_cuda_free(&cu.spans);
    cb->Destroy(cu.handle);
    cudaStreamDestroy(cu.stream);
    cu.ready = 0;
    cu.handle = NULL;
    cu.stream = NULL;
}

/* Undo a partial init (handle and stream may be unset) and return status. */
static int init_failed(int status)
{
    if (cu.handle) cb->Destroy(cu.handle);
    if (cu.stream) cudaStreamDestroy(cu.stream);
    cu.handle = NULL;
    cu.stream = NULL;
    cu.ready = 0;
    return status;
}

static int cublas_init(const pb_compute_opts *opts)
{
    (void)opts; /* the device is the current one (pb_gpu_bind) */
    int n = 0, dev = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError(); /* no driver / no device is sticky otherwise */
        return pb_fail(PB_ERR_ENV, "compute engine cublas: no usable GPU (cudaGetDeviceCount: %s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    }
    const char *why = NULL;
    if (!cb && !(cb = pb_lib_cublas_get(&why))) return pb_fail(PB_ERR_ENV, "compute engine cublas: %s", why);
    PB_CUDA_TRY(cudaGetDevice(&dev), "cudaGetDevice");
    if (cu.ready && cu.device == dev) return PB_OK;
    cublas_finalize(); /* re-initialised on another device */
    cu.device = dev;
    e = cudaStreamCreateWithFlags(&cu.stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        cu.stream = NULL;
        return init_failed(pb_cuda_status_fail_at(e, __FILE__, __LINE__, "cudaStreamCreateWithFlags (compute stream)"));
    }
    cublasStatus_t s = cb->Create(&cu.handle);
    if (s != CUBLAS_STATUS_SUCCESS) {
        cu.handle = NULL;
        return init_failed(pb_fail(PB_ERR_ENV, "cublasCreate on device %d: %s", dev, cb->GetStatusString(s)));
    }
    s = cb->SetStream(cu.handle, cu.stream);
    if (s != CUBLAS_STATUS_SUCCESS)
        return init_failed(pb_fail(PB_ERR_ENV, "cublasSetStream: %s", cb->GetStatusString(s)));
    /* Default math: bf16 GEMMs with CUBLAS_COMPUTE_32F run on tensor cores, fp32
     * GEMMs stay exact fp32 (no TF32), so fp32 results compare with the CPU
     * reference at the BLAS engine's tolerance. CUBLAS_TENSOR_OP_MATH is
     * deprecated and would allow fp16 down-conversion. */
    s = cb->SetMathMode(cu.handle, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS)
        return init_failed(pb_fail(PB_ERR_ENV, "cublasSetMathMode: %s", cb->GetStatusString(s)));
    cu.ready = 1;
    build_description();
    return PB_OK;
}

static const char *cublas_describe(void)
{
    if (!cu.ready || !cu.desc[0]) build_description();
    return cu.desc;
}

static pb_dtype cublas_gemm_dtype(pb_dtype requested)
{
    return requested == PB_BFLOAT16 ? PB_BFLOAT16 : PB_FLOAT32; /* bf16 is native on sm_80+ */
}

static int cublas_mem_info(uint64_t *free_bytes, uint64_t *total_bytes)
{
    size_t f = 0, t = 0;
    PB_CUDA_TRY(cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
    return PB_OK;
}

static int cublas_alloc(void **ptr, size_t bytes)
{
    *ptr = NULL;
    cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1); /* plain device memory, never managed */
    if (e != cudaSuccess) {
        *ptr = NULL;
        (void)cudaGetLastError();
        return pb_fail(PB_ERR_ENV, "cudaMalloc of %zu bytes of device memory: %s", bytes, cudaGetErrorString(e));
    }
    return PB_OK;
}

static void cublas_free(void *ptr)
{
    if (ptr) cudaFree(ptr);
}

static int cublas_memset(void *ptr, int byte, size_t bytes)
{
    READY("memset");
    if (bytes) PB_CUDA_TRY(cudaMemsetAsync(ptr, byte, bytes, cu.stream), "cudaMemsetAsync");
    return PB_OK;
}

static int cublas_copy(void *dst, const void *src, size_t bytes)
{
    READY("copy");
    if (bytes && dst != src)
        PB_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cu.stream), "cudaMemcpyAsync (device to device)");
    return PB_OK;
}

/* Both host copies are ordered after the queued work and return complete, as
 * the BLAS engine's do: the caller may read or reuse its host buffer at once. */
static int cublas_to_host(void *host_dst, const void *src, size_t bytes)
{
    READY("to_host");
    if (!bytes) return PB_OK;
    PB_CUDA_TRY(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, cu.stream), "cudaMemcpyAsync (device to host)");
    PB_CUDA_TRY(cudaStreamSynchronize(cu.stream), "cudaStreamSynchronize after a device-to-host copy");
    return PB_OK;
}

static int cublas_from_host(void *dst, const void *host_src, size_t bytes)
{
    READY("from_host");
    if (!bytes) return PB_OK;
    PB_CUDA_TRY(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, cu.stream), "cudaMemcpyAsync (host to device)");
    PB_CUDA_TRY(cudaStreamSynchronize(cu.stream), "cudaStreamSynchronize after a host-to-device copy");
    return PB_OK;
}

static int cublas_gemm(pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k, float alpha, const void *a,
                       int64_t lda, const void *b, int64_t ldb, float beta, void *c, int64_t ldc, pb_dtype t)
{
    READY("gemm");
    PB_TRY(check_float_type(t, "gemm"));
    PB_CHECK(m >= 0 && n >= 0 && k >= 0, PB_ERR_USAGE, "gemm: negative shape %lldx%lldx%lld", (long long)m,
             (long long)n, (long long)k);
    if (m == 0 || n == 0) return PB_OK;
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B goes first. */
    pb_gemm_map_colmajor g = pb_gemm_map(ta, tb, m, n, k, lda, ldb, ldc);
    PB_CHECK(pb_gemm_map_colmajor_valid(&g), PB_ERR_USAGE,
             "gemm: %lldx%lldx%lld (ta=%d tb=%d) with lda=%lld ldb=%lld ldc=%lld: leading dimension too small or "
             "a value above cuBLAS's 32-bit limit",
             (long long)m, (long long)n, (long long)k, (int)ta, (int)tb, (long long)lda, (long long)ldb,
             (long long)ldc);
    cudaDataType_t dt = t == PB_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasOperation_t opa = g.transa == PB_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = g.transb == PB_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_TRY(cb->GemmEx(cu.handle, opa, opb, (int)g.m, (int)g.n, (int)g.k, &alpha, b, dt, (int)g.lda, a, dt,
                              (int)g.ldb, &beta, c, dt, (int)g.ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
    return PB_OK;
}

/* One cublasGemmStridedBatchedEx: the mapping of `gemm` (operands swapped, so
 * the caller's B and its stride come first); strides are unchanged. */
static int cublas_gemm_batched(const pb_compute_gemm_batch *r)
{
    READY("batched gemm");
    PB_TRY(check_float_type(r->t, "batched gemm"));
    PB_CHECK(r->m >= 0 && r->n >= 0 && r->k >= 0 && r->count >= 0 && r->stride_a >= 0 && r->stride_b >= 0 &&
                 r->stride_c >= 0,
             PB_ERR_USAGE, "batched gemm: negative shape, stride or count");
    if (r->m == 0 || r->n == 0 || r->count == 0) return PB_OK;
    pb_gemm_map_colmajor g = pb_gemm_map(r->ta, r->tb, r->m, r->n, r->k, r->lda, r->ldb, r->ldc);
    PB_CHECK(pb_gemm_map_colmajor_valid(&g) && r->count <= INT_MAX, PB_ERR_USAGE,
             "batched gemm: %lldx%lldx%lld x %lld (ta=%d tb=%d) with lda=%lld ldb=%lld ldc=%lld: leading dimension "
             "too small or a value above cuBLAS's 32-bit limit",
             (long long)r->m, (long long)r->n, (long long)r->k, (long long)r->count, (int)r->ta, (int)r->tb,
             (long long)r->lda, (long long)r->ldb, (long long)r->ldc);
    cudaDataType_t dt = r->t == PB_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasOperation_t opa = g.transa == PB_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = g.transb == PB_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_TRY(cb->GemmStridedBatchedEx(cu.handle, opa, opb, (int)g.m, (int)g.n, (int)g.k, &r->alpha, r->b, dt,
                                          (int)g.lda, (long long)r->stride_b, r->a, dt, (int)g.ldb,
                                          (long long)r->stride_a, &r->beta, r->c, dt, (int)g.ldc,
                                          (long long)r->stride_c, (int)r->count, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
    return PB_OK;
}

/* A launcher's status as ours, naming the kernel. */
static int launched(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return PB_OK;
    return pb_cuda_status_fail_at(e, __FILE__, __LINE__, what);
}

static int cublas_gelu_fwd(pb_dtype t, size_t n, const void *x, void *y)
{
    READY("gelu");
    PB_TRY(check_float_type(t, "gelu"));
    return launched(pb_kernels_cuda_gelu_fwd(t, n, x, y, cu.stream), "gelu forward kernel launch");
}

static int cublas_gelu_bwd(pb_dtype t, size_t n, const void *x, const void *dy, void *dx)
{
    READY("gelu backward");
    PB_TRY(check_float_type(t, "gelu backward"));
    return launched(pb_kernels_cuda_gelu_bwd(t, n, x, dy, dx, cu.stream), "gelu backward kernel launch");
}

static int cublas_swiglu_fwd(pb_dtype t, int64_t rows, int64_t f, const void *z, void *y)
{
    READY("swiglu");
    PB_TRY(check_float_type(t, "swiglu"));
    return launched(pb_kernels_cuda_swiglu_fwd(t, rows, f, z, y, cu.stream), "swiglu forward kernel launch");
}

static int cublas_swiglu_bwd(pb_dtype t, int64_t rows, int64_t f, const void *z, void *d)
{
    READY("swiglu backward");
    PB_TRY(check_float_type(t, "swiglu backward"));
    return launched(pb_kernels_cuda_swiglu_bwd(t, rows, f, z, d, cu.stream), "swiglu backward kernel launch");
}

static int cublas_softmax_fwd(pb_dtype t, int64_t rows, int64_t cols, const void *x, void *y)
{
    READY("softmax");
    PB_TRY(check_float_type(t, "softmax"));
    PB_CHECK(rows >= 0 && cols >= 0, PB_ERR_USAGE, "softmax: negative shape %lldx%lld", (long long)rows, (long long)cols);
    return launched(pb_kernels_cuda_softmax_fwd(t, rows, cols, x, y, cu.stream), "softmax forward kernel launch");
}

static int cublas_softmax_bwd(pb_dtype t, int64_t rows, int64_t cols, const void *y, const void *dy, void *dx)
{
    READY("softmax backward");
    PB_TRY(check_float_type(t, "softmax backward"));
    PB_CHECK(rows >= 0 && cols >= 0, PB_ERR_USAGE, "softmax backward: negative shape %lldx%lld", (long long)rows,
             (long long)cols);
    return launched(pb_kernels_cuda_softmax_bwd(t, rows, cols, y, dy, dx, cu.stream), "softmax backward kernel launch");
}

static int cublas_softmax_online(pb_dtype t, int64_t rows, int64_t cols, void *s, void *o, int64_t ocols,
                                 float *stats)
{
    READY("online softmax");
    PB_TRY(check_float_type(t, "online softmax"));
    return launched(pb_kernels_cuda_softmax_online(t, rows, cols, s, o, ocols, stats, cu.stream),
                    "online softmax kernel launch");
}

static int cublas_softmax_online_end(pb_dtype t, int64_t rows, int64_t ocols, void *o, float *stats)
{
    READY("online softmax end");
    PB_TRY(check_float_type(t, "online softmax end"));
    return launched(pb_kernels_cuda_softmax_online_end(t, rows, ocols, o, stats, cu.stream),
                    "online softmax end kernel launch");
}

static int cublas_softmax_online_bwd(pb_dtype t, int64_t rows, int64_t cols, void *s, void *dp, const void *o,
                                     const void *d_o, int64_t ocols, const float *stats)
{
    READY("online softmax backward");
    PB_TRY(check_float_type(t, "online softmax backward"));
    return launched(pb_kernels_cuda_softmax_online_bwd(t, rows, cols, s, dp, o, d_o, ocols, stats, cu.stream),
                    "online softmax backward kernel launch");
}

static int cublas_add(pb_dtype t, size_t n, const void *x, void *y)
{
    READY("add");
    PB_TRY(check_float_type(t, "add"));
    return launched(pb_kernels_cuda_add(t, n, x, y, cu.stream), "add kernel launch");
}

static int cublas_convert(void *dst, pb_dtype dst_t, const void *src, pb_dtype src_t, size_t n)
{
    READY("convert");
    PB_TRY(check_float_type(dst_t, "convert"));
    PB_TRY(check_float_type(src_t, "convert"));
    return launched(pb_kernels_cuda_convert(dst, dst_t, src, src_t, n, cu.stream), "convert kernel launch");
}

static int cublas_fill(void *ptr, pb_dtype t, int64_t rows, int64_t cols, int64_t ld, const pb_compute_fill_spec *s)
{
    READY("fill");
    PB_TRY(check_float_type(t, "fill"));
    PB_CHECK(rows >= 0 && cols >= 0 && ld >= cols, PB_ERR_USAGE, "fill: shape %lldx%lld with ld %lld",
             (long long)rows, (long long)cols, (long long)ld);
    return launched(
        pb_kernels_cuda_fill(ptr, t, rows, cols, ld, s->seed, s->stream, s->row0, s->col0, s->scale, cu.stream),
        "fill kernel launch");
}

/* Where asynchronous failures (a bad kernel, a bad address) surface. */
static int cublas_synchronize(void)
{
    READY("synchronize");
    PB_CUDA_TRY(cudaStreamSynchronize(cu.stream), "cudaStreamSynchronize (compute stream)");
    return PB_OK;
}

static void *cublas_queue(void) { return cu.stream; }

static int cublas_span_begin(void)
{
    READY("span");
    return pb_spans_cuda_begin(&cu.spans, cu.stream);
}

static int cublas_span_end(void)
{
    READY("span");
    return pb_spans_cuda_end(&cu.spans, cu.stream);
}

static int cublas_span_take(double *us, int *count) { return pb_spans_cuda_take(&cu.spans, us, count); }

static const pb_compute cublas_engine = {
    .name = "cublas",
    .mem = PB_MEM_DEVICE,
    .init = cublas_init,
    .finalize = cublas_finalize,
    .describe = cublas_describe,
    .gemm_dtype = cublas_gemm_dtype,
    .mem_info = cublas_mem_info,
    .alloc = cublas_alloc,
    .free = cublas_free,
    .memset = cublas_memset,
    .copy = cublas_copy,
    .to_host = cublas_to_host,
    .from_host = cublas_from_host,
    .gemm = cublas_gemm,
    .gemm_batched = cublas_gemm_batched,
    .swiglu_fwd = cublas_swiglu_fwd,
    .swiglu_bwd = cublas_swiglu_bwd,
    .gelu_fwd = cublas_gelu_fwd,
    .gelu_bwd = cublas_gelu_bwd,
    .softmax_fwd = cublas_softmax_fwd,
    .softmax_bwd = cublas_softmax_bwd,
    .softmax_online = cublas_softmax_online,
    .softmax_online_end = cublas_softmax_online_end,
    .softmax_online_bwd = cublas_softmax_online_bwd,
    .add = cublas_add,
    .convert = cublas_convert,
    .fill = cublas_fill,
    .synchronize = cublas_synchronize,
    .queue = cublas_queue,
    .span_begin = cublas_span_begin,
    .span_end = cublas_span_end,
    .span_take = cublas_span_take,
};

const pb_compute *pb_compute_cublas(void) { return &cublas_engine; }
