/* Pipeline schedules as pure data: for one stage (rank) of a p-stage pipeline
 * running m micro-batches, the ordered list of compute actions (forward or
 * backward of micro-batch k on virtual chunk c) and the point-to-point
 * transfers each implies. No MPI and no compute here, so the schedules are
 * unit-tested on their own; common/workload/pp.h executes them.
 *
 *   gpipe       all m forwards, then all m backwards (Huang et al. 2019)
 *   1f1b        p-stage-1 warm-up forwards, then one forward / one backward,
 *               then the cool-down backwards (Narayanan et al. 2021, PipeDream-flush)
 *   interleaved 1F1B over v virtual chunks per rank: rank r holds chunks
 *               r, r+p, ..., r+(v-1)p of a v*p-chunk model; needs m % p == 0
 *               (Megatron-LM's interleaved schedule)
 *
 * Transfers: a forward receives its input from the previous virtual stage and
 * sends its output to the next; a backward receives the output gradient from
 * the next and sends the input gradient to the previous. Between two ranks
 * messages of one kind are matched in posting order, so pb_pp_schedule_check verifies
 * that every sender's order equals its receiver's order. */
#ifndef PB_PP_SCHEDULE_H
#define PB_PP_SCHEDULE_H

#include "plan/pp_sched.h"

typedef enum { PB_PP_FWD, PB_PP_BWD } pb_pp_schedule_op;

typedef struct pb_pp_schedule_action {
    pb_pp_schedule_op op;
    int mb;        /* micro-batch 0..m-1 */
    int chunk;     /* virtual chunk on this rank, 0..v-1 (0 unless interleaved) */
    int vstage;    /* global virtual stage: chunk * p + stage */
    int recv_from; /* pipeline rank the input comes from (activation or gradient), -1: none */
    int send_to;   /* pipeline rank the output goes to, -1: none */
} pb_pp_schedule_action;

typedef struct pb_pp_schedule_plan {
    pb_pp_sched sched;
    int p, m, v, stage;
    int n;              /* 2 * m * v actions */
    pb_pp_schedule_action *a;
} pb_pp_schedule_plan;

/* Whether (s, p, m, v) can be scheduled; PB_ERR_USAGE naming the option
 * (--stages, --micro-batches, --virtual-stages) with the reason otherwise. */
int pb_pp_schedule_valid(pb_pp_sched s, int p, int m, int v);

/* Build stage `stage`'s actions. v is forced to 1 unless interleaved. */
int pb_pp_schedule_plan_build(pb_pp_sched s, int p, int m, int v, int stage, pb_pp_schedule_plan *out);
void pb_pp_schedule_plan_free(pb_pp_schedule_plan *plan);

/* Most micro-batch chunks whose forward is done and backward not yet: what
 * the stage must hold activations for (gpipe m, 1f1b min(m, p - stage)). */
int pb_pp_schedule_plan_max_in_flight(const pb_pp_schedule_plan *plan);

/* Consistency of all p plans together: every message sent is received, in
 * the same order on each link, and the schedule cannot deadlock with
 * non-blocking sends and in-order receives. PB_OK or PB_ERR_CHECK. */
int pb_pp_schedule_check(const pb_pp_schedule_plan *plans, int p);

/* Discrete-event simulation of all p plans with fixed per-chunk forward and
 * backward times and a per-message transfer time: the step time and each
 * stage's busy time (array of p, may be NULL). PB_ERR_CHECK on deadlock. */
int pb_pp_schedule_simulate(const pb_pp_schedule_plan *plans, int p, double t_fwd, double t_bwd, double t_msg, double *step,
                   double *busy);

#endif
