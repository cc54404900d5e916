/* Reference loops written the way the OSU micro-benchmarks write them, with
 * nothing of parabench in them, to measure what the harness adds:
 *   ref_mpi latency SIZE ITERS     osu_latency: whole loop timed, / (2 * iters)
 *   ref_mpi allreduce SIZE ITERS   osu_allreduce: barrier, time one call, sum; mean over ranks
 * Prints one number, microseconds, on rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4) {
        if (rank == 0) fprintf(stderr, "usage: ref_mpi latency|allreduce SIZE ITERS\n");
        MPI_Finalize();
        return 2;
    }
    int bytes = atoi(argv[2]), iters = atoi(argv[3]), warm = iters / 10 + 1;
    char *s = calloc(1, (size_t)bytes + 4), *r = calloc(1, (size_t)bytes + 4);
    double t = 0;
    if (strcmp(argv[1], "latency") == 0) {
        int peer = rank == 0 ? size - 1 : 0;
        double t0 = 0;
        for (int i = -warm; i < iters; i++) {
            if (i == 0) t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(s, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(r, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == size - 1) {
                MPI_Recv(r, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            }
        }
        t = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
    } else {
        int count = bytes / 4 > 0 ? bytes / 4 : 1;
        for (int i = -warm; i < iters; i++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(s, r, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            if (i >= 0) t += MPI_Wtime() - t0;
        }
        t = t * 1e6 / iters;
        double sum = 0;
        MPI_Reduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        t = sum / size;
    }
    if (rank == 0) printf("%.3f\n", t);
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
