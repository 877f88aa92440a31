/* pmi2_spawn: rank 0 spawns 2 copies of itself with PMI2_Job_Spawn (argv "child"); each child
 * prints its rank, size and whether its job id differs from its parent's (passed in argv). */
#include <stdio.h>
#include <string.h>
#include <pmi2.h>

int main(int argc, char **argv) {
    int spawned, size, rank, appnum, version, subversion;
    char job[256] = "";
    if (PMI2_Init(&spawned, &size, &rank, &appnum, &version, &subversion)) return 1;
    PMI2_Job_GetId(job, sizeof job);
    if (argc > 2 && !strcmp(argv[1], "child")) {
        printf("child rank %d size %d new-job %d\n", rank, size, strcmp(job, argv[2]) != 0);
    } else if (rank == 0) {
        const char *cmds[1] = {argv[0]};
        const char *args[] = {"child", job, NULL};
        const char **argvs[1] = {args};
        int maxprocs[1] = {2}, errors[1] = {-5};
        char child[256] = "";
        int rc = PMI2_Job_Spawn(1, cmds, argvs, maxprocs, NULL, NULL, 0, NULL, child, sizeof child,
                                errors);
        printf("spawn rc %d errors %d child-job %d\n", rc, errors[0], child[0] && strcmp(child, job));
    }
    fflush(stdout);
    PMI2_Finalize();
    return 0;
}
