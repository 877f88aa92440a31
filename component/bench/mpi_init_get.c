/* MPI_Init time and PMIx_Get latency inside an Open MPI job, for comparing gds components
 * (component/bench/mpi-bench.sh runs it under rshm, hash and ds21).
 *
 * Each rank: times MPI_Init; posts a 64-byte card with PMIx_Put + PMIx_Commit and a collecting
 * PMIx_Fence; then times n PMIx_Get + PMIX_VALUE_RELEASE of a reserved key (PMIX_LOCAL_RANK of a
 * peer) and of a peer's card, in batches of 32, and prints one line:
 *   rank <r> init_us <t> fence_us <t> job_p50_ns <t> job_p99_ns <t> card_p50_ns <t> card_p99_ns <t>
 * Answers are checked (a wrong card or rank is a failure, exit 1). */
#define _GNU_SOURCE
#include <mpi.h>
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 32
#define CARD 64

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fill_card(unsigned char *c, uint32_t rank) {
    for (int i = 0; i < CARD; i++) c[i] = (unsigned char)(rank * 31 + i);
}

/* One Get, checked; returns 0 when the answer is right. */
static int get_one(const pmix_proc_t *peer, const char *key, int card) {
    pmix_value_t *val = NULL;
    if (PMIx_Get(peer, key, NULL, 0, &val) != PMIX_SUCCESS || val == NULL) return -1;
    int bad;
    if (card) {
        unsigned char want[CARD];
        fill_card(want, peer->rank);
        bad = val->type != PMIX_BYTE_OBJECT || val->data.bo.size != CARD ||
              memcmp(val->data.bo.bytes, want, CARD) != 0;
    } else {
        bad = val->type != PMIX_UINT16;
    }
    PMIX_VALUE_RELEASE(val);
    return bad ? -1 : 0;
}

/* n Gets in batches of 32, peers chosen round robin; p50/p99 of the batch means. */
static int time_gets(const pmix_proc_t *me, int size, const char *key, int card, int n,
                     double *p50, double *p99) {
    int batches = n / BATCH;
    double *t = malloc(sizeof(double) * batches);
    pmix_proc_t peer;
    PMIX_PROC_LOAD(&peer, me->nspace, 0);
    uint32_t next = 0;
    for (int b = 0; b < batches; b++) {
        double t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            peer.rank = next;
            next = (next + 1) % (uint32_t)size;
            if (get_one(&peer, key, card) != 0) {
                fprintf(stderr, "rank %u: wrong answer for %s of rank %u\n", me->rank, key,
                        peer.rank);
                free(t);
                return -1;
            }
        }
        t[b] = (now_ns() - t0) / BATCH;
    }
    qsort(t, batches, sizeof(double), cmp);
    *p50 = t[batches / 2];
    *p99 = t[(batches * 99) / 100];
    free(t);
    return 0;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2048;
    double t0 = now_ns();
    MPI_Init(&argc, &argv);
    double init_us = (now_ns() - t0) / 1e3;
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    pmix_proc_t me;
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init failed\n");
        return 1;
    }
    unsigned char card[CARD];
    fill_card(card, me.rank);
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, NULL, PMIX_BYTE_OBJECT);
    v.data.bo.bytes = (char *)card;
    v.data.bo.size = CARD;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, "bench.card", &v);
    rc = rc == PMIX_SUCCESS ? PMIx_Commit() : rc;
    pmix_info_t collect;
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    double f0 = now_ns();
    rc = rc == PMIX_SUCCESS ? PMIx_Fence(NULL, 0, &collect, 1) : rc;
    double fence_us = (now_ns() - f0) / 1e3;
    if (rc != PMIX_SUCCESS) {
        fprintf(stderr, "rank %d: put/commit/fence failed: %s\n", rank, PMIx_Error_string(rc));
        return 1;
    }
    double jp50, jp99, cp50, cp99;
    int bad = time_gets(&me, size, PMIX_LOCAL_RANK, 0, n, &jp50, &jp99) ||
              time_gets(&me, size, "bench.card", 1, n, &cp50, &cp99);
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    printf("rank %d init_us %.0f fence_us %.0f job_p50_ns %.0f job_p99_ns %.0f card_p50_ns %.0f "
           "card_p99_ns %.0f\n",
           rank, init_us, fence_us, jp50, jp99, cp50, cp99);
    PMIx_Finalize(NULL, 0);
    MPI_Finalize();
    return any_bad ? 1 : 0;
}
