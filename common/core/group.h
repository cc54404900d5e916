/* Groups of ranks that run a collective side by side (coll_sweep --groups):
 *  - world: every rank, one group;
 *  - node:  the ranks of each node: every node's intra-node fabric at once;
 *  - rail:  the ranks with the same local rank, one per node: each rail's
 *           network across the nodes at once.
 * Groups are numbered by their lowest world rank, so world rank 0 leads group 0. */
#ifndef PB_GROUP_H
#define PB_GROUP_H

#include "core/world.h"

typedef enum { PB_GROUPS_WORLD, PB_GROUPS_NODE, PB_GROUPS_RAIL, PB_GROUPS_KINDS } pb_group_groups_kind;

typedef struct pb_group {
    pb_group_groups_kind kind;
    MPI_Comm comm;    /* this rank's group */
    int rank, size;   /* in the group */
    int index, count; /* this group's number, and how many groups there are */
    int *members;     /* world ranks of the group, in group rank order */
    int *leaders;     /* world rank leading each group (its members[0]), by group number */
    char name[32];    /* "world", "node3", "rail1" */
    const char *link; /* pb_link_name of the members' pb_world_link */
} pb_group;

const char *const *pb_group_groups_names(void); /* NULL-terminated, in enum order */

/* Split the world (collective over w->comm). Returns a status agreed by all ranks. */
int pb_group_split(const pb_world *w, pb_group_groups_kind kind, pb_group *g);
void pb_group_free(pb_group *g);

/* Collective over the world `w`: each group's leader (group rank 0) gives
 * `bytes` bytes at `mine`; world rank 0 receives them in group order into
 * `all` (g->count * bytes), every other rank's `all` is untouched (may be
 * NULL). What every group measured, brought to the rank that writes it. */
int pb_group_gather_leaders(const pb_world *w, const pb_group *g, const void *mine, size_t bytes, void *all);

#endif
