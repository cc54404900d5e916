#include "workload/bucket.h"

#include "core/error.h"

#include <inttypes.h>
#include <stdlib.h>

/* Index of the layer whose byte range contains `offset`. */
static int64_t layer_at(const uint64_t *layer_bytes, int64_t nlayers, uint64_t offset)
{
    uint64_t start = 0;
    for (int64_t i = 0; i < nlayers; i++) {
        if (offset < start + layer_bytes[i]) return i;
        start += layer_bytes[i];
    }
    return nlayers - 1;
}

static int check_args(const uint64_t *layer_bytes, int64_t nlayers, uint64_t cap, uint64_t align)
{
    PB_CHECK(nlayers > 0 && layer_bytes, PB_ERR_USAGE, "gradient buckets: no layers");
    PB_CHECK(align > 0, PB_ERR_USAGE, "gradient buckets: alignment must be positive");
    if (cap < align)
        return pb_error_usage("--bucket", "bucket size %" PRIu64 " is smaller than one element (%" PRIu64 " bytes)", cap,
                        align);
    for (int64_t i = 0; i < nlayers; i++)
        PB_CHECK(layer_bytes[i] % align == 0, PB_ERR_USAGE,
                 "gradient buckets: layer %lld has %" PRIu64 " bytes, not a multiple of %" PRIu64, (long long)i,
                 layer_bytes[i], align);
    return PB_OK;
}

int pb_bucket_plan_build(const uint64_t *layer_bytes, int64_t nlayers, uint64_t cap, uint64_t align,
                         pb_bucket_plan *out)
{
    *out = (pb_bucket_plan){0};
    PB_TRY(check_args(layer_bytes, nlayers, cap, align));
    uint64_t total = 0;
    for (int64_t i = 0; i < nlayers; i++) total += layer_bytes[i];
    cap -= cap % align;
    size_t count = total ? (size_t)((total + cap - 1) / cap) : 0;
    out->buckets = calloc(count ? count : 1, sizeof *out->buckets);
    PB_CHECK(out->buckets, PB_ERR_ENV, "gradient buckets: out of memory for %zu buckets", count);
    uint64_t end = total;
    for (size_t k = 0; k < count; k++) {
        uint64_t lo = end > cap ? end - cap : 0;
        out->buckets[k] = (pb_bucket){.offset = lo, .bytes = end - lo,
                                      .ready_layer = layer_at(layer_bytes, nlayers, lo)};
        end = lo;
    }
    out->count = count;
    out->nlayers = nlayers;
    return PB_OK;
}

void pb_bucket_plan_free(pb_bucket_plan *plan)
{
    free(plan->buckets);
    *plan = (pb_bucket_plan){0};
}

/* ready_layer does not increase along the plan, so the buckets ready at one
 * layer are one contiguous run. */
void pb_bucket_ready(const pb_bucket_plan *plan, int64_t layer, size_t *first, size_t *count)
{
    size_t k = 0;
    while (k < plan->count && plan->buckets[k].ready_layer > layer) k++;
    *first = k;
    while (k < plan->count && plan->buckets[k].ready_layer == layer) k++;
    *count = k - *first;
}
