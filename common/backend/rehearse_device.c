/* The rehearsal's device (comm_rehearse.c): memory and the calls that
 * synchronise a GPU, and which device a process is. On a GPU, cudaMalloc,
 * cudaFree and a blocking cudaMemcpy wait for every stream of the device;
 * here they wait for every stream (worker thread) of the process, and an
 * allocation or free that would deadlock or stall a timed step is refused. */
#include "backend/rehearse_device.h"

#include "backend/rehearse_queue.h"
#include "core/devsync.h"
#include "core/error.h"
#include "core/watchdog.h"
#include "core/world.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Receives issued on any communicator of the process and not yet run to
 * their end (matched by their send), and the first allocation or free
 * refused for it (a free cannot return it: the next sync does). */
static atomic_int posted_recvs;
static atomic_int refused;

void pb_rehearse_device_posted(int delta) { atomic_fetch_add(&posted_recvs, delta); }

int pb_rehearse_device_refusal(void) { return atomic_load(&refused); }

static int device_wide_sync(const char *why) { return pb_rehearse_queue_drain_all(why); }

/* An allocation or free (`call`: cudaMalloc, cudaFree, or the engine's)
 * synchronises the device. Between a posted receive and its send it waits
 * for that receive, whose send may wait for this rank: a deadlock on a GPU,
 * refused here before it can hang. Inside the runner's timed iterations it
 * stalls the measured step: refused too. The first refusal sticks. */
static int may_synchronise(const char *call)
{
    if (pb_watchdog_fired()) return PB_OK; /* the job is ending: the wait says so */
    int posted = atomic_load(&posted_recvs), status = PB_OK;
    if (posted > 0)
        status = pb_fail(PB_ERR_ENV,
                         "%s between a posted receive and its send: it synchronises the device, so it waits for "
                         "the receive, whose send may wait for this rank (a deadlock on a GPU); %d receive%s posted "
                         "and not yet matched (NCCL rehearsal). Allocate before posting receives",
                         call, posted, posted == 1 ? "" : "s");
    else if (pb_devsync_in_timed())
        status = pb_fail(PB_ERR_ENV,
                         "%s inside a timed iteration: it synchronises the device inside the measured step (NCCL "
                         "rehearsal). Allocate before the timed loop (set-up or warm-up)",
                         call);
    if (status != PB_OK) {
        int none = PB_OK;
        atomic_compare_exchange_strong(&refused, &none, status);
    }
    return status;
}

/* The host engine's allocations (core/devsync.h), standing for cuBLAS's. */
int pb_rehearse_device_engine_sync(const char *why)
{
    PB_TRY(may_synchronise(why));
    return device_wide_sync(why);
}

/* The "GPU" of this process: its local rank on the node, as pb_gpu_bind
 * picks it, read from the launcher (the communicator's group may be any
 * subset of the node); PARABENCH_REHEARSE_GPUS=N folds it onto N devices. */
static int device_of_process(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK",
                                       "SLURM_LOCALID", "PMI_LOCAL_RANK"};
    int device = -1;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0] && device < 0; i++) {
        const char *v = getenv(vars[i]);
        if (v) device = atoi(v);
    }
    if (device < 0) MPI_Comm_rank(MPI_COMM_WORLD, &device); /* unknown: a device per process */
    const char *gpus = getenv("PARABENCH_REHEARSE_GPUS");
    if (gpus && atoi(gpus) > 0) device %= atoi(gpus);
    return device;
}

typedef struct device_id {
    char host[PB_HOST_MAX];
    int device;
} device_id;

/* Collective over group: NCCL refuses two ranks of one communicator on one
 * GPU at ncclCommInitRank. The later rank of the first pair fails. */
int pb_rehearse_device_check(MPI_Comm group, int rank, int size)
{
    device_id me = {.device = device_of_process()};
    if (gethostname(me.host, sizeof me.host - 1) != 0) strcpy(me.host, "unknown");
    device_id *all = calloc((size_t)size, sizeof *all);
    int status = all ? PB_OK : pb_fail(PB_ERR_ENV, "NCCL rehearsal: out of memory for %d device ids", size);
    if (pb_world_agree_at(group, status, "comm") != PB_OK || !all) { /* !all implies a failed agreement */
        free(all);
        return PB_ERR_ENV;
    }
    MPI_Allgather(&me, sizeof me, MPI_BYTE, all, sizeof me, MPI_BYTE, group);
    for (int r = 0; r < rank && status == PB_OK; r++)
        if (all[r].device == me.device && strcmp(all[r].host, me.host) == 0)
            status = pb_fail(PB_ERR_ENV,
                             "ncclCommInitRank: invalid usage: Duplicate GPU detected : rank %d and rank %d both on "
                             "CUDA device %d of %s (NCCL rehearsal: a rank's device is its local rank%s)",
                             r, rank, me.device, me.host,
                             getenv("PARABENCH_REHEARSE_GPUS") ? " modulo PARABENCH_REHEARSE_GPUS" : "");
    free(all);
    return status;
}

int pb_rehearse_device_alloc(size_t bytes, void **out)
{
    PB_TRY(may_synchronise("cudaMalloc"));
    PB_TRY(device_wide_sync("cudaMalloc (a device synchronisation)"));
    void *p = NULL;
    if (posix_memalign(&p, 4096, bytes ? bytes : 1) != 0)
        return pb_fail(PB_ERR_ENV, "out of host memory allocating %zu bytes", bytes);
    *out = p;
    return PB_OK;
}

void pb_rehearse_device_free(void *p)
{
    /* Refused (may_synchronise), or after a timeout, a stream may still
     * touch the buffer: leak it. */
    if (p && may_synchronise("cudaFree") == PB_OK &&
        device_wide_sync("cudaFree (a device synchronisation)") != PB_ERR_TIMEOUT)
        free(p);
}

int pb_rehearse_device_to_host(void *host, const void *src, size_t bytes)
{
    PB_TRY(device_wide_sync("cudaMemcpy to the host (a device synchronisation)"));
    memmove(host, src, bytes);
    return PB_OK;
}

int pb_rehearse_device_from_host(void *dst, const void *host, size_t bytes)
{
    PB_TRY(device_wide_sync("cudaMemcpy from the host (a device synchronisation)"));
    memmove(dst, host, bytes);
    return PB_OK;
}
