#include "harness/comm_report.h"

#include "backend/comm_count.h"
#include "core/error.h"

#include <stdio.h>

cJSON *pb_comm_report_design(int per_rank, const char *lifetime)
{
    int max = PB_COMM_COUNT_MAX;
    if (pb_comm_count_max(&max) != PB_OK) max = PB_COMM_COUNT_MAX; /* refused before this (pb_comm_count_fits) */
    cJSON *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "per_rank", per_rank);
    cJSON_AddNumberToObject(c, "max_per_rank", max);
    cJSON_AddStringToObject(c, "lifetime", lifetime);
    return c;
}

void pb_comm_report_line(const pb_report *rep, int per_rank, const char *why, const char *lifetime)
{
    int max = PB_COMM_COUNT_MAX;
    if (!rep || pb_comm_count_max(&max) != PB_OK) return;
    printf("# communicators: %d per rank (%s), %s; at most %d a rank (PARABENCH_MAX_COMMS)\n", per_rank, why,
           lifetime, max);
}

int pb_comm_report_measured(const pb_world *w, const pb_comm_backend *be, pb_report *rep)
{
    pb_comm_count n = pb_comm_count_get();
    long long v[5] = {n.created, n.peak, n.live, (long long)n.held_peak, n.held_measured};
    MPI_Allreduce(MPI_IN_PLACE, v, 5, MPI_LONG_LONG, MPI_MAX, w->comm);
    if (!rep) return PB_OK;
    cJSON *m = cJSON_CreateObject();
    cJSON_AddNumberToObject(m, "created", (double)v[0]);
    cJSON_AddNumberToObject(m, "peak_live", (double)v[1]);
    cJSON_AddNumberToObject(m, "live_at_end", (double)v[2]);
    char held[160];
    if (v[4]) {
        cJSON_AddNumberToObject(m, "nccl_setup_bytes", (double)v[3]);
        snprintf(held, sizeof held, "%.1f MiB at most a rank (free GPU memory before and after ncclCommInitRank)",
                 (double)v[3] / 1048576.0);
    } else {
        cJSON_AddNullToObject(m, "nccl_setup_bytes");
        if (be->one_gpu_per_rank) snprintf(held, sizeof held, "not measured (cudaMemGetInfo did not answer)");
        else snprintf(held, sizeof held, "not measured (backend %s: no GPU memory)", be->name);
    }
    cJSON_AddStringToObject(m, "nccl_setup_bytes_how", held);
    printf("# communicators: %lld created, at most %lld live at once, %lld live at the end, per rank; GPU memory "
           "NCCL took at set-up: %s\n", v[0], v[1], v[2], held);
    return pb_report_meta_add(rep, "communicators_measured", m);
}
