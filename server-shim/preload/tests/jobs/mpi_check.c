/*
 * mpi_check: an MPI job whose output is the same on every run with the same rank count:
 * an Allreduce, a ring (each rank sends its rank to the next), and a Comm_split into even and
 * odd ranks with an Allreduce inside each half. Exit 1 on a wrong answer.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long sum = 0, mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    ok &= sum == (long) size * (size + 1) / 2;

    int from = -1, next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Sendrecv(&rank, 1, MPI_INT, next, 7, &from, 1, MPI_INT, prev, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    ok &= from == prev;

    MPI_Comm half;
    int hrank, hsize, hsum = 0;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);

    printf("rank %d of %d: allreduce %ld ring-from %d half %d rank %d of %d sum %d %s\n", rank,
           size, sum, from, rank % 2, hrank, hsize, hsum, ok ? "ok" : "WRONG");
    MPI_Comm_free(&half);
    MPI_Finalize();
    return ok ? 0 : 1;
}
