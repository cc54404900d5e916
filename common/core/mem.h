/* How much memory a run may still take, and a refusal before allocating.
 *
 * Benchmarks size their buffers from a model shape, which can easily exceed a
 * machine. They call pb_mem_require() BEFORE allocating, so the run stops with
 * exit code 3 (PB_ERR_ENV) and a message with both numbers, instead of being
 * killed by the OOM killer half-way. */
#ifndef PB_MEM_H
#define PB_MEM_H

#include <stdint.h>

/* Where a backend's or an engine's buffers live. Host is 0 so a table that
 * leaves it out (a test's fake) is host memory. */
typedef enum { PB_MEM_HOST = 0, PB_MEM_DEVICE = 1 } pb_mem_kind;

/* "host" or "device", as --mem spells them. */
const char *pb_mem_kind_name(pb_mem_kind k);

/* Host memory: `avail` is MemAvailable from /proc/meminfo, lowered to the
 * headroom (limit - usage) of this process's own memory cgroup and of every
 * cgroup above it (pb_mem_cgroup); `total` is MemTotal, lowered to the
 * smallest of those limits. Either pointer may be NULL. */
int pb_mem_host(uint64_t *avail, uint64_t *total);

/* pb_mem_host with every file read under `root` ("" for the real one), so a
 * test can build a fake /proc and /sys/fs/cgroup. */
int pb_mem_host_at(const char *root, uint64_t *avail, uint64_t *total);

/* The memory cgroup limit of this process, from <root>/proc/self/cgroup: for
 * cgroup v1 the `N:memory:/path` line, memory.limit_in_bytes and
 * usage_in_bytes under <root>/sys/fs/cgroup/memory/path; for v2 the `0::/path`
 * line, memory.max ('max' = none) and memory.current under
 * <root>/sys/fs/cgroup/path. Each level from there up to the root counts:
 * `limit` is the smallest limit, `headroom` the smallest limit - usage.
 * Both PB_MEM_HUGE where nothing is limited or readable. */
void pb_mem_cgroup(const char *root, uint64_t *limit, uint64_t *headroom);

/* A memory need that does not fit in 64 bits: pb_mem_add and pb_mem_mul
 * saturate at it, and pb_mem_check refuses it as "more than 2^64 bytes"
 * rather than printing a wrapped-round number. */
#define PB_MEM_HUGE UINT64_MAX
uint64_t pb_mem_add(uint64_t a, uint64_t b);
uint64_t pb_mem_mul(uint64_t a, uint64_t b);

/* The value in bytes of a "Key:   N kB" line of /proc/meminfo text; PB_ERR_ENV
 * if the key is missing. Exposed for tests. */
int pb_mem_parse_meminfo(const char *text, const char *key, uint64_t *bytes);

/* PB_OK when `bytes` fits in `avail`, else PB_ERR_ENV with the message
 *   "<what> needs N bytes (X GiB) of <where> memory; Y bytes (Z GiB) available"
 * ("needs more than 2^64 bytes" when `bytes` is PB_MEM_HUGE). */
int pb_mem_check(uint64_t bytes, uint64_t avail, const char *what, const char *where);

/* Free and total bytes of a device (a GPU engine's mem_info: cudaMemGetInfo). */
typedef int (*pb_mem_query_fn)(uint64_t *free_bytes, uint64_t *total_bytes);

/* What one rank is about to allocate. */
typedef struct pb_mem_need {
    pb_mem_kind where;         /* the memory `bytes` lives in */
    pb_mem_query_fn dev_query; /* where == PB_MEM_DEVICE: its query; NULL leaves device bytes unchecked */
    uint64_t bytes;            /* in `where` */
    uint64_t host_bytes;       /* host memory besides (validation copies) */
} pb_mem_need;

/* The one memory pre-check, made before allocating: device bytes against
 * dev_query, host bytes times `ranks` (the ranks of this node, which draw on
 * the same host memory) against pb_mem_host. PB_OK, or PB_ERR_ENV with
 * pb_mem_check's message; `what` should name the option that asks for it. */
int pb_mem_require(const pb_mem_need *need, int ranks, const char *what);

/* The same comparison, quietly: *fits 1 when pb_mem_require would pass, for
 * what a benchmark runs only where it fits (tp_layer's unsharded reference).
 * A failed query is returned (said); *fits is then 0. */
int pb_mem_fits(const pb_mem_need *need, int ranks, int *fits);

#endif
