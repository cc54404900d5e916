/* MPI backend: buffers in host memory, collectives through the MPI library.
 * MPI has no bf16/fp16 reductions, so those use user-defined ops that reduce
 * in fp32 and round once (pb_dtype_reduce_local), as NCCL does. */
#include "backend/comm.h"

#include "backend/comm_count.h"
#include "core/error.h"
#include "core/faults.h"
#include "core/grow.h"
#include "core/world.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct pb_comm {
    MPI_Comm comm;
    int rank, size;
    MPI_Request *reqs; /* posted sends/receives, completed by sync */
    int nreq, cap;
};

#define USER_OP(dtype, op)                                                                         \
    static void user_##dtype##_##op(void *in, void *inout, int *len, MPI_Datatype *type)           \
    {                                                                                              \
        (void)type;                                                                                \
        pb_dtype_reduce_local(dtype, op, in, inout, (size_t)*len);                                       \
    }
USER_OP(PB_BFLOAT16, PB_SUM)
USER_OP(PB_BFLOAT16, PB_MAX)
USER_OP(PB_BFLOAT16, PB_MIN)
USER_OP(PB_FLOAT16, PB_SUM)
USER_OP(PB_FLOAT16, PB_MAX)
USER_OP(PB_FLOAT16, PB_MIN)

static MPI_Datatype mpi_type(pb_dtype t)
{
    switch (t) {
    case PB_FLOAT32: return MPI_FLOAT;
    case PB_INT32: return MPI_INT32_T;
    case PB_BYTE: return MPI_BYTE;
    default: return MPI_UINT16_T; /* bf16 and fp16 travel as 16-bit words */
    }
}

static MPI_Op mpi_op(pb_dtype t, pb_dtype_redop op)
{
    static MPI_Op user[2][PB_REDOP_COUNT]; /* [bf16, fp16][op], created on first use */
    static MPI_User_function *const fns[2][PB_REDOP_COUNT] = {
        {user_PB_BFLOAT16_PB_SUM, user_PB_BFLOAT16_PB_MAX, user_PB_BFLOAT16_PB_MIN},
        {user_PB_FLOAT16_PB_SUM, user_PB_FLOAT16_PB_MAX, user_PB_FLOAT16_PB_MIN}};
    if (t == PB_FLOAT32 || t == PB_INT32) return op == PB_SUM ? MPI_SUM : op == PB_MAX ? MPI_MAX : MPI_MIN;
    int k = t == PB_BFLOAT16 ? 0 : 1;
    if (user[k][op] == 0 || user[k][op] == MPI_OP_NULL) MPI_Op_create(fns[k][op], 1, &user[k][op]);
    return user[k][op];
}

/* MPI counts are ints; larger buffers are refused rather than silently truncated. */
static int int_count(size_t count, int *out)
{
    if (count > INT_MAX)
        return pb_fail(PB_ERR_USAGE, "count %zu exceeds MPI's int limit (%d elements); use a smaller size",
                       count, INT_MAX);
    *out = (int)count;
    return PB_OK;
}

static int check(int rc, const char *what)
{
    if (rc == MPI_SUCCESS) return PB_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return pb_fail(PB_ERR_ENV, "%s failed: %s", what, msg);
}

/* Collective over `group`, agreed before the collective MPI_Comm_dup: a rank
 * that failed does not leave its peers waiting in it. */
static int create(MPI_Comm group, pb_comm **out)
{
    pb_comm *c = pb_faults_fail("comm") ? NULL : calloc(1, sizeof *c);
    int status = c ? pb_comm_count_admit() : pb_fail(PB_ERR_ENV, "out of memory for a communicator");
    status = pb_world_agree_at(group, status, "comm");
    if (status != PB_OK || !c) { /* !c implies a failed agreement; said for the analyzer */
        free(c);
        return status;
    }
    MPI_Comm_dup(group, &c->comm);
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    pb_comm_count_add(0, 0);
    *out = c;
    return PB_OK;
}

static void destroy(pb_comm *c)
{
    if (!c) return;
    pb_comm_count_remove(0);
    MPI_Comm_free(&c->comm);
    free(c->reqs);
    free(c);
}

static int rank_of(const pb_comm *c) { return c->rank; }
static int size_of(const pb_comm *c) { return c->size; }

static int host_alloc(size_t bytes, void **out)
{
    /* Page-aligned, as pinned or registered memory would be. */
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0)
        return pb_fail(PB_ERR_ENV, "out of host memory allocating %zu bytes", bytes);
    *out = p;
    return PB_OK;
}

static void host_free(void *p) { free(p); }

static int host_copy(void *dst, const void *src, size_t bytes)
{
    memmove(dst, src, bytes);
    return PB_OK;
}

static int allreduce(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, pb_dtype_redop op)
{
    int n = 0;
    PB_TRY(int_count(count, &n));
    return check(MPI_Allreduce(s == r ? MPI_IN_PLACE : s, r, n, mpi_type(t), mpi_op(t, op), c->comm),
                 "MPI_Allreduce");
}

