/* The all-pairs matrix in O(N) rounds instead of N(N-1)/2 runs: disjoint
 * pairs are measured concurrently, round by round, as an all-to-all
 * tournament laid out along the machine:
 *  - inter-node rounds pair whole nodes (a round-robin tournament of nodes);
 *    within a node pair, local rank k meets local rank k + s of the other node
 *    in sub-round s, so every NIC and rail of both nodes works at once, and
 *    over the sub-rounds every rank meets every rank of the other node;
 *  - intra-node rounds run a round-robin tournament inside every node at once.
 * Every pair of ranks appears exactly once, and no rank twice in one round.
 * With n nodes of r ranks each that is (n - 1) r + (r - 1) = N - 1 rounds
 * (for even n and r; one more per odd tournament), each of N/2 pairs.
 *
 * At scale every pair is too many: each pair a rank meets is a connection
 * NCCL opens lazily and keeps, with GPU buffers (p2p_matrix.h,
 * pb_p2p_matrix_peer_bytes), so 1,023 peers at 1,024 ranks. The sampled
 * schedule (p2p_sweep --matrix above PB_P2P_SCHEDULE_SAMPLE_ABOVE ranks, or
 * --matrix-pairs sampled) keeps, for every node pair, its rail pairs (local
 * rank k with local rank k: r pairs, one sub-round) and, in the first r - 1
 * rounds of the node tournament, one cross-rail sub-round at shift t + 1
 * (local rank k with k + t + 1), so that each shift 1..r-1 is measured; and
 * inside every node, every pair. That is (n - 1) + min(n - 1, r - 1) +
 * (r - 1) rounds for even n and r (141 at 1,024 ranks of 8 a node), and a
 * rank meets at most one new peer a round. */
#ifndef PB_P2P_SCHEDULE_H
#define PB_P2P_SCHEDULE_H

typedef struct pb_p2p_schedule_pair {
    int a, b;  /* ranks, a < b */
    int round; /* 0-based */
} pb_p2p_schedule_pair;

typedef struct pb_p2p_schedule {
    pb_p2p_schedule_pair *pairs; /* sorted by round, then by a */
    int npairs, nrounds;
} pb_p2p_schedule;

/* The concurrent schedule for ranks 0..nranks-1 on the nodes node_of[rank]
 * (0..nnodes-1, any sizes). Returns PB_OK or PB_ERR_ENV (out of memory). */
int pb_p2p_schedule_concurrent(const int *node_of, int nranks, pb_p2p_schedule *out);

/* Above this many ranks p2p_sweep --matrix runs the sampled schedule unless
 * --matrix-pairs all: 64 ranks (8 nodes of 8) keep every pair at 63 peers a
 * rank, about 1 GiB of NCCL buffers (pb_p2p_matrix_peer_bytes). */
#define PB_P2P_SCHEDULE_SAMPLE_ABOVE 64

/* The sampled schedule (above): every node pair's rails, one cross-rail
 * shift in each of the first r - 1 node rounds, every pair inside a node.
 * Same guarantees otherwise: each pair once, no rank twice in a round. */
int pb_p2p_schedule_sampled(const int *node_of, int nranks, pb_p2p_schedule *out);

/* The most distinct peers a rank meets in s (each pair appears once). */
int pb_p2p_schedule_peers(const pb_p2p_schedule *s, int nranks);

/* One pair per round, in the order (0,1), (0,2), ..., (N-2,N-1): --matrix-serial. */
int pb_p2p_schedule_serial(int nranks, pb_p2p_schedule *out);

void pb_p2p_schedule_free(pb_p2p_schedule *s);

#endif
