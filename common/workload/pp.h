/* Pipeline executor: runs one step of a schedule (pp_schedule.h) on one
 * stage, moving activations forward and their gradients backward by backend
 * send/recv (comm.h) on the pipeline's communicators. What a stage computes
 * is not known here: it comes through callbacks (pb_pp_ops), so the same
 * executor runs plain layer stacks (pb_pp_stack below, pp_pipeline) and
 * tensor-parallel stages (hybrid_3d, whose callbacks talk to their TP group).
 *
 * Transfers. Every receive is posted as early as its buffer allows (one
 * outstanding per direction, double-buffered) and waited for when the
 * compute needs it: that wait is the stage's p2p wait. Every send is posted
 * right after the compute that produced it and is completed only at the end
 * of the step (also counted as p2p wait), so no compute blocks on a send.
 * sync() completes everything on a communicator, so each kind of transfer
 * gets its own: links i -> i+1 are coloured so that a stage's sends and its
 * receives of one kind never share a communicator (2 colours; 3 on an
 * odd-length ring). Messages on a link match in posting order, which
 * pb_pp_schedule_check guarantees for the built-in schedules.
 *
 * Buffers are the backend's memory (be->alloc), act_count elements of
 * act_dtype each; the callbacks read and write them through their engine,
 * which must use the same memory (BLAS with MPI, cuBLAS with NCCL). */
#ifndef PB_PP_H
#define PB_PP_H

#include "backend/comm.h"
#include "compute/compute.h"
#include "compute/layer.h"
#include "core/world.h"
#include "workload/pp_schedule.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

/* ---- stage callbacks ---------------------------------------------------- */

typedef struct pb_pp_ops {
    /* Called once at the start of each step (reset peaks, gradient accumulation). */
    int (*begin_step)(void *user);
    /* Hold / release micro-batch mb's saved activations of chunk `chunk`
     * (before its forward, after its backward). */
    int (*act_alloc)(void *user, int chunk, int mb);
    void (*act_free)(void *user, int chunk, int mb);
    /* in -> out through this rank's layers of `chunk`; must return with the
     * result complete (engine synchronised), since it is timed and then sent. */
    int (*forward)(void *user, int chunk, int mb, const void *in, void *out);
    /* dout -> din, accumulating the weight gradients. din may be NULL on the
     * first virtual stage only if the callee wants; the executor passes a buffer. */
    int (*backward)(void *user, int chunk, int mb, const void *dout, void *din);
    /* First virtual stage: the input of micro-batch mb. Last: dLoss/dOutput. */
    int (*input)(void *user, int mb, void *x);
    int (*loss_grad)(void *user, int mb, void *dy);
    /* Measured peak bytes of saved activations since begin_step. */
    uint64_t (*act_peak)(void *user);
} pb_pp_ops;

/* ---- trace -------------------------------------------------------------- */

typedef enum {
    PB_PP_EV_FWD, PB_PP_EV_BWD,           /* compute */
    PB_PP_EV_RECV_ACT, PB_PP_EV_RECV_GRAD, /* waiting for a receive to complete */
    PB_PP_EV_SEND_ACT, PB_PP_EV_SEND_GRAD, /* posting a send */
    PB_PP_EV_SEND_WAIT,                    /* end of step: completing the sends (mb -1) */
    PB_PP_EV_COUNT
} pb_pp_event_kind;

const char *pb_pp_event_name(pb_pp_event_kind k); /* "fwd", "bwd", "recv_act", ... */

typedef struct pb_pp_event {
    int kind, chunk, mb;
    double start_us, end_us; /* relative to the trace's origin */
} pb_pp_event;

typedef struct pb_pp_trace {
    double origin_us;  /* pb_timing_now_us() value that becomes time 0 */
    pb_pp_event *ev;
    int n, cap;
} pb_pp_trace;

void pb_pp_trace_clear(pb_pp_trace *t);
void pb_pp_trace_free(pb_pp_trace *t);

/* Common time origin: a barrier on `world`, then every rank reads its clock. */
int pb_pp_trace_origin(MPI_Comm world, pb_pp_trace *t);

/* Trace file (rank 0): written to "<path>.tmp" (tmp, filled in) and renamed
 * on a complete close. Format: docs/pp_pipeline.md. */
FILE *pb_pp_trace_open(const char *path, char *tmp, size_t tmplen);
int pb_pp_trace_close(FILE *f, const char *tmp, const char *path, int complete);

