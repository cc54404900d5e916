/* DDP-style gradient buckets over a flat gradient buffer (pure logic).
 *
 * The buffer holds the gradients of layers 0..L-1 in order; backward produces
 * them last layer first. Buckets are contiguous byte ranges formed in that
 * backward order, from the END of the buffer towards its start:
 *   - a bucket closes at the SIZE LIMIT, not at layer boundaries: it may span
 *     several small layers (as DDP packs parameters until the cap), and a layer
 *     larger than the cap is split over several buckets (DDP would instead keep
 *     a big tensor whole in an oversized bucket; a flat buffer lets us keep
 *     every bucket at most `cap` bytes);
 *   - every bucket is exactly `cap` bytes (rounded down to `align`) except the
 *     last one formed, at offset 0, which takes the remainder.
 * A bucket is ready when backward has finished every layer it touches, i.e.
 * the lowest-numbered one, since backward runs L-1 down to 0.
 * PyTorch DDP's default cap is 25 MiB (bucket_cap_mb=25); DDP's smaller first
 * bucket (1 MiB) is not modelled. */
#ifndef PB_BUCKET_H
#define PB_BUCKET_H

#include <stddef.h>
#include <stdint.h>

#define PB_DDP_BUCKET_BYTES ((uint64_t)25 << 20)

typedef struct pb_bucket {
    uint64_t offset, bytes; /* byte range in the flat gradient buffer */
    int64_t ready_layer;    /* ready once backward has completed this layer */
} pb_bucket;

typedef struct pb_bucket_plan {
    pb_bucket *buckets; /* in backward order: buckets[0] covers the buffer's end */
    size_t count;
    int64_t nlayers;
} pb_bucket_plan;

/* layer_bytes[i]: gradient bytes of layer i (each a multiple of `align`, the
 * element size). cap >= align. PB_ERR_USAGE (option --bucket) for a bad cap. */
int pb_bucket_plan_build(const uint64_t *layer_bytes, int64_t nlayers, uint64_t cap, uint64_t align,
                         pb_bucket_plan *out);
void pb_bucket_plan_free(pb_bucket_plan *plan);

/* Buckets that become ready exactly when layer `layer` completes: indices
 * [*first, *first + *count); *count may be 0. */
void pb_bucket_ready(const pb_bucket_plan *plan, int64_t layer, size_t *first, size_t *count);

#endif