static int allgather(pb_comm *c, const void *s, void *r, size_t sendcount, pb_dtype t)
{
    int n = 0;
    PB_TRY(int_count(sendcount, &n));
    return check(MPI_Allgather(s, n, mpi_type(t), r, n, mpi_type(t), c->comm), "MPI_Allgather");
}

static int reducescatter(pb_comm *c, const void *s, void *r, size_t recvcount, pb_dtype t, pb_dtype_redop op)
{
    int n = 0;
    PB_TRY(int_count(recvcount, &n));
    return check(MPI_Reduce_scatter_block(s, r, n, mpi_type(t), mpi_op(t, op), c->comm),
                 "MPI_Reduce_scatter_block");
}

static int broadcast(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, int root)
{
    int n = 0;
    PB_TRY(int_count(count, &n));
    if (c->rank == root && s != r) memcpy(r, s, count * pb_dtype_size(t));
    return check(MPI_Bcast(r, n, mpi_type(t), root, c->comm), "MPI_Bcast");
}

static int reduce(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, pb_dtype_redop op, int root)
{
    int n = 0;
    PB_TRY(int_count(count, &n));
    const void *src = (s == r && c->rank == root) ? MPI_IN_PLACE : s;
    return check(MPI_Reduce(src, r, n, mpi_type(t), mpi_op(t, op), root, c->comm), "MPI_Reduce");
}

static int alltoall(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t)
{
    int n = 0;
    PB_TRY(int_count(count, &n));
    return check(MPI_Alltoall(s, n, mpi_type(t), r, n, mpi_type(t), c->comm), "MPI_Alltoall");
}

static int no_group(pb_comm *c) { return PB_OK; }

static int next_request(pb_comm *c, MPI_Request **out)
{
    MPI_Request *r = pb_grow(c->reqs, &c->cap, c->nreq, sizeof(MPI_Request), 64);
    PB_CHECK(r, PB_ERR_ENV, "out of memory for %d requests", c->nreq + 1);
    c->reqs = r;
    *out = &c->reqs[c->nreq++];
    return PB_OK;
}

static int send(pb_comm *c, const void *buf, size_t count, pb_dtype t, int peer)
{
    int n = 0;
    MPI_Request *req = NULL;
    PB_TRY(int_count(count, &n));
    PB_TRY(next_request(c, &req));
    return check(MPI_Isend(buf, n, mpi_type(t), peer, 0, c->comm, req), "MPI_Isend");
}

static int recv(pb_comm *c, void *buf, size_t count, pb_dtype t, int peer)
{
    int n = 0;
    MPI_Request *req = NULL;
    PB_TRY(int_count(count, &n));
    PB_TRY(next_request(c, &req));
    return check(MPI_Irecv(buf, n, mpi_type(t), peer, 0, c->comm, req), "MPI_Irecv");
}

static int send_blocking(pb_comm *c, const void *buf, size_t count, pb_dtype t, int peer)
{
    int n = 0;
    PB_TRY(int_count(count, &n));
    return check(MPI_Send(buf, n, mpi_type(t), peer, 0, c->comm), "MPI_Send");
}

static int recv_blocking(pb_comm *c, void *buf, size_t count, pb_dtype t, int peer)
{
    int n = 0;
    PB_TRY(int_count(count, &n));
    return check(MPI_Recv(buf, n, mpi_type(t), peer, 0, c->comm, MPI_STATUS_IGNORE), "MPI_Recv");
}

static int sync_all(pb_comm *c)
{
    if (c->nreq == 0) return PB_OK;
    int rc = MPI_Waitall(c->nreq, c->reqs, MPI_STATUSES_IGNORE);
    c->nreq = 0;
    return check(rc, "MPI_Waitall");
}

static void version(char *buf, size_t len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    MPI_Get_library_version(v, &n);
    char *comma = strchr(v, ',');
    if (comma) *comma = '\0'; /* "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4" */
    snprintf(buf, len, "%s", v);
}

static const pb_comm_backend mpi_backend = {
    .name = "mpi", .mem = PB_MEM_HOST, .broadcast_in_place = 1,
    .comm_create = create, .comm_destroy = destroy, .rank = rank_of, .size = size_of,
    .alloc = host_alloc, .free = host_free, .to_host = host_copy, .from_host = host_copy,
    .allreduce = allreduce, .allgather = allgather, .reducescatter = reducescatter,
    .broadcast = broadcast, .reduce = reduce, .alltoall = alltoall,
    .group_start = no_group, .group_end = no_group, .send = send, .recv = recv,
    .send_blocking = send_blocking, .recv_blocking = recv_blocking, .sync = sync_all, .version = version,
};

const pb_comm_backend *pb_comm_backend_mpi(void) { return &mpi_backend; }
