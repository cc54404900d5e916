/* cuBLAS, loaded on first use. A linked libcublas (with its libcublasLt)
 * makes every process fault in a large private image at start, whether or
 * not it ever runs a GEMM on a GPU: the MPI-backend runs, --validate and
 * --help paid for it on every rank, and it dominated their start-up. Only
 * the cublas engine needs it, so it opens the library when it starts (CUDA
 * builds only). */
#ifndef PB_LIB_CUBLAS_H
#define PB_LIB_CUBLAS_H

#include <cublas_v2.h>

/* The entry points the cublas engine calls, named as in cublas_v2.h. */
typedef struct pb_lib_cublas {
    __typeof__(cublasCreate) *Create;
    __typeof__(cublasDestroy) *Destroy;
    __typeof__(cublasSetStream) *SetStream;
    __typeof__(cublasSetMathMode) *SetMathMode;
    __typeof__(cublasGetProperty) *GetProperty;
    __typeof__(cublasGetStatusString) *GetStatusString;
    __typeof__(cublasGemmEx) *GemmEx;
    __typeof__(cublasGemmStridedBatchedEx) *GemmStridedBatchedEx;
} pb_lib_cublas;

/* The library, opened once (thread-safe); NULL with the reason in *why
 * (dlopen's or dlsym's message) when it cannot be loaded. */
const pb_lib_cublas *pb_lib_cublas_get(const char **why);

/* The file name it opens: libcublas.so.MAJOR of the headers built against. */
const char *pb_lib_cublas_name(void);

#endif
