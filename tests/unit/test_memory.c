/* Host memory queries and the refusal before allocating. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "core/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_parse_meminfo(void **state)
{
    (void)state;
    const char *text = "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\nHugePages_Total:       0\n";
    uint64_t v = 0;
    assert_int_equal(pb_mem_parse_meminfo(text, "MemAvailable", &v), PB_OK);
    assert_true(v == 20000000ull * 1024);
    assert_int_equal(pb_mem_parse_meminfo(text, "MemTotal", &v), PB_OK);
    assert_true(v == 24576000ull * 1024);
    assert_int_equal(pb_mem_parse_meminfo(text, "HugePages_Total", &v), PB_OK);
    assert_true(v == 0);
    /* "Mem" is a prefix of keys but not a key */
    assert_int_equal(pb_mem_parse_meminfo(text, "Mem", &v), PB_ERR_ENV);
    assert_int_equal(pb_mem_parse_meminfo(text, "SwapTotal", &v), PB_ERR_ENV);
}

static void test_host_available(void **state)
{
    (void)state;
    uint64_t avail = 0, total = 0;
    assert_int_equal(pb_mem_host(&avail, &total), PB_OK);
    assert_true(avail > (1u << 20) && avail <= total);
    assert_int_equal(pb_mem_host(NULL, NULL), PB_OK);
}

static void test_check_message_and_status(void **state)
{
    (void)state;
    assert_int_equal(pb_mem_check(100, 100, "x", "host"), PB_OK);
    assert_int_equal(pb_mem_check(101, 100, "x", "host"), PB_ERR_ENV);
    pb_mem_need mib = {PB_MEM_HOST, NULL, 1 << 20, 0};
    assert_int_equal(pb_mem_require(&mib, 1, "one MiB"), PB_OK);
}

/* An absurd request is refused with PB_ERR_ENV, which main() turns into exit code 3. */
static void test_absurd_size_exits_3(void **state)
{
    (void)state;
    pb_mem_need absurd = {PB_MEM_HOST, NULL, (uint64_t)1 << 62, 0};
    assert_int_equal(pb_mem_require(&absurd, 1, "an absurd buffer"), PB_ERR_ENV);
    /* Many ranks on a node multiply it past 2^64: still refused, not wrapped round. */
    pb_mem_need half = {PB_MEM_HOST, NULL, (uint64_t)1 << 63, 0};
    assert_int_equal(pb_mem_require(&half, 4, "a wrapped buffer"), PB_ERR_ENV);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(pb_mem_require(&absurd, 1, "an absurd buffer"));
    int st = 0;
    assert_true(waitpid(pid, &st, 0) == pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 3);
}

/* The ranks of a node share its host memory: a need that fits one rank but
 * not `ranks` of them is refused, for the buffers and for host bytes besides. */
static void test_ranks_share_host_memory(void **state)
{
    (void)state;
    uint64_t avail = 0;
    assert_int_equal(pb_mem_host(&avail, NULL), PB_OK);
    pb_mem_need third = {PB_MEM_HOST, NULL, avail / 3, 0}, copies = {PB_MEM_DEVICE, NULL, 0, avail / 3};
    assert_int_equal(pb_mem_require(&third, 1, "a third of the memory"), PB_OK);
    assert_int_equal(pb_mem_require(&third, 4, "a third of the memory, 4 ranks"), PB_ERR_ENV);
    assert_int_equal(pb_mem_require(&copies, 1, "host copies"), PB_OK);
    assert_int_equal(pb_mem_require(&copies, 4, "host copies, 4 ranks"), PB_ERR_ENV);
}

static int fake_device(uint64_t *free_bytes, uint64_t *total_bytes)
{
    if (free_bytes) *free_bytes = 1000;
    if (total_bytes) *total_bytes = 4000;
    return PB_OK;
}

/* The names are what --mem accepts and what messages print. */
static void test_mem_kind_names(void **state)
{
    (void)state;
    assert_string_equal(pb_mem_kind_name(PB_MEM_HOST), "host");
    assert_string_equal(pb_mem_kind_name(PB_MEM_DEVICE), "device");
}

static void test_device_hook(void **state)
{
    (void)state;
    pb_mem_need fits = {PB_MEM_DEVICE, fake_device, 1000, 0}, over = {PB_MEM_DEVICE, fake_device, 1001, 0};
    assert_int_equal(pb_mem_require(&fits, 8, "weights"), PB_OK); /* device memory is per rank */
    assert_int_equal(pb_mem_require(&over, 1, "weights"), PB_ERR_ENV);
    /* host bytes besides are checked against host memory, times the ranks */
    pb_mem_need host_too = {PB_MEM_DEVICE, fake_device, 10, (uint64_t)1 << 62};
    assert_int_equal(pb_mem_require(&host_too, 1, "validation"), PB_ERR_ENV);
}

/* pb_mem_fits answers what pb_mem_require would, quietly: device memory per
 * rank, host memory shared by the node's ranks (tp_layer's optional reference). */
