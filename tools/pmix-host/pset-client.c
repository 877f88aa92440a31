/*
 * pset-client - a PMIx client that asks everything about process sets, before and after its
 * host deletes sets during the first fence (pmix-host --psets; README.md, "Process sets").
 *
 *   pset-client SETS NRANKS
 *   pset-client --bench CALLS SET RANK
 *
 * SETS: the set names to ask about, comma-separated; NRANKS: the job's ranks whose
 * PMIX_PSET_NAMES it asks. One line per answer on stdout, each written at once:
 *   pset <rank> <phase> <what> <STATUS> [<key>=<type>:<value> ...]
 * phase 1 before the fence, 2 after. Exit status 0 unless PMIx_Init or the fence fails.
 * --bench: CALLS timed calls each (after CALLS/10 + 1 untimed; at most ~1 s of them) of PMIx_Query_info of
 * PMIX_QUERY_NUM_PSETS + PMIX_QUERY_PSET_NAMES, of PMIX_QUERY_PSET_MEMBERSHIP of SET, and of
 * PMIx_Get of PMIX_PSET_NAMES of RANK; one line each:
 *   bench <rank> <what> <STATUS> ns_per_call=<n> calls=<timed calls>
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>

#include "common.h"

static pmix_proc_t me;

static void emit(char *buf, size_t len)
{
    buf[len - 1] = '\n';
    if (write(1, buf, len) < 0) {
        perror("write");
    }
}

static void print_value(FILE *f, const char *key, const pmix_value_t *v)
{
    fprintf(f, " %s=%s:", key, PMIx_Data_type_string(v->type));
    fmt_value(f, v);
}

/* One PMIx_Query_info of `keys` (NULL-terminated), with a PMIX_PSET_NAME qualifier if `pset`. */
static void query(int phase, const char *what, const char **keys, const char *pset)
{
    pmix_query_t q;
    pmix_info_t *res = NULL;
    size_t nres = 0;
    PMIX_QUERY_CONSTRUCT(&q);
    size_t n = 0;
    while (keys[n]) {
        n++;
    }
    q.keys = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        q.keys[i] = strdup(keys[i]);
    }
    if (pset) {
        PMIX_INFO_CREATE(q.qualifiers, 1);
        PMIX_INFO_LOAD(&q.qualifiers[0], PMIX_PSET_NAME, pset, PMIX_STRING);
        q.nqual = 1;
    }
    pmix_status_t rc = PMIx_Query_info(&q, 1, &res, &nres);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "pset %u %d %s %s", me.rank, phase, what, PMIx_Error_string(rc));
    for (size_t i = 0; i < nres; i++) {
        print_value(f, res[i].key, &res[i].value);
    }
    fputc(' ', f);
    fclose(f);
    emit(buf, len);
    free(buf);
    if (res) {
        PMIX_INFO_FREE(res, nres);
    }
    PMIX_QUERY_DESTRUCT(&q);
}

static void get(int phase, const char *what, const char *ns, pmix_rank_t rank, const char *key)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    PMIX_LOAD_PROCID(&p, ns, rank);
    pmix_status_t rc = PMIx_Get(&p, key, NULL, 0, &v);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "pset %u %d %s %s", me.rank, phase, what, PMIx_Error_string(rc));
    if (PMIX_SUCCESS == rc && v) {
        print_value(f, key, v);
        PMIX_VALUE_RELEASE(v);
    }
    fputc(' ', f);
    fclose(f);
    emit(buf, len);
    free(buf);
}

