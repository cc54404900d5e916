/* Where a group of ranks sits: on one node, one node each, or some of both.
 * world.h computes it for real ranks (pb_world_link); the planner assigns it
 * to model axes. No MPI here, so the planner links without it. */
#ifndef PB_LINK_H
#define PB_LINK_H

typedef enum { PB_LINK_INTRA, PB_LINK_INTER, PB_LINK_MIXED, PB_LINK_NCLASS } pb_link_class;

/* "intra", "inter", "mixed": the spelling of report columns and thresholds. */
const char *pb_link_name(pb_link_class k);

/* The class spelled `name`, or -1 when it is none of them. */
int pb_link_parse(const char *name);

/* Two groups together: their class when equal, else mixed. */
pb_link_class pb_link_join(pb_link_class a, pb_link_class b);

#endif
