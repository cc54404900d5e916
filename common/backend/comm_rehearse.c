/* NCCL rehearsal backend (`--backend nccl-rehearse`): NCCL's ordering rules
 * on the CPU, in host memory, for tests and rehearsals only (docs/gpu.md
 * "Rehearsing NCCL on the CPU"). The MPI backend completes each operation
 * inside its call, so it cannot show an ordering that a GPU turns into a
 * hang; this one keeps NCCL's rules:
 *  - each communicator has a stream: a worker thread (rehearse_queue.h) that
 *    runs its operations in issue order, after the call has returned;
 *    sync() waits for that stream alone;
 *  - a send completes only once its receive runs (a rendezvous: the two
 *    exchange a header first, then the data with MPI_Issend);
 *  - between group_start and group_end the operations of each communicator
 *    are queued as one unit that starts together (ncclGroupStart/End);
 *  - alloc, free, to_host and from_host (rehearse_device.c) first wait for every stream of the
 *    process, as cudaMalloc, cudaFree and a blocking cudaMemcpy synchronise
 *    the device; so does the host engine's allocation (core/devsync.h);
 *    an allocation or free while a receive is posted and not yet matched,
 *    or inside the runner's timed iterations, is refused (it would wait for
 *    the receive's send, or stall the measured step);
 *  - misuse is an error, with NCCL's words: two ranks of a communicator on
 *    one "device" (a rank's device is its local rank on the node, modulo
 *    PARABENCH_REHEARSE_GPUS when set), counts that differ between the
 *    ranks of a collective or between a send and its receive, calls on a
 *    destroyed communicator, a group closed that was not opened.
 * The data moves through MPI on the executor threads (collectives through
 * the MPI backend's table, so no reduction code is repeated here), which
 * needs MPI_THREAD_MULTIPLE. The stream-ordered hooks (after_queue,
 * before_queue, spans, graphs) are NULL: the host engine completes its work
 * inside each call, so ordering.h runs the host ordering, which waits at
 * least as much as the stream ordering would. */
#include "backend/comm.h"

#include "backend/rehearse_device.h"
#include "backend/rehearse_queue.h"
#include "core/devsync.h"
#include "core/error.h"
#include "core/faults.h"
#include "core/grow.h"
#include "core/watchdog.h"
#include "core/world.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TAG_HEADER_TO_RECEIVER = 1, TAG_HEADER_TO_SENDER = 2, TAG_DATA = 3 };

typedef enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_REDUCE, OP_ALLTOALL, OP_SEND, OP_RECV } op_kind;
static const char *const op_names[] = {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
                                       "ncclReduce",    "ncclAlltoAll",  "ncclSend",          "ncclRecv"};

typedef struct rehearse_op {
    op_kind kind;
    const void *send;
    void *recv;
    size_t count;
    pb_dtype dtype;
    pb_dtype_redop redop;
    int root; /* broadcast and reduce: the root; send and recv: the peer */
} rehearse_op;

/* What a rank says of an operation before it runs: NCCL trusts its callers
 * to agree, and hangs or corrupts memory where they do not. */
typedef struct header {
    long long kind, count, dtype, redop, root;
} header;

typedef struct unit {
    pb_comm *c;
    rehearse_op *ops;
    int n, cap;
} unit;

#define MAGIC 0x6e63636cu /* a live or destroyed communicator of this backend */

struct pb_comm {
    unsigned magic;
    int destroyed; /* kept as a tombstone, so that a later call is an error, not a crash */
    int rank, size;
    int miscount;              /* PARABENCH_TEST_MISCOUNT names this rank: its headers lie */
    int hang;                  /* PARABENCH_TEST_HANG=sync names this rank: its first operation never ends */
    pb_comm *inner;            /* the MPI backend's communicator: collectives (worker only) */
    MPI_Comm p2p;              /* headers and point-to-point data (worker only) */
    pb_rehearse_queue *stream;
    unit *open;                /* operations issued inside a group, queued at its end */
    pb_comm *next_dead;
};

/* Destroyed communicators stay reachable until the process ends. */
static pthread_mutex_t dead_mu = PTHREAD_MUTEX_INITIALIZER;
static pb_comm *dead;

/* NCCL's groups are per thread and span communicators. */
static _Thread_local int group_depth;
static _Thread_local pb_comm **grouped; /* communicators with an open unit */
static _Thread_local int ngrouped, capgrouped;

