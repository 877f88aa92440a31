/* libpmi2.so.0: rshm's PMI-2 library under the ABI of Slurm's and MPICH's pmi2.h
 * (/usr/include/slurm/pmi2.h), so that a binary linked with -lpmi2 runs on rshm by its library
 * path alone (docs/pmi2.md, "Binary compatibility"). The three calls whose signatures differ
 * from rshm's pmi2.h are defined here and call librshm_pmi2.so's entry points of that form;
 * every other call (and PMI2_Job_GetRank, PMI2_Info_GetSize, PMIX_Ring, which only Slurm's
 * header declares) is librshm_pmi2.so's own, which this library depends on: the dynamic
 * linker, and dlsym on this library's handle, find them there. */
#include <slurm/pmi2.h>

int rshm_pmi2_slurm_init(int *spawned, int *size, int *rank, int *appnum);
int rshm_pmi2_slurm_job_spawn(int count, const char *cmds[], int argcs[], const char **argvs[],
                              const int maxprocs[], const int info_keyval_sizes[],
                              const struct MPID_Info *info_keyval_vectors[],
                              int preput_keyval_size,
                              const struct MPID_Info *preput_keyval_vector[], char jobId[],
                              int jobIdSize, int errors[]);
int rshm_pmi2_slurm_node_attr_int_array(const char name[], int array[], int arraylen,
                                        int *outlen, int *found);

int PMI2_Init(int *spawned, int *size, int *rank, int *appnum) {
    return rshm_pmi2_slurm_init(spawned, size, rank, appnum);
}

int PMI2_Job_Spawn(int count, const char *cmds[], int argcs[], const char **argvs[],
                   const int maxprocs[], const int info_keyval_sizes[],
                   const struct MPID_Info *info_keyval_vectors[], int preput_keyval_size,
                   const struct MPID_Info *preput_keyval_vector[], char jobId[], int jobIdSize,
                   int errors[]) {
    return rshm_pmi2_slurm_job_spawn(count, cmds, argcs, argvs, maxprocs, info_keyval_sizes,
                                     info_keyval_vectors, preput_keyval_size,
                                     preput_keyval_vector, jobId, jobIdSize, errors);
}

int PMI2_Info_GetNodeAttrIntArray(const char name[], int array[], int arraylen, int *outlen,
                                  int *found) {
    return rshm_pmi2_slurm_node_attr_int_array(name, array, arraylen, outlen, found);
}