/* What identifies a configuration's lines in the trace. */
typedef struct pb_pp_trace_label {
    const char *schedule;
    int stages, virtual_stages, micro_batches;
} pb_pp_trace_label;

/* Collective over `world`: gather every rank's events to rank 0 and append
 * them to f (rank 0), shifted so the configuration's first event starts at 0. */
int pb_pp_trace_gather(MPI_Comm world, const pb_pp_trace *t, int stage, int replica, const pb_pp_trace_label *lab,
                       FILE *f);

/* Collective over `world`: each rank gives nvals numbers of its stage; rank 0
 * gets per_stage[p * nvals], each the max over the replicas of that stage. */
int pb_pp_gather_stages(MPI_Comm world, int p, int stage, const double *mine, int nvals, double *per_stage);

/* ---- executor ----------------------------------------------------------- */

typedef struct pb_pp_stats {
    double step_us;            /* wall time of the step on this stage */
    double fwd_us, bwd_us;     /* busy compute time, summed over the step */
    double wait_us;            /* receive waits + completing the sends */
    double post_us;            /* time spent posting sends and receives */
    int nfwd, nbwd;            /* compute actions run (m * v each) */
    uint64_t bytes_sent, bytes_recv;
    uint64_t peak_act_bytes;   /* ops->act_peak after the step */
} pb_pp_stats;

typedef struct pb_pp_config {
    const pb_comm_backend *be;
    MPI_Comm group;      /* the pipeline's ranks; rank in group = stage */
    size_t act_count;    /* elements of one activation (b*s*h) */
    pb_dtype act_dtype;
    int ring;            /* 1 if the last stage sends to the first (interleaved) */
    int max_sends;       /* sends of one kind a step may post: m * v of the largest m */
} pb_pp_config;

typedef struct pb_pp_exec pb_pp_exec;

/* Collective over cfg->group: communicators and buffers. */
int pb_pp_exec_create(const pb_pp_config *cfg, pb_pp_exec **out);
void pb_pp_exec_destroy(pb_pp_exec *ex);
/* Backend memory the executor allocates for a configuration (pb_mem_require). */
uint64_t pb_pp_exec_bytes(const pb_pp_config *cfg);
/* Each link (stage i -> i+1, and p-1 -> 0 on a ring) gets a communicator
 * colour, neighbouring links different ones, so that the two links of a stage
 * never share a communicator (NCCL orders a communicator's operations).
 * pb_pp_link_colors: how many colours p stages need (3 for an odd ring). */
int pb_pp_link_colors(int p, int ring);
int pb_pp_link_color(int link, int p, int ncolors);
/* Communicators an executor of p stages creates on every rank, once for all
 * the steps it runs: activations and gradients, one per colour some link has
 * (4; 6 on an odd ring; 2 for two stages without a ring; none for one stage). */
int pb_pp_exec_comms(int p, int ring);

/* Run `plan` (this stage's actions) once. `trace` may be NULL; events are
 * appended to it. Returns a status; stats are this stage's. */
int pb_pp_exec_step(pb_pp_exec *ex, const pb_pp_schedule_plan *plan, const pb_pp_ops *ops, void *user, pb_pp_stats *stats,
                    pb_pp_trace *trace);

/* ---- default stage: a pb_layer_stack per chunk (no tensor parallelism) -------- */

typedef struct pb_pp_stack_config {
    const pb_compute *eng;
    pb_layer_shape shape; /* tp_size 1 */
    int64_t layers;       /* L of the whole model; p * v must divide it */
    int p, v, stage;
    uint64_t seed;
    pb_dtype grad_dtype;
    int max_mb;           /* largest m a step will run */
    int capture;          /* keep host copies of what each chunk receives and sends (validation) */
} pb_pp_stack_config;

typedef struct pb_pp_stack pb_pp_stack;

/* Chunk c of stage s holds layers [(c*p + s) * L/(p*v), ...) of the L-layer model. */
int64_t pb_pp_chunk_layer0(const pb_pp_stack_config *cfg, int chunk);
/* Engine memory: weights, gradients and scratch of the chunks, plus `in_flight`
 * micro-batch chunks of saved activations. */
uint64_t pb_pp_stack_bytes(const pb_pp_stack_config *cfg, int in_flight);
/* Host memory of the capture copies (cfg.capture; else 0): 4 tensors a chunk
 * and micro-batch. */
uint64_t pb_pp_stack_capture_bytes(const pb_pp_stack_config *cfg);