static void test_fits_as_require_would(void **state)
{
    (void)state;
    int fits = -1;
    pb_mem_need dev = {PB_MEM_DEVICE, fake_device, 1000, 0}, over = {PB_MEM_DEVICE, fake_device, 1001, 0};
    assert_int_equal(pb_mem_fits(&dev, 8, &fits), PB_OK);
    assert_int_equal(fits, 1); /* 8 ranks, a device each */
    assert_int_equal(pb_mem_fits(&over, 1, &fits), PB_OK);
    assert_int_equal(fits, 0);
    uint64_t avail = 0;
    assert_int_equal(pb_mem_host(&avail, NULL), PB_OK);
    pb_mem_need third = {PB_MEM_HOST, NULL, avail / 3, 0}, huge = {PB_MEM_HOST, NULL, PB_MEM_HUGE, 0};
    assert_int_equal(pb_mem_fits(&third, 1, &fits), PB_OK);
    assert_int_equal(fits, 1);
    assert_int_equal(pb_mem_fits(&third, 4, &fits), PB_OK);
    assert_int_equal(fits, 0); /* four ranks of the node draw on it */
    assert_int_equal(pb_mem_fits(&huge, 1, &fits), PB_OK);
    assert_int_equal(fits, 0);
    pb_mem_need host_too = {PB_MEM_DEVICE, fake_device, 10, avail / 3};
    assert_int_equal(pb_mem_fits(&host_too, 4, &fits), PB_OK);
    assert_int_equal(fits, 0); /* host bytes besides a device need, times the ranks */
}

/* ---- the cgroup probe, on fake /proc and /sys/fs/cgroup trees ---- */

#define MIB ((uint64_t)1 << 20)
#define GIB ((uint64_t)1 << 30)

/* Write `text` to root/rel, making the folders on the way. */
static void put(const char *root, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void put_u64(const char *root, const char *rel, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu\n", (unsigned long long)v);
    put(root, rel, buf);
}

/* A fresh fake root with 16 GiB MemAvailable of 32 GiB. */
static char *fake_root(void)
{
    char *root = strdup("/tmp/pb_memXXXXXX");
    assert_non_null(mkdtemp(root));
    put(root, "proc/meminfo", "MemTotal:       33554432 kB\nMemAvailable:   16777216 kB\n");
    return root;
}

static void drop_root(char *root)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
    free(root);
}

/* v1: the memory line's path, not the root's limit; the smallest on the way up. */
static void test_cgroup_v1_own_path(void **state)
{
    (void)state;
    char *root = fake_root();
    put(root, "proc/self/cgroup", "5:cpu,cpuacct:/slurm/job1\n4:memory:/slurm/job1/step0\n0::/\n");
    put(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n"); /* v1's "none" */
    put_u64(root, "sys/fs/cgroup/memory/slurm/job1/memory.limit_in_bytes", 2 * GIB);
    put_u64(root, "sys/fs/cgroup/memory/slurm/job1/memory.usage_in_bytes", 600 * MIB);
    put_u64(root, "sys/fs/cgroup/memory/slurm/job1/step0/memory.limit_in_bytes", 512 * MIB);
    put_u64(root, "sys/fs/cgroup/memory/slurm/job1/step0/memory.usage_in_bytes", 100 * MIB);
    uint64_t limit, room, avail, total;
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == 512 * MIB && room == 412 * MIB);
    assert_int_equal(pb_mem_host_at(root, &avail, &total), PB_OK);
    assert_true(avail == 412 * MIB && total == 512 * MIB);
    /* The parent binds when its headroom is smaller (siblings use it too). */
    put_u64(root, "sys/fs/cgroup/memory/slurm/job1/memory.usage_in_bytes", 1800 * MIB);
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == 512 * MIB && room == 248 * MIB);
    /* And a parent's limit below the child's is the limit. */
    put_u64(root, "sys/fs/cgroup/memory/slurm/memory.limit_in_bytes", 256 * MIB);
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == 256 * MIB && room == 248 * MIB);
    drop_root(root);
}

