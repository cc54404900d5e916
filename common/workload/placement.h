/* Placement of a TP x PP x DP grid on the ranks of a job.
 *
 * A grid position is (t, p, d): index t within the tensor-parallel group,
 * pipeline stage p, data-parallel replica d. rank_at[pos(t, p, d)] is the
 * world rank that holds it, pos = t + T * (p + P * d). Policies:
 *   tp-inner  ranks ordered by node, TP fastest: TP groups inside a node,
 *             pipeline stages next (across nodes when a node holds one TP
 *             group), replicas last; Megatron-LM's recommended layout;
 *   dp-inner  ranks ordered by node, DP fastest, then TP, then PP;
 *   naive     world rank order, TP fastest, with no regard for nodes: what
 *             you get when the launcher's rank order does not follow nodes
 *             (e.g. mpirun --map-by node);
 *   rankmap   an explicit file (pb_placement_rankmap_parse). */
#ifndef PB_PLACEMENT_H
#define PB_PLACEMENT_H

typedef enum { PB_PLACE_TP_INNER, PB_PLACE_DP_INNER, PB_PLACE_NAIVE, PB_PLACE_RANKMAP, PB_PLACE_COUNT } pb_placement;

const char *pb_placement_name(pb_placement p); /* "tp-inner", "dp-inner", "naive", "rankmap" */
int pb_placement_parse(const char *option, const char *text, pb_placement *out);

static inline int pb_placement_grid_pos(int T, int P, int t, int p, int d) { return t + T * (p + P * d); }

/* Fill rank_at (world entries) for policy tp-inner, dp-inner or naive.
 * node_of[r] is world rank r's node. T*P*D must equal world (checked by the
 * caller; PB_ERR_USAGE otherwise). PB_ERR_ENV when out of memory. */
int pb_placement_grid_place(pb_placement policy, int T, int P, int D, int world, const int *node_of, int *rank_at);

/* Coordinates of a world rank in the grid. Returns 0 if found, -1 otherwise. */
int pb_placement_grid_coords(const int *rank_at, int T, int P, int D, int rank, int *t, int *p, int *d);

/* Parse a rank map: one line per rank "RANK T P D" (whitespace separated),
 * '#' comments and blank lines ignored. Every rank exactly once, every grid
 * position exactly once, coordinates in range. Errors name FILE:LINE and
 * return PB_ERR_USAGE. `text` is the file's contents. */
int pb_placement_rankmap_parse(const char *path, const char *text, int T, int P, int D, int *rank_at);

/* Read and parse a rank map file (PB_ERR_USAGE when unreadable or invalid). */
int pb_placement_rankmap_read(const char *path, int T, int P, int D, int *rank_at);

#endif