static void phase(int ph, char **sets, int nsets, int nranks)
{
    char what[512];
    const char *num[] = {PMIX_QUERY_NUM_PSETS, NULL};
    const char *names[] = {PMIX_QUERY_PSET_NAMES, NULL};
    const char *both[] = {PMIX_QUERY_NUM_PSETS, PMIX_QUERY_PSET_NAMES, NULL};
    const char *mem[] = {PMIX_QUERY_PSET_MEMBERSHIP, NULL};
    const char *num_mem[] = {PMIX_QUERY_NUM_PSETS, PMIX_QUERY_PSET_MEMBERSHIP, NULL};
    query(ph, "query-num", num, NULL);
    query(ph, "query-names", names, NULL);
    query(ph, "query-num+names", both, NULL);
    query(ph, "query-membership-no-name", mem, NULL);
    for (int s = 0; s < nsets; s++) {
        snprintf(what, sizeof(what), "query-membership(%s)", sets[s]);
        query(ph, what, mem, sets[s]);
        snprintf(what, sizeof(what), "query-num+membership(%s)", sets[s]);
        query(ph, what, num_mem, sets[s]);
        snprintf(what, sizeof(what), "get-members(%s)", sets[s]);
        get(ph, what, sets[s], PMIX_RANK_WILDCARD, PMIX_PSET_MEMBERS);
    }
    for (int r = 0; r < nranks; r++) {
        snprintf(what, sizeof(what), "get-names(%d)", r);
        get(ph, what, me.nspace, (pmix_rank_t) r, PMIX_PSET_NAMES);
    }
    get(ph, "get-name(self)", me.nspace, me.rank, PMIX_PSET_NAME);
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long) t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* One timed loop of `calls` calls of `one` (which returns its status). */
static void timed(const char *what, long calls, pmix_status_t (*one)(void *), void *arg)
{
    pmix_status_t rc = PMIX_SUCCESS;
    for (long i = 0; i < calls / 10 + 1; i++) {
        rc = one(arg);
    }
    /* at most CALLS calls, and no more than ~1 s of them (large answers cost much more) */
    long long t0 = now_ns(), t1 = t0;
    long done = 0;
    while (done < calls && (done < 10 || t1 - t0 < 1000000000LL)) {
        rc = one(arg);
        done++;
        t1 = now_ns();
    }
    printf("bench %u %s %s ns_per_call=%lld calls=%ld\n", me.rank, what, PMIx_Error_string(rc),
           done ? (t1 - t0) / done : 0, done);
    fflush(stdout);
}

static pmix_status_t one_query(void *arg)
{
    pmix_query_t *q = arg;
    pmix_info_t *res = NULL;
    size_t nres = 0;
    pmix_status_t rc = PMIx_Query_info(q, 1, &res, &nres);
    if (res) {
        PMIX_INFO_FREE(res, nres);
    }
    return rc;
}

static pmix_status_t one_get(void *arg)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(arg, PMIX_PSET_NAMES, NULL, 0, &v);
    if (v) {
        PMIX_VALUE_RELEASE(v);
    }
    return rc;
}

static int bench(long calls, const char *set, pmix_rank_t rank)
{
    pmix_query_t q;
    PMIX_QUERY_CONSTRUCT(&q);
    q.keys = calloc(3, sizeof(char *));
    q.keys[0] = strdup(PMIX_QUERY_NUM_PSETS);
    q.keys[1] = strdup(PMIX_QUERY_PSET_NAMES);
    timed("query-num+names", calls, one_query, &q);
    PMIX_QUERY_DESTRUCT(&q);
    PMIX_QUERY_CONSTRUCT(&q);
    q.keys = calloc(2, sizeof(char *));
    q.keys[0] = strdup(PMIX_QUERY_PSET_MEMBERSHIP);
    PMIX_INFO_CREATE(q.qualifiers, 1);
    PMIX_INFO_LOAD(&q.qualifiers[0], PMIX_PSET_NAME, set, PMIX_STRING);
    q.nqual = 1;
    timed("query-membership", calls, one_query, &q);
    PMIX_QUERY_DESTRUCT(&q);
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, me.nspace, rank);
    timed("get-pset-names", calls, one_get, &p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--bench")) {
        pmix_status_t rc = PMIx_Init(&me, NULL, 0);
        if (PMIX_SUCCESS != rc) {
            fprintf(stderr, "pset-client: PMIx_Init: %s\n", PMIx_Error_string(rc));
            return 1;
        }
        bench(atol(argv[2]), argv[3], (pmix_rank_t) atol(argv[4]));
        PMIx_Finalize(NULL, 0);
        return 0;
    }
    if (argc != 3) {
        fprintf(stderr, "usage: pset-client SETS NRANKS\n");
        return 2;
    }
    char *list = strdup(argv[1]), *save = NULL;
    char *sets[64];
    int nsets = 0;
    for (char *s = strtok_r(list, ",", &save); s && nsets < 64; s = strtok_r(NULL, ",", &save)) {
        sets[nsets++] = s;
    }
    int nranks = atoi(argv[2]);
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "pset-client: PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    phase(1, sets, nsets, nranks);
    /* the host deletes sets while every client waits here */
    rc = PMIx_Fence(NULL, 0, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "pset-client: PMIx_Fence: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    phase(2, sets, nsets, nranks);
    PMIx_Finalize(NULL, 0);
    free(list);
    return 0;
}