static const pb_comm_backend *mpi(void) { return pb_comm_backend_mpi(); }

static int alive(const pb_comm *c, const char *call)
{
    PB_CHECK(c && c->magic == MAGIC, PB_ERR_ENV, "%s: invalid argument: not a communicator (NCCL rehearsal)", call);
    PB_CHECK(!c->destroyed, PB_ERR_ENV,
             "%s: invalid usage: the communicator was destroyed (ncclCommDestroy); NCCL would use freed memory",
             call);
    return PB_OK;
}

static void unit_free(void *arg)
{
    unit *u = arg;
    if (!u) return;
    for (int i = 0; i < u->n; i++)
        if (u->ops[i].kind == OP_RECV) pb_rehearse_device_posted(-1); /* run, or dropped unrun */
    free(u->ops);
    free(u);
}

static header header_of(const pb_comm *c, const rehearse_op *o)
{
    int rooted = o->kind == OP_BROADCAST || o->kind == OP_REDUCE;
    int reduces = o->kind == OP_ALLREDUCE || o->kind == OP_REDUCESCATTER || o->kind == OP_REDUCE;
    return (header){o->kind, (long long)o->count + c->miscount, o->dtype, reduces ? o->redop : 0, rooted ? o->root : 0};
}

static int is_p2p(const rehearse_op *o) { return o->kind == OP_SEND || o->kind == OP_RECV; }

static int mpi_check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return PB_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return pb_fail(PB_ERR_ENV, "NCCL rehearsal: %s failed: %s", what, msg);
}

/* The unit's sends and receives: headers both ways (each side learns the
 * other's count), then the data, all posted together as a group starts. */
static int run_p2p(unit *u, int np)
{
    pb_comm *c = u->c;
    header *mine = calloc((size_t)np, sizeof *mine), *theirs = calloc((size_t)np, sizeof *theirs);
    MPI_Request *reqs = calloc((size_t)np * 2, sizeof(MPI_Request));
    if (!mine || !theirs || !reqs) {
        free(mine), free(theirs), free(reqs);
        return pb_fail(PB_ERR_ENV, "NCCL rehearsal: out of memory for %d sends and receives", np);
    }
    int status = PB_OK;
    int k = 0, nr = 0;
    for (int i = 0; i < u->n && status == PB_OK; i++) {
        const rehearse_op *o = &u->ops[i];
        if (!is_p2p(o)) continue;
        mine[k] = header_of(c, o);
        int to_receiver = o->kind == OP_SEND ? 0 : 1; /* which of the two messages is mine to send */
        int n = (int)(sizeof(header) / sizeof(long long));
        MPI_Isend(&mine[k], n, MPI_LONG_LONG, o->root, to_receiver ? TAG_HEADER_TO_SENDER : TAG_HEADER_TO_RECEIVER,
                  c->p2p, &reqs[nr++]);
        MPI_Irecv(&theirs[k], n, MPI_LONG_LONG, o->root, to_receiver ? TAG_HEADER_TO_RECEIVER : TAG_HEADER_TO_SENDER,
                  c->p2p, &reqs[nr++]);
        k++;
    }
    if (status == PB_OK) status = mpi_check(MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE), "the send/recv headers");
    k = 0;
    for (int i = 0; i < u->n && status == PB_OK; i++) {
        const rehearse_op *o = &u->ops[i];
        if (!is_p2p(o)) continue;
        if (theirs[k].count != mine[k].count || theirs[k].dtype != mine[k].dtype) {
            status = pb_fail(PB_ERR_ENV,
                             "%s (rank %d, peer %d): invalid usage: %lld elements of %s here, but rank %d's matching "
                             "%s has %lld of %s; NCCL would hang or corrupt memory",
                             op_names[o->kind], c->rank, o->root, mine[k].count, pb_dtype_name(o->dtype), o->root,
                             op_names[o->kind == OP_SEND ? OP_RECV : OP_SEND], theirs[k].count,
                             pb_dtype_name((pb_dtype)theirs[k].dtype));
        }
        k++;
    }
    nr = 0;
    for (int i = 0; i < u->n && status == PB_OK; i++) {
        const rehearse_op *o = &u->ops[i];
        if (!is_p2p(o)) continue;
        size_t bytes = o->count * pb_dtype_size(o->dtype);
        if (bytes > INT_MAX) {
            status = pb_fail(PB_ERR_USAGE, "NCCL rehearsal: %zu bytes exceed MPI's int count", bytes);
            break;
        }
        /* MPI_Issend: a send completes only once its receive has started, as in NCCL. */
        if (o->kind == OP_SEND)
            MPI_Issend(o->send, (int)bytes, MPI_BYTE, o->root, TAG_DATA, c->p2p, &reqs[nr++]);
        else
            MPI_Irecv(o->recv, (int)bytes, MPI_BYTE, o->root, TAG_DATA, c->p2p, &reqs[nr++]);
    }
    if (nr) {
        int rc = mpi_check(MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE), "send/recv");
        if (status == PB_OK) status = rc;
    }
    free(mine);
    free(theirs);
    free(reqs);
    return status;
}

