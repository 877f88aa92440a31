/* probe.c - PMIx_Get answers inside an MPI job, printed one per line for comparing gds
 * components (packaging/tests/install.sh): each rank posts a card, fences with data collection,
 * then Gets job-level keys and, of every rank, process keys and its card. Nothing printed names
 * the run (no namespace, no pid), so the output of two runs is equal when the answers are. */
#define _GNU_SOURCE
#include <mpi.h>
#include <pmix.h>
#include <stdio.h>
#include <string.h>

static void show(int me, const char *who, const char *key, pmix_status_t rc, const pmix_value_t *v)
{
    if (rc != PMIX_SUCCESS) {
        printf("r%d %s %s status %d\n", me, who, key, rc);
        return;
    }
    switch (v->type) {
    case PMIX_STRING: printf("r%d %s %s string %s\n", me, who, key, v->data.string); break;
    case PMIX_UINT32: printf("r%d %s %s uint32 %u\n", me, who, key, v->data.uint32); break;
    case PMIX_UINT16: printf("r%d %s %s uint16 %u\n", me, who, key, v->data.uint16); break;
    case PMIX_INT: printf("r%d %s %s int %d\n", me, who, key, v->data.integer); break;
    case PMIX_PROC_RANK: printf("r%d %s %s rank %u\n", me, who, key, v->data.rank); break;
    case PMIX_BOOL: printf("r%d %s %s bool %d\n", me, who, key, v->data.flag); break;
    default: printf("r%d %s %s type %d\n", me, who, key, v->type); break;
    }
}

static void get(int me, const pmix_proc_t *p, const char *who, const char *key)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(p, key, NULL, 0, &v);
    show(me, who, key, rc, v);
    if (rc == PMIX_SUCCESS) PMIX_VALUE_RELEASE(v);
}

int main(int argc, char **argv)
{
    int rank, size;
    pmix_proc_t me, p;
    char card[64], who[32];
    pmix_value_t val;
    pmix_info_t collect;
    bool yes = true;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) { printf("r%d PMIx_Init failed\n", rank); return 1; }

    snprintf(card, sizeof card, "card-of-rank-%d", rank);
    PMIX_VALUE_LOAD(&val, card, PMIX_STRING);
    if (PMIx_Put(PMIX_GLOBAL, "rshm.probe.card", &val) != PMIX_SUCCESS || PMIx_Commit() != PMIX_SUCCESS) {
        printf("r%d put/commit failed\n", rank);
        return 1;
    }
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    if (PMIx_Fence(NULL, 0, &collect, 1) != PMIX_SUCCESS) { printf("r%d fence failed\n", rank); return 1; }

    PMIX_LOAD_PROCID(&p, me.nspace, PMIX_RANK_WILDCARD);
    const char *job[] = {PMIX_JOB_SIZE, PMIX_UNIV_SIZE, PMIX_LOCAL_SIZE, PMIX_NUM_NODES,
                         PMIX_LOCAL_PEERS, PMIX_MAX_PROCS, PMIX_NODE_SIZE};
    for (size_t i = 0; i < sizeof job / sizeof job[0]; i++) get(rank, &p, "job", job[i]);
    const char *proc[] = {PMIX_LOCAL_RANK, PMIX_NODE_RANK, PMIX_HOSTNAME, PMIX_NODEID, PMIX_APPNUM,
                          "rshm.probe.card"};
    for (int r = 0; r < size; r++) {
        PMIX_LOAD_PROCID(&p, me.nspace, (pmix_rank_t) r);
        snprintf(who, sizeof who, "p%d", r);
        for (size_t i = 0; i < sizeof proc / sizeof proc[0]; i++) get(rank, &p, who, proc[i]);
    }
    PMIx_Finalize(NULL, 0);
    MPI_Finalize();
    return 0;
}
