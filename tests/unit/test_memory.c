/* Host memory queries and the refusal before allocating. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "core/error.h"
#include "core/mem.h"

#include <stdlib.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_meminfo), cmocka_unit_test(test_host_available),
        cmocka_unit_test(test_check_message_and_status), cmocka_unit_test(test_absurd_size_exits_3),
        cmocka_unit_test(test_device_hook), cmocka_unit_test(test_mem_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