/* Every rank of the collective must call the same one with the same count,
 * type, operation and root. */
static int check_collective(pb_comm *c, const rehearse_op *o)
{
    header mine = header_of(c, o);
    header *all = calloc((size_t)c->size, sizeof *all);
    PB_CHECK(all, PB_ERR_ENV, "NCCL rehearsal: out of memory for %d headers", c->size);
    int n = (int)(sizeof(header) / sizeof(long long));
    int status = mpi_check(MPI_Allgather(&mine, n, MPI_LONG_LONG, all, n, MPI_LONG_LONG, c->p2p), "a collective's header");
    for (int r = 1; r < c->size && status == PB_OK; r++)
        if (memcmp(&all[r], &all[0], sizeof(header)) != 0)
            status = pb_fail(PB_ERR_ENV,
                             "%s (rank %d): invalid usage: rank 0 called %s with count %lld of %s (op %s, root %lld), "
                             "rank %d %s with count %lld of %s (op %s, root %lld); NCCL would hang or corrupt memory",
                             op_names[o->kind], c->rank, op_names[all[0].kind], all[0].count,
                             pb_dtype_name((pb_dtype)all[0].dtype), pb_dtype_redop_name((pb_dtype_redop)all[0].redop),
                             all[0].root, r, op_names[all[r].kind], all[r].count,
                             pb_dtype_name((pb_dtype)all[r].dtype), pb_dtype_redop_name((pb_dtype_redop)all[r].redop),
                             all[r].root);
    free(all);
    return status;
}

static int run_collective(pb_comm *c, const rehearse_op *o)
{
    PB_TRY(check_collective(c, o));
    const pb_comm_backend *m = mpi();
    switch (o->kind) {
    case OP_ALLREDUCE: return m->allreduce(c->inner, o->send, o->recv, o->count, o->dtype, o->redop);
    case OP_ALLGATHER: return m->allgather(c->inner, o->send, o->recv, o->count, o->dtype);
    case OP_REDUCESCATTER: return m->reducescatter(c->inner, o->send, o->recv, o->count, o->dtype, o->redop);
    case OP_BROADCAST: return m->broadcast(c->inner, o->send, o->recv, o->count, o->dtype, o->root);
    case OP_REDUCE: return m->reduce(c->inner, o->send, o->recv, o->count, o->dtype, o->redop, o->root);
    default: return m->alltoall(c->inner, o->send, o->recv, o->count, o->dtype);
    }
}

/* On the stream's thread: the unit's point-to-point operations start
 * together; its collectives follow in issue order. */
static int run_unit(void *arg)
{
    unit *u = arg;
    if (u->c->hang) /* the test fault: a kernel that never ends; the watchdog ends the process */
        for (;;) sleep(60);
    int np = 0;
    for (int i = 0; i < u->n; i++) np += is_p2p(&u->ops[i]);
    int status = np ? run_p2p(u, np) : PB_OK;
    for (int i = 0; i < u->n && status == PB_OK; i++)
        if (!is_p2p(&u->ops[i])) status = run_collective(u->c, &u->ops[i]);
    unit_free(u);
    return status;
}

static int unit_add(unit **u, pb_comm *c, const rehearse_op *o)
{
    if (!*u) {
        *u = calloc(1, sizeof **u);
        PB_CHECK(*u, PB_ERR_ENV, "NCCL rehearsal: out of memory for an operation");
        (*u)->c = c;
    }
    rehearse_op *ops = pb_grow((*u)->ops, &(*u)->cap, (*u)->n, sizeof *ops, 8);
    PB_CHECK(ops, PB_ERR_ENV, "NCCL rehearsal: out of memory for %d grouped operations", (*u)->n + 1);
    (*u)->ops = ops;
    ops[(*u)->n++] = *o;
    if (o->kind == OP_RECV) pb_rehearse_device_posted(1);
    return PB_OK;
}

