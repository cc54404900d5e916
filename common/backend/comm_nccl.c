/* NCCL backend: buffers in GPU memory, collectives and send/recv enqueued on
 * one communication stream per communicator; sync() waits for that stream and
 * checks NCCL's asynchronous errors. MPI only hands out the unique id.
 * The GPU is the current device, chosen once per process by pb_gpu_bind.
 * The stream-ordered hooks of comm.h (queue ordering, event spans, CUDA
 * graphs) are all here. Every call that can block (communicator creation,
 * group end, stream syncs, cudaMalloc/cudaFree and blocking copies) runs
 * with the watchdog armed, naming its phase; when it fires, the watchdog's
 * thread calls neither MPI nor NCCL (on_timeout). */
#include "backend/comm.h"

#include "backend/comm_count.h"
#include "backend/cuda_status.h"
#include "backend/gpu.h"
#include "backend/nccl_version.h"
#include "core/error.h"
#include "core/faults.h"
#include "backend/spans_cuda.h"
#include "core/watchdog.h"
#include "core/world.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

struct pb_comm {
    ncclComm_t nccl;
    cudaStream_t stream;
    int rank, size;
    cudaEvent_t order;      /* cross-stream ordering (no timing) */
    pb_spans_cuda spans;    /* device time of traffic */
    cudaGraphExec_t graph;  /* the last capture, or NULL */
    int capturing;
    int device;             /* the GPU the communicator was created on */
    int aborted;            /* ncclCommAbort was called: only the CUDA objects are left to free */
    uint64_t held;          /* GPU memory ncclCommInitRank took (cudaMemGetInfo before and after) */
    pb_comm *next;          /* live communicators (graphs), under `live_mu` */
};

/* Live communicators: freeing a buffer destroys their graphs first, since a
 * graph's kernels point into the buffers it captured. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static pb_comm *live;

/* ncclCommAbort calls under way on their owners' threads (sync_stream). */
static atomic_int aborting;

/* The watchdog's last act before it ends the process (core/watchdog.h), on
 * its own thread: NCCL's communicators are not thread-safe, so it touches
 * none. A thread that polls a communicator aborts it itself once the
 * watchdog has fired; this waits (up to 5 s) for those aborts to finish, so
 * that the process does not end inside one. A communicator stuck in a
 * blocking call (ncclCommInitRank, ncclGroupEnd) goes with the process. */
static void on_timeout(void)
{
    struct timespec nap = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 500 && atomic_load(&aborting) > 0; i++) nanosleep(&nap, NULL);
}

/* Abort on the owner's thread (the one polling the communicator). */
static void abort_comm(pb_comm *c)
{
    atomic_fetch_add(&aborting, 1);
    ncclCommAbort(c->nccl);
    c->aborted = 1;
    atomic_fetch_sub(&aborting, 1);
}

/* ncclAlltoAll exists only from NCCL 2.28.3 on. It is looked up with dlsym
 * rather than called by name: the binary then has no reference to it, so it
 * loads (and `ldd -r` is clean) against an older libnccl.so.2 even where the
 * link is made with -z now, and a library that lacks it is never called. */
typedef ncclResult_t (*alltoall_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
static alltoall_fn native_fn;
static pthread_once_t native_once = PTHREAD_ONCE_INIT;
static void look_up_alltoall(void)
{
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) v = 0;
    void *sym = dlsym(RTLD_DEFAULT, "ncclAlltoAll");
    if (pb_nccl_version_alltoall_choice(v, sym != NULL) == PB_NCCL_ALLTOALL_NATIVE) {
        _Static_assert(sizeof sym == sizeof native_fn, "function and object pointers differ in size");
        memcpy(&native_fn, &sym, sizeof sym); /* POSIX's dlsym idiom, without a cast ISO C warns about */
    }
}
static alltoall_fn native_alltoall(void)
{
    pthread_once(&native_once, look_up_alltoall);
    return native_fn;
}

