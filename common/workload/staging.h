/* Staging between a compute engine's memory and a backend's when they differ
 * (cuBLAS with MPI in host memory, BLAS with NCCL): the engine's data is
 * copied into a backend buffer before the backend moves it, and back after.
 * dp.c stages each gradient bucket through one buffer, tp.c each collective
 * through a send and a receive buffer. */
#ifndef PB_STAGING_H
#define PB_STAGING_H

#include "backend/comm.h"
#include "compute/compute.h"

#include <stddef.h>

#define PB_STAGING_MAX 2

typedef struct pb_staging {
    const pb_compute *eng;
    const pb_comm_backend *be;
    void *buf[PB_STAGING_MAX]; /* backend memory; NULL when no staging is needed */
} pb_staging;

/* 1 when eng and be keep their buffers in different memories. */
int pb_staging_needed(const pb_compute *eng, const pb_comm_backend *be);

/* nbufs (at most PB_STAGING_MAX) backend buffers of `bytes` each when
 * staging is needed, none otherwise. pb_staging_free releases them (also
 * after a failed alloc, and on a zeroed pb_staging). */
int pb_staging_alloc(pb_staging *s, const pb_compute *eng, const pb_comm_backend *be, int nbufs, size_t bytes);
void pb_staging_free(pb_staging *s);

/* Engine memory -> buf[i], and buf[i] -> engine memory. */
int pb_staging_in(const pb_staging *s, int i, const void *eng_src, size_t bytes);
int pb_staging_out(const pb_staging *s, int i, void *eng_dst, size_t bytes);

#endif
