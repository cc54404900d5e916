/* core/load.c: /proc/stat's first line, and the shares of a node's CPU time
 * other processes and the hypervisor took between two samples. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "assert_near.h"

#include "core/error.h"
#include "core/load.h"

#include <math.h>
#include <time.h>

static void parse(void **state)
{
    (void)state;
    pb_load l;
    /* user nice system idle iowait irq softirq steal guest guest_nice, 100 ticks/s */
    assert_int_equal(pb_load_parse_stat("cpu  1000 50 250 8000 100 20 30 550 0 0\n", 100, &l), PB_OK);
    assert_true(l.ok);
    assert_near(l.total_s, 100.0, 1e-12); /* 10000 ticks */
    assert_near(l.busy_s, 13.5, 1e-12);   /* user + nice + system + irq + softirq */
    assert_near(l.steal_s, 5.5, 1e-12);
    /* older kernels: no steal column */
    assert_int_equal(pb_load_parse_stat("cpu 10 0 10 80\n", 100, &l), PB_OK);
    assert_near(l.total_s, 1.0, 1e-12);
    assert_near(l.steal_s, 0.0, 1e-12);
    /* not the aggregate line, or too short */
    assert_int_equal(pb_load_parse_stat("cpu0 10 0 10 80\n", 100, &l), PB_ERR_USAGE);
    assert_false(l.ok);
    assert_int_equal(pb_load_parse_stat("cpu 10 0\n", 100, &l), PB_ERR_USAGE);
    assert_int_equal(pb_load_parse_stat("cpu 10 0 10 80\n", 0, &l), PB_ERR_USAGE);
}

static void shares(void **state)
{
    (void)state;
    pb_load a = {.total_s = 100, .busy_s = 10, .steal_s = 1, .ok = 1};
    pb_load b = {.total_s = 120, .busy_s = 25, .steal_s = 2, .ok = 1};
    pb_load_share s;
    /* 20 s of CPU time passed, 15 s busy, of which the ranks used 12: others 3 s = 15%; steal 1 s = 5% */
    assert_int_equal(pb_load_share_of(&a, &b, 12, &s), PB_OK);
    assert_near(s.others, 0.15, 1e-12);
    assert_near(s.steal, 0.05, 1e-12);
    /* the ranks' own time counted a little above the kernel's (tick rounding): 0, not negative */
    assert_int_equal(pb_load_share_of(&a, &b, 16, &s), PB_OK);
    assert_near(s.others, 0.0, 1e-12);
    /* no time passed, or a sample missing */
    assert_int_equal(pb_load_share_of(&a, &a, 0, &s), PB_ERR_USAGE);
    b.ok = 0;
    assert_int_equal(pb_load_share_of(&a, &b, 0, &s), PB_ERR_USAGE);
}

static void sample_here(void **state)
{
    (void)state;
    pb_load a, b;
    pb_load_sample(&a);
    volatile double x = 0;
    for (long i = 0; i < 20000000; i++) x += (double)i; /* some CPU time of our own */
    pb_load_sample(&b);
    struct timespec cpu;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
    assert_true(a.ok && b.ok); /* Linux */
    assert_true(b.ours_s > a.ours_s);
    /* our CPU time in seconds, as the kernel's own clock of this process counts it */
    assert_true(fabs(b.ours_s - ((double)cpu.tv_sec + (double)cpu.tv_nsec * 1e-9)) < 0.1);
    assert_true(b.total_s >= a.total_s && b.busy_s >= a.busy_s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(parse), cmocka_unit_test(shares), cmocka_unit_test(sample_here)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
