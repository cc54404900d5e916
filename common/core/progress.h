/* How a rank's MPI waits share its cores. Open MPI's waits spin. A rank
 * whose communication thread (dp_allreduce's buckets, fsdp_step's prefetch,
 * cp_attention's ring) shares its one core with its compute has the spinning
 * thread take that core from the GEMMs beside it, so overlap costs more than
 * no overlap at all. Such a rank sets Open MPI's mpi_yield_when_idle before
 * MPI starts (unless the user set it), as mpirun does for an oversubscribed
 * node: a waiting thread then yields the core. docs/METRICS.md. */
#ifndef PB_PROGRESS_H
#define PB_PROGRESS_H

/* Before MPI_Init: a rank that runs a communication thread (comm_thread)
 * with fewer than 2 processors to itself sets OMPI_MCA_mpi_yield_when_idle=1
 * unless it is set. Processors to itself: those it may run on, shared by the
 * node's ranks (Open MPI's, MPICH's or Slurm's count of them) when it may
 * run on every one. */
void pb_progress_choose(int comm_thread);

/* The decision for the metadata: "unset", "V (set by the user)" or "1 (set:
 * N processors a rank for its compute and its communication thread)". */
const char *pb_progress_yield(void);

/* The rule, apart from the machine: processors a rank has to itself, from
 * those it may run on (allowed), the node's online ones and its ranks. */
double pb_progress_cpus_per_rank(int allowed, int online, int local_ranks);

#endif
