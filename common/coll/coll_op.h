/* One collective as a sweep runs it, over a group of ranks: the buffers of
 * each iteration (rotating slots, --in-place, broadcast's one buffer), issuing
 * it, replaying a CUDA graph of it, its device time and its validation.
 * coll_sweep keeps the options, the set-up, the loop over sizes and the rows. */
#ifndef PB_COLL_OP_H
#define PB_COLL_OP_H

#include "backend/buffers.h"
#include "coll/coll_exec.h"

typedef struct pb_coll_op {
    const pb_comm_backend *be;
    pb_comm *comm;       /* the backend communicator over the group */
    MPI_Comm group;      /* the same ranks, for the sums over them */
    pb_coll coll;
    pb_coll_exec_shape shape; /* this size's (pb_coll_exec_shape_of) */
    pb_buffers send, recv;
    pb_dtype dtype;
    pb_dtype_redop op;
    int root;
    double skew;  /* alltoallv's --skew F (coll_skew.h) */
    int in_place; /* send and receive inside one buffer (pb_coll_exec_in_place) */
    int graph;    /* replay the graph pb_coll_op_capture recorded instead of issuing */
    int skip;     /* test-only: this rank does nothing, its peers wait (PARABENCH_TEST_SKIP) */
    int slow;     /* test-only: each wait sleeps PB_FAULTS_SLOW_US longer (PARABENCH_TEST_SLOW) */
} pb_coll_op;

/* The send and receive pointers of iteration `iter`: the slots of the
 * rotation; recv = send for a broadcast on a backend whose broadcast has one
 * buffer; with in_place both inside the larger of the two slots. */
void pb_coll_op_slots(const pb_coll_op *x, int iter, void **send, void **recv);

/* Issue iteration `iter` (completion needs be->sync). */
int pb_coll_op_issue(pb_coll_op *x, int iter);

/* One timed iteration, a pb_runner_time_loop callback (arg: a pb_coll_op):
 * issue (or replay) and wait for completion. */
int pb_coll_op_iteration(void *arg, int iter);

/* The same in two halves, for a whole loop of back-to-back iterations
 * (pb_runner_op, arg: a pb_coll_op): issue (or replay) without waiting, and
 * wait for everything issued (the backend's sync). */
int pb_coll_op_start(void *arg, int iter);
int pb_coll_op_wait(void *arg);

/* Record this size's operation on slot 0 (a graph keeps its pointers) into
 * the communicator's graph; nothing runs. */
int pb_coll_op_capture(pb_coll_op *x);

/* Mean over the group of the device time per operation of a batch of n
 * back-to-back operations (pb_coll_exec_device_time); NaN where the backend
 * has no CUDA-event spans. Collective over the group. */
int pb_coll_op_device_time(pb_coll_op *x, int n, double *mean_us);

/* Run the operation once on known inputs and sum the wrong elements over the
 * group; on the device when the buffers are there (coll_check.h). Collective
 * over the group. */
int pb_coll_op_validate(pb_coll_op *x, long long *wrong_total);

#endif
