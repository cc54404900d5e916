/* Rotating buffers (DESIGN.md "Data"): iteration k uses slot k mod slots of a
 * larger allocation, so that consecutive iterations do not find their data in
 * the last-level cache. The slots together cover about twice the LLC; a buffer
 * larger than that gets one slot (it cannot stay cached anyway). */
#ifndef PB_BUFFERS_H
#define PB_BUFFERS_H

#include "comm.h"

typedef struct pb_rotbuf {
    const pb_backend *be;
    char *base;
    size_t bytes;  /* usable bytes per slot */
    size_t stride; /* distance between slots (bytes rounded up to 4 KiB) */
    int slots;
} pb_rotbuf;

/* Number of slots for buffers of `bytes` given a last-level cache of llc bytes. */
int pb_rotation_slots(size_t bytes, size_t llc);

/* Last-level cache size of this machine (sysconf, else 32 MiB). */
size_t pb_llc_bytes(void);

/* Bytes pb_rotbuf_alloc would take, for memory checks before allocating. */
size_t pb_rotbuf_footprint(size_t bytes, int rotate);

/* Allocate through the backend (its memory: host or device), zero-filled. */
int pb_rotbuf_alloc(const pb_backend *be, size_t bytes, int rotate, pb_rotbuf *out);
void *pb_rotbuf_slot(const pb_rotbuf *b, int iter);
void pb_rotbuf_free(pb_rotbuf *b);

#endif
