#include "backend/spans_cuda.h"

#include "core/error.h"
#include "core/grow.h"

#include <stdlib.h>

static int event_fail(cudaError_t e, const char *what)
{
    (void)cudaGetLastError(); /* not sticky for the next launch check */
    return pb_fail(PB_ERR_ENV, "%s: %s", what, cudaGetErrorString(e));
}

/* Make sure events 2n and 2n+1 exist. */
static int reserve(pb_spans_cuda *s)
{
    int need = 2 * s->n + 2;
    while (s->cap < need) {
        cudaEvent_t *ev = pb_grow(s->ev, &s->cap, s->cap, sizeof(cudaEvent_t), 32);
        PB_CHECK(ev, PB_ERR_ENV, "out of memory for %d CUDA events", s->cap + 1);
        s->ev = ev;
        for (int i = 0; i < s->cap; i++) { /* the new slots are zero: create their events */
            if (s->ev[i]) continue;
            cudaError_t e = cudaEventCreate(&s->ev[i]);
            if (e != cudaSuccess) {
                s->ev[i] = NULL;
                return event_fail(e, "cudaEventCreate (timing span)");
            }
        }
    }
    return PB_OK;
}

int pb_spans_cuda_begin(pb_spans_cuda *s, cudaStream_t stream)
{
    PB_CHECK(!s->open, PB_ERR_USAGE, "timing span: begun twice without an end");
    PB_TRY(reserve(s));
    cudaError_t e = cudaEventRecord(s->ev[2 * s->n], stream);
    if (e != cudaSuccess) return event_fail(e, "cudaEventRecord (span begin)");
    s->open = 1;
    return PB_OK;
}

int pb_spans_cuda_end(pb_spans_cuda *s, cudaStream_t stream)
{
    PB_CHECK(s->open, PB_ERR_USAGE, "timing span: ended without a begin");
    cudaError_t e = cudaEventRecord(s->ev[2 * s->n + 1], stream);
    if (e != cudaSuccess) return event_fail(e, "cudaEventRecord (span end)");
    s->open = 0;
    s->n++;
    return PB_OK;
}

int pb_spans_cuda_take(pb_spans_cuda *s, double *us, int *count)
{
    double total = 0;
    int status = PB_OK;
    for (int k = 0; k < s->n && status == PB_OK; k++) {
        float ms = 0;
        cudaError_t e = cudaEventElapsedTime(&ms, s->ev[2 * k], s->ev[2 * k + 1]);
        if (e != cudaSuccess) status = event_fail(e, "cudaEventElapsedTime (timing span)");
        total += (double)ms * 1e3;
    }
    if (status == PB_OK) {
        if (us) *us += total;
        if (count) *count += s->n;
    }
    s->n = 0;
    s->open = 0;
    return status;
}

void pb_spans_cuda_free(pb_spans_cuda *s)
{
    for (int i = 0; i < s->cap; i++)
        if (s->ev[i]) cudaEventDestroy(s->ev[i]);
    free(s->ev);
    *s = (pb_spans_cuda){0};
}
