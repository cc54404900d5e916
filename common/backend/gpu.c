/* GPU selection: the logic, in every build. The CUDA calls are behind
 * pb_gpu_ops (gpu_cuda.c in CUDA builds; "no GPU" here otherwise), so the
 * logic runs in CPU-only tests against a fake table. */
#include "backend/gpu.h"

#include "core/error.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef PB_HAVE_CUDA
const pb_gpu_ops *pb_gpu_cuda_ops(void); /* gpu_cuda.c */
#else
static int none_count(void) { return 0; }
static int none_fail(void)
{
    return pb_fail(PB_ERR_ENV, "this build has no CUDA support (rebuild where nvcc, cuBLAS and NCCL are found, "
                               "or with `make CUDA=1`)");
}
static int none_set(int dev) { return (void)dev, none_fail(); }
static int none_describe(int dev, int n, char *desc, size_t len) { return (void)dev, (void)n, snprintf(desc, len, "none"), none_fail(); }
static size_t none_cache(void) { return 0; }
static int none_copy(void *d, const void *s, size_t b) { return (void)d, (void)s, (void)b, none_fail(); }
static const pb_gpu_ops none_ops = {.count = none_count, .set_device = none_set, .describe = none_describe,
                                    .cache_bytes = none_cache, .copy_h2d = none_copy, .sync_legacy = none_fail};
#endif

static const pb_gpu_ops *override;
static atomic_int bound = -1;

const pb_gpu_ops *pb_gpu_ops_get(void)
{
    if (override) return override;
#ifdef PB_HAVE_CUDA
    return pb_gpu_cuda_ops();
#else
    return &none_ops;
#endif
}

void pb_gpu_ops_set(const pb_gpu_ops *ops)
{
    override = ops;
    atomic_store(&bound, -1);
}

int pb_gpu_count(void) { return pb_gpu_ops_get()->count(); }

size_t pb_gpu_cache_bytes(void) { return pb_gpu_ops_get()->cache_bytes(); }

int pb_gpu_bind(int local_rank, int offset, char *desc, size_t len)
{
    const pb_gpu_ops *g = pb_gpu_ops_get();
#ifndef PB_HAVE_CUDA
    if (g == &none_ops) return g->describe(0, 0, desc, len);
#endif
    int n = g->count();
    if (n == 0) {
        const char *why = g->count_error ? g->count_error() : NULL;
        snprintf(desc, len, "none");
        return pb_fail(PB_ERR_ENV, "no GPU is visible to this process (CUDA_VISIBLE_DEVICES=%s)%s%s",
                       getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset",
                       why ? ": cudaGetDeviceCount: " : "", why ? why : "");
    }
    int dev = ((local_rank + offset) % n + n) % n;
    PB_TRY(g->set_device(dev));
    atomic_store(&bound, dev);
    g->describe(dev, n, desc, len);
    return PB_OK;
}

int pb_gpu_bound(void) { return atomic_load(&bound); }

int pb_gpu_thread_bind(void)
{
    int dev = atomic_load(&bound);
    return dev < 0 ? PB_OK : pb_gpu_ops_get()->set_device(dev);
}

int pb_gpu_from_host(void *dst, const void *src, size_t bytes)
{
    if (!bytes) return PB_OK;
    const pb_gpu_ops *g = pb_gpu_ops_get();
    PB_TRY(g->copy_h2d(dst, src, bytes));
    /* cudaMemcpy from pageable memory may return before the data has landed,
     * and a non-blocking stream (NCCL's, the staging stream) is not ordered
     * after the legacy stream: wait for the copy here. */
    return g->sync_legacy();
}

void pb_gpu_identity(int local_rank, int offset, char *id, size_t len)
{
    const pb_gpu_ops *g = pb_gpu_ops_get();
    int n = g->count();
    char desc[160] = "";
    if (len) id[0] = '\0';
    if (n <= 0) return;
    int dev = ((local_rank + offset) % n + n) % n;
    g->describe(dev, n, desc, sizeof desc);
    const char *pci = strstr(desc, "PCI ");
    if (pci && strcmp(pci, "PCI ?") != 0) snprintf(id, len, "%s", pci);
}

int pb_gpu_shared(const char *ids, size_t stride, const int *node_of, int size, int *a, int *b)
{
    for (int i = 0; i < size; i++)
        for (int j = i + 1; j < size; j++)
            if (node_of[i] == node_of[j] && ids[i * stride] && strcmp(ids + i * stride, ids + j * stride) == 0) {
                *a = i, *b = j;
                return 1;
            }
    return 0;
}

int pb_gpu_check_ranks(int local_size, int ngpu, int exclusive)
{
    if (ngpu <= 0) {
        const pb_gpu_ops *g = pb_gpu_ops_get();
        const char *why = g->count_error ? g->count_error() : NULL;
        return pb_fail(PB_ERR_ENV, "no GPU is visible to this process%s%s", why ? ": cudaGetDeviceCount: " : "",
                       why ? why : "");
    }
    if (exclusive && local_size > ngpu)
        return pb_fail(PB_ERR_ENV,
                       "%d ranks on one node but only %d GPU%s visible: NCCL needs one GPU per rank (it refuses "
                       "two ranks on one GPU). Start at most %d ranks per node, or use --backend mpi --mem device "
                       "to share GPUs",
                       local_size, ngpu, ngpu == 1 ? " is" : "s are", ngpu);
    return PB_OK;
}
