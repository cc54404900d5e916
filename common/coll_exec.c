#include "coll_exec.h"

#include "error.h"

#include <math.h>

static int splits_buffer(pb_coll c)
{
    return c == PB_COLL_ALLGATHER || c == PB_COLL_REDUCESCATTER || c == PB_COLL_ALLTOALL;
}

void pb_coll_shape_of(pb_coll c, size_t bytes, pb_dtype t, int nranks, pb_coll_shape *out)
{
    size_t n = (size_t)nranks, count = bytes / pb_dtype_size(t);
    if (count == 0) count = 1;
    if (splits_buffer(c)) {
        count -= count % n;
        if (count == 0) count = n;
    }
    out->count = count;
    out->bytes = count * pb_dtype_size(t);
    out->send_count = out->recv_count = out->param = count;
    switch (c) {
    case PB_COLL_ALLGATHER: out->send_count = out->param = count / n; break;
    case PB_COLL_REDUCESCATTER: out->recv_count = out->param = count / n; break;
    case PB_COLL_ALLTOALL: out->param = count / n; break;
    default: break;
    }
}

int pb_coll_issue(const pb_backend *b, pb_comm *comm, pb_coll c, const pb_coll_shape *sh, const void *send,
                  void *recv, pb_dtype t, pb_redop op, int root)
{
    switch (c) {
    case PB_COLL_ALLREDUCE: return b->allreduce(comm, send, recv, sh->param, t, op);
    case PB_COLL_ALLGATHER: return b->allgather(comm, send, recv, sh->param, t);
    case PB_COLL_REDUCESCATTER: return b->reducescatter(comm, send, recv, sh->param, t, op);
    case PB_COLL_BROADCAST: return b->broadcast(comm, send, recv, sh->param, t, root);
    case PB_COLL_REDUCE: return b->reduce(comm, send, recv, sh->param, t, op, root);
    case PB_COLL_ALLTOALL: return b->alltoall(comm, send, recv, sh->param, t);
    case PB_COLL_SENDRECV: {
        int me = b->rank(comm), n = b->size(comm);
        PB_TRY(b->group_start(comm));
        PB_TRY(b->send(comm, send, sh->param, t, (me + 1) % n));
        PB_TRY(b->recv(comm, recv, sh->param, t, (me - 1 + n) % n));
        return b->group_end(comm);
    }
    default: return pb_fail(PB_ERR_USAGE, "collective %d is not implemented", (int)c);
    }
}

double pb_coll_input_value(int rank, size_t i) { return (double)(((size_t)rank + 2 * i) % 3) - 1.0; }

/* Which global element a rank's send element j stands for. */
static size_t send_index(pb_coll c, const pb_coll_shape *sh, int rank, size_t j)
{
    return c == PB_COLL_ALLGATHER ? (size_t)rank * sh->send_count + j : j;
}

void pb_coll_fill(pb_coll c, const pb_coll_shape *sh, pb_dtype t, int rank, int nranks, int root, void *host_send)
{
    (void)nranks;
    (void)root;
    for (size_t j = 0; j < sh->send_count; j++)
        pb_dtype_set(t, host_send, j, pb_coll_input_value(rank, send_index(c, sh, rank, j)));
}

static double reduce_over_ranks(pb_redop op, int nranks, size_t i)
{
    double acc = pb_coll_input_value(0, i);
    for (int r = 1; r < nranks; r++) {
        double v = pb_coll_input_value(r, i);
        acc = op == PB_SUM ? acc + v : op == PB_MAX ? fmax(acc, v) : fmin(acc, v);
    }
    return acc;
}

/* The exact value of this rank's output element j. */
static double expected(pb_coll c, const pb_coll_shape *sh, pb_redop op, int rank, int nranks, int root, size_t j)
{
    size_t chunk = sh->count / (size_t)nranks;
    switch (c) {
    case PB_COLL_ALLREDUCE:
    case PB_COLL_REDUCE: return reduce_over_ranks(op, nranks, j);
    case PB_COLL_REDUCESCATTER: return reduce_over_ranks(op, nranks, (size_t)rank * chunk + j);
    case PB_COLL_ALLGATHER: return pb_coll_input_value((int)(j / chunk), j);
    case PB_COLL_BROADCAST: return pb_coll_input_value(root, j);
    case PB_COLL_ALLTOALL: /* block q of my output is block `rank` of q's input */
        return pb_coll_input_value((int)(j / chunk), (size_t)rank * chunk + j % chunk);
    case PB_COLL_SENDRECV: return pb_coll_input_value((rank - 1 + nranks) % nranks, j);
    default: return NAN;
    }
}

double pb_coll_tolerance(pb_dtype t, int nranks)
{
    /* Integers up to 2^(mantissa bits + 1) are exact: no tolerance below that. */
    int exact_limit = t == PB_BFLOAT16 ? 256 : t == PB_FLOAT16 ? 2048 : 1 << 24;
    double eps = t == PB_BFLOAT16 ? 0x1p-8 : t == PB_FLOAT16 ? 0x1p-11 : 0x1p-24;
    return nranks <= exact_limit ? 0.0 : nranks * eps * nranks;
}

size_t pb_coll_count_wrong(pb_coll c, const pb_coll_shape *sh, pb_dtype t, pb_redop op, int rank, int nranks,
                           int root, const void *host_recv)
{
    if (c == PB_COLL_REDUCE && rank != root) return 0;
    double tol = pb_coll_tolerance(t, nranks);
    size_t wrong = 0;
    for (size_t j = 0; j < sh->recv_count; j++) {
        double got = pb_dtype_get(t, host_recv, j);
        double want = expected(c, sh, op, rank, nranks, root, j);
        if (!(fabs(got - want) <= tol)) wrong++; /* also catches NaN */
    }
    return wrong;
}
