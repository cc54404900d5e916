/* Which GPU this process uses. A rank takes GPU (local_rank + offset) mod
 * count, local_rank from MPI_COMM_TYPE_SHARED, so one rank per GPU is the
 * natural layout; the NCCL backend and the cuBLAS engine then both work on
 * the current device. In a build without CUDA every call reports no GPU.
 *
 * The CUDA calls this module needs go through a small table (pb_gpu_ops), so
 * that the logic around them (which device, in which thread, in which order)
 * runs in CPU-only unit tests against a fake GPU (pb_gpu_ops_set). */
#ifndef PB_GPU_H
#define PB_GPU_H

#include <stddef.h>

/* The CUDA runtime calls behind this module; each returns a PB_ status. */
typedef struct pb_gpu_ops {
    int (*count)(void);                  /* visible GPUs, 0 when none */
    /* Why count() found none: the runtime's error ("CUDA driver version is
     * insufficient for CUDA runtime version"), NULL when it simply found none
     * or cannot say (the field may be left out). */
    const char *(*count_error)(void);
    int (*set_device)(int dev);          /* cudaSetDevice: current device of the calling thread */
    int (*describe)(int dev, int n, char *desc, size_t len);
    size_t (*cache_bytes)(void);         /* L2 of the current device */
    /* Host to device, complete on return: the copy is issued on the legacy
     * default stream (cudaMemcpyAsync) and that stream is then synchronised. */
    int (*copy_h2d)(void *dst, const void *src, size_t bytes);
    int (*sync_legacy)(void);
} pb_gpu_ops;

/* The table in use: the CUDA runtime's in CUDA builds, "no GPU" otherwise,
 * or the one a test installed with pb_gpu_ops_set (NULL restores the real
 * one and forgets the bound device). */
const pb_gpu_ops *pb_gpu_ops_get(void);
void pb_gpu_ops_set(const pb_gpu_ops *ops);

/* Visible GPUs (0 without CUDA support or without devices). */
int pb_gpu_count(void);

/* Make GPU (local_rank + offset) mod count current; describe it in `desc`
 * ("GPU 0 of 1: NVIDIA A100-SXM4-80GB, 79 GiB, PCI 0000:07:00.0"). PB_ERR_ENV when
 * there is no GPU or no CUDA support. The device is remembered for
 * pb_gpu_thread_bind. */
int pb_gpu_bind(int local_rank, int offset, char *desc, size_t len);

/* The device pb_gpu_bind chose, -1 before (or without) a binding. */
int pb_gpu_bound(void);

/* The current device is per thread in CUDA: a new thread starts on device 0.
 * Every thread that makes CUDA (or NCCL) calls calls this first: it makes the
 * bound device current in the calling thread. PB_OK and nothing done when no
 * device is bound (host-memory runs). */
int pb_gpu_thread_bind(void);

/* Host to device through pb_gpu_ops: complete (landed in device memory) on
 * return, so work on any other stream issued afterwards sees the data. */
int pb_gpu_from_host(void *dst, const void *src, size_t bytes);

/* Whether local_size ranks on one node may share the node's `ngpu` GPUs:
 * with exclusive use (NCCL: one GPU per rank, it refuses duplicates) they
 * need local_size <= ngpu; shared use (MPI on device buffers) needs one GPU.
 * PB_OK, or PB_ERR_ENV with a message (pb_fail) naming the fix; without a GPU
 * the message carries the runtime's error (count_error). */
int pb_gpu_check_ranks(int local_size, int ngpu, int exclusive);

/* Which physical GPU pb_gpu_bind(local_rank, offset) would take, as text that
 * differs between GPUs (its PCI bus id, from describe): with one GPU visible
 * per rank (Slurm --gpus-per-task=1) every rank sees "GPU 0", and only this
 * tells whether two ranks of a node share one. "" without a GPU or when the
 * bus id is unknown. */
#define PB_GPU_ID_MAX 64
void pb_gpu_identity(int local_rank, int offset, char *id, size_t len);

/* Exclusive use, across the node: the first two ranks (*a < *b) whose node
 * (node_of) and identity (ids, `stride` bytes apart) are the same; 0 when
 * every rank of every node has a GPU of its own. Pure. */
int pb_gpu_shared(const char *ids, size_t stride, const int *node_of, int size, int *a, int *b);

/* L2 cache of the current GPU in bytes (0 without a GPU). */
size_t pb_gpu_cache_bytes(void);

#endif
