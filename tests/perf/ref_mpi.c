/* What the parabench harness adds to an operation, measured inside one
 * process: blocks of OSU-style reference loops (nothing of parabench in them)
 * alternate with blocks of the same operation through parabench's timing loop
 * and backend, so both see the same machine state. On a VM, separate launches
 * of the same program differ by up to 2x (where the shared-memory segment and
 * the virtual CPUs land), which would drown a harness difference.
 *
 *   ref_mpi latency|allreduce SIZE ITERS BLOCKS
 *
 * latency:   osu_latency's loop (MPI_Send/MPI_Recv ping-pong, whole loop timed,
 *            / 2 iters) against pb_p2p_measure in latency mode;
 * allreduce: osu_allreduce's loop (time one MPI_Allreduce, then a barrier; mean
 *            over iterations and ranks) against pb_runner_time_loop + pb_coll_exec_issue.
 * Prints "reference US parabench US difference US" (medians over blocks) on rank 0. */
#include "backend/buffers.h"
#include "coll/coll_exec.h"
#include "backend/comm.h"
#include "coll/p2p.h"
#include "harness/runner.h"
#include "core/stats.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct coll_ctx {
    const pb_comm_backend *be;
    pb_comm *comm;
    pb_coll_exec_shape sh;
    void *s, *r;
} coll_ctx;

static int coll_iter(void *arg, int iter)
{
    (void)iter;
    coll_ctx *x = arg;
    int st = pb_coll_exec_issue(x->be, x->comm, PB_COLL_ALLREDUCE, &x->sh, x->s, x->r, PB_FLOAT32, PB_SUM, 0);
    return st ? st : x->be->sync(x->comm);
}

/* osu_latency: rank 0 and the last rank ping-pong; the whole loop is timed. */
static double ref_latency(char *s, char *r, int bytes, int iters, int rank, int size)
{
    int peer = rank == 0 ? size - 1 : 0;
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = -iters / 10; i < iters; i++) {
        if (i == 0) t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(s, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(r, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == size - 1) {
            MPI_Recv(r, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(s, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

/* osu_allreduce: time one call, then a barrier; mean over iterations, then over ranks. */
static double ref_allreduce(char *s, char *r, int bytes, int iters, int size)
{
    int count = bytes / 4 > 0 ? bytes / 4 : 1;
    double t = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = -iters / 10; i < iters; i++) {
        double t0 = MPI_Wtime();
        MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        if (i >= 0) t += t1 - t0;
    }
    double mean = t * 1e6 / iters, sum = 0;
    MPI_Allreduce(&mean, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / size;
}

static double pb_latency(const pb_comm_backend *be, pb_comm *comm, pb_buffers *s, pb_buffers *r, int bytes, int iters,
                         int rank, int size)
{
    pb_p2p_cfg cfg = {PB_P2P_LATENCY, iters, iters / 10, 1, 0, 0};
    pb_p2p_result res = {0};
    pb_buffers_fit(s, (size_t)bytes);
    pb_buffers_fit(r, (size_t)bytes);
    if (rank == 0 || rank == size - 1)
        pb_p2p_measure(be, comm, MPI_COMM_WORLD, 0, rank == 0 ? size - 1 : 0, (size_t)bytes, &cfg, s, r, &res);
    MPI_Bcast(&res.st.mean, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return res.st.mean;
}

static double pb_allreduce(coll_ctx *x, double *samples, int iters)
{
    pb_runner_cfg cfg = {iters, iters / 10, 0};
    int done = 0;
    pb_runner_time_loop(MPI_COMM_WORLD, &cfg, coll_iter, x, samples, &done);
    pb_stats st;
    pb_runner_gather_stats(MPI_COMM_WORLD, samples, done, &st);
    MPI_Bcast(&st.mean, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return st.mean;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5) {
        if (rank == 0) fprintf(stderr, "usage: ref_mpi latency|allreduce SIZE ITERS BLOCKS\n");
        MPI_Finalize();
        return 2;
    }
    int latency = strcmp(argv[1], "latency") == 0, bytes = atoi(argv[2]), iters = atoi(argv[3]);
    int blocks = atoi(argv[4]);
    const pb_comm_backend *be = pb_comm_backend_mpi();
    pb_comm *comm = NULL;
    pb_buffers s, r;
    if (be->comm_create(MPI_COMM_WORLD, &comm) || pb_buffers_alloc(be, (size_t)bytes, 0, &s) ||
        pb_buffers_alloc(be, (size_t)bytes, 0, &r))
        MPI_Abort(MPI_COMM_WORLD, 3);
    coll_ctx x = {be, comm, {0}, s.base, r.base};
    pb_coll_exec_shape_of(PB_COLL_ALLREDUCE, (size_t)bytes, PB_FLOAT32, size, &x.sh);
    double *samples = malloc(sizeof(double) * (size_t)iters), *ref = malloc(sizeof(double) * (size_t)blocks),
           *ours = malloc(sizeof(double) * (size_t)blocks);
    if (!samples || !ref || !ours) MPI_Abort(MPI_COMM_WORLD, 3);
    for (int b = 0; b < blocks; b++) { /* alternate which goes first */
        for (int k = 0; k < 2; k++) {
            int mine = (b + k) % 2;
            double v = latency ? (mine ? pb_latency(be, comm, &s, &r, bytes, iters, rank, size)
                                       : ref_latency(s.base, r.base, bytes, iters, rank, size))
                               : (mine ? pb_allreduce(&x, samples, iters)
                                       : ref_allreduce(s.base, r.base, bytes, iters, size));
            (mine ? ours : ref)[b] = v;
        }
    }
    qsort(ref, (size_t)blocks, sizeof(double), cmp);
    qsort(ours, (size_t)blocks, sizeof(double), cmp);
    double mr = ref[blocks / 2], mo = ours[blocks / 2];
    if (rank == 0) printf("reference %.3f parabench %.3f difference %+.3f\n", mr, mo, mo - mr);
    free(samples);
    free(ref);
    free(ours);
    pb_buffers_free(&s);
    pb_buffers_free(&r);
    be->comm_destroy(comm);
    MPI_Finalize();
    return 0;
}
