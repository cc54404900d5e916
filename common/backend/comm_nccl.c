/* NCCL backend: buffers in GPU memory, collectives and send/recv enqueued on
 * one communication stream per communicator; sync() waits for that stream and
 * checks NCCL's asynchronous errors. MPI only hands out the unique id.
 * The GPU is the current device, chosen once per process by pb_gpu_bind.
 * The stream-ordered hooks of comm.h (queue ordering, event spans, CUDA
 * graphs) are all here. */
#include "backend/comm.h"

#include "backend/cuda_status.h"
#include "core/error.h"
#include "core/faults.h"
#include "backend/spans_cuda.h"
#include "core/watchdog.h"
#include "core/world.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>

struct pb_comm {
    ncclComm_t nccl;
    cudaStream_t stream;
    int rank, size;
    cudaEvent_t order;      /* cross-stream ordering (no timing) */
    pb_spans_cuda spans;    /* device time of traffic */
    cudaGraphExec_t graph;  /* the last capture, or NULL */
    int capturing;
};

static int nccl_check(ncclResult_t r, const pb_comm *c, const char *what)
{
    if (r == ncclSuccess || r == ncclInProgress) return PB_OK;
    const char *last = c ? ncclGetLastError(c->nccl) : NULL;
    return pb_fail(PB_ERR_ENV, "%s: %s%s%s", what, ncclGetErrorString(r), last && *last ? ": " : "",
                   last ? last : "");
}

static ncclDataType_t nccl_type(pb_dtype t)
{
    switch (t) {
    case PB_FLOAT32: return ncclFloat32;
    case PB_BFLOAT16: return ncclBfloat16;
    case PB_FLOAT16: return ncclFloat16;
    case PB_INT32: return ncclInt32;
    default: return ncclUint8;
    }
}

static ncclRedOp_t nccl_op(pb_dtype_redop op) { return op == PB_SUM ? ncclSum : op == PB_MAX ? ncclMax : ncclMin; }

/* Watchdog hook: a hung NCCL operation is aborted before MPI_Abort ends the job. */
static void abort_comm(void *arg) { ncclCommAbort(((pb_comm *)arg)->nccl); }

static int create(MPI_Comm group, pb_comm **out)
{
    pb_comm *c = calloc(1, sizeof *c);
    int status = pb_world_agree_at(group, c ? PB_OK : pb_fail(PB_ERR_ENV, "out of memory for a communicator"), "comm");
    if (status != PB_OK || !c) { /* !c implies a failed agreement; said for the analyzer */
        free(c);
        return status;
    }
    MPI_Comm_rank(group, &c->rank);
    MPI_Comm_size(group, &c->size);
    ncclUniqueId id;
    if (c->rank == 0) status = nccl_check(ncclGetUniqueId(&id), NULL, "ncclGetUniqueId");
    status = pb_world_agree_at(group, status, "nccl-id");
    if (status != PB_OK) {
        free(c);
        return status;
    }
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, group);
    cudaError_t e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) status = pb_fail(PB_ERR_ENV, "cudaStreamCreate: %s", cudaGetErrorString(e));
    if (status == PB_OK && (e = cudaEventCreateWithFlags(&c->order, cudaEventDisableTiming)) != cudaSuccess)
        status = pb_fail(PB_ERR_ENV, "cudaEventCreate: %s", cudaGetErrorString(e));
    if (status == PB_OK && pb_faults_fail("nccl-stream"))
        status = pb_fail(PB_ERR_ENV, "cudaStreamCreate: out of memory");
    /* ncclCommInitRank is collective: a rank without a stream must not leave the others in it. */
    status = pb_world_agree_at(group, status, "nccl-stream");
    if (status == PB_OK) status = nccl_check(ncclCommInitRank(&c->nccl, c->size, id, c->rank), NULL, "ncclCommInitRank");
    if (status != PB_OK) {
        if (c->order) cudaEventDestroy(c->order);
        if (c->stream) cudaStreamDestroy(c->stream);
        free(c);
        return status;
    }
    pb_watchdog_on_abort(abort_comm, c);
    *out = c;
    return PB_OK;
}

static void destroy(pb_comm *c)
{
    if (!c) return;
    pb_watchdog_forget(c);
    cudaStreamSynchronize(c->stream);
    if (c->graph) cudaGraphExecDestroy(c->graph); /* its kernels use the communicator */
    ncclCommDestroy(c->nccl);
    pb_spans_cuda_free(&c->spans);
    cudaEventDestroy(c->order);
    cudaStreamDestroy(c->stream);
    free(c);
}

static int rank_of(const pb_comm *c) { return c->rank; }
static int size_of(const pb_comm *c) { return c->size; }

static int dev_alloc(size_t bytes, void **out)
{
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 1);
    if (e != cudaSuccess)
        return pb_fail(PB_ERR_ENV, "cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
    return PB_OK;
}

static void dev_free(void *p) { cudaFree(p); }

