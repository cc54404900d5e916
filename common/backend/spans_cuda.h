/* Device time of work on CUDA streams, from CUDA events: the device-side
 * counterpart of the host clock. A span is an event recorded before some
 * work on a stream and one after it; their difference is the time the GPU
 * spent from the first to the second, without the host's launch overhead.
 * Spans are read back in bulk once the streams have completed, so recording
 * them never blocks the host. Only built with CUDA. */
#ifndef PB_SPANS_CUDA_H
#define PB_SPANS_CUDA_H

#include <cuda_runtime.h>

typedef struct pb_spans_cuda {
    cudaEvent_t *ev; /* ev[2k] begins span k, ev[2k+1] ends it */
    int n;           /* spans recorded since the last take */
    int cap;         /* events created (reused across takes) */
    int open;        /* span n has begun and not ended */
} pb_spans_cuda;

/* Record the begin (end) of a span on `stream`. Spans do not nest. */
int pb_spans_cuda_begin(pb_spans_cuda *s, cudaStream_t stream);
int pb_spans_cuda_end(pb_spans_cuda *s, cudaStream_t stream);
/* After the streams have completed: add the recorded spans' device time in
 * microseconds to *us and their number to *count (either may be NULL), then
 * forget them. An unended span is dropped. */
int pb_spans_cuda_take(pb_spans_cuda *s, double *us, int *count);
void pb_spans_cuda_free(pb_spans_cuda *s);

#endif
