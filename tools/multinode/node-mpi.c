/*
 * node-mpi - an MPI program for a multi-node Open MPI job.
 *
 * Usage: node-mpi basic|shared [OUTDIR]
 *   basic   MPI_Get_processor_name, MPI_Allreduce (sum and max of rank-derived values), a ring
 *           (each rank sends its rank * 10 + 1 to the next and receives from the previous)
 *   shared  MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) and the world ranks of each rank's node
 *           communicator (it uses the job's PMIX_LOCAL_PEERS: the caller runs it under a timeout)
 *
 * Output lines (one write each; sort them): "mpi <rank> <what> ...", "mpi <rank> finalize ok";
 * with OUTDIR into OUTDIR/<rank> (mpirun's forwarding of the ranks' output may cut a line).
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size, out_fd = STDOUT_FILENO;

static void say(const char *text)
{
    char buf[1024];
    int n = snprintf(buf, sizeof(buf), "mpi %d %s\n", rank, text);
    if (n > 0 && write(out_fd, buf, (size_t) n) < 0) {
        exit(1);
    }
}

static void basic(void)
{
    char name[MPI_MAX_PROCESSOR_NAME], text[512];
    int len = 0;
    MPI_Get_processor_name(name, &len);
    snprintf(text, sizeof(text), "name %.*s", len, name);
    say(text);

    long in[2] = {rank + 1, rank * 7 % 5}, out[2] = {0, 0};
    MPI_Allreduce(&in[0], &out[0], 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&in[1], &out[1], 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    snprintf(text, sizeof(text), "allreduce size=%d sum=%ld max=%ld", size, out[0], out[1]);
    say(text);

    int next = (rank + 1) % size, prev = (rank + size - 1) % size, send = rank * 10 + 1, recv = -1;
    MPI_Sendrecv(&send, 1, MPI_INT, next, 7, &recv, 1, MPI_INT, prev, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    snprintf(text, sizeof(text), "ring from=%d got=%d", prev, recv);
    say(text);
}

static void shared(void)
{
    MPI_Comm node;
    int nrank = -1, nsize = 0;
    char text[512];
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    int *members = calloc((size_t) nsize, sizeof(int));
    if (NULL == members) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Allgather(&rank, 1, MPI_INT, members, 1, MPI_INT, node);
    int off = snprintf(text, sizeof(text), "shared size=%d rank=%d members=", nsize, nrank);
    for (int i = 0; i < nsize && off < (int) sizeof(text) - 16; i++) {
        off += snprintf(text + off, sizeof(text) - (size_t) off, "%s%d", i ? "," : "", members[i]);
    }
    say(text);
    free(members);
    MPI_Comm_free(&node);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (0 != strcmp(argv[1], "basic") && 0 != strcmp(argv[1], "shared"))) {
        fprintf(stderr, "usage: node-mpi basic|shared [OUTDIR]\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (3 == argc) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%d", argv[2], rank);
        out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
        if (out_fd < 0) {
            perror(path);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (0 == strcmp(argv[1], "basic")) {
        basic();
    } else {
        shared();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    say("finalize ok");
    return 0;
}
