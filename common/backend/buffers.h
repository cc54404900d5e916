/* Message buffers for the sweeps. By default one fixed buffer is used at every
 * iteration (cache-warm), as OSU and nccl-tests do, so the numbers compare
 * with theirs. `--rotate 1` is an opt-in cold-cache mode: iteration k uses
 * slot k mod slots of a pool about twice the size of the cache in front of the
 * buffers (the host's last-level cache from hwloc, or the GPU's L2), with
 * slots sized by the current message, so no iteration finds its data cached
 * by the previous ones. The pool is bounded (PB_ROTATE_POOL_MAX) unless the
 * largest message alone is bigger. */
#ifndef PB_BUFFERS_H
#define PB_BUFFERS_H

#include "backend/comm.h"

#include <cjson/cJSON.h>

#define PB_ROTATE_POOL_MAX ((size_t)512 << 20)

typedef struct pb_buffers {
    const pb_comm_backend *be;
    char *base;
    size_t pool;   /* bytes allocated */
    size_t stride; /* distance between slots: the message rounded up to 4 KiB */
    size_t slots;  /* 1 unless rotating */
    int rotate;
} pb_buffers;

/* Bytes of the cache in front of this backend's buffers: the GPU's L2 for
 * device memory, else the host's last-level cache (hwloc); 0 when unknown. */
size_t pb_buffers_cache_bytes(const pb_comm_backend *be);

/* Bytes to allocate for messages up to `largest` (pure, for memory checks and tests). */
size_t pb_buffers_rotation_pool(size_t largest, size_t cache, int rotate);

/* Slots of `bytes` in a pool of `pool` bytes (at least 1). */
size_t pb_buffers_rotation_slots(size_t bytes, size_t pool);

/* Allocate through the backend (its memory: host or device), zero-filled,
 * for messages up to `largest`; fitted to `largest` until pb_buffers_fit. */
int pb_buffers_alloc(const pb_comm_backend *be, size_t largest, int rotate, pb_buffers *out);

/* Size the slots for the message about to be measured (at most `largest`). */
void pb_buffers_fit(pb_buffers *b, size_t bytes);

void *pb_buffers_slot(const pb_buffers *b, int iter);
void pb_buffers_free(pb_buffers *b);

/* The buffer mode for the metadata: {"mode": "fixed"|"rotate", ...}. */
cJSON *pb_buffers_mode_meta(const pb_comm_backend *be, int rotate);

#endif
