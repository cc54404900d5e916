/* MPI backend on device buffers (`--backend mpi --mem device`): buffers live
 * in GPU memory, and every operation is staged through pinned host memory
 * around the host MPI backend (pb_comm_backend_mpi(), called through its table, so
 * no MPI traffic code is duplicated here). This lets several ranks share one
 * GPU for compute, which NCCL refuses ("Duplicate GPU detected").
 *
 * Collectives: device -> pinned host, the host collective (which completes in
 * the call), pinned host -> device, so they are complete on return.
 * send/recv: a send is staged to the host when posted; a receive lands in a
 * pinned buffer and reaches the device at sync(). Each posted operation owns
 * a pinned slot until sync(); slots are kept and grown, never freed per
 * message, so steady-state timing includes no cudaMallocHost.
 *
 * Copies run on the communicator's own non-blocking stream, so device data a
 * caller hands over must be complete (synchronize the compute engine first),
 * exactly as with the NCCL backend. The GPU is the current device. */
#include "backend/comm.h"

#include "backend/cuda_status.h"
#include "backend/gpu.h"
#include "core/error.h"
#include "core/grow.h"
#include "core/world.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct staging {
    void *host; /* pinned */
    size_t cap;
} staging;

typedef struct p2p_op {
    staging buf; /* kept across syncs: slot i is reused by the i-th op of the next round */
    void *dev;   /* receive destination, NULL for a send */
    size_t bytes;
} p2p_op;

struct pb_comm {
    pb_comm *host; /* the host MPI backend's communicator */
    cudaStream_t stream;
    staging sbuf, rbuf; /* collectives */
    p2p_op *ops;
    int nops, cap;
};

static const pb_comm_backend *H(void) { return pb_comm_backend_mpi(); }

/* Make `s` hold at least `bytes` (contents not kept); grows at least 2x so a
 * rising size sweep reallocates O(log) times. */
static int reserve(staging *s, size_t bytes)
{
    if (bytes <= s->cap && s->host) return PB_OK;
    size_t cap = s->cap * 2 > bytes ? s->cap * 2 : bytes;
    if (cap < 4096) cap = 4096;
    if (s->host) cudaFreeHost(s->host);
    s->host = NULL;
    s->cap = 0;
    cudaError_t e = cudaMallocHost(&s->host, cap);
    if (e != cudaSuccess) {
        s->host = NULL;
        (void)cudaGetLastError();
        return pb_fail(PB_ERR_ENV, "cudaMallocHost of %zu bytes (pinned staging buffer): %s", cap,
                       cudaGetErrorString(e));
    }
    s->cap = cap;
    return PB_OK;
}

static void release(staging *s)
{
    if (s->host) cudaFreeHost(s->host);
    s->host = NULL;
    s->cap = 0;
}

static int d2h(pb_comm *c, void *host, const void *dev, size_t bytes)
{
    if (!bytes) return PB_OK;
    PB_CUDA_TRY(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, c->stream), "cudaMemcpyAsync (staging device to host)");
    PB_CUDA_TRY(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize (staging device to host)");
    return PB_OK;
}

static int h2d(pb_comm *c, void *dev, const void *host, size_t bytes)
{
    if (!bytes) return PB_OK;
    PB_CUDA_TRY(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, c->stream), "cudaMemcpyAsync (staging host to device)");
    PB_CUDA_TRY(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize (staging host to device)");
    return PB_OK;
}

static void destroy(pb_comm *c)
{
    if (!c) return;
    if (c->stream) {
        cudaStreamSynchronize(c->stream);
        cudaStreamDestroy(c->stream);
    }
    release(&c->sbuf);
    release(&c->rbuf);
    for (int i = 0; i < c->cap; i++) release(&c->ops[i].buf);
    free(c->ops);
    if (c->host) H()->comm_destroy(c->host);
    free(c);
}

/* Collective over `group`: every rank learns whether any rank failed, so no
 * rank goes on to communicate with one that gave up. */