/* Issue: inside a group, into the communicator's open unit; else a unit of its own. */
static int issue(pb_comm *c, rehearse_op o)
{
    PB_TRY(alive(c, op_names[o.kind]));
    int peer_or_root = is_p2p(&o) || o.kind == OP_BROADCAST || o.kind == OP_REDUCE;
    PB_CHECK(!peer_or_root || (o.root >= 0 && o.root < c->size), PB_ERR_ENV,
             "%s: invalid argument: %s %d is not a rank of a communicator of %d", op_names[o.kind],
             is_p2p(&o) ? "peer" : "root", o.root, c->size);
    if (group_depth == 0) {
        unit *u = NULL;
        PB_TRY(unit_add(&u, c, &o));
        return pb_rehearse_queue_push(c->stream, u);
    }
    if (!c->open) {
        pb_comm **g = pb_grow(grouped, &capgrouped, ngrouped, sizeof(pb_comm *), 8);
        PB_CHECK(g, PB_ERR_ENV, "NCCL rehearsal: out of memory for a group");
        grouped = g;
        grouped[ngrouped++] = c;
    }
    return unit_add(&c->open, c, &o);
}

/* The watchdog's last act before it ends the process (core/watchdog.h): the
 * streams are threads of this process and end with it; nothing to abort. */
static void on_timeout(void) {}

static int create_armed(MPI_Comm group, pb_comm **out)
{
    int level = MPI_THREAD_SINGLE, status = PB_OK;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE)
        status = pb_fail(PB_ERR_ENV, "--backend nccl-rehearse: its streams call MPI from threads of their own, which "
                                     "needs MPI_THREAD_MULTIPLE; the MPI library granted level %d", level);
    pb_comm *c = status == PB_OK ? calloc(1, sizeof *c) : NULL;
    if (status == PB_OK && !c) status = pb_fail(PB_ERR_ENV, "out of memory for a communicator");
    status = pb_world_agree_at(group, status, "comm");
    if (status != PB_OK || !c) { /* !c implies a failed agreement; said for the analyzer */
        free(c);
        return status;
    }
    c->magic = MAGIC;
    MPI_Comm_rank(group, &c->rank);
    MPI_Comm_size(group, &c->size);
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    c->miscount = pb_faults_miscount_rank() == world_rank;
    c->hang = pb_faults_hang("sync");
    status = pb_world_agree_at(group, pb_rehearse_device_check(group, c->rank, c->size), "comm");
    /* agreed over group; the MPI communicator inside counts this one (comm_count.h) */
    if (status == PB_OK) status = mpi()->comm_create(group, &c->inner);
    if (status == PB_OK) {
        MPI_Comm_dup(group, &c->p2p);
        status = pb_world_agree_at(group, pb_rehearse_queue_create(run_unit, unit_free, &c->stream), "comm");
    }
    if (status != PB_OK) {
        pb_rehearse_queue_destroy(c->stream);
        if (c->p2p) MPI_Comm_free(&c->p2p);
        if (c->inner) mpi()->comm_destroy(c->inner);
        free(c);
        return status;
    }
    pb_devsync_install(pb_rehearse_device_engine_sync);
    *out = c;
    return PB_OK;
}

/* ncclCommInitRank waits for every rank of the group: armed, so that a rank
 * that never comes is reported (phase "comm init") instead of waited for. */
static int create(MPI_Comm group, pb_comm **out)
{
    pb_watchdog_on_timeout(on_timeout); /* no MPI_Abort from the watchdog's thread from now on */
    int entered = pb_watchdog_enter("comm init");
    if (pb_faults_hang("comm")) /* the test fault: this rank's creation never returns */
        for (;;) sleep(60);
    int status = create_armed(group, out);
    pb_watchdog_leave(entered);
    return status;
}

static void destroy(pb_comm *c)
{
    if (!c) return;
    if (alive(c, "ncclCommDestroy") != PB_OK) return;
    /* ncclCommDestroy waits for the communicator's work; a stream stuck for
     * good is left to the watchdog, with everything it may still touch. */
    if (pb_rehearse_queue_destroy(c->stream) == PB_ERR_TIMEOUT) return;
    mpi()->comm_destroy(c->inner);
    MPI_Comm_free(&c->p2p);
    unit_free(c->open);
    c->open = NULL;
    c->destroyed = 1;
    pthread_mutex_lock(&dead_mu);
    c->next_dead = dead;
    dead = c;
    pthread_mutex_unlock(&dead_mu);
}

