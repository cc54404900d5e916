/* The MPI job as the harness sees it: ranks, which node each rank is on, and
 * the control-plane helpers (barriers, gathers of timings) that sit outside
 * the timed regions. The measured traffic never goes through here: it goes
 * through a backend (comm.h). */
#ifndef PB_WORLD_H
#define PB_WORLD_H

#include "core/link.h"

#include <mpi.h>

#define PB_HOST_MAX 64

typedef struct pb_world {
    MPI_Comm comm;      /* duplicate of MPI_COMM_WORLD for control traffic */
    int rank, size;
    int local_rank, local_size; /* within this node (MPI_COMM_TYPE_SHARED) */
    int node, nnodes;           /* this rank's node index; nodes numbered by lowest rank */
    int *node_of;               /* node index of every rank */
    char (*host)[PB_HOST_MAX];  /* hostname of every rank */
    int thread_level;           /* what MPI_Init_thread granted */
} pb_world;

/* MPI_Init_thread with `thread_level` requested, then discover the node layout.
 * Usage messages from ranks other than 0 are silenced, so an error is printed once. */
int pb_world_init(int *argc, char ***argv, int thread_level, pb_world *w);

/* A world of `nranks` ranks without MPI, as seen from rank 0, for --validate:
 * nodes of `ranks_per_node` ranks in rank order, the last holding what is
 * left; comm is MPI_COMM_NULL, so nothing may communicate. */
int pb_world_fake(pb_world *w, int nranks, int ranks_per_node);

/* Finalize MPI (when it was started) and exit with `status`, which mpirun passes on as its own exit
 * code. All ranks must call it with the same status. */
_Noreturn void pb_world_exit(pb_world *w, int status);

/* PB_LINK_INTRA if all listed ranks share one node, PB_LINK_INTER if each is
 * on a different node, PB_LINK_MIXED otherwise. NULL ranks means every rank. */
pb_link_class pb_world_link(const pb_world *w, const int *ranks, int n);

/* Number of distinct nodes among the listed ranks (NULL: all). */
int pb_world_nodes_spanned(const pb_world *w, const int *ranks, int n);

/* The hosts of the listed ranks, each once in rank-list order, joined by '+'
 * ("node3" or "node1+node2"), into buf (cut short at len). */
void pb_world_hosts_text(const pb_world *w, const int *ranks, int n, char *buf, size_t len);
/* The word the failure messages give an exit status (PB_OK .. PB_ERR_TIMEOUT; "error" for any other). */
const char *pb_world_status_word(int status);

/* A value every rank gives, reduced over the world: its largest, its sum. */
double pb_world_max(const pb_world *w, double v);
double pb_world_sum(const pb_world *w, double v);

/* Agreement (docs/reliability.md): every rank of `comm` calls it after a step
 * that can fail on one rank alone and before the next collective, and all get
 * the worst status. With a `site`, a failure is named once per rank: the
 * failing rank (the lowest world rank with the worst status) says where it
 * failed, the ranks that did not fail say which rank failed, where, and why.
 * After a failure agreed in a sub-communicator, a pb_world_agree_at over the world
 * names the original failure to the ranks outside that group.
 * NULL `site`, or a usage error (every rank finds it, rank 0 prints it): silent. */
int pb_world_agree_at(MPI_Comm comm, int local_status, const char *site);

/* pb_world_agree_at over the whole job, silent: a failure on one rank becomes everyone's. */
int pb_world_agree(const pb_world *w, int status);

/* The least time a rank that failed inside a step waits for its peers (pb_world_wait_after_step). */
#define PB_STEP_GRACE_S 2.0

/* Wait for a nonblocking agreement posted right after a step in which the
 * ranks exchange messages (a pipeline step, a collective). A rank that failed
 * midway (local_status not PB_OK) may have left a peer blocked in a receive
 * that no blocking collective can reach: it waits up to grace_s for the
 * others, then ends the job at once (MPI_Abort with its status, naming the
 * failure) rather than leaving it to the watchdog. A rank that did not fail
 * waits as long as it takes (the watchdog bounds it). */
void pb_world_wait_after_step(MPI_Request *req, int local_status, double grace_s);

/* pb_world_agree_at after such a step: every rank of `comm` calls it, with the
 * nonblocking agreement and pb_world_wait_after_step. */
int pb_world_agree_after_step(MPI_Comm comm, int local_status, double grace_s, const char *site);

/* A node as a group of consecutive ranks (`option` node: fsdp_step's shard
 * group, moe_layer's EP group): every node holds the same number of ranks,
 * numbered node by node; *size gets that number. Collective over w->comm (under
 * --validate, whose world has no communicator, judged from its node sizes);
 * PB_ERR_USAGE naming `option` otherwise. */
int pb_world_node_block(const pb_world *w, const char *option, int *size);

#endif
