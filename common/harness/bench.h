/* The life of a benchmark binary, shared by all of them: start MPI, parse
 * options, select the backend, collect metadata, open the report on rank 0,
 * and finish with one exit status agreed by every rank. */
#ifndef PB_BENCH_H
#define PB_BENCH_H

#include "backend/comm.h"
#include "core/faults.h"
#include "core/load.h"
#include "harness/meta.h"
#include "core/options.h"
#include "core/report.h"
#include "core/world.h"

typedef struct pb_bench {
    const char *name;
    pb_world w;
    const pb_comm_backend *be;
    pb_meta_info info;
    cJSON *meta;    /* rank 0, until handed to the report */
    pb_report *rep; /* rank 0 only */
    int argc;
    char **argv;
    int validating; /* --validate: a fake world (pb_world_fake), no MPI; pb_bench_open exits 0 */
} pb_bench;

/* Start MPI and parse the options. Exits (through pb_bench_finish) on a usage
 * error or after --help, so a caller continues only with valid options.
 * With --validate N[:R] MPI is not started: b->w is a world of N ranks, R per
 * node (pb_world_fake), for the binary's own checks, and pb_bench_open exits 0
 * once they have passed. */
void pb_bench_start(pb_bench *b, const char *name, int *argc, char ***argv, int thread_level, const char *summary,
                    const pb_options_group *groups, int ngroups);

/* Select the backend (b->be) from --backend/--mem, once: for a benchmark
 * whose options or metadata depend on what the backend can do. Returns a
 * status agreed by all ranks. */
int pb_bench_select(pb_bench *b, const pb_options *o);

/* Under --validate: say the arguments were accepted and exit 0. Otherwise
 * select the backend (unless pb_bench_select did), collect metadata, print
 * the preamble and open the report (rank 0). `extra_meta` entries (may be
 * NULL) are merged into the metadata. Returns a status agreed by all ranks. */
int pb_bench_open(pb_bench *b, const pb_options *o, const pb_report_column *cols, int ncols, cJSON *extra_meta);

/* Where rank `rank`'s NCCL log goes: next to the run's output (the folder of
 * `out_file`, the --csv or --json file; the current folder when NULL), as
 * "nccl-<bench>-rank<rank>.log". Pure. */
void pb_bench_nccl_log_path(const char *out_file, const char *bench, int rank, char *buf, size_t len);

/* For the NCCL backend: NCCL_DEBUG_FILE (that path) and NCCL_DEBUG=WARN,
 * each only where the user has not set it, so that every rank's NCCL
 * diagnostics are kept (ranks other than 0 have no stdout). */
void pb_bench_nccl_log_env(const char *out_file, const char *bench, int rank);

/* pb_mem_require for this rank with the node's ranks sharing host memory,
 * agreed by all ranks: every binary's check before it allocates. */
int pb_bench_mem_require(pb_bench *b, const pb_mem_need *need, const char *what);

/* The footer of a run that checked its results, one text for every
 * benchmark: "wrong values: N OK" or "wrong values: N FAILED", then
 * " (detail)" when detail is not NULL. A NULL report (ranks other than 0)
 * does nothing. */
void pb_bench_note_wrong(pb_report *rep, long long wrong, const char *detail);

/* The node's load between START (pb_load_sample on every rank, before the
 * measurement) and now, on rank 0's report: a note "load: other processes
 * used X% of the busiest node's CPU time, steal Y%" that readers of the
 * results (scripts/reproduce.py) use to tell a busy machine from a figure
 * that differs. Collective: every rank calls it, with an agreed status. */
void pb_bench_note_load(pb_bench *b, const pb_load *start);

/* Close the report (complete when status is PB_OK), agree on the worst status
 * across ranks, finalize MPI and exit with it. */
_Noreturn void pb_bench_finish(pb_bench *b, int status);

#endif