static int to_host(void *host, const void *dev, size_t bytes)
{
    PB_CUDA_TRY(cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (device to host)");
    return PB_OK;
}

static int from_host(void *dev, const void *host, size_t bytes)
{
    PB_CUDA_TRY(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (host to device)");
    return PB_OK;
}

static int allreduce(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, pb_dtype_redop op)
{
    return nccl_check(ncclAllReduce(s, r, n, nccl_type(t), nccl_op(op), c->nccl, c->stream), c, "ncclAllReduce");
}

static int allgather(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t)
{
    return nccl_check(ncclAllGather(s, r, n, nccl_type(t), c->nccl, c->stream), c, "ncclAllGather");
}

static int reducescatter(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, pb_dtype_redop op)
{
    return nccl_check(ncclReduceScatter(s, r, n, nccl_type(t), nccl_op(op), c->nccl, c->stream), c,
                      "ncclReduceScatter");
}

static int broadcast(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, int root)
{
    return nccl_check(ncclBroadcast(s, r, n, nccl_type(t), root, c->nccl, c->stream), c, "ncclBroadcast");
}

static int reduce(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t, pb_dtype_redop op, int root)
{
    return nccl_check(ncclReduce(s, r, n, nccl_type(t), nccl_op(op), root, c->nccl, c->stream), c, "ncclReduce");
}

static int alltoall(pb_comm *c, const void *s, void *r, size_t n, pb_dtype t)
{
    return nccl_check(ncclAlltoAll(s, r, n, nccl_type(t), c->nccl, c->stream), c, "ncclAlltoAll");
}

static int group_start(pb_comm *c) { return nccl_check(ncclGroupStart(), c, "ncclGroupStart"); }
static int group_end(pb_comm *c) { return nccl_check(ncclGroupEnd(), c, "ncclGroupEnd"); }

static int send(pb_comm *c, const void *buf, size_t n, pb_dtype t, int peer)
{
    return nccl_check(ncclSend(buf, n, nccl_type(t), peer, c->nccl, c->stream), c, "ncclSend");
}

static int recv(pb_comm *c, void *buf, size_t n, pb_dtype t, int peer)
{
    return nccl_check(ncclRecv(buf, n, nccl_type(t), peer, c->nccl, c->stream), c, "ncclRecv");
}

static int sync_stream(pb_comm *c)
{
    PB_CUDA_TRY(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(c->nccl, &async);
    return nccl_check(async, c, "NCCL asynchronous error");
}

static int after_queue(pb_comm *c, void *queue)
{
    PB_CUDA_TRY(cudaEventRecord(c->order, (cudaStream_t)queue), "cudaEventRecord");
    PB_CUDA_TRY(cudaStreamWaitEvent(c->stream, c->order, 0), "cudaStreamWaitEvent");
    return PB_OK;
}

static int before_queue(pb_comm *c, void *queue)
{
    PB_CUDA_TRY(cudaEventRecord(c->order, c->stream), "cudaEventRecord");
    PB_CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)queue, c->order, 0), "cudaStreamWaitEvent");
    return PB_OK;
}

static int span_begin(pb_comm *c) { return pb_spans_cuda_begin(&c->spans, c->stream); }
static int span_end(pb_comm *c) { return pb_spans_cuda_end(&c->spans, c->stream); }
static int span_take(pb_comm *c, double *us, int *count) { return pb_spans_cuda_take(&c->spans, us, count); }

/* Capture on this thread only (ThreadLocal): MPI and other threads' CUDA
 * calls stay legal while the stream records. */
static int capture_begin(pb_comm *c)
{
    PB_CHECK(!c->capturing, PB_ERR_USAGE, "CUDA graph: a capture is already open");
    PB_CUDA_TRY(cudaStreamSynchronize(c->stream), "cudaStreamSynchronize");
    if (c->graph) cudaGraphExecDestroy(c->graph);
    c->graph = NULL;
    PB_CUDA_TRY(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    c->capturing = 1;
    return PB_OK;
}

static int capture_end(pb_comm *c)
{
    PB_CHECK(c->capturing, PB_ERR_USAGE, "CUDA graph: no capture is open");
    c->capturing = 0;
    cudaGraph_t g = NULL;
    /* Always end the capture, even an invalidated one, so the stream is usable again. */
    cudaError_t e = cudaStreamEndCapture(c->stream, &g);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (g) cudaGraphDestroy(g);
        return pb_fail(PB_ERR_ENV, "cudaStreamEndCapture: %s (an operation could not be captured)",
                       cudaGetErrorString(e));
    }
    e = cudaGraphInstantiate(&c->graph, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        c->graph = NULL;
        (void)cudaGetLastError();
        return pb_fail(PB_ERR_ENV, "cudaGraphInstantiate: %s", cudaGetErrorString(e));
    }
    return PB_OK;
}

static int replay(pb_comm *c)
{
    PB_CHECK(c->graph, PB_ERR_USAGE, "CUDA graph: nothing captured to replay");
    PB_CUDA_TRY(cudaGraphLaunch(c->graph, c->stream), "cudaGraphLaunch");
    return PB_OK;
}

static void version(char *buf, size_t len)
{
    int v = 0;
    ncclGetVersion(&v);
    /* NCCL >= 2.9 encodes major*10000 + minor*100 + patch */
    snprintf(buf, len, "NCCL %d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
}

static const pb_comm_backend nccl_backend = {
    .name = "nccl", .mem = PB_MEM_DEVICE,
    .comm_create = create, .comm_destroy = destroy, .rank = rank_of, .size = size_of,
    .alloc = dev_alloc, .free = dev_free, .to_host = to_host, .from_host = from_host,
    .allreduce = allreduce, .allgather = allgather, .reducescatter = reducescatter,
    .broadcast = broadcast, .reduce = reduce, .alltoall = alltoall,
    .group_start = group_start, .group_end = group_end, .send = send, .recv = recv,
    .sync = sync_stream, .version = version,
    .after_queue = after_queue, .before_queue = before_queue,
    .span_begin = span_begin, .span_end = span_end, .span_take = span_take,
    .capture_begin = capture_begin, .capture_end = capture_end, .replay = replay,
};

const pb_comm_backend *pb_backend_nccl(void) { return &nccl_backend; }
