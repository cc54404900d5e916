#include "core/group.h"

#include "core/error.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const names[PB_GROUPS_KINDS + 1] = {"world", "node", "rail", NULL};

const char *const *pb_group_groups_names(void) { return names; }

int pb_group_split(const pb_world *w, pb_group_groups_kind kind, pb_group *g)
{
    *g = (pb_group){.kind = kind, .comm = MPI_COMM_NULL};
    int color = kind == PB_GROUPS_NODE ? w->node : kind == PB_GROUPS_RAIL ? w->local_rank : 0;
    int status = MPI_Comm_split(w->comm, color, w->rank, &g->comm) == MPI_SUCCESS ? PB_OK : PB_ERR_ENV;
    if (status == PB_OK) {
        MPI_Comm_rank(g->comm, &g->rank);
        MPI_Comm_size(g->comm, &g->size);
        g->members = malloc(sizeof(int) * (size_t)g->size);
    }
    if (status == PB_OK && !g->members) status = pb_fail(PB_ERR_ENV, "out of memory for %d group members", g->size);
    status = pb_world_agree(w, status);
    if (status != PB_OK || !g->members) return status != PB_OK ? status : PB_ERR_ENV;
    MPI_Allgather(&w->rank, 1, MPI_INT, g->members, 1, MPI_INT, g->comm);
    /* Number the groups by their lowest world rank: leaders are members[0]. */
    int leader = g->members[0], is_leader = g->rank == 0;
    int *leaders = malloc(sizeof(int) * (size_t)w->size);
    status = pb_world_agree(w, leaders ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory for %d ranks", w->size));
    if (status != PB_OK || !leaders) {
        free(leaders);
        return status != PB_OK ? status : PB_ERR_ENV;
    }
    MPI_Allgather(&is_leader, 1, MPI_INT, leaders, 1, MPI_INT, w->comm);
    g->count = 0;
    for (int r = 0; r < w->size; r++) {
        if (!leaders[r]) continue;
        if (r == leader) g->index = g->count;
        leaders[g->count++] = r; /* compacted in place: count <= r */
    }
    g->leaders = leaders;
    if (kind == PB_GROUPS_WORLD) snprintf(g->name, sizeof g->name, "world");
    else snprintf(g->name, sizeof g->name, "%s%d", names[kind], kind == PB_GROUPS_NODE ? w->node : w->local_rank);
    g->link = pb_link_name(pb_world_link(w, g->members, g->size));
    return PB_OK;
}

void pb_group_free(pb_group *g)
{
    if (g->comm != MPI_COMM_NULL) MPI_Comm_free(&g->comm);
    free(g->members);
    free(g->leaders);
    g->members = g->leaders = NULL;
}

int pb_group_gather_leaders(const pb_world *w, const pb_group *g, const void *mine, size_t bytes, void *all)
{
    PB_CHECK(bytes <= INT_MAX / (size_t)(g->count > 0 ? g->count : 1), PB_ERR_USAGE,
             "%zu bytes from each of %d groups do not fit one gather", bytes, g->count);
    int *counts = w->rank == 0 ? calloc((size_t)w->size * 2, sizeof(int)) : NULL;
    int status = pb_world_agree(w, w->rank != 0 || counts ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory for %d ranks",
                                                                            w->size));
    if (status != PB_OK) {
        free(counts);
        return status;
    }
    int *displs = counts ? counts + w->size : NULL;
    for (int k = 0; counts && k < g->count; k++) { /* only the leaders send, each into its group's place */
        counts[g->leaders[k]] = (int)bytes;
        displs[g->leaders[k]] = k * (int)bytes;
    }
    int sent = g->rank == 0 ? (int)bytes : 0;
    int rc = MPI_Gatherv(mine, sent, MPI_BYTE, all, counts, displs, MPI_BYTE, 0, w->comm);
    free(counts);
    return rc == MPI_SUCCESS ? PB_OK : pb_fail(PB_ERR_ENV, "gathering the groups' results failed");
}
