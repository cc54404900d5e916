/* The collective table: one descriptor per collective (coll.h). A new
 * collective adds its row here, its enum value in coll.h and its expected
 * value in coll_expect.h; nothing else switches on pb_coll (but the device
 * check's pb_coll_expect_expected, which cannot call the table). */
#include "coll/coll.h"

#include "backend/comm.h"
#include "coll/coll_exec.h"
#include "coll/coll_expect.h"
#include "coll/coll_alltoallv.h"
#include "coll/coll_skew.h"
#include "core/error.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* busbw factors: the nccl-tests definitions (docs/METRICS.md). */
static double bus_twice_ring(int n) { return 2.0 * (n - 1.0) / n; }
static double bus_ring(int n) { return (n - 1.0) / n; }
static double bus_one(int n) { return 1.0; }

/* Cost terms: ring allreduce 2(n-1) steps moving 2(n-1)/n of the buffer; ring
 * allgather / reducescatter (and pairwise alltoall: same terms) n-1 steps and
 * (n-1)/n; binomial tree ceil(log2 n) rounds of the whole buffer; one p2p. */
static pb_coll_cost cost_twice_ring(int n)
{
    return n <= 1 ? (pb_coll_cost){0, 0} : (pb_coll_cost){2.0 * (n - 1), 2.0 * (n - 1) / n};
}

static pb_coll_cost cost_ring(int n)
{
    return n <= 1 ? (pb_coll_cost){0, 0} : (pb_coll_cost){n - 1.0, (n - 1.0) / n};
}

static pb_coll_cost cost_tree(int n)
{
    double depth = n <= 1 ? 0.0 : ceil(log2((double)n));
    return (pb_coll_cost){depth, depth};
}

static pb_coll_cost cost_p2p(int n) { return (pb_coll_cost){1, 1}; }

/* How each collective calls the backend (counts: coll_exec.h). */
#define ISSUE_ARGS                                                                                                    \
    const pb_comm_backend *b, pb_comm *comm, const pb_coll_exec_shape *sh, const void *send, void *recv, pb_dtype t,            \
        pb_dtype_redop op, int root

static int issue_allreduce(ISSUE_ARGS) { return b->allreduce(comm, send, recv, sh->param, t, op); }
static int issue_allgather(ISSUE_ARGS) { return b->allgather(comm, send, recv, sh->param, t); }
static int issue_reducescatter(ISSUE_ARGS) { return b->reducescatter(comm, send, recv, sh->param, t, op); }
static int issue_broadcast(ISSUE_ARGS) { return b->broadcast(comm, send, recv, sh->param, t, root); }
static int issue_reduce(ISSUE_ARGS) { return b->reduce(comm, send, recv, sh->param, t, op, root); }
static int issue_alltoall(ISSUE_ARGS) { return b->alltoall(comm, send, recv, sh->param, t); }

/* Send to rank+1, receive from rank-1, as nccl-tests' sendrecv. */
static int issue_sendrecv(ISSUE_ARGS)
{
    int me = b->rank(comm), n = b->size(comm);
    PB_TRY(b->group_start(comm));
    PB_TRY(b->send(comm, send, sh->param, t, (me + 1) % n));
    PB_TRY(b->recv(comm, recv, sh->param, t, (me - 1 + n) % n));
    return b->group_end(comm);
}

/* Uneven all-to-all (coll_alltoallv.h): every sender sends count_to(d)
 * elements to d (coll_skew.h), so this rank receives nranks blocks of
 * count_to(me), in rank order. */
typedef struct skewed {
    size_t count;
    int n;
    double skew;
} skewed;

static size_t skewed_to(const void *ctx, int d)
{
    const skewed *k = ctx;
    return pb_coll_skew_count_to(k->count, k->n, k->skew, d);
}

static int issue_alltoallv(ISSUE_ARGS)
{
    skewed k = {sh->count, b->size(comm), sh->skew};
    return pb_coll_alltoallv(b, comm, send, recv, t, skewed_to, &k, 0);
}

#define FULL PB_SPAN_FULL
#define CHUNK PB_SPAN_CHUNK
#define NONE PB_IN_PLACE_NONE
#define SAME PB_IN_PLACE_SAME

/* One row per collective, by field name; a field left out is 0: no reduction
 * op, no root, every rank's output defined, two buffers for a broadcast. */
