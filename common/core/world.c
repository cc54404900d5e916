#include "core/world.h"

#include "core/error.h"
#include "core/faults.h"
#include "core/progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int gather_hosts(pb_world *w)
{
    char me[PB_HOST_MAX] = {0};
    if (gethostname(me, sizeof me - 1) != 0) strcpy(me, "unknown");
    w->host = calloc((size_t)w->size, PB_HOST_MAX);
    w->node_of = calloc((size_t)w->size, sizeof(int));
    PB_CHECK(w->host && w->node_of, PB_ERR_ENV, "out of memory for %d host names", w->size);
    MPI_Allgather(me, PB_HOST_MAX, MPI_CHAR, w->host, PB_HOST_MAX, MPI_CHAR, w->comm);
    return PB_OK;
}

/* Nodes are the shared-memory domains MPI reports; each node is numbered by the
 * order of its lowest rank, so node 0 always holds rank 0. */
static int number_nodes(pb_world *w)
{
    MPI_Comm local;
    MPI_Comm_split_type(w->comm, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &w->local_rank);
    MPI_Comm_size(local, &w->local_size);
    int leader = w->rank; /* lowest world rank on my node */
    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
    MPI_Comm_free(&local);

    int *leaders = malloc(sizeof(int) * (size_t)w->size);
    /* As in gather_hosts: a rank that stops here exits 3, and MPI ends the peers waiting below. */
    PB_CHECK(leaders, PB_ERR_ENV, "out of memory numbering the nodes of %d ranks", w->size);
    MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, w->comm);
    w->nnodes = 0;
    for (int r = 0; r < w->size; r++) {
        if (leaders[r] == r) {
            for (int q = r; q < w->size; q++)
                if (leaders[q] == r) w->node_of[q] = w->nnodes;
            w->nnodes++;
        }
    }
    w->node = w->node_of[w->rank];
    free(leaders);
    return PB_OK;
}

/* The test hook PARABENCH_TEST_RANKS_PER_NODE=R (core/faults.h): nodes of R
 * consecutive ranks, named nodeK, on one machine. Local ranks stay MPI's (the
 * machine's GPUs and cores). */
static void emulate_nodes(pb_world *w)
{
    int rpn = pb_faults_rank("PARABENCH_TEST_RANKS_PER_NODE");
    if (rpn < 1) return;
    for (int r = 0; r < w->size; r++) {
        w->node_of[r] = r / rpn;
        snprintf(w->host[r], PB_HOST_MAX, "node%d", w->node_of[r]);
    }
    w->nnodes = (w->size + rpn - 1) / rpn;
    w->node = w->node_of[w->rank];
}

int pb_world_init(int *argc, char ***argv, int thread_level, pb_world *w)
{
    memset(w, 0, sizeof *w);
    pb_progress_choose(thread_level == MPI_THREAD_MULTIPLE); /* MPI reads its parameters as it starts */
    if (MPI_Init_thread(argc, argv, thread_level, &w->thread_level) != MPI_SUCCESS)
        return pb_fail(PB_ERR_ENV, "MPI_Init_thread failed");
    MPI_Comm_dup(MPI_COMM_WORLD, &w->comm);
    MPI_Comm_rank(w->comm, &w->rank);
    MPI_Comm_size(w->comm, &w->size);
    if (w->rank != 0) pb_error_set_quiet_usage(1);
    PB_TRY(gather_hosts(w));
    PB_TRY(number_nodes(w));
    emulate_nodes(w);
    if (w->thread_level < thread_level && w->rank == 0)
        fprintf(stderr, "%s: warning: MPI granted thread level %d, asked for %d\n", pb_error_progname(),
                w->thread_level, thread_level);
    return PB_OK;
}

int pb_world_fake(pb_world *w, int nranks, int ranks_per_node)
{
    free(w->host);
    free(w->node_of);
    memset(w, 0, sizeof *w);
    w->comm = MPI_COMM_NULL;
    w->size = nranks;
    w->node_of = malloc(sizeof(int) * (size_t)nranks);
    w->host = calloc((size_t)nranks, sizeof *w->host);
    PB_CHECK(w->node_of && w->host, PB_ERR_ENV, "out of memory for a world of %d ranks", nranks);
    for (int r = 0; r < nranks; r++) {
        w->node_of[r] = r / ranks_per_node;
        snprintf(w->host[r], PB_HOST_MAX, "node%d", w->node_of[r]);
    }
    w->nnodes = (nranks + ranks_per_node - 1) / ranks_per_node;
    w->local_size = ranks_per_node < nranks ? ranks_per_node : nranks;
    w->thread_level = MPI_THREAD_MULTIPLE;
    return PB_OK;
}

_Noreturn void pb_world_exit(pb_world *w, int status)
{
    fflush(stdout);
    fflush(stderr);
    int started = 0;
    MPI_Initialized(&started); /* not under --validate */
    if (started && w->comm != MPI_COMM_NULL && w->comm != 0) MPI_Comm_free(&w->comm);
    free(w->host);
    free(w->node_of);
    if (started) MPI_Finalize();
    exit(status);
}

double pb_world_max(const pb_world *w, double v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, w->comm);
    return v;
}

double pb_world_sum(const pb_world *w, double v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, w->comm);
    return v;
}

/* Whether ranks[i]'s node is among those of ranks[0..i-1]. */
static int node_seen(const pb_world *w, const int *ranks, int i)
{
    for (int j = 0; j < i; j++)
        if (w->node_of[ranks[j]] == w->node_of[ranks[i]]) return 1;
    return 0;
}

int pb_world_nodes_spanned(const pb_world *w, const int *ranks, int n)
{
    if (!ranks) return w->nnodes;
    int count = 0;
    for (int i = 0; i < n; i++) count += !node_seen(w, ranks, i);
    return count;
}

