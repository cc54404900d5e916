/* How a compute engine and a backend order their work, and how each side's
 * time is measured (docs/gpu.md "Streams"):
 *
 *  host   - each side's work is complete before the other side starts on it:
 *           the engine synchronizes before a communicator reads its buffer,
 *           the backend syncs before the engine reads a result. Times come
 *           from the host clock around work + completion. Always correct;
 *           the MPI backends and the BLAS engine need it.
 *  stream - a stream-ordered backend (NCCL) and a queued engine (cuBLAS) on
 *           the same device: CUDA events make the communication stream wait
 *           for the compute stream and the reverse, so the host only queues
 *           work and never blocks between a GEMM and the collective that
 *           reads its output (as Megatron and PyTorch DDP run). Each side's
 *           time comes from event spans on its own stream.
 *
 * pb_ordering_plan picks stream whenever the pair supports it; everything else
 * here does the right thing for the mode it is given. */
#ifndef PB_ORDERING_H
#define PB_ORDERING_H

#include "backend/comm.h"
#include "compute/compute.h"

typedef enum { PB_ORDERING_HOST, PB_ORDERING_STREAM } pb_ordering;

const char *pb_ordering_name(pb_ordering o); /* "host", "stream" */

/* stream when the engine has a queue, the backend the queue and span hooks,
 * and both work in device memory; host otherwise. */
pb_ordering pb_ordering_plan(const pb_compute *eng, const pb_comm_backend *be);

/* Traffic issued on c after this call reads what the engine has queued so far. */
int pb_ordering_comm_after_compute(pb_ordering o, const pb_compute *eng, const pb_comm_backend *be, pb_comm *c);
/* Engine work queued after this call sees the traffic issued on c so far
 * complete. */
int pb_ordering_compute_after_comm(pb_ordering o, const pb_compute *eng, const pb_comm_backend *be, pb_comm *c);

/* One side's busy time in either mode. Host: `begin` reads the clock and
 * `end` completes the side's work (engine synchronize or backend sync) and
 * adds the elapsed time. Stream: begin/end record an event span on the
 * side's stream, and pb_ordering_side_timer_take adds the device time once the
 * streams have completed. comm == NULL times the engine. */
typedef struct pb_ordering_side_timer {
    pb_ordering order;
    const pb_compute *eng;
    const pb_comm_backend *be;
    pb_comm *comm;
    double t0;       /* host mode: clock at begin */
    double total_us; /* time taken so far */
    int spans;       /* intervals taken so far */
} pb_ordering_side_timer;

void pb_ordering_side_timer_init(pb_ordering_side_timer *t, pb_ordering o, const pb_compute *eng, const pb_comm_backend *be, pb_comm *comm);
int pb_ordering_side_timer_begin(pb_ordering_side_timer *t);
int pb_ordering_side_timer_end(pb_ordering_side_timer *t);
/* Stream mode: collect the device time of the ended spans (the work must be
 * complete: after a backend sync or engine synchronize). Host mode: nothing
 * to do. */
int pb_ordering_side_timer_take(pb_ordering_side_timer *t);

#endif