/* v2: `0::/path`, memory.max with 'max' meaning none, nested limits. */
static void test_cgroup_v2_nested(void **state)
{
    (void)state;
    char *root = fake_root();
    put(root, "proc/self/cgroup", "0::/user.slice/job/task\n");
    put(root, "sys/fs/cgroup/memory.max", "max\n");
    put(root, "sys/fs/cgroup/user.slice/memory.max", "max\n");
    put_u64(root, "sys/fs/cgroup/user.slice/job/memory.max", 1 * GIB);
    put_u64(root, "sys/fs/cgroup/user.slice/job/memory.current", 100 * MIB);
    put(root, "sys/fs/cgroup/user.slice/job/task/memory.max", "max\n");
    put_u64(root, "sys/fs/cgroup/user.slice/job/task/memory.current", 50 * MIB);
    uint64_t limit, room, avail, total;
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == 1 * GIB && room == 924 * MIB);
    put_u64(root, "sys/fs/cgroup/user.slice/job/task/memory.max", 512 * MIB);
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == 512 * MIB && room == 462 * MIB);
    assert_int_equal(pb_mem_host_at(root, &avail, &total), PB_OK);
    assert_true(avail == 462 * MIB && total == 512 * MIB);
    /* A 1 GiB need in it is refused (exit 3), which is what a Slurm --mem job needs. */
    assert_true(pb_mem_check(GIB, avail, "x", "host") == PB_ERR_ENV);
    /* Usage over the limit leaves no room at all, not a wrapped-round huge one. */
    put_u64(root, "sys/fs/cgroup/user.slice/job/task/memory.current", 600 * MIB);
    pb_mem_cgroup(root, &limit, &room);
    assert_true(room == 0);
    /* The walk stays inside the hierarchy: a path without its leading '/' names no parent
     * of it, and a file above the hierarchy's root (sys/fs here) is no cgroup's limit. */
    put(root, "proc/self/cgroup", "0::job\n");
    put_u64(root, "sys/fs/memory.max", 64 * MIB);
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == PB_MEM_HUGE && room == PB_MEM_HUGE);
    drop_root(root);
}

/* No limit anywhere, missing files, a path that does not exist: MemAvailable. */
static void test_cgroup_unlimited_or_missing(void **state)
{
    (void)state;
    char *root = fake_root();
    uint64_t limit, room, avail, total;
    pb_mem_cgroup(root, &limit, &room); /* no proc/self/cgroup, no sys at all */
    assert_true(limit == PB_MEM_HUGE && room == PB_MEM_HUGE);
    put(root, "proc/self/cgroup", "0::/gone/away\n4:memory:/also/gone\n");
    put(root, "sys/fs/cgroup/memory.max", "max\n");
    put(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == PB_MEM_HUGE && room == PB_MEM_HUGE);
    assert_int_equal(pb_mem_host_at(root, &avail, &total), PB_OK);
    assert_true(avail == 16 * GIB && total == 32 * GIB);
    /* Missing folders below still let a limit above them count. */
    put_u64(root, "sys/fs/cgroup/gone/memory.max", 3 * GIB);
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == 3 * GIB && room == 3 * GIB);
    /* Garbage in a limit file is no limit, not zero. */
    put(root, "sys/fs/cgroup/gone/memory.max", "lots\n");
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == PB_MEM_HUGE);
    /* No meminfo: an environment error. */
    put(root, "proc/meminfo", "");
    assert_int_equal(pb_mem_host_at(root, &avail, &total), PB_ERR_ENV);
    drop_root(root);
}

/* No proc/self/cgroup (a container without /proc): the roots of both hierarchies still bind. */
static void test_cgroup_no_proc(void **state)
{
    (void)state;
    char *root = fake_root();
    uint64_t limit, room;
    put_u64(root, "sys/fs/cgroup/memory.max", 2 * GIB); /* v2 */
    put_u64(root, "sys/fs/cgroup/memory.current", 500 * MIB);
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == 2 * GIB && room == 1548 * MIB);
    put(root, "sys/fs/cgroup/memory.max", "max\n");
    put_u64(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", 1 * GIB); /* v1 */
    put_u64(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", 100 * MIB);
    pb_mem_cgroup(root, &limit, &room);
    assert_true(limit == 1 * GIB && room == 924 * MIB);
    drop_root(root);
}

/* Needs that do not fit in 64 bits saturate and are refused as such. */
static void test_saturating_needs(void **state)
{
    (void)state;
    assert_true(pb_mem_add(1, 2) == 3);
    assert_true(pb_mem_add(UINT64_MAX - 1, 2) == PB_MEM_HUGE);
    assert_true(pb_mem_mul((uint64_t)1 << 32, (uint64_t)1 << 31) == (uint64_t)1 << 63);
    assert_true(pb_mem_mul((uint64_t)1 << 32, (uint64_t)1 << 32) == PB_MEM_HUGE);
    assert_true(pb_mem_add(pb_mem_mul(PB_MEM_HUGE, 2), 0) == PB_MEM_HUGE);
    /* Even with "all the memory in the world" a saturated need does not fit. */
    assert_int_equal(pb_mem_check(PB_MEM_HUGE, UINT64_MAX, "x", "host"), PB_ERR_ENV);
    assert_int_equal(pb_mem_check(UINT64_MAX - 1, UINT64_MAX, "x", "host"), PB_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_meminfo), cmocka_unit_test(test_host_available),
        cmocka_unit_test(test_check_message_and_status), cmocka_unit_test(test_absurd_size_exits_3),
        cmocka_unit_test(test_ranks_share_host_memory),
        cmocka_unit_test(test_device_hook),
        cmocka_unit_test(test_fits_as_require_would), cmocka_unit_test(test_mem_kind_names),
        cmocka_unit_test(test_cgroup_v1_own_path), cmocka_unit_test(test_cgroup_v2_nested),
        cmocka_unit_test(test_cgroup_unlimited_or_missing), cmocka_unit_test(test_cgroup_no_proc), cmocka_unit_test(test_saturating_needs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
