#include "backend/buffers.h"

#include "core/error.h"
#include "core/faults.h"
#include "backend/gpu.h"
#include "core/topo.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOT_ALIGN 4096 /* a page: slots never share one, and the stream prefetchers stop at its edge */

/* Saturates (as pb_mem_add does) so that an absurd size is refused, not wrapped to 0. */
static size_t round_up(size_t x, size_t a) { return x > SIZE_MAX - a ? SIZE_MAX : (x + a - 1) / a * a; }

static int on_device(const pb_comm_backend *be) { return be->mem == PB_MEM_DEVICE; }

size_t pb_buffers_cache_bytes(const pb_comm_backend *be)
{
    return on_device(be) ? pb_gpu_cache_bytes() : pb_topo_llc_bytes();
}

size_t pb_buffers_rotation_pool(size_t largest, size_t cache, int rotate)
{
    size_t one = round_up(largest ? largest : 1, SLOT_ALIGN);
    if (!rotate) return one;
    size_t want = 2 * (cache ? cache : (size_t)32 << 20);
    if (want > PB_ROTATE_POOL_MAX) want = PB_ROTATE_POOL_MAX;
    return want > one ? want : one;
}

size_t pb_buffers_rotation_slots(size_t bytes, size_t pool)
{
    size_t slots = pool / round_up(bytes ? bytes : 1, SLOT_ALIGN);
    return slots ? slots : 1;
}

int pb_buffers_alloc(const pb_comm_backend *be, size_t largest, int rotate, pb_buffers *out)
{
    memset(out, 0, sizeof *out);
    out->be = be;
    out->rotate = rotate;
    out->pool = pb_buffers_rotation_pool(largest, rotate ? pb_buffers_cache_bytes(be) : 0, rotate);
    void *p;
    if (pb_faults_fail("buffers")) return pb_fail(PB_ERR_ENV, "out of memory for %zu bytes of buffers", out->pool);
    PB_TRY(be->alloc(out->pool, &p));
    out->base = p;
    /* Zero through a host buffer so it works for device memory too. */
    size_t chunk = out->pool < ((size_t)8 << 20) ? out->pool : ((size_t)8 << 20);
    char *zeros = calloc(1, chunk);
    PB_CHECK(zeros, PB_ERR_ENV, "out of host memory (%zu bytes)", chunk);
    int status = PB_OK;
    for (size_t off = 0; off < out->pool && status == PB_OK; off += chunk)
        status = be->from_host(out->base + off, zeros, out->pool - off < chunk ? out->pool - off : chunk);
    free(zeros);
    pb_buffers_fit(out, largest);
    return status;
}

void pb_buffers_fit(pb_buffers *b, size_t bytes)
{
    b->stride = round_up(bytes ? bytes : 1, SLOT_ALIGN);
    b->slots = b->rotate ? pb_buffers_rotation_slots(bytes, b->pool) : 1;
}

void *pb_buffers_slot(const pb_buffers *b, int iter)
{
    if (b->slots == 1) return b->base; /* fixed buffers: no division in the timed region */
    size_t k = iter < 0 ? 0 : (size_t)iter % b->slots;
    return b->base + k * b->stride;
}

void pb_buffers_free(pb_buffers *b)
{
    if (b->base) b->be->free(b->base);
    b->base = NULL;
}

cJSON *pb_buffers_mode_meta(const pb_comm_backend *be, int rotate)
{
    cJSON *m = cJSON_CreateObject();
    if (!rotate) {
        cJSON_AddStringToObject(m, "mode", "fixed");
        cJSON_AddStringToObject(m, "meaning", "the same buffers at every iteration (cache-warm, as OSU and nccl-tests)");
        return m;
    }
    size_t cache = pb_buffers_cache_bytes(be);
    cJSON_AddStringToObject(m, "mode", "rotate");
    cJSON_AddStringToObject(m, "meaning", "cold cache: each iteration uses the next message-sized slot of a pool "
                                          "about twice the cache (opt-in, --rotate 1)");
    cJSON_AddStringToObject(m, "cache", on_device(be) ? "GPU L2" : "host last-level cache (hwloc)");
    cJSON_AddNumberToObject(m, "cache_bytes", (double)cache);
    cJSON_AddNumberToObject(m, "pool_bytes_min", (double)pb_buffers_rotation_pool(0, cache, 1));
    return m;
}
