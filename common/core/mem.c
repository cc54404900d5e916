#include "core/mem.h"

#include "core/error.h"

#include <inttypes.h>
#include <limits.h>
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

uint64_t pb_mem_add(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? PB_MEM_HUGE : r;
}

uint64_t pb_mem_mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? PB_MEM_HUGE : r;
}

/* Walk from <base><path> up to <base>, lowering *limit and *headroom by every
 * level that sets a limit: a parent's limit binds its children, and a parent's
 * usage counts its other children too. */
static void walk_up(const char *base, const char *path, const char *limit_file, const char *usage_file,
                    uint64_t *limit, uint64_t *headroom)
{
    char dir[PATH_MAX], file[PATH_MAX + 64];
    if ((size_t)snprintf(dir, sizeof dir, "%s%s", base, path) >= sizeof dir) return;
    size_t floor = strlen(base);
    for (;;) {
        size_t n = strlen(dir);
        while (n > floor && dir[n - 1] == '/') dir[--n] = '\0';
        snprintf(file, sizeof file, "%s/%s", dir, limit_file);
        uint64_t lim = read_u64(file);
        if (lim < NO_LIMIT) {
            snprintf(file, sizeof file, "%s/%s", dir, usage_file);
            uint64_t use = read_u64(file);
            use = use < NO_LIMIT ? use : 0;
            uint64_t room = lim > use ? lim - use : 0;
            if (lim < *limit) *limit = lim;
            if (room < *headroom) *headroom = room;
        }
        char *slash = strrchr(dir, '/');
        if (n <= floor || !slash || (size_t)(slash - dir) < floor) return;
        *slash = '\0';
    }
}

/* One line of /proc/self/cgroup, "ID:CONTROLLERS:PATH": the memory limit it sets. */
static void cgroup_line(const char *root, char *line, uint64_t *limit, uint64_t *headroom)
{
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2) return;
    *c1 = *c2 = '\0';
    char *ctl = c1 + 1, *path = c2 + 1, base[PATH_MAX];
    path[strcspn(path, "\n")] = '\0';
    if (strcmp(line, "0") == 0 && *ctl == '\0') { /* v2: the unified hierarchy */
        snprintf(base, sizeof base, "%s/sys/fs/cgroup", root);
        walk_up(base, path, "memory.max", "memory.current", limit, headroom);
        return;
    }
    for (char *save = NULL, *tok = strtok_r(ctl, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "memory") != 0) continue;
        snprintf(base, sizeof base, "%s/sys/fs/cgroup/memory", root);
        walk_up(base, path, "memory.limit_in_bytes", "memory.usage_in_bytes", limit, headroom);
    }
}

void pb_mem_cgroup(const char *root, uint64_t *limit, uint64_t *headroom)
{
    char path[PATH_MAX], line[PATH_MAX];
    *limit = *headroom = PB_MEM_HUGE;
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "r");
    if (!f) { /* no /proc: the roots of both hierarchies, as seen from here */
        char base[PATH_MAX];
        snprintf(base, sizeof base, "%s/sys/fs/cgroup", root);
        walk_up(base, "", "memory.max", "memory.current", limit, headroom);
        snprintf(base, sizeof base, "%s/sys/fs/cgroup/memory", root);
        walk_up(base, "", "memory.limit_in_bytes", "memory.usage_in_bytes", limit, headroom);
        return;
    }
    while (fgets(line, sizeof line, f)) cgroup_line(root, line, limit, headroom);
    fclose(f);
}

int pb_mem_host_at(const char *root, uint64_t *avail, uint64_t *total)
{
    char text[8192], path[PATH_MAX];
    snprintf(path, sizeof path, "%s/proc/meminfo", root);
    if (!read_small(path, text, sizeof text))
        return pb_fail(PB_ERR_ENV, "reading /proc/meminfo: cannot open it");
    uint64_t a = 0, t = 0, limit, headroom;
    PB_TRY(pb_mem_parse_meminfo(text, "MemAvailable", &a));
    PB_TRY(pb_mem_parse_meminfo(text, "MemTotal", &t));
    pb_mem_cgroup(root, &limit, &headroom);
    if (headroom < a) a = headroom;
    if (limit < t) t = limit;
    if (avail) *avail = a;
    if (total) *total = t;
    return PB_OK;
}

int pb_mem_host(uint64_t *avail, uint64_t *total) { return pb_mem_host_at("", avail, total); }

/* "N bytes (X GiB)", or "more than 2^64 bytes" for a need that overflowed. */
static void say_bytes(char *out, size_t cap, uint64_t bytes)
{
    if (bytes == PB_MEM_HUGE) snprintf(out, cap, "more than 2^64 bytes");
    else snprintf(out, cap, "%" PRIu64 " bytes (%.2f GiB)", bytes, (double)bytes / (1024.0 * 1024.0 * 1024.0));
}

int pb_mem_check(uint64_t bytes, uint64_t avail, const char *what, const char *where)
{
    if (bytes <= avail && bytes != PB_MEM_HUGE) return PB_OK;
    char need[64], have[64];
    say_bytes(need, sizeof need, bytes);
    say_bytes(have, sizeof have, avail);
    return pb_fail(PB_ERR_ENV, "%s needs %s of %s memory; %s available", what, need, where, have);
}

/* What `need` asks of each memory (host bytes times the node's ranks) and
 * what each has available; a memory asked nothing is not queried (0 and 0). */
typedef struct mem_ask {
    uint64_t dev, dev_avail, host, host_avail;
} mem_ask;

static int ask(const pb_mem_need *need, int ranks, mem_ask *a)
{
    *a = (mem_ask){0};
    uint64_t host = need->host_bytes;
    if (need->where == PB_MEM_HOST) host = pb_mem_add(host, need->bytes);
    if (need->where == PB_MEM_DEVICE && need->dev_query && need->bytes) {
        a->dev = need->bytes;
        PB_TRY(need->dev_query(&a->dev_avail, NULL));
    }
    if (host == 0) return PB_OK;
    a->host = pb_mem_mul(host, ranks > 1 ? (uint64_t)ranks : 1); /* saturates: an absurd size must still fail */
    return pb_mem_host(&a->host_avail, NULL);
}

int pb_mem_require(const pb_mem_need *need, int ranks, const char *what)
{
    mem_ask a;
    PB_TRY(ask(need, ranks, &a));
    if (a.dev) PB_TRY(pb_mem_check(a.dev, a.dev_avail, what, pb_mem_kind_name(PB_MEM_DEVICE)));
    return a.host ? pb_mem_check(a.host, a.host_avail, what, pb_mem_kind_name(PB_MEM_HOST)) : PB_OK;
}

int pb_mem_fits(const pb_mem_need *need, int ranks, int *fits)
{
    mem_ask a;
    *fits = 0;
    PB_TRY(ask(need, ranks, &a));
    *fits = a.dev <= a.dev_avail && a.dev != PB_MEM_HUGE && a.host <= a.host_avail && a.host != PB_MEM_HUGE;
    return PB_OK;
}
