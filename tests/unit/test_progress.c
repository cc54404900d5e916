/* core/progress.c: the processors a rank has to itself, and the choice to
 * make Open MPI's waits yield made from them and the environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "assert_near.h"

#include "core/progress.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

static void cpus_per_rank(void **state)
{
    (void)state;
    /* unbound (may run on all 2): the node's 2 ranks share them */
    assert_near(pb_progress_cpus_per_rank(2, 2, 2), 1.0, 1e-12);
    assert_near(pb_progress_cpus_per_rank(64, 64, 8), 8.0, 1e-12);
    /* bound to 1 core (mpirun's default for 2 ranks): that core alone */
    assert_near(pb_progress_cpus_per_rank(1, 2, 2), 1.0, 1e-12);
    /* bound to a socket of 32 of 64: taken as its own */
    assert_near(pb_progress_cpus_per_rank(32, 64, 8), 32.0, 1e-12);
    /* one rank on the node, or a count unknown */
    assert_near(pb_progress_cpus_per_rank(4, 4, 1), 4.0, 1e-12);
    assert_near(pb_progress_cpus_per_rank(4, 4, 0), 4.0, 1e-12);
    /* the affinity unreadable: taken as 1 */
    assert_near(pb_progress_cpus_per_rank(0, 4, 1), 1.0, 1e-12);
}

static void choose(void **state)
{
    (void)state;
    const char *var = "OMPI_MCA_mpi_yield_when_idle";
    /* the user's value is kept and reported */
    setenv(var, "0", 1);
    pb_progress_choose(1);
    assert_string_equal(getenv(var), "0");
    assert_string_equal(pb_progress_yield(), "0 (set by the user)");
    /* no communication thread: nothing set, whatever the processors */
    unsetenv(var);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "100000", 1);
    pb_progress_choose(0);
    assert_null(getenv(var));
    assert_string_equal(pb_progress_yield(), "unset");
    /* a thread, and 100000 ranks on this node: under 2 processors a rank, so set */
    pb_progress_choose(1);
    assert_non_null(getenv(var));
    assert_string_equal(getenv(var), "1");
    assert_non_null(strstr(pb_progress_yield(), "1 (set: "));
    assert_non_null(strstr(pb_progress_yield(), "for its compute and its communication thread)"));
    /* a thread, and this node's one rank: set only if this process may run on fewer than 2 processors */
    unsetenv(var);
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "1", 1);
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    pb_progress_choose(1);
    if (CPU_COUNT(&set) >= 2) {
        assert_null(getenv(var));
        assert_string_equal(pb_progress_yield(), "unset");
    } else {
        assert_non_null(getenv(var));
    }
    /* Slurm's "2(x4)" when mpirun's count is missing: its leading count */
    unsetenv(var);
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    setenv("SLURM_STEP_TASKS_PER_NODE", "100000(x4)", 1);
    pb_progress_choose(1);
    assert_non_null(getenv(var));
    unsetenv(var);
    unsetenv("SLURM_STEP_TASKS_PER_NODE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpus_per_rank),
        cmocka_unit_test(choose),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
