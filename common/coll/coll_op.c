#include "coll/coll_op.h"

#include "coll/coll_check.h"
#include "core/error.h"
#include "core/faults.h"
#include "core/watchdog.h"

#include <math.h>
#include <time.h>

void pb_coll_op_slots(const pb_coll_op *x, int iter, void **send, void **recv)
{
    const pb_coll_desc *d = pb_coll_desc_of(x->coll);
    *send = pb_buffers_slot(&x->send, iter);
    *recv = d->one_buffer_broadcast && x->be->broadcast_in_place ? *send : pb_buffers_slot(&x->recv, iter);
    if (!x->in_place) return;
    void *buf = x->shape.recv_count >= x->shape.send_count ? *recv : *send;
    (void)pb_coll_exec_in_place("--in-place", x->coll, &x->shape, x->dtype, x->be->rank(x->comm), buf, send, recv);
}

int pb_coll_op_issue(pb_coll_op *x, int iter)
{
    void *send, *recv;
    pb_coll_op_slots(x, iter, &send, &recv);
    return pb_coll_exec_issue(x->be, x->comm, x->coll, &x->shape, send, recv, x->dtype, x->op, x->root);
}

int pb_coll_op_start(void *arg, int iter)
{
    pb_coll_op *x = arg;
    if (x->skip) return PB_OK;
    return x->graph ? x->be->replay(x->comm) : pb_coll_op_issue(x, iter);
}

int pb_coll_op_wait(void *arg)
{
    pb_coll_op *x = arg;
    if (x->slow) nanosleep(&(struct timespec){0, PB_FAULTS_SLOW_US * 1000L}, NULL);
    return x->skip ? PB_OK : x->be->sync(x->comm);
}

int pb_coll_op_iteration(void *arg, int iter)
{
    PB_TRY(pb_coll_op_start(arg, iter));
    return pb_coll_op_wait(arg);
}

int pb_coll_op_capture(pb_coll_op *x)
{
    if (x->skip) return PB_OK;
    PB_TRY(x->be->capture_begin(x->comm));
    int status = pb_coll_op_issue(x, 0);
    int end = x->be->capture_end(x->comm); /* always: the stream must leave capture mode */
    return status != PB_OK ? status : end;
}

int pb_coll_op_device_time(pb_coll_op *x, int n, double *mean_us)
{
    double mine = NAN;
    int status = PB_OK, size = 1;
    if (x->be->span_begin && !x->skip) {
        pb_watchdog_arm(0, "devtime batch");
        status = pb_coll_exec_device_time(x->be, x->comm, n, pb_coll_op_start, x, &mine);
        pb_watchdog_disarm();
    }
    MPI_Allreduce(&mine, mean_us, 1, MPI_DOUBLE, MPI_SUM, x->group);
    MPI_Comm_size(x->group, &size);
    *mean_us /= size;
    return status;
}

int pb_coll_op_validate(pb_coll_op *x, long long *wrong_total)
{
    int n = x->be->size(x->comm), me = x->be->rank(x->comm);
    void *send, *recv;
    pb_coll_op_slots(x, 0, &send, &recv);
    int status = pb_coll_check_fill(x->be, x->coll, &x->shape, x->dtype, me, n, send);
    pb_watchdog_arm(0, "validate");
    int skip = pb_faults_skip_validate_rank() == me; /* test only: the group's others then wait here */
    if (status == PB_OK && !skip) status = pb_coll_op_iteration(x, 0);
    pb_watchdog_disarm();
    long long wrong = 0;
    if (status == PB_OK)
        status = pb_coll_check_count(x->be, x->coll, &x->shape, x->dtype, x->op, me, n, x->root,
                                     pb_faults_corrupt_rank() == me, recv, &wrong);
    MPI_Allreduce(&wrong, wrong_total, 1, MPI_LONG_LONG, MPI_SUM, x->group);
    return status;
}