static int rank_of(const pb_comm *c) { return c->rank; }
static int size_of(const pb_comm *c) { return c->size; }

static int allreduce(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, pb_dtype_redop op)
{
    return issue(c, (rehearse_op){OP_ALLREDUCE, s, r, n, t, op, 0});
}

static int allgather(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t)
{
    return issue(c, (rehearse_op){OP_ALLGATHER, s, r, n, t, PB_SUM, 0});
}

static int reducescatter(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, pb_dtype_redop op)
{
    return issue(c, (rehearse_op){OP_REDUCESCATTER, s, r, n, t, op, 0});
}

static int broadcast(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, int root)
{
    return issue(c, (rehearse_op){OP_BROADCAST, s, r, n, t, PB_SUM, root});
}

static int reduce(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, pb_dtype_redop op, int root)
{
    return issue(c, (rehearse_op){OP_REDUCE, s, r, n, t, op, root});
}

static int alltoall(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t)
{
    return issue(c, (rehearse_op){OP_ALLTOALL, s, r, n, t, PB_SUM, 0});
}

static int send(pb_comm *c, const void *buf, size_t n, pb_dtype t, int peer)
{
    return issue(c, (rehearse_op){OP_SEND, buf, NULL, n, t, PB_SUM, peer});
}

static int recv(pb_comm *c, void *buf, size_t n, pb_dtype t, int peer)
{
    return issue(c, (rehearse_op){OP_RECV, NULL, buf, n, t, PB_SUM, peer});
}

static int group_start(pb_comm *c)
{
    PB_TRY(alive(c, "ncclGroupStart"));
    group_depth++;
    return PB_OK;
}

/* The outermost end queues each communicator's unit; they start together. */
static int group_end(pb_comm *c)
{
    PB_TRY(alive(c, "ncclGroupEnd"));
    PB_CHECK(group_depth > 0, PB_ERR_ENV, "ncclGroupEnd: invalid usage: no group is open (ncclGroupStart first)");
    if (--group_depth > 0) return PB_OK;
    int status = PB_OK;
    for (int i = 0; i < ngrouped; i++) {
        pb_comm *g = grouped[i];
        unit *u = g->open;
        g->open = NULL;
        int s = g->destroyed ? (unit_free(u), alive(g, "ncclGroupEnd")) : pb_rehearse_queue_push(g->stream, u);
        if (status == PB_OK) status = s;
    }
    /* The list is the thread's own: freed here, it never outlives a thread that grouped (a
     * context-parallel lane thread does, and LeakSanitizer counted its list as lost). */
    free(grouped);
    grouped = NULL;
    ngrouped = capgrouped = 0;
    return status;
}

static int sync_stream(pb_comm *c)
{
    PB_TRY(alive(c, "cudaStreamSynchronize"));
    PB_CHECK(!c->open, PB_ERR_ENV, "cudaStreamSynchronize: invalid usage: a group is open on this thread and its "
                                   "operations start only at ncclGroupEnd, so this wait never ends on a GPU");
    int refusal = pb_rehearse_device_refusal();
    if (refusal != PB_OK) return refusal; /* said where it happened (may_synchronise) */
    return pb_rehearse_queue_drain(c->stream, "cudaStreamSynchronize of a communicator's stream");
}

static void version(char *buf, size_t len)
{
    char lib[200];
    mpi()->version(lib, sizeof lib);
    snprintf(buf, len, "NCCL rehearsal on %s (ordering rules only, host memory)", lib);
}

static const pb_comm_backend rehearse_backend = {
    .name = "nccl-rehearse", .mem = PB_MEM_HOST, .threads_call_mpi = 1,
    .comm_create = create, .comm_destroy = destroy, .rank = rank_of, .size = size_of,
    .alloc = pb_rehearse_device_alloc, .free = pb_rehearse_device_free, .to_host = pb_rehearse_device_to_host,
    .from_host = pb_rehearse_device_from_host,
    .allreduce = allreduce, .allgather = allgather, .reducescatter = reducescatter,
    .broadcast = broadcast, .reduce = reduce, .alltoall = alltoall,
    .group_start = group_start, .group_end = group_end, .send = send, .recv = recv,
    .sync = sync_stream, .version = version,
};

const pb_comm_backend *pb_comm_backend_nccl_rehearse(void) { return &rehearse_backend; }
