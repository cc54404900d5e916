/* The spin-or-yield choice of progress.h. */
#include "core/progress.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char decision[128] = "unset";

double pb_progress_cpus_per_rank(int allowed, int online, int local_ranks)
{
    if (allowed < 1) return 1.0;
    int sharing = allowed >= online && local_ranks > 1 ? local_ranks : 1; /* unbound: the node's ranks share them */
    return (double)allowed / sharing;
}

/* The node's ranks before MPI starts: the launcher's count (Open MPI's
 * mpirun, MPICH's Hydra, Slurm's first node, as "2(x4),1" lists them). */
static int local_ranks(void)
{
    const char *names[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_STEP_TASKS_PER_NODE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        long n = v ? strtol(v, NULL, 10) : 0;
        if (n > 0 && n < 1 << 20) return (int)n;
    }
    return 1;
}

static int allowed_cpus(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

void pb_progress_choose(int comm_thread)
{
    const char *user = getenv("OMPI_MCA_mpi_yield_when_idle");
    snprintf(decision, sizeof decision, "unset");
    if (user) {
        snprintf(decision, sizeof decision, "%.40s (set by the user)", user);
        return;
    }
    if (!comm_thread) return;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    double per = pb_progress_cpus_per_rank(allowed_cpus(), online > 0 ? (int)online : 1, local_ranks());
    if (per >= 2.0) return;
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    snprintf(decision, sizeof decision, "1 (set: %.2g processor%s a rank for its compute and its communication thread)",
             per, per == 1.0 ? "" : "s");
}

const char *pb_progress_yield(void) { return decision; }
