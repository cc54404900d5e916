#include "workload/ordering.h"

#include "core/error.h"
#include "core/timing.h"

#include <string.h>

const char *pb_ordering_name(pb_ordering o) { return o == PB_ORDERING_STREAM ? "stream" : "host"; }

pb_ordering pb_ordering_plan(const pb_compute *eng, const pb_comm_backend *be)
{
    int engine_queued = eng->queue && eng->span_begin && eng->span_end && eng->span_take;
    int backend_streamed = be->after_queue && be->before_queue && be->span_begin && be->span_end && be->span_take;
    int device_backend = be->mem == PB_MEM_DEVICE;
    return engine_queued && backend_streamed && device_backend ? PB_ORDERING_STREAM : PB_ORDERING_HOST;
}

int pb_ordering_comm_after_compute(pb_ordering o, const pb_compute *eng, const pb_comm_backend *be, pb_comm *c)
{
    if (o == PB_ORDERING_STREAM) return be->after_queue(c, eng->queue());
    return eng->synchronize();
}

int pb_ordering_compute_after_comm(pb_ordering o, const pb_compute *eng, const pb_comm_backend *be, pb_comm *c)
{
    if (o == PB_ORDERING_STREAM) return be->before_queue(c, eng->queue());
    return be->sync(c);
}

void pb_ordering_side_timer_init(pb_ordering_side_timer *t, pb_ordering o, const pb_compute *eng, const pb_comm_backend *be, pb_comm *comm)
{
    *t = (pb_ordering_side_timer){.order = o, .eng = eng, .be = be, .comm = comm};
}

int pb_ordering_side_timer_begin(pb_ordering_side_timer *t)
{
    if (t->order == PB_ORDERING_STREAM) return t->comm ? t->be->span_begin(t->comm) : t->eng->span_begin();
    t->t0 = pb_timing_now_us();
    return PB_OK;
}

int pb_ordering_side_timer_end(pb_ordering_side_timer *t)
{
    if (t->order == PB_ORDERING_STREAM) return t->comm ? t->be->span_end(t->comm) : t->eng->span_end();
    int status = t->comm ? t->be->sync(t->comm) : t->eng->synchronize();
    t->total_us += pb_timing_now_us() - t->t0;
    t->spans++;
    return status;
}

int pb_ordering_side_timer_take(pb_ordering_side_timer *t)
{
    if (t->order != PB_ORDERING_STREAM) return PB_OK;
    return t->comm ? t->be->span_take(t->comm, &t->total_us, &t->spans) : t->eng->span_take(&t->total_us, &t->spans);
}
