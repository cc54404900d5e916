#include "core/group.h"

#include "core/error.h"

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
