/* Compute engine: the primitives a transformer layer needs, as a table of
 * function pointers (nccl-tests' testEngine is the model).
 *
 * Two engines share this interface: BLAS (host memory, OpenBLAS, this file's
 * companion compute_blas.c) and cuBLAS (device memory, compute_cublas.c, only
 * built with CUDA=1). Code above the engine (layer.c,
 * the benchmarks) must treat every engine buffer as opaque: no pointer reads
 * or writes, only the primitives below and to_host/from_host copies.
 *
 * Matrices are row-major. Element types are pb_dtype from dtype.h; GEMMs take
 * PB_FLOAT32 or PB_BFLOAT16 storage (the same type for A, B and C) and always
 * accumulate in fp32. Every primitive returns a pb_status (PB_OK on success). */
#ifndef PB_COMPUTE_H
#define PB_COMPUTE_H

#include "core/dtype.h"
#include "core/mem.h"

#include <stddef.h>
#include <stdint.h>

typedef enum { PB_NOTRANS = 0, PB_TRANS = 1 } pb_compute_trans;

typedef struct pb_compute_opts {
    int threads; /* BLAS threads per rank; 0 = engine default (1, so ranks do not fight over cores) */
    int device;  /* GPU ordinal for device engines; ignored by BLAS */
} pb_compute_opts;

/* Deterministic fill: element (i, j) of a rows x cols block gets
 *   scale * pb_rng_hash_uniform(seed, stream, row0 + i, col0 + j)   (rng.h)
 * so a block is exactly the slice [row0.., col0..] of a larger matrix. */
typedef struct pb_compute_fill_spec {
    uint64_t seed;
    uint64_t stream; /* which matrix: e.g. layer * 4 + weight */
    int64_t row0, col0;
    float scale;
} pb_compute_fill_spec;

/* `count` GEMMs of one shape: for i in [0, count),
 *   C_i = alpha * op(A_i) op(B_i) + beta * C_i,  X_i = X + i * stride_x elements,
 * each as `gemm` (row-major, leading dimensions in elements). A stride may be 0
 * (an operand shared by the batch); the C_i must not overlap. Attention's
 * per-head GEMMs are one such batch per sequence. */
typedef struct pb_compute_gemm_batch {
    pb_compute_trans ta, tb;
    int64_t m, n, k;
    float alpha, beta;
    const void *a;
    int64_t lda, stride_a;
    const void *b;
    int64_t ldb, stride_b;
    void *c;
    int64_t ldc, stride_c;
    int64_t count;
    pb_dtype t;
} pb_compute_gemm_batch;

