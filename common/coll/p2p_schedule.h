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
 * (for even n and r; one more per odd tournament), each of N/2 pairs. */
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

/* One pair per round, in the order (0,1), (0,2), ..., (N-2,N-1): --matrix-serial. */
int pb_p2p_schedule_serial(int nranks, pb_p2p_schedule *out);

void pb_p2p_schedule_free(pb_p2p_schedule *s);

#endif
