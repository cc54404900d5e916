/* Which GPU this process uses. A rank takes GPU (local_rank + offset) mod
 * count, local_rank from MPI_COMM_TYPE_SHARED, so one rank per GPU is the
 * natural layout; the NCCL backend and the cuBLAS engine then both work on
 * the current device. In a build without CUDA every call reports no GPU. */
#ifndef PB_GPU_H
#define PB_GPU_H

#include <stddef.h>

/* Visible GPUs (0 without CUDA support or without devices). */
int pb_gpu_count(void);

/* Make GPU (local_rank + offset) mod count current; describe it in `desc`
 * ("GPU 0 of 1: NVIDIA A100-SXM4-80GB, 79 GiB, PCI 0000:07:00.0"). PB_ERR_ENV when
 * there is no GPU or no CUDA support. */
int pb_gpu_bind(int local_rank, int offset, char *desc, size_t len);

/* L2 cache of the current GPU in bytes (0 without a GPU). */
size_t pb_gpu_cache_bytes(void);

#endif