int pb_pp_stack_create(const pb_pp_stack_config *cfg, pb_pp_stack **out);
void pb_pp_stack_destroy(pb_pp_stack *st);
const pb_pp_ops *pb_pp_stack_ops(void);
/* The effective activation type (what the engine computes in). */
pb_dtype pb_pp_stack_dtype(const pb_pp_stack *st);
/* What a chunk's forward received (IN) and sent (OUT), and its backward
 * received (DOUT) and sent (DIN), for one micro-batch. */
typedef enum pb_pp_captured { PB_PP_IN, PB_PP_OUT, PB_PP_DOUT, PB_PP_DIN, PB_PP_CAPTURED } pb_pp_captured;
/* With capture: the host copy of `which` of chunk `chunk`, micro-batch mb, from
 * the last step run capturing; NULL without capture or out of range. */
const void *pb_pp_stack_captured(const pb_pp_stack *st, int chunk, int mb, pb_pp_captured which);
/* Bytes of one activation tensor (b x s x h of the effective type). */
size_t pb_pp_stack_act_bytes(const pb_pp_stack *st);
/* Engine memory of chunk c's weight gradients, and their size (every chunk). */
const void *pb_pp_stack_chunk_grads(pb_pp_stack *st, int chunk);
uint64_t pb_pp_stack_chunk_grad_bytes(const pb_pp_stack_config *cfg);
/* Host bytes of one piece of weight gradients as validation (pb_pp_validate_step)
 * compares them: a chunk's, at most 16 MiB, so the host buffers stay small
 * whatever the model. */
uint64_t pb_pp_stack_grad_piece_bytes(const pb_pp_stack_config *cfg);
/* Copy every chunk's tensors to the capture buffers during the next steps
 * (only with cfg.capture; off by default, so timed steps do not copy).
 * corrupt_received (test-only fault): micro-batch 0's activation received by
 * chunk 0 and gradient received by the last chunk are each altered by one
 * element before the stage computes on them. */
void pb_pp_stack_set_capture(pb_pp_stack *st, int on, int corrupt_received);
/* Seeds of the two generated tensors, shared with a reference run. */
int pb_pp_fill_input(const pb_compute *eng, pb_dtype t, void *x, int64_t tokens, int64_t h, uint64_t seed, int mb);
int pb_pp_fill_loss_grad(const pb_compute *eng, pb_dtype t, void *dy, int64_t tokens, int64_t h, uint64_t seed,
                         int mb);


/* ---- validation (-c) ------------------------------------------------------ */

/* Engine bytes of pb_pp_validate_step's reference on each stage: one chunk's
 * layers as a stack of their own, one micro-batch's activations under
 * recomputation rc, 4 tensors. */
uint64_t pb_pp_reference_bytes(const pb_pp_stack_config *cfg, pb_layer_recompute rc);
/* Host bytes of the check on each stage: the stage's captures
 * (pb_pp_stack_capture_bytes with capture on), 2 tensors and 2 gradient pieces. */
uint64_t pb_pp_check_host_bytes(const pb_pp_stack_config *cfg);
/* One validated step on the pipeline `pipe` (rank = stage), chunk by chunk:
 * a step with capture on, then each stage runs each of its chunks' layers
 * again as a stack of their own (the same seeds; the layers the chunk's place
 * in the model holds) on the inputs and upstream gradients the chunk received,
 * and compares (|a-b| <= tol (1 + |b|)) every micro-batch's output and input
 * gradient, and the weight gradients summed over the step's micro-batches.
 * The links are compared exactly, by hashes gathered over the pipeline: what
 * each chunk received against what its neighbour sent, the first chunk's
 * inputs against the seeded inputs, the last chunk's upstream gradients
 * against the seeded loss gradients (a link that differs counts 1). Together
 * that is the whole model's check, in one chunk's memory.
 * The wrong counts are summed over w. corrupt != 0 (test-only fault) makes one
 * wrong value in each of the five checks on this stage: an output and an
 * input gradient (compared copies), a weight gradient piece, and the two
 * received tensors of pb_pp_stack_set_capture. Every rank of w calls it; the
 * ranks agree after the step, before the gather and at the end. */
int pb_pp_validate_step(const pb_world *w, MPI_Comm pipe, pb_pp_exec *ex, const pb_pp_schedule_plan *plan,
                        pb_pp_stack *st, const pb_pp_stack_config *cfg, pb_layer_recompute ref_rc, int m, int corrupt,
                        long long *wrong);

#endif
