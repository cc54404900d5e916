#include "workload/staging.h"

#include "core/error.h"

#include <string.h>

int pb_staging_needed(const pb_compute *eng, const pb_comm_backend *be) { return eng->mem != be->mem; }

int pb_staging_alloc(pb_staging *s, const pb_compute *eng, const pb_comm_backend *be, int nbufs, size_t bytes)
{
    memset(s, 0, sizeof *s);
    s->eng = eng;
    s->be = be;
    PB_CHECK(nbufs <= PB_STAGING_MAX, PB_ERR_USAGE, "staging: %d buffers asked, at most %d", nbufs, PB_STAGING_MAX);
    if (!pb_staging_needed(eng, be)) return PB_OK;
    for (int i = 0; i < nbufs; i++) PB_TRY(be->alloc(bytes, &s->buf[i]));
    return PB_OK;
}

void pb_staging_free(pb_staging *s)
{
    for (int i = 0; i < PB_STAGING_MAX; i++)
        if (s->buf[i]) s->be->free(s->buf[i]);
    memset(s->buf, 0, sizeof s->buf);
}

/* The copy goes through whichever side can reach host memory: the engine when
 * the backend's buffers are host memory, the backend otherwise. */
int pb_staging_in(const pb_staging *s, int i, const void *eng_src, size_t bytes)
{
    if (s->be->mem == PB_MEM_HOST) return s->eng->to_host(s->buf[i], eng_src, bytes);
    return s->be->from_host(s->buf[i], eng_src, bytes);
}

int pb_staging_out(const pb_staging *s, int i, void *eng_dst, size_t bytes)
{
    if (s->be->mem == PB_MEM_HOST) return s->eng->from_host(eng_dst, s->buf[i], bytes);
    return s->be->to_host(eng_dst, s->buf[i], bytes);
}
