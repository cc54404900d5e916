/* Bringing a pipeline's per-stage numbers and timelines to rank 0: shared by
 * pp_pipeline and hybrid_3d, so both write the same trace format
 * (docs/pp_pipeline.md). */
#include "workload/pp.h"

#include "core/atomic.h"
#include "core/error.h"
#include "core/timing.h"

#include <stdlib.h>

#define TRACE_HEADER "schedule,stages,virtual_stages,micro_batches,replica,rank,stage,chunk,mb,event,start_us,end_us\n"

int pb_pp_trace_origin(MPI_Comm world, pb_pp_trace *t)
{
    /* Every rank reads its clock right after the same barrier: that instant is time 0. */
    MPI_Barrier(world);
    t->origin_us = pb_timing_now_us();
    return PB_OK;
}

FILE *pb_pp_trace_open(const char *path, char *tmp, size_t tmplen)
{
    FILE *f = pb_atomic_open(path, tmp, tmplen);
    if (f) fputs(TRACE_HEADER, f);
    return f;
}

int pb_pp_trace_close(FILE *f, const char *tmp, const char *path, int complete)
{
    if (!f) return PB_OK;
    if (complete) return pb_atomic_commit(f, tmp, path, !ferror(f));
    pb_atomic_commit(f, tmp, path, 0); /* a run that failed leaves the old trace and no temporary */
    return PB_OK;
}

/* Each rank's events with who recorded them, gathered on world rank 0. */
typedef struct wire_event {
    pb_pp_event e;
    int rank, stage, replica;
} wire_event;

int pb_pp_trace_gather(MPI_Comm world, const pb_pp_trace *t, int stage, int replica, const pb_pp_trace_label *lab,
                       FILE *f)
{
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    int n = t->n, bytes = n * (int)sizeof(wire_event);
    wire_event *mine = malloc(sizeof(wire_event) * (size_t)(n + 1));
    int *counts = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    int *displs = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    int have = mine && (rank != 0 || (counts && displs)), ok = have;
    for (int i = 0; have && i < n; i++) mine[i] = (wire_event){t->ev[i], rank, stage, replica};
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, world); /* all ranks go on, or none */
    if (!have || !ok) {
        free(mine), free(counts), free(displs);
        return pb_fail(PB_ERR_ENV, "trace: out of memory gathering %d events", n);
    }
    MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, world);
    wire_event *all = NULL;
    int total = 0;
    if (rank == 0) {
        for (int r = 0; r < size; r++) displs[r] = total, total += counts[r];
        all = malloc((size_t)total + 1);
    }
    /* rank 0 says whether it can receive: no Gatherv into a NULL buffer */
    int root_ok = rank != 0 || all;
    MPI_Bcast(&root_ok, 1, MPI_INT, 0, world);
    if (!root_ok) {
        MPI_Bcast(&total, 1, MPI_INT, 0, world); /* for the message: only rank 0 knows it */
        free(all), free(mine), free(counts), free(displs);
        return pb_fail(PB_ERR_ENV, "trace: rank 0 is out of memory for %d bytes of events", total);
    }
    MPI_Gatherv(mine, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, world);
    int status = PB_OK;
    if (rank == 0 && all && f) {
        int ne = total / (int)sizeof(wire_event);
        double t0 = ne ? all[0].e.start_us : 0; /* the configuration's timeline starts at 0 */
        for (int i = 1; i < ne; i++)
            if (all[i].e.start_us < t0) t0 = all[i].e.start_us;
        for (int i = 0; i < ne; i++) {
            const wire_event *w = &all[i];
            fprintf(f, "%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%.3f,%.3f\n", lab->schedule, lab->stages, lab->virtual_stages,
                    lab->micro_batches, w->replica, w->rank, w->stage, w->e.chunk, w->e.mb,
                    pb_pp_event_name((pb_pp_event_kind)w->e.kind), w->e.start_us - t0, w->e.end_us - t0);
        }
        if (fflush(f) != 0) status = pb_fail(PB_ERR_ENV, "--trace: write failed");
    }
    free(all), free(mine), free(counts), free(displs);
    return status;
}

int pb_pp_gather_stages(MPI_Comm world, int p, int stage, const double *mine, int nvals, double *per_stage)
{
    int rank, size;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    double *all = rank == 0 ? malloc(sizeof(double) * (size_t)(size * nvals)) : NULL;
    int *stages = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    int have = rank != 0 || (all && stages), ok = have;
    MPI_Bcast(&ok, 1, MPI_INT, 0, world); /* only rank 0 allocates: its word is everyone's */
    if (!have || !ok) {
        free(all), free(stages);
        return pb_fail(PB_ERR_ENV, "pipeline: out of memory gathering stage numbers");
    }
    MPI_Gather(mine, nvals, MPI_DOUBLE, all, nvals, MPI_DOUBLE, 0, world);
    MPI_Gather(&stage, 1, MPI_INT, stages, 1, MPI_INT, 0, world);
    if (rank == 0) {
        /* Over the replicas of a stage keep the worst: the slowest pipeline sets the step. */
        for (int i = 0; i < p * nvals; i++) per_stage[i] = 0;
        for (int r = 0; r < size; r++)
            for (int j = 0; j < nvals; j++) {
                double *d = &per_stage[stages[r] * nvals + j];
                if (all[r * nvals + j] > *d) *d = all[r * nvals + j];
            }
    }
    free(all), free(stages);
    return PB_OK;
}
