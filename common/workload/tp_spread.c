/* The TP groups that run at once, compared (tp.h, pb_tp_group_spread). */
#include "workload/tp.h"

#include "core/error.h"
#include "core/stats.h"
#include "core/world.h"

#include <stdlib.h>

int pb_tp_group_spread(const pb_world *w, int t, int stride, int ngroups, double mine_us, pb_tp_spread *out)
{
    double *us = w->rank == 0 ? malloc(sizeof(double) * (size_t)w->size) : NULL;
    int *group_of = w->rank == 0 ? malloc(sizeof(int) * (size_t)w->size) : NULL;
    int *ranks = w->rank == 0 ? malloc(sizeof(int) * (size_t)t) : NULL;
    int have = w->rank != 0 || (us && group_of && ranks);
    int status = pb_world_agree_at(w->comm, have ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory"), "TP group times");
    if (status == PB_OK) MPI_Gather(&mine_us, 1, MPI_DOUBLE, us, 1, MPI_DOUBLE, 0, w->comm);
    if (status == PB_OK && w->rank == 0 && have) {
        for (int k = 0, index; k < w->size; k++) pb_tp_group_of(w->size, t, stride, k, &group_of[k], &index);
        pb_stats_groups g;
        status = pb_stats_groups_of(us, group_of, w->size, ngroups, &g);
        out->slowest = g.slowest;
        out->slowest_us = g.slowest_us;
        out->median_us = g.median_us;
        pb_tp_group_ranks(w->size, t, stride, g.slowest, ranks);
        pb_world_hosts_text(w, ranks, t, out->hosts, sizeof out->hosts);
    }
    free(us);
    free(group_of);
    free(ranks);
    return pb_world_agree_at(w->comm, status, "TP group times");
}
