/* The all-pairs view of point-to-point performance (p2p_sweep --matrix):
 * per link class summaries, the pairs that stand out as slow, and the N x N
 * matrices for a heatmap. This is how a bad link or NIC shows up in
 * acceptance testing: one pair far below the others of its class. */
#ifndef PB_P2P_MATRIX_H
#define PB_P2P_MATRIX_H

#include <stdint.h>

typedef struct pb_p2p_matrix_pair_result {
    int a, b;
    const char *link;   /* pb_link_name of the pair */
    double lat_us;      /* half round trip at the small size */
    double bw_GBps;     /* streaming bandwidth at the large size */
    int slow;           /* set by pb_p2p_matrix_flag_slow: PB_P2P_MATRIX_SLOW_* bits */
    int rail;           /* inter-node pair of local ranks k <-> k: k (pb_p2p_matrix_rail); else -1 */
} pb_p2p_matrix_pair_result;

/* What a slow pair was slow against: its link class, its rail, or both. */
enum { PB_P2P_MATRIX_SLOW_CLASS = 1, PB_P2P_MATRIX_SLOW_RAIL = 2 };

typedef struct pb_p2p_matrix_class_summary {
    const char *link;
    int pairs;
    double lat_min, lat_median, lat_max;
    double bw_min, bw_median, bw_max;
} pb_p2p_matrix_class_summary;

/* Summaries per link class present (at most 3: intra, inter, mixed). Returns how many. */
int pb_p2p_matrix_summarize(const pb_p2p_matrix_pair_result *r, int n, pb_p2p_matrix_class_summary out[3]);

/* What p2p_sweep --matrix calls slow: below 0.8x the median bandwidth, or
 * above 2x the median latency (a pair a fifth slower than its peers is a
 * cable, NIC or switch port worth a look; run-to-run noise stays well inside). */
#define PB_P2P_MATRIX_SLOW_BW_FRAC 0.8
#define PB_P2P_MATRIX_SLOW_LAT_FACTOR 2.0

/* Flag pairs whose bandwidth is below bw_frac x the median, or whose latency
 * is above lat_factor x the median, of their link class (PB_P2P_MATRIX_SLOW_CLASS)
 * and, for pairs on a rail (rail >= 0), of that rail's pairs across every node
 * pair (PB_P2P_MATRIX_SLOW_RAIL): a slow NIC or switch of one rail stands out
 * against its own rail even when every rail differs. Returns how many pairs
 * are flagged. */
int pb_p2p_matrix_flag_slow(pb_p2p_matrix_pair_result *r, int n, const pb_p2p_matrix_class_summary *s, int nclasses, double bw_frac,
                        double lat_factor);

/* Each rank's index among the ranks of its node (node_of[rank]), in rank
 * order, into local[0..nranks-1]: the "local rank" that names a rail. */
void pb_p2p_matrix_local_ranks(const int *node_of, int nranks, int *local);

/* The rail of pair a,b: local rank k when a and b are on different nodes and
 * both are local rank k there (the pair a rail-optimised fabric keeps on one
 * switch); -1 for intra-node and cross-rail pairs. */
int pb_p2p_matrix_rail(const int *node_of, const int *local, int a, int b);

/* p2p_sweep's pair without --pair: rank 0 and the first rank of another node
 * (both local rank 0: rail 0 of two nodes, the pair a rail-optimised fabric
 * keeps on one switch) when the world spans several nodes; on one node rank 0
 * and the last rank, OSU's pair (0 and 1 at 2 ranks). */
void pb_p2p_matrix_default_pair(const int *node_of, int nranks, int pair[2]);

/* The GPU memory NCCL is expected to hold on a rank for each peer it has
 * exchanged point-to-point messages with: the connection opens at the first
 * message and stays until the communicator is destroyed, with a buffer of
 * NCCL_BUFFSIZE (4 MiB by default, NCCL's documentation of the variable; the
 * environment's value when set) per channel in each direction, over an
 * assumed 2 channels a peer (NCCL_NCHANNELS_PER_NET_PEER's default in NCCL's
 * documentation; NVLink peers may use others): 16 MiB a peer by default. An
 * expectation, not a measurement (docs/placement.md, "The matrix at scale"). */
#define PB_P2P_MATRIX_NCCL_BUFFSIZE (4ull << 20)
#define PB_P2P_MATRIX_CHANNELS_PER_PEER 2
uint64_t pb_p2p_matrix_peer_bytes(void);

/* "class", "rail", "class+rail" or "" for a pair's slow bits. */
const char *pb_p2p_matrix_slow_name(int slow);

/* Write an N x N matrix CSV ("rank,0,1,...") of latency (which = 0) or
 * bandwidth (which = 1); the diagonal and the pairs not measured (a sampled
 * matrix) are empty. Returns a status. */
int pb_p2p_matrix_write_csv(const char *path, int nranks, const pb_p2p_matrix_pair_result *r, int n, int which);

/* Write one line per pair: a,b,link_class,latency_us,bw_GBps,slow (0/1),rail
 * (-1: none),slow_against (pb_p2p_matrix_slow_name). */
int pb_p2p_matrix_write_pairs(const char *path, const pb_p2p_matrix_pair_result *r, int n);

#endif
