/* mpi_ring.c - an MPI job for the gds/rshm component test (component/tests/openpmix.rs):
 * Init, Allreduce, a Sendrecv ring, Comm_split, Finalize; then prints one line per check and
 * the rshm segments this process mapped ("maps <rank> <perms> <path>" from /proc/self/maps). */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, sum = 0, left, right, got = -1, subrank, subsize, subsum = 0;
    MPI_Comm half;
    char line[4096];
    int maps = 0;
    FILE *f;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Allreduce: sum of ranks */
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("allreduce %d %s %d\n", rank, sum == size * (size - 1) / 2 ? "ok" : "BAD", sum);

    /* Sendrecv ring: receive the left neighbour's rank */
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    printf("ring %d %s %d\n", rank, got == left ? "ok" : "BAD", got);

    /* Comm_split: even / odd ranks, then a sum inside each half */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &subrank);
    MPI_Comm_size(half, &subsize);
    MPI_Allreduce(&rank, &subsum, 1, MPI_INT, MPI_SUM, half);
    {
        int expect = 0;
        for (int r = rank % 2; r < size; r += 2) {
            expect += r;
        }
        printf("split %d %s %d/%d %d\n", rank, (subsum == expect && subrank == rank / 2) ? "ok" : "BAD",
               subrank, subsize, subsum);
    }
    MPI_Comm_free(&half);

    f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof(line), f)) {
        char perms[8], path[4096];
        path[0] = '\0';
        if (sscanf(line, "%*s %7s %*s %*s %*s %4095[^\n]", perms, path) >= 1 && strstr(path, "rshm-")) {
            printf("maps %d %s %s\n", rank, perms, path);
            maps++;
        }
    }
    if (f) {
        fclose(f);
    }
    if (!maps) {
        printf("maps %d none\n", rank);
    }
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