void pb_world_hosts_text(const pb_world *w, const int *ranks, int n, char *buf, size_t len)
{
    size_t used = 0;
    if (len) buf[0] = '\0';
    for (int i = 0; i < n && used + 1 < len; i++)
        if (!node_seen(w, ranks, i)) {
            int k = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", w->host[ranks[i]]);
            used = k < 0 ? len : used + (size_t)k;
        }
}

pb_link_class pb_world_link(const pb_world *w, const int *ranks, int n)
{
    if (!ranks) n = w->size;
    int nodes = pb_world_nodes_spanned(w, ranks, n);
    if (nodes <= 1) return PB_LINK_INTRA;
    return nodes == n ? PB_LINK_INTER : PB_LINK_MIXED;
}

const char *pb_world_status_word(int status)
{
    static const char *words[] = {"ok", "wrong data", "usage error", "environment error", "timeout"};
    return status >= 0 && status <= PB_ERR_TIMEOUT ? words[status] : "error";
}

/* What the failing rank tells its peers: who failed, in the world, where and why. */
typedef struct agree_note {
    int world_rank, status;
    char site[32], why[160];
} agree_note;

/* The last failure this rank learnt of. A rank that only agreed to a failure
 * in a sub-communicator passes on the original when the world agrees after,
 * so the ranks outside that group hear who really failed. */
static agree_note heard = {.world_rank = -1};

static void tell(MPI_Comm comm, int me, int failed, int local_status, int status, const char *site)
{
    agree_note note = {0};
    int fresh = 0;
    if (me == failed && heard.world_rank >= 0 && heard.status == status) {
        note = heard;
    } else if (me == failed) {
        fresh = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &note.world_rank);
        note.status = status;
        snprintf(note.site, sizeof note.site, "%s", site);
        snprintf(note.why, sizeof note.why, "%s", *pb_error_last() ? pb_error_last() : pb_world_status_word(status));
    }
    /* Every rank knows the status is not OK, so every rank takes part. */
    MPI_Bcast(&note, sizeof note, MPI_BYTE, failed, comm);
    heard = note;
    if (fresh)
        fprintf(stderr, "%s: rank %d failed at %s (exit %d, %s); every rank stops\n", pb_error_progname(),
                note.world_rank, note.site, status, pb_world_status_word(status));
    else if (local_status == PB_OK)
        fprintf(stderr, "%s: rank %d failed at %s: %s\n", pb_error_progname(), note.world_rank, note.site, note.why);
}

typedef struct status_at {
    int status, rank;
} status_at;

/* The agreed worst status: with a `site`, named once per rank (tell). */
static int agreed(MPI_Comm comm, int me, int local_status, status_at worst, const char *site)
{
    /* A usage error is found alike on every rank and printed by rank 0 alone. */
    if (worst.status != PB_OK && worst.status != PB_ERR_USAGE && site)
        tell(comm, me, worst.rank, local_status, worst.status, site);
    return worst.status;
}

int pb_world_agree_at(MPI_Comm comm, int local_status, const char *site)
{
    int me;
    MPI_Comm_rank(comm, &me);
    status_at mine = {local_status, me}, worst;
    /* MAXLOC: the worst status, and on a tie the lowest rank that has it. */
    MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, comm);
    return agreed(comm, me, local_status, worst, site);
}

void pb_world_wait_after_step(MPI_Request *req, int local_status, double grace_s)
{
    if (local_status == PB_OK) {
        MPI_Wait(req, MPI_STATUS_IGNORE);
        return;
    }
    double deadline = MPI_Wtime() + grace_s;
    struct timespec nap = {0, 1000 * 1000};
    for (int done = 0;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (MPI_Wtime() > deadline) break;
        nanosleep(&nap, NULL);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr,
            "%s: rank %d failed inside a step (exit %d, %s: %s); the other ranks did not reach the agreement "
            "after it within %.1f s, so they wait for this rank's messages: ending the job\n",
            pb_error_progname(), rank, local_status, pb_world_status_word(local_status), pb_error_last(), grace_s);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, local_status);
    _exit(local_status); /* if MPI_Abort ever returns */
}

int pb_world_agree_after_step(MPI_Comm comm, int local_status, double grace_s, const char *site)
{
    int me;
    MPI_Comm_rank(comm, &me);
    status_at mine = {local_status, me}, worst;
    MPI_Request req;
    MPI_Iallreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, comm, &req);
    pb_world_wait_after_step(&req, local_status, grace_s);
    return agreed(comm, me, local_status, worst, site);
}

int pb_world_agree(const pb_world *w, int status) { return pb_world_agree_at(w->comm, status, NULL); }

int pb_world_node_block(const pb_world *w, const char *option, int *size)
{
    int lo = w->local_size, hi = w->local_size, blocked = w->rank % w->local_size == w->local_rank;
    if (w->comm == MPI_COMM_NULL) /* --validate's world: nodes in rank order, the last holding what is left */
        lo = w->size % w->local_size ? w->size % w->local_size : w->local_size;
    else {
        MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, w->comm);
        MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, w->comm);
        MPI_Allreduce(MPI_IN_PLACE, &blocked, 1, MPI_INT, MPI_MIN, w->comm);
    }
    if (lo != hi)
        return pb_error_usage(option, "node: the nodes hold %d to %d ranks; a group per node needs the "
                              "same count on every node", lo, hi);
    if (!blocked)
        return pb_error_usage(option, "node: the ranks are not numbered node by node; expected a block of "
                              "consecutive ranks per node (mpirun --map-by slot)");
    *size = lo;
    return PB_OK;
}
