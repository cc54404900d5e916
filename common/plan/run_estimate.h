/* An upper bound on how long run_all.sh takes, before anything runs
 * (run_all.sh --dry-run, through tools/run_estimate): per step, the launch
 * overhead plus what caps the step's measurements, never more than the
 * step's wall-clock limit.
 *  - sweeps: --max-seconds-per-size (warm-up included) x sizes x collectives
 *    (or modes): every size at its cap;
 *  - the all-pairs matrix: its rounds (the concurrent schedule of
 *    coll/p2p_schedule.h on the nodes given) x 2 sizes x the cap;
 *  - workloads (dp, tp, pp, hybrid), which have no per-size cap: the limit;
 *  - tools and the report: a fixed allowance.
 * Real runs are usually much shorter: a size stops at its iteration count
 * long before its cap unless messages are large or links slow. */
#ifndef PB_RUN_ESTIMATE_H
#define PB_RUN_ESTIMATE_H

#include <stdint.h>

typedef struct pb_run_estimate_sweep {
    uint64_t minbytes, maxbytes; /* -b, -e */
    uint64_t factor;             /* -f (>= 2) */
    double cap_s;                /* --max-seconds-per-size */
} pb_run_estimate_sweep;

typedef struct pb_run_estimate_in {
    int nranks, ranks_per_node; /* ranks placed by blocks of ranks_per_node on each node */
    double step_limit_s;        /* run_all.sh's per-step wall-clock limit */
    double launch_s;            /* per launched step: launcher start, MPI_Init, MPI_Finalize */
    double tool_s;              /* per step of a tool or the report */
    int ncolls;                 /* collectives in --coll all */
    pb_run_estimate_sweep coll, p2p;
    double matrix_cap_s;        /* the matrix step's --max-seconds-per-size */
    int hybrid;                 /* hybrid_3d runs (world size a multiple of 4) */
    int acceptance;             /* --acceptance given */
    int reproduce;              /* --reproduce given: its all-reduce sweep, 3 workloads and 2 scripts */
} pb_run_estimate_in;

typedef struct pb_run_estimate_step {
    const char *name;
    double seconds;  /* 0 for a step that is skipped */
    char why[160];   /* what bounds it, or why it is skipped */
} pb_run_estimate_step;

#define PB_RUN_ESTIMATE_MAX_STEPS 20

/* Sizes from -b to -e by -f: minbytes, minbytes * factor, ... <= maxbytes. */
int pb_run_estimate_sizes(const pb_run_estimate_sweep *s);

/* Rounds of the concurrent all-pairs schedule for nranks ranks in blocks of
 * ranks_per_node (the schedule p2p_sweep --matrix runs); -1 out of memory. */
int pb_run_estimate_matrix_rounds(int nranks, int ranks_per_node);

/* The default launch overhead: 2 s, plus 0.05 s per node the launcher
 * reaches (an assumption, not a measurement). */
double pb_run_estimate_launch_default(int nranks, int ranks_per_node);

/* Fill out[] with run_all.sh's steps in order; returns how many, or -1 when
 * the schedule cannot be built (out of memory). *total gets the sum. */
int pb_run_estimate_steps(const pb_run_estimate_in *in, pb_run_estimate_step out[PB_RUN_ESTIMATE_MAX_STEPS], double *total);

#endif