static int nccl_check(ncclResult_t r, const pb_comm *c, const char *what)
{
    if (r == ncclSuccess || r == ncclInProgress) return PB_OK;
    /* NCCL keeps the last error per thread; the communicator argument may be NULL (init). */
    const char *last = ncclGetLastError(c ? c->nccl : NULL);
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

/* ncclCommInitRank, and the device memory it took: the free memory before
 * and after (*measured 0 where cudaMemGetInfo fails). */
static ncclResult_t init_measured(pb_comm *c, ncclUniqueId id, int *measured)
{
    size_t before = 0, after = 0, total = 0;
    *measured = cudaMemGetInfo(&before, &total) == cudaSuccess;
    ncclResult_t r = ncclCommInitRank(&c->nccl, c->size, id, c->rank);
    if (*measured && r == ncclSuccess) *measured = cudaMemGetInfo(&after, &total) == cudaSuccess;
    c->held = *measured && before > after ? (uint64_t)(before - after) : 0;
    return r;
}

static int create_armed(MPI_Comm group, pb_comm **out)
{
    pb_comm *c = calloc(1, sizeof *c);
    int status = pb_world_agree_at(group, c ? pb_comm_count_admit() : pb_fail(PB_ERR_ENV, "out of memory for a communicator"), "comm");
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
    cudaError_t e = cudaGetDevice(&c->device);
    if (e != cudaSuccess) status = pb_fail(PB_ERR_ENV, "cudaGetDevice: %s", cudaGetErrorString(e));
    if (status == PB_OK) e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (status == PB_OK && e != cudaSuccess) status = pb_fail(PB_ERR_ENV, "cudaStreamCreate: %s", cudaGetErrorString(e));
    if (status == PB_OK && (e = cudaEventCreateWithFlags(&c->order, cudaEventDisableTiming)) != cudaSuccess)
        status = pb_fail(PB_ERR_ENV, "cudaEventCreate: %s", cudaGetErrorString(e));
    if (status == PB_OK && pb_faults_fail("nccl-stream"))
        status = pb_fail(PB_ERR_ENV, "cudaStreamCreate: out of memory");
    /* ncclCommInitRank is collective: a rank without a stream must not leave the others in it. */
    status = pb_world_agree_at(group, status, "nccl-stream");
    int measured = 0;
    if (status == PB_OK) status = nccl_check(init_measured(c, id, &measured), NULL, "ncclCommInitRank");
    if (status != PB_OK) {
        if (c->order) cudaEventDestroy(c->order);
        if (c->stream) cudaStreamDestroy(c->stream);
        free(c);
        return status;
    }
    pthread_mutex_lock(&live_mu);
    c->next = live;
    live = c;
    pthread_mutex_unlock(&live_mu);
    pb_comm_count_add(c->held, measured);
    *out = c;
    return PB_OK;
}

/* ncclCommInitRank waits for every rank of the group (and for the network):
 * armed, so that a rank that never comes is reported (phase "comm init"). */
static int create(MPI_Comm group, pb_comm **out)
{
    pb_watchdog_on_timeout(on_timeout); /* no MPI_Abort from the watchdog's thread from now on */
    int entered = pb_watchdog_enter("comm init");
    int status = create_armed(group, out);
    pb_watchdog_leave(entered);
    return status;
}

static void destroy(pb_comm *c)
{
    if (!c) return;
    pb_comm_count_remove(c->held);
    pthread_mutex_lock(&live_mu);
    for (pb_comm **p = &live; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    pthread_mutex_unlock(&live_mu);
    int entered = pb_watchdog_enter("comm destroy");
    if (!c->aborted) cudaStreamSynchronize(c->stream);
    if (c->graph) cudaGraphExecDestroy(c->graph); /* its kernels use the communicator */
    if (!c->aborted) ncclCommDestroy(c->nccl);
    pb_watchdog_leave(entered);
    pb_spans_cuda_free(&c->spans);
    cudaEventDestroy(c->order);
    cudaStreamDestroy(c->stream);
    free(c);
}

static int rank_of(const pb_comm *c) { return c->rank; }
static int size_of(const pb_comm *c) { return c->size; }

static int dev_alloc(size_t bytes, void **out)
{
    int entered = pb_watchdog_enter("cudaMalloc"); /* may synchronise the device */
    cudaError_t e = cudaMalloc(out, bytes ? bytes : 1);
    pb_watchdog_leave(entered);
    if (e != cudaSuccess)
        return pb_fail(PB_ERR_ENV, "cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
    return PB_OK;
}

/* Drop every live graph before the memory goes: a graph captured on these
 * buffers must never be launched, or kept registered, after they are freed. */
static void dev_free(void *p)
{
    if (!p) return;
    int entered = pb_watchdog_enter("cudaFree"); /* graphs' stream syncs, and cudaFree's device sync */
    pthread_mutex_lock(&live_mu);
    for (pb_comm *c = live; c; c = c->next)
        if (c->graph) {
            cudaStreamSynchronize(c->stream);
            cudaGraphExecDestroy(c->graph);
            c->graph = NULL;
        }
    pthread_mutex_unlock(&live_mu);
    cudaFree(p);
    pb_watchdog_leave(entered);
}

static int to_host(void *host, const void *dev, size_t bytes)
{
    int entered = pb_watchdog_enter("cudaMemcpy to the host");
    cudaError_t e = cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
    pb_watchdog_leave(entered);
    PB_CUDA_TRY(e, "cudaMemcpy (device to host)");
    return PB_OK;
}

/* Complete on return (pb_gpu_from_host): the communication stream is
 * non-blocking, so a plain cudaMemcpy from pageable memory would race with
 * the collective issued next. */
static int from_host(void *dev, const void *host, size_t bytes)
{
    int entered = pb_watchdog_enter("cudaMemcpy from the host");
    int status = pb_gpu_from_host(dev, host, bytes);
    pb_watchdog_leave(entered);
    return status;
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
    alltoall_fn fn = native_alltoall();
    if (fn) return nccl_check(fn(s, r, n, nccl_type(t), c->nccl, c->stream), c, "ncclAlltoAll");
    /* Before 2.28.3: a send and a receive per peer in one group, as nccl-tests does. */
    size_t b = n * pb_dtype_size(t);
    int status = nccl_check(ncclGroupStart(), c, "ncclGroupStart");
    if (status != PB_OK) return status;
    for (int p = 0; p < c->size && status == PB_OK; p++) {
        status = nccl_check(ncclSend((const char *)s + (size_t)p * b, n, nccl_type(t), p, c->nccl, c->stream), c,
                            "ncclSend (alltoall)");
        if (status == PB_OK)
            status = nccl_check(ncclRecv((char *)r + (size_t)p * b, n, nccl_type(t), p, c->nccl, c->stream), c,
                                "ncclRecv (alltoall)");
    }
    int entered = pb_watchdog_enter("group end");
    int end = nccl_check(ncclGroupEnd(), c, "ncclGroupEnd (alltoall)"); /* always close the group */
    pb_watchdog_leave(entered);
    return status != PB_OK ? status : end;
}

static int group_start(pb_comm *c) { return nccl_check(ncclGroupStart(), c, "ncclGroupStart"); }
/* ncclGroupEnd may block (connection set-up with the group's peers on first use). */
static int group_end(pb_comm *c)
{
    int entered = pb_watchdog_enter("group end");
    int status = nccl_check(ncclGroupEnd(), c, "ncclGroupEnd");
    pb_watchdog_leave(entered);
    return status;
}

static int send(pb_comm *c, const void *buf, size_t n, pb_dtype t, int peer)
{
    return nccl_check(ncclSend(buf, n, nccl_type(t), peer, c->nccl, c->stream), c, "ncclSend");
}

static int recv(pb_comm *c, void *buf, size_t n, pb_dtype t, int peer)
{
    return nccl_check(ncclRecv(buf, n, nccl_type(t), peer, c->nccl, c->stream), c, "ncclRecv");
}

/* Poll the stream and NCCL's asynchronous error together, as nccl-tests
 * does: a peer that failed or a broken network shows up as an error here
 * instead of a stream that never completes. A communicator with an error is
 * aborted (its kernels would never finish). The watchdog is armed throughout
 * (by the caller, or here when the caller has not), so a wait that neither
 * completes nor errs is reported with its place. */
static int sync_stream(pb_comm *c)
{
    PB_CHECK(!c->aborted, PB_ERR_ENV, "NCCL: the communicator was aborted after an earlier error");
    int entered = pb_watchdog_enter("stream sync");
    int status = PB_OK;
    for (;;) {
        cudaError_t e = cudaStreamQuery(c->stream);
        if (e == cudaSuccess) break;
        if (e != cudaErrorNotReady) {
            status = pb_cuda_status_fail_at(e, __FILE__, __LINE__, "cudaStreamQuery (NCCL stream)");
            break;
        }
        if (pb_watchdog_fired()) { /* stuck past --timeout: abort here, on the thread that uses the communicator */
            status = pb_fail(PB_ERR_TIMEOUT,
                             "NCCL: the operation did not complete within --timeout (communicator aborted)");
            abort_comm(c);
            break;
        }
        ncclResult_t async = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(c->nccl, &async);
        if (r != ncclSuccess) async = r;
        if (async != ncclSuccess && async != ncclInProgress) {
            status = nccl_check(async, c, "NCCL asynchronous error (communicator aborted)");
            abort_comm(c);
            break;
        }
    }
    if (status == PB_OK) {
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(c->nccl, &async);
        status = nccl_check(async, c, "NCCL asynchronous error");
    }
    pb_watchdog_leave(entered);
    return status;
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
    int entered = pb_watchdog_enter("stream sync");
    cudaError_t e = cudaStreamSynchronize(c->stream);
    pb_watchdog_leave(entered);
    PB_CUDA_TRY(e, "cudaStreamSynchronize");
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
    if (ncclGetVersion(&v) != ncclSuccess) v = 0;
    char text[32];
    pb_nccl_version_text(v, text, sizeof text);
    snprintf(buf, len, "NCCL %s%s", text,
             native_alltoall() ? "" : " (alltoall as grouped send/recv: ncclAlltoAll needs 2.28.3)");
}

static const pb_comm_backend nccl_backend = {
    .name = "nccl", .mem = PB_MEM_DEVICE, .one_gpu_per_rank = 1, .library_log = 1,
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

const pb_comm_backend *pb_comm_backend_nccl(void) { return &nccl_backend; }