static const pb_coll_desc table[] = {
    [PB_COLL_ALLREDUCE] = {
        .name = "allreduce", .busbw = bus_twice_ring, .algo = PB_ALGO_RING, .cost = cost_twice_ring,
        .has_op = 1, .send = FULL, .recv = FULL, .param = FULL, .in_place = SAME,
        .issue = issue_allreduce, .expected = pb_coll_expect_allreduce,
    },
    [PB_COLL_ALLGATHER] = {
        .name = "allgather", .busbw = bus_ring, .algo = PB_ALGO_RING, .cost = cost_ring,
        .send = CHUNK, .recv = FULL, .param = CHUNK, .in_place = PB_IN_PLACE_SEND_BLOCK,
        .issue = issue_allgather, .expected = pb_coll_expect_allgather,
    },
    [PB_COLL_REDUCESCATTER] = {
        .name = "reducescatter", .busbw = bus_ring, .algo = PB_ALGO_RING, .cost = cost_ring,
        .has_op = 1, .send = FULL, .recv = CHUNK, .param = CHUNK, .in_place = PB_IN_PLACE_RECV_BLOCK,
        .issue = issue_reducescatter, .expected = pb_coll_expect_reducescatter,
    },
    [PB_COLL_BROADCAST] = {
        .name = "broadcast", .busbw = bus_one, .algo = PB_ALGO_TREE, .cost = cost_tree,
        .has_root = 1, .send = FULL, .recv = FULL, .param = FULL, .in_place = SAME, .one_buffer_broadcast = 1,
        .issue = issue_broadcast, .expected = pb_coll_expect_broadcast,
    },
    [PB_COLL_REDUCE] = {
        .name = "reduce", .busbw = bus_one, .algo = PB_ALGO_TREE, .cost = cost_tree,
        .has_op = 1, .has_root = 1, .root_only_output = 1, .send = FULL, .recv = FULL, .param = FULL, .in_place = SAME,
        .issue = issue_reduce, .expected = pb_coll_expect_reduce,
    },
    [PB_COLL_ALLTOALL] = {
        .name = "alltoall", .busbw = bus_ring, .algo = PB_ALGO_PAIRWISE, .cost = cost_ring,
        .send = FULL, .recv = FULL, .param = CHUNK, .in_place = NONE,
        .issue = issue_alltoall, .expected = pb_coll_expect_alltoall,
    },
    [PB_COLL_SENDRECV] = {
        .name = "sendrecv", .busbw = bus_one, .algo = PB_ALGO_P2P, .cost = cost_p2p,
        .send = FULL, .recv = FULL, .param = FULL, .in_place = NONE,
        .issue = issue_sendrecv, .expected = pb_coll_expect_sendrecv,
    },
    [PB_COLL_ALLTOALLV] = {
        .name = "alltoallv", .busbw = bus_ring, .algo = PB_ALGO_PAIRWISE, .cost = cost_ring,
        .send = FULL, .recv = PB_SPAN_SKEWED, .param = FULL, .in_place = NONE,
        .issue = issue_alltoallv, .expected = pb_coll_expect_alltoallv,
    },
};
_Static_assert(sizeof table / sizeof table[0] == PB_COLL_COUNT, "one descriptor per pb_coll");

const pb_coll_desc *pb_coll_desc_of(pb_coll c)
{
    if ((int)c < 0 || c >= PB_COLL_COUNT) return NULL;
    return &table[c];
}

const char *const *pb_coll_names(void)
{
    static const char *names[PB_COLL_COUNT + 1];
    for (int i = 0; i < PB_COLL_COUNT; i++) names[i] = table[i].name;
    return names;
}

const char *pb_coll_name_list(char *buf, size_t size)
{
    size_t used = 0;
    if (size > 0) buf[0] = '\0';
    for (int i = 0; i < PB_COLL_COUNT && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", table[i].name);
    return buf;
}

const char *pb_coll_name(pb_coll c)
{
    const pb_coll_desc *d = pb_coll_desc_of(c);
    return d ? d->name : NULL;
}

int pb_coll_from_name(const char *name, pb_coll *out)
{
    for (int i = 0; name && i < PB_COLL_COUNT; i++) {
        if (strcmp(name, table[i].name) == 0) {
            *out = (pb_coll)i;
            return PB_OK;
        }
    }
    return PB_ERR_USAGE;
}

double pb_coll_busbw_factor(pb_coll c, int nranks)
{
    const pb_coll_desc *d = pb_coll_desc_of(c);
    return d && nranks >= 1 ? d->busbw(nranks) : 0.0;
}

pb_coll_cost pb_coll_cost_of(pb_coll c, int nranks)
{
    const pb_coll_desc *d = pb_coll_desc_of(c);
    return d ? d->cost(nranks) : (pb_coll_cost){0, 0};
}

pb_coll_cost pb_coll_cost_skewed(pb_coll c, int nranks, size_t count, double skew)
{
    pb_coll_cost even = pb_coll_cost_of(c, nranks);
    if (pb_coll_skewed(c) && pb_coll_skew_valid(skew, nranks)) even.bytes *= pb_coll_skew_imbalance(count, nranks, skew);
    return even;
}

int pb_coll_skewed(pb_coll c)
{
    const pb_coll_desc *d = pb_coll_desc_of(c);
    return d && d->recv == PB_SPAN_SKEWED;
}

int pb_coll_splits(pb_coll c)
{
    const pb_coll_desc *d = pb_coll_desc_of(c);
    return d && (d->send != PB_SPAN_FULL || d->recv != PB_SPAN_FULL || d->param != PB_SPAN_FULL);
}

int pb_coll_output_defined(pb_coll c, int rank, int root)
{
    const pb_coll_desc *d = pb_coll_desc_of(c);
    return !d || !d->root_only_output || rank == root;
}
