/* The rehearsal's device (comm_rehearse.c's memory and synchronisation
 * rules, docs/gpu.md "Rehearsing NCCL on the CPU"). */
#ifndef PB_REHEARSE_DEVICE_H
#define PB_REHEARSE_DEVICE_H

#include <mpi.h>
#include <stddef.h>

/* A receive posted (+1) or run to its end or dropped (-1), on any communicator of the process. */
void pb_rehearse_device_posted(int delta);
/* The first allocation or free refused (PB_OK: none); a free cannot return it, the next sync does. */
int pb_rehearse_device_refusal(void);

/* The backend's alloc, free, to_host and from_host: each waits for every
 * stream of the process first, as cudaMalloc, cudaFree and a blocking
 * cudaMemcpy synchronise the device; an allocation or free while a receive
 * is posted and unmatched, or inside the runner's timed iterations, is
 * refused with exit 3 and why. */
int pb_rehearse_device_alloc(size_t bytes, void **out);
void pb_rehearse_device_free(void *p);
int pb_rehearse_device_to_host(void *host, const void *src, size_t bytes);
int pb_rehearse_device_from_host(void *dst, const void *host, size_t bytes);

/* The host engine's allocations (core/devsync.h), held to the same rules. */
int pb_rehearse_device_engine_sync(const char *why);

/* Collective over group: NCCL refuses two ranks of one communicator on one
 * GPU at ncclCommInitRank ("Duplicate GPU detected"). A process's device is
 * its local rank, modulo PARABENCH_REHEARSE_GPUS when set. */
int pb_rehearse_device_check(MPI_Comm group, int rank, int size);

#endif