static int create(MPI_Comm group, pb_comm **out)
{
    pb_comm *c = calloc(1, sizeof *c);
    int status = pb_world_agree_at(group, c ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory for a communicator"), "comm");
    if (status == PB_OK && c) status = H()->comm_create(group, &c->host); /* agrees itself, and counts this one (comm_count.h) */
    if (status != PB_OK || !c) { /* !c implies a failed agreement; said for the analyzer */
        free(c);
        return status;
    }
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        status = pb_fail(PB_ERR_ENV, "--backend mpi --mem device: no usable GPU (%s)",
                         e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    } else {
        e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
        if (e != cudaSuccess) {
            c->stream = NULL;
            status = pb_cuda_status_fail_at(e, __FILE__, __LINE__, "cudaStreamCreateWithFlags (staging stream)");
        }
    }
    status = pb_world_agree_at(group, status, "comm");
    if (status != PB_OK) {
        destroy(c);
        return status;
    }
    *out = c;
    return PB_OK;
}

static int rank_of(const pb_comm *c) { return H()->rank(c->host); }
static int size_of(const pb_comm *c) { return H()->size(c->host); }

static int dev_alloc(size_t bytes, void **out)
{
    *out = NULL;
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        *out = NULL;
        (void)cudaGetLastError();
        return pb_fail(PB_ERR_ENV, "cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
    }
    return PB_OK;
}

static void dev_free(void *p)
{
    if (p) cudaFree(p);
}

static int to_host(void *host, const void *dev, size_t bytes)
{
    if (bytes) PB_CUDA_TRY(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (device to host)");
    return PB_OK;
}

/* Complete on return (pb_gpu_from_host): the staging copies of the next
 * operation run on this communicator's non-blocking stream, which a plain
 * cudaMemcpy from pageable memory (legacy stream, may return before the data
 * has landed) would not be ordered before. */
static int from_host(void *dev, const void *host, size_t bytes) { return pb_gpu_from_host(dev, host, bytes); }

/* The common shape: `sbytes` of `s` to the host, the host call on the
 * staging buffers, `rbytes` back into `r` when `copy_back`. Separate host
 * buffers always work, whatever the device buffers' overlap; `one_buffer`
 * (allreduce and the root's reduce, in place on the device) passes the same
 * host buffer twice so that the host backend takes its MPI_IN_PLACE path, the
 * algorithm an in-place run means to time. */
typedef int (*host_call)(pb_comm *host, const void *s, void *r, const void *args);

static int staged(pb_comm *c, const void *s, size_t sbytes, void *r, size_t rbytes, int one_buffer, int copy_back,
                  host_call fn, const void *args)
{
    PB_TRY(reserve(&c->rbuf, one_buffer && sbytes > rbytes ? sbytes : rbytes));
    void *hr = c->rbuf.host, *hs = hr;
    if (!one_buffer) {
        PB_TRY(reserve(&c->sbuf, sbytes));
        hs = c->sbuf.host;
    }
    PB_TRY(d2h(c, hs, s, sbytes));
    PB_TRY(fn(c->host, hs, hr, args));
    return copy_back ? h2d(c, r, hr, rbytes) : PB_OK;
}

typedef struct coll_args {
    size_t count;
    pb_dtype t;
    pb_dtype_redop op;
    int root;
} coll_args;

static int h_allreduce(pb_comm *h, const void *s, void *r, const void *a)
{
    const coll_args *x = a;
    return H()->allreduce(h, s, r, x->count, x->t, x->op);
}
static int h_allgather(pb_comm *h, const void *s, void *r, const void *a)
{
    const coll_args *x = a;
    return H()->allgather(h, s, r, x->count, x->t);
}
static int h_reducescatter(pb_comm *h, const void *s, void *r, const void *a)
{
    const coll_args *x = a;
    return H()->reducescatter(h, s, r, x->count, x->t, x->op);
}
static int h_broadcast(pb_comm *h, const void *s, void *r, const void *a)
{
    const coll_args *x = a;
    return H()->broadcast(h, s, r, x->count, x->t, x->root);
}
static int h_reduce(pb_comm *h, const void *s, void *r, const void *a)
{
    const coll_args *x = a;
    return H()->reduce(h, s, r, x->count, x->t, x->op, x->root);
}
static int h_alltoall(pb_comm *h, const void *s, void *r, const void *a)
{
    const coll_args *x = a;
    return H()->alltoall(h, s, r, x->count, x->t);
}

static int allreduce(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, pb_dtype_redop op)
{
    coll_args a = {count, t, op, 0};
    size_t b = count * pb_dtype_size(t);
    return staged(c, s, b, r, b, s == r, 1, h_allreduce, &a);
}

static int allgather(pb_comm *c, const void *s, void *r, size_t sendcount, pb_dtype t)
{
    coll_args a = {sendcount, t, PB_SUM, 0};
    size_t b = sendcount * pb_dtype_size(t);
    /* Never in place on the host: separate staging buffers even when the
     * device send buffer lies inside the receive buffer. */
    PB_TRY(reserve(&c->sbuf, b));
    PB_TRY(reserve(&c->rbuf, b * (size_t)size_of(c)));
    PB_TRY(d2h(c, c->sbuf.host, s, b));
    PB_TRY(h_allgather(c->host, c->sbuf.host, c->rbuf.host, &a));
    return h2d(c, r, c->rbuf.host, b * (size_t)size_of(c));
}

static int reducescatter(pb_comm *c, const void *s, void *r, size_t recvcount, pb_dtype t, pb_dtype_redop op)
{
    coll_args a = {recvcount, t, op, 0};
    size_t b = recvcount * pb_dtype_size(t);
    PB_TRY(reserve(&c->sbuf, b * (size_t)size_of(c)));
    PB_TRY(reserve(&c->rbuf, b));
    PB_TRY(d2h(c, c->sbuf.host, s, b * (size_t)size_of(c)));
    PB_TRY(h_reducescatter(c->host, c->sbuf.host, c->rbuf.host, &a));
    return h2d(c, r, c->rbuf.host, b);
}

static int broadcast(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, int root)
{
    /* One host buffer: the root stages its send buffer into it, every rank
     * broadcasts it in place and copies it to its receive buffer. */
    coll_args a = {count, t, PB_SUM, root};
    size_t b = count * pb_dtype_size(t);
    PB_TRY(reserve(&c->rbuf, b));
    if (rank_of(c) == root) PB_TRY(d2h(c, c->rbuf.host, s, b));
    PB_TRY(h_broadcast(c->host, c->rbuf.host, c->rbuf.host, &a));
    return h2d(c, r, c->rbuf.host, b);
}

static int reduce(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t, pb_dtype_redop op, int root)
{
    coll_args a = {count, t, op, root};
    size_t b = count * pb_dtype_size(t);
    /* Only the root's receive buffer is written, as with MPI_Reduce. */
    int root_here = rank_of(c) == root;
    return staged(c, s, b, r, b, s == r && root_here, root_here, h_reduce, &a);
}

static int alltoall(pb_comm *c, const void *s, void *r, size_t count, pb_dtype t)
{
    coll_args a = {count, t, PB_SUM, 0};
    size_t b = count * pb_dtype_size(t) * (size_t)size_of(c);
    return staged(c, s, b, r, b, 0, 1, h_alltoall, &a);
}

static int group_start(pb_comm *c) { return H()->group_start(c->host); }
static int group_end(pb_comm *c) { return H()->group_end(c->host); }

/* The next p2p slot with at least `bytes` of pinned memory. A slot is only
 * taken (nops incremented) once its operation has been posted. */
static int next_slot(pb_comm *c, size_t bytes, p2p_op **out)
{
    p2p_op *o = pb_grow(c->ops, &c->cap, c->nops, sizeof *o, 16); /* new slots zeroed: no pinned buffer yet */
    if (!o) { /* explicit return: the analyzer cannot see that pb_fail returns its status */
        pb_fail(PB_ERR_ENV, "out of memory for %d staged point-to-point operations", c->nops + 1);
        return PB_ERR_ENV;
    }
    c->ops = o;
    p2p_op *op = &c->ops[c->nops];
    PB_TRY(reserve(&op->buf, bytes));
    *out = op;
    return PB_OK;
}

static int send(pb_comm *c, const void *buf, size_t count, pb_dtype t, int peer)
{
    size_t b = count * pb_dtype_size(t);
    p2p_op *op = NULL;
    PB_TRY(next_slot(c, b, &op));
    PB_TRY(d2h(c, op->buf.host, buf, b));
    PB_TRY(H()->send(c->host, op->buf.host, count, t, peer));
    op->dev = NULL;
    op->bytes = b;
    c->nops++;
    return PB_OK;
}

static int recv(pb_comm *c, void *buf, size_t count, pb_dtype t, int peer)
{
    size_t b = count * pb_dtype_size(t);
    p2p_op *op = NULL;
    PB_TRY(next_slot(c, b, &op));
    PB_TRY(H()->recv(c->host, op->buf.host, count, t, peer));
    op->dev = buf;
    op->bytes = b;
    c->nops++;
    return PB_OK;
}

/* Wait for the host requests, then move every received message to its device
 * buffer. The round ends even on failure, so a later sync starts clean. */
static int sync_all(pb_comm *c)
{
    int status = H()->sync(c->host);
    for (int i = 0; i < c->nops && status == PB_OK; i++)
        if (c->ops[i].dev && c->ops[i].bytes)
            status = h2d(c, c->ops[i].dev, c->ops[i].buf.host, c->ops[i].bytes);
    c->nops = 0;
    return status;
}

static void version(char *buf, size_t len)
{
    char v[256];
    H()->version(v, sizeof v);
    int rt = 0;
    if (cudaRuntimeGetVersion(&rt) != cudaSuccess) (void)cudaGetLastError();
    snprintf(buf, len, "%s, device buffers staged through pinned host memory (CUDA runtime %d.%d)", v, rt / 1000,
             rt % 1000 / 10);
}

static const pb_comm_backend mpi_device_backend = {
    .name = "mpi", .mem = PB_MEM_DEVICE,
    .comm_create = create, .comm_destroy = destroy, .rank = rank_of, .size = size_of,
    .alloc = dev_alloc, .free = dev_free, .to_host = to_host, .from_host = from_host,
    .allreduce = allreduce, .allgather = allgather, .reducescatter = reducescatter,
    .broadcast = broadcast, .reduce = reduce, .alltoall = alltoall,
    .group_start = group_start, .group_end = group_end, .send = send, .recv = recv,
    .sync = sync_all, .version = version,
};

const pb_comm_backend *pb_comm_backend_mpi_device(void) { return &mpi_device_backend; }
