/* job_probe: each rank Gets the job-level keys and its own proc keys a launcher registers, and
 * prints one sorted-comparable line per answer ("<rank> <key> <type> <value>"), then the p50 of a
 * job key's and an own proc key's Get (rank 0, "p50" lines, not compared). Used by regex2.sh. */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void show(const pmix_proc_t *me, const pmix_proc_t *who, const char *key)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(who, key, NULL, 0, &v);
    if (PMIX_SUCCESS != rc) {
        printf("%u %s status %d\n", me->rank, key, rc);
        return;
    }
    switch (v->type) {
    case PMIX_STRING:
        printf("%u %s string %s\n", me->rank, key, v->data.string ? v->data.string : "(null)");
        break;
    case PMIX_UINT32:
        printf("%u %s uint32 %u\n", me->rank, key, v->data.uint32);
        break;
    case PMIX_UINT16:
        printf("%u %s uint16 %u\n", me->rank, key, v->data.uint16);
        break;
    case PMIX_PROC_RANK:
        printf("%u %s rank %u\n", me->rank, key, v->data.rank);
        break;
    default:
        printf("%u %s type %d\n", me->rank, key, v->type);
    }
    PMIX_VALUE_RELEASE(v);
}

static double p50(const pmix_proc_t *who, const char *key)
{
    enum { N = 2001 };
    static double t[N];
    for (int i = 0; i < N; i++) {
        pmix_value_t *v = NULL;
        double t0 = now_ns();
        if (PMIX_SUCCESS != PMIx_Get(who, key, NULL, 0, &v)) {
            return -1;
        }
        t[i] = now_ns() - t0;
        PMIX_VALUE_RELEASE(v);
    }
    qsort(t, N, sizeof t[0], cmp);
    return t[N / 2];
}

int main(void)
{
    pmix_proc_t me, job;
    if (PMIX_SUCCESS != PMIx_Init(&me, NULL, 0)) {
        fprintf(stderr, "PMIx_Init failed\n");
        return 1;
    }
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    const char *job_keys[] = {PMIX_JOB_SIZE, PMIX_UNIV_SIZE, PMIX_MAX_PROCS, PMIX_LOCAL_SIZE,
                              PMIX_NUM_NODES, PMIX_LOCAL_PEERS, PMIX_NODE_LIST, PMIX_APPNUM};
    const char *proc_keys[] = {PMIX_LOCAL_RANK, PMIX_NODE_RANK, PMIX_RANK, PMIX_APP_RANK,
                               PMIX_GLOBAL_RANK, PMIX_HOSTNAME, PMIX_NODEID};
    for (size_t i = 0; i < sizeof job_keys / sizeof job_keys[0]; i++) {
        show(&me, &job, job_keys[i]);
    }
    for (size_t i = 0; i < sizeof proc_keys / sizeof proc_keys[0]; i++) {
        show(&me, &me, proc_keys[i]);
    }
    if (0 == me.rank) {
        printf("p50 job %.0f ns\n", p50(&job, PMIX_JOB_SIZE));
        printf("p50 own %.0f ns\n", p50(&me, PMIX_LOCAL_RANK));
    }
    PMIx_Finalize(NULL, 0);
    return 0;
}
