#include "core/mem.h"

#include "core/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pb_mem_kind_name(pb_mem_kind k) { return k == PB_MEM_DEVICE ? "device" : "host"; }

/* cgroup "no limit" is written as "max" (v2) or a huge page-rounded number (v1). */
#define NO_LIMIT ((uint64_t)1 << 60)

int pb_mem_parse_meminfo(const char *text, const char *key, uint64_t *bytes)
{
    size_t n = strlen(key);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, n) != 0 || line[n] != ':') continue;
        char *end;
        unsigned long long v = strtoull(line + n + 1, &end, 10);
        while (*end == ' ') end++;
        *bytes = (uint64_t)v * (strncmp(end, "kB", 2) == 0 ? 1024u : 1u);
        return PB_OK;
    }
    return pb_fail(PB_ERR_ENV, "reading /proc/meminfo: no %s line", key);
}

/* Read a whole small file into buf; 0 on failure. */
static size_t read_small(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    return n;
}

/* A number from a one-line file; NO_LIMIT for "max", missing or unreadable. */
static uint64_t read_u64(const char *path)
{
    char buf[64];
    if (!read_small(path, buf, sizeof buf) || strncmp(buf, "max", 3) == 0) return NO_LIMIT;
    char *end;
    unsigned long long v = strtoull(buf, &end, 10);
    return end == buf ? NO_LIMIT : (uint64_t)v;
}

/* The cgroup's limit and usage (v2 first, then v1); limit NO_LIMIT when none. */
static void cgroup_memory(uint64_t *limit, uint64_t *usage)
{
    *limit = read_u64("/sys/fs/cgroup/memory.max");
    *usage = read_u64("/sys/fs/cgroup/memory.current");
    if (*limit >= NO_LIMIT) {
        *limit = read_u64("/sys/fs/cgroup/memory/memory.limit_in_bytes");
        *usage = read_u64("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    }
    if (*usage >= NO_LIMIT) *usage = 0;
}

int pb_mem_host(uint64_t *avail, uint64_t *total)
{
    char text[8192];
    if (!read_small("/proc/meminfo", text, sizeof text))
        return pb_fail(PB_ERR_ENV, "reading /proc/meminfo: cannot open it");
    uint64_t a = 0, t = 0;
    PB_TRY(pb_mem_parse_meminfo(text, "MemAvailable", &a));
    PB_TRY(pb_mem_parse_meminfo(text, "MemTotal", &t));
    uint64_t limit, usage;
    cgroup_memory(&limit, &usage);
    if (limit < NO_LIMIT) {
        uint64_t headroom = limit > usage ? limit - usage : 0;
        if (headroom < a) a = headroom;
        if (limit < t) t = limit;
    }
    if (avail) *avail = a;
    if (total) *total = t;
    return PB_OK;
}

int pb_mem_check(uint64_t bytes, uint64_t avail, const char *what, const char *where)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    if (bytes <= avail) return PB_OK;
    return pb_fail(PB_ERR_ENV, "%s needs %" PRIu64 " bytes (%.2f GiB) of %s memory; %" PRIu64
                   " bytes (%.2f GiB) available", what, bytes, (double)bytes / gib, where, avail,
                   (double)avail / gib);
}

int pb_mem_require(const pb_mem_need *need, int ranks, const char *what)
{
    uint64_t host = need->host_bytes, avail = 0, r = ranks > 1 ? (uint64_t)ranks : 1;
    if (need->where == PB_MEM_HOST) host += need->bytes;
    if (need->where == PB_MEM_DEVICE && need->dev_query && need->bytes) {
        PB_TRY(need->dev_query(&avail, NULL));
        PB_TRY(pb_mem_check(need->bytes, avail, what, pb_mem_kind_name(PB_MEM_DEVICE)));
    }
    if (host == 0) return PB_OK;
    PB_TRY(pb_mem_host(&avail, NULL));
    host = host > UINT64_MAX / r ? UINT64_MAX : host * r; /* saturate: an absurd size must still fail */
    return pb_mem_check(host, avail, what, pb_mem_kind_name(PB_MEM_HOST));
}
