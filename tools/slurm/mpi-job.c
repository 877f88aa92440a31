/*
 * mpi-job - an MPI program for a Slurm step (srun --mpi=pmix): MPI_Init (Open MPI's PMIx
 * client: modex through the job's gds), an Allreduce, a ring send/recv, an MPI_Comm_split, and
 * one canonical line per rank (sort them):
 *   mpi <rank> size=<n> sum=<sum of ranks> ring=<rank received from the left> split=<color>:<rank in
 *   color>/<size of color> splitsum=<sum of world ranks in the color> host=<same|differs>
 * Exit status 1 when a result is not the one expected (printed as "mpi <rank> WRONG ...").
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, sum = 0, left, right, got = -1, bad = 0;
    MPI_Comm half;
    int hrank, hsize, hsum = 0;
    char name[MPI_MAX_PROCESSOR_NAME], name0[MPI_MAX_PROCESSOR_NAME];
    int len;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad |= sum != size * (size - 1) / 2;

    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 7, &got, 1, MPI_INT, left, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    bad |= got != left;

    /* even and odd ranks, ordered by descending world rank */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);
    MPI_Allreduce(&rank, &hsum, 1, MPI_INT, MPI_SUM, half);
    {
        int want_size = size / 2 + (rank % 2 == 0 ? size % 2 : 0), want_sum = 0, want_rank = 0;
        for (int r = rank % 2; r < size; r += 2) {
            want_sum += r;
            want_rank += r > rank;
        }
        bad |= hsize != want_size || hsum != want_sum || hrank != want_rank;
    }
    MPI_Comm_free(&half);

    /* every rank knows rank 0's host name (a broadcast over the modex'd connections) */
    MPI_Get_processor_name(name, &len);
    memcpy(name0, name, sizeof(name0));
    MPI_Bcast(name0, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, MPI_COMM_WORLD);

    printf("mpi %d %ssize=%d sum=%d ring=%d split=%d:%d/%d splitsum=%d host=%s\n", rank,
           bad ? "WRONG " : "", size, sum, got, rank % 2, hrank, hsize, hsum,
           strcmp(name, name0) ? "differs" : "same");
    fflush(stdout);
    MPI_Finalize();
    return bad;
}
