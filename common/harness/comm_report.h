/* The communicators a workload holds per rank (backend/comm_count.h), in its
 * output: the design's count, checked against the maximum before anything
 * is created (pb_comm_count_fits) and stated in the metadata and above the
 * table; then, at the end, what the backends counted: created in all, most
 * live at once, live at the end, and the GPU memory NCCL took to set them up
 * (measured with cudaMemGetInfo on a GPU; elsewhere recorded as not
 * measured, never estimated). docs/gpu.md, "Communicators". */
#ifndef PB_COMM_REPORT_H
#define PB_COMM_REPORT_H

#include "backend/comm.h"
#include "core/report.h"
#include "core/world.h"

#include <cjson/cJSON.h>

/* The metadata entry "communicators": {per_rank, max_per_rank, lifetime}. */
cJSON *pb_comm_report_design(int per_rank, const char *lifetime);

/* Rank 0 (rep not NULL): the line above the table, "# communicators: N per
 * rank (why), lifetime; at most M a rank (PARABENCH_MAX_COMMS)". */
void pb_comm_report_line(const pb_report *rep, int per_rank, const char *why, const char *lifetime);

/* Collective over w: the counts, the maximum over ranks, into the metadata
 * "communicators_measured" and a line on rank 0. Returns a status. */
int pb_comm_report_measured(const pb_world *w, const pb_comm_backend *be, pb_report *rep);

#endif