typedef struct pb_compute {
    const char *name; /* as in the engine table (compute.c) */
    pb_mem_kind mem;  /* where its buffers live */

    int (*init)(const pb_compute_opts *opts);
    void (*finalize)(void);
    /* One line for the report's metadata, e.g.
     * "OpenBLAS 0.3.21 (Zen), 1 thread; fp32 sgemm; bf16 runs in fp32 (no avx512_bf16 on this CPU)". */
    const char *(*describe)(void);
    /* The type GEMMs really run in when `requested` is asked for: BLAS without
     * bf16 hardware answers PB_FLOAT32 for PB_BFLOAT16. Callers store
     * activations and weights in this type and report it. */
    pb_dtype (*gemm_dtype)(pb_dtype requested);
    /* Memory the engine allocates from (host for BLAS, device for GPUs);
     * either pointer may be NULL. */
    int (*mem_info)(uint64_t *free_bytes, uint64_t *total_bytes);

    int (*alloc)(void **ptr, size_t bytes);
    void (*free)(void *ptr);
    int (*memset)(void *ptr, int byte, size_t bytes);
    int (*copy)(void *dst, const void *src, size_t bytes); /* engine to engine */
    int (*to_host)(void *host_dst, const void *src, size_t bytes);
    int (*from_host)(void *dst, const void *host_src, size_t bytes);

    /* C = alpha * op(A) op(B) + beta * C, op(A) m x k, op(B) k x n, C m x n,
     * leading dimensions in elements. beta == 0 ignores C's old contents. */
    int (*gemm)(pb_compute_trans ta, pb_compute_trans tb, int64_t m, int64_t n, int64_t k, float alpha, const void *a,
                int64_t lda, const void *b, int64_t ldb, float beta, void *c, int64_t ldc, pb_dtype t);
    /* A strided batch of GEMMs (pb_compute_gemm_batch): one
     * cublasGemmStridedBatchedEx on cuBLAS, a loop of `gemm` on BLAS (OpenBLAS
     * 0.3.21 has no batch call). NULL: callers use pb_compute_gemm_batched,
     * which loops. */
    int (*gemm_batched)(const pb_compute_gemm_batch *g);
    /* y = gelu(x) (compute/gelu.h: the tanh form); y may be x. */
    int (*gelu_fwd)(pb_dtype t, size_t n, const void *x, void *y);
    /* dx = gelu'(x) * dy, with x the forward INPUT; dx may be dy. */
    int (*gelu_bwd)(pb_dtype t, size_t n, const void *x, const void *dy, void *dx);
    /* SwiGLU (compute/silu.h): z is rows x 2f, each row the gate's f values
     * then the up projection's; y (rows x f, dense) = silu(gate) * up. */
    int (*swiglu_fwd)(pb_dtype t, int64_t rows, int64_t f, const void *z, void *y);
    /* Its backward, in place: d is rows x 2f and holds dY in the first f
     * columns of each row; it becomes dZ = (dY * up * silu'(gate), dY * silu(gate)). */
    int (*swiglu_bwd)(pb_dtype t, int64_t rows, int64_t f, const void *z, void *d);
    /* Row-wise softmax of a rows x cols matrix (dense, leading dimension cols),
     * computed in fp32 with the row maximum subtracted; y may be x. */
    int (*softmax_fwd)(pb_dtype t, int64_t rows, int64_t cols, const void *x, void *y);
    /* dx = y * (dy - rowsum(y * dy)), y the forward OUTPUT; dx may be dy. */
    int (*softmax_bwd)(pb_dtype t, int64_t rows, int64_t cols, const void *y, const void *dy, void *dx);
    /* Online softmax (ring attention's blockwise combination, compute/attn.h):
     * stats holds 2 floats per row in engine memory, (m, l): the running maximum and
     * sum of exp(x - m) over the blocks seen so far; l == 0 means none yet (so a
     * zeroed buffer starts it). One block of `cols` columns: m' = max(m, rowmax(s)),
     * s becomes exp(s - m') in place, l' = l exp(m - m') + rowsum(s), and row r of
     * o (ocols wide, dense) is scaled by exp(m - m') (set to 0 for the first block). */
    int (*softmax_online)(pb_dtype t, int64_t rows, int64_t cols, void *s, void *o, int64_t ocols, float *stats);
    /* After the last block: o /= l, and m becomes the log-sum-exp m + log(l). */
    int (*softmax_online_end)(pb_dtype t, int64_t rows, int64_t ocols, void *o, float *stats);
    /* Its backward for one block (stats after _end): s (the block's scores) becomes
     * P = exp(s - lse), and dp (dO V^T) becomes dS = P (dp - D), D = rowsum(d_o * o)
     * over the ocols columns of the final output o and its gradient d_o. */
    int (*softmax_online_bwd)(pb_dtype t, int64_t rows, int64_t cols, void *s, void *dp, const void *o,
                              const void *d_o, int64_t ocols, const float *stats);
    /* y += x, n elements (in fp32). */
    int (*add)(pb_dtype t, size_t n, const void *x, void *y);
    /* dst[i] = (dst type) src[i]; fp32 <-> bf16 (rounded to nearest even). */
    int (*convert)(void *dst, pb_dtype dst_t, const void *src, pb_dtype src_t, size_t n);
    /* Fill a rows x cols block (leading dimension ld) per pb_compute_fill_spec. */
    int (*fill)(void *ptr, pb_dtype t, int64_t rows, int64_t cols, int64_t ld, const pb_compute_fill_spec *spec);
    /* Wait for all queued work (no-op on BLAS; a stream sync on GPUs). */
    int (*synchronize)(void);

    /* ---- Queued engines only (cuBLAS); NULL on BLAS, whose primitives
     * complete inside the call. ---- */
    /* The queue every primitive runs on (a cudaStream_t), for a backend's
     * after_queue/before_queue (comm.h). */
    void *(*queue)(void);
    /* Device time of engine work, as the backend's spans (comm.h). */
    int (*span_begin)(void);
    int (*span_end)(void);
    int (*span_take)(double *us, int *count);
} pb_compute;

/* The OpenBLAS engine (host memory). */
const pb_compute *pb_compute_blas(void);

/* ---- The engine table (compute.c): one row per engine ---- */

/* Engine by name ("blas"; "cublas" when built with CUDA). PB_ERR_USAGE names
 * `option` if unknown, PB_ERR_ENV if known but not compiled in. */
int pb_compute_select(const char *option, const char *name, const pb_compute **out);

/* Every engine name, in table order, NULL-terminated. */
const char *const *pb_compute_names(void);

/* PB_OK for a name of the table, else PB_ERR_USAGE naming `option` and the names. */
int pb_compute_check_name(const char *option, const char *name);

/* The engine used without --engine for buffers in `mem`: the table's first of that memory. */
const char *pb_compute_default(pb_mem_kind mem);

/* ---- GEMM helpers shared by the engines (compute_gemm.c) ---- */

/* Run a batch on `eng`: its gemm_batched when it has one, else a loop of its
 * gemm. Refuses negative shapes, strides or counts (PB_ERR_USAGE). */
int pb_compute_gemm_batched(const pb_compute *eng, const pb_compute_gemm_batch *g);
/* The batch as `count` calls of eng->gemm, in order. */
int pb_compute_gemm_batch_loop(const pb_compute *eng, const pb_compute_gemm_batch *g);

/* GFLOP/s from a FLOP count and seconds (0 when seconds <= 0). */
double pb_compute_gflops(double flops, double seconds);

/* Time `iters` GEMMs of m x n x k in type t on `eng` (after one warm-up) and
 * return the achieved GFLOP/s (2*m*n*k per GEMM). Allocates and frees its own
 * engine buffers. */
int pb_compute_gemm_benchmark(const pb_compute *eng, int64_t m, int64_t n, int64_t k, pb_dtype t, int iters,
                      double *gflops);

#endif
