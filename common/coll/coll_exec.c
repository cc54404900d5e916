#include "coll/coll_exec.h"

#include "coll/coll_expect.h"
#include "core/error.h"

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

double pb_coll_input_value(int rank, size_t i) { return pb_cx_input(rank, i); }

/* The per-element arithmetic lives in coll_expect.h, which the device check
 * (coll_check_cuda.cu) compiles too: these loops are the host's use of it. */
void pb_coll_fill(pb_coll c, const pb_coll_shape *sh, pb_dtype t, int rank, int nranks, int root, void *host_send)
{
    (void)root;
    for (size_t j = 0; j < sh->send_count; j++)
        pb_dtype_set(t, host_send, j, pb_cx_send_value(c, sh->count, nranks, rank, j));
}

double pb_coll_tolerance(pb_dtype t, int nranks) { return pb_cx_tolerance(t, nranks); }

size_t pb_coll_count_wrong(pb_coll c, const pb_coll_shape *sh, pb_dtype t, pb_redop op, int rank, int nranks,
                           int root, const void *host_recv)
{
    if (!pb_cx_output_defined(c, rank, root)) return 0;
    if (!pb_cx_known(c)) return sh->recv_count; /* no known answer: nothing can be right */
    double tol = pb_cx_tolerance(t, nranks);
    size_t wrong = 0;
    for (size_t j = 0; j < sh->recv_count; j++) {
        double want = pb_cx_expected(c, op, sh->count, nranks, rank, root, j);
        wrong += (size_t)pb_cx_is_wrong(pb_dtype_get(t, host_recv, j), want, tol); /* NaN is wrong */
    }
    return wrong;
}
