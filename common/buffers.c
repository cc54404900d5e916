#include "buffers.h"

#include "error.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLOT_ALIGN 4096
#define MAX_SLOTS 1024

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

int pb_rotation_slots(size_t bytes, size_t llc)
{
    size_t stride = round_up(bytes ? bytes : 1, SLOT_ALIGN);
    size_t slots = (2 * llc + stride - 1) / stride;
    if (slots < 1) slots = 1;
    if (slots > MAX_SLOTS) slots = MAX_SLOTS;
    return (int)slots;
}

size_t pb_llc_bytes(void)
{
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l3 > 0) return (size_t)l3;
    if (l2 > 0) return (size_t)l2;
    return (size_t)32 << 20;
}

size_t pb_rotbuf_footprint(size_t bytes, int rotate)
{
    int slots = rotate ? pb_rotation_slots(bytes, pb_llc_bytes()) : 1;
    return round_up(bytes ? bytes : 1, SLOT_ALIGN) * (size_t)slots;
}

int pb_rotbuf_alloc(const pb_backend *be, size_t bytes, int rotate, pb_rotbuf *out)
{
    memset(out, 0, sizeof *out);
    out->be = be;
    out->bytes = bytes;
    out->stride = round_up(bytes ? bytes : 1, SLOT_ALIGN);
    out->slots = rotate ? pb_rotation_slots(bytes, pb_llc_bytes()) : 1;
    size_t total = out->stride * (size_t)out->slots;
    void *p;
    PB_TRY(be->alloc(total, &p));
    out->base = p;
    /* Zero through a host buffer so it works for device memory too. */
    size_t chunk = total < ((size_t)8 << 20) ? total : ((size_t)8 << 20);
    char *zeros = calloc(1, chunk);
    PB_CHECK(zeros, PB_ERR_ENV, "out of host memory (%zu bytes)", chunk);
    for (size_t off = 0; off < total; off += chunk)
        be->from_host(out->base + off, zeros, total - off < chunk ? total - off : chunk);
    free(zeros);
    return PB_OK;
}

void *pb_rotbuf_slot(const pb_rotbuf *b, int iter)
{
    int k = iter < 0 ? 0 : iter % b->slots;
    return b->base + (size_t)k * b->stride;
}

void pb_rotbuf_free(pb_rotbuf *b)
{
    if (b->base) b->be->free(b->base);
    b->base = NULL;
}
