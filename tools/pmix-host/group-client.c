/*
 * group-client - a PMIx client that constructs a group of every local rank (listed in reverse
 * rank order, context id requested), asks what the group answers, destructs it and asks again
 * (pmix-host's group upcall; README.md, "Process groups").
 *
 *   group-client NLOCAL [--bench CALLS]
 *
 * NLOCAL: the local ranks 0..NLOCAL-1 (all of them call). One line per answer on stdout:
 *   group <rank> <what> <STATUS> [<key>=<type>:<value> ...]
 * --bench: instead of the questions, CALLS timed Gets each (after CALLS/10 + 1 untimed; at
 * most ~1 s of them) of
 * {group, 1} PMIX_LOCAL_RANK, PMIX_GROUP_NAMES of the caller and {group, WILDCARD}
 * PMIX_GROUP_CONTEXT_ID, without directives:
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

static void emit(const char *what, pmix_status_t rc, const char *key, const pmix_value_t *v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fprintf(f, "group %u %s %s", me.rank, what, PMIx_Error_string(rc));
    if (v) {
        fprintf(f, " %s=%s:", key, PMIx_Data_type_string(v->type));
        fmt_value(f, v);
    }
    fputc('\n', f);
    fclose(f);
    if (write(1, buf, len) < 0) {
        perror("write");
    }
    free(buf);
}

/* A Get that does not wait for a namespace the server does not know (a group id). */
static void get(const char *what, const char *ns, pmix_rank_t rank, const char *key)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    pmix_info_t info;
    int timeout = 1;
    PMIX_INFO_LOAD(&info, PMIX_TIMEOUT, &timeout, PMIX_INT);
    PMIX_LOAD_PROCID(&p, ns, rank);
    pmix_status_t rc = PMIx_Get(&p, key, &info, 1, &v);
    /* a host-side wait may end either way: as the other tests, both are "no value" */
    if (PMIX_ERR_TIMEOUT == rc) {
        rc = PMIX_ERR_NOT_FOUND;
    }
    emit(what, rc, key, PMIX_SUCCESS == rc ? v : NULL);
    if (v) {
        PMIX_VALUE_RELEASE(v);
    }
    PMIX_INFO_DESTRUCT(&info);
}

static void ask(const char *phase, pmix_proc_t *procs, int n)
{
    char what[256];
    for (int r = 0; r < n; r++) {
        /* group rank r, and the native identifier the construct listed at position r */
        snprintf(what, sizeof(what), "%s:grank(%d)", phase, r);
        get(what, "grpA", (pmix_rank_t) r, PMIX_LOCAL_RANK);
        snprintf(what, sizeof(what), "%s:native(%d)", phase, r);
        get(what, procs[r].nspace, procs[r].rank, PMIX_LOCAL_RANK);
    }
    snprintf(what, sizeof(what), "%s:names(self)", phase);
    get(what, me.nspace, me.rank, PMIX_GROUP_NAMES);
    snprintf(what, sizeof(what), "%s:ctxid(grpA)", phase);
    get(what, "grpA", PMIX_RANK_WILDCARD, PMIX_GROUP_CONTEXT_ID);
}

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long) t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void timed(const char *what, long calls, const char *ns, pmix_rank_t rank, const char *key)
{
    pmix_proc_t p;
    pmix_status_t rc = PMIX_SUCCESS;
    PMIX_LOAD_PROCID(&p, ns, rank);
    long long t0 = 0, t1 = 0;
    long done = 0, warm = calls / 10 + 1;
    /* warm-up calls, then at most CALLS timed ones and no more than ~1 s of them */
    for (long i = 0; done < calls && (done < 10 || t1 - t0 < 1000000000LL); i++) {
        if (i == warm) {
            t0 = t1 = now_ns();
        }
        pmix_value_t *v = NULL;
        rc = PMIx_Get(&p, key, NULL, 0, &v);
        if (v) {
            PMIX_VALUE_RELEASE(v);
        }
        if (i >= warm) {
            done++;
            t1 = now_ns();
        }
    }
    printf("bench %u %s %s ns_per_call=%lld calls=%ld\n", me.rank, what, PMIx_Error_string(rc),
           done ? (t1 - t0) / done : 0, done);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    long calls = 0;
    if (argc == 4 && !strcmp(argv[2], "--bench")) {
        calls = atol(argv[3]);
    } else if (argc != 2) {
        fprintf(stderr, "usage: group-client NLOCAL [--bench CALLS]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    pmix_status_t rc = PMIx_Init(&me, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "group-client: PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    pmix_proc_t *procs = calloc((size_t) n, sizeof(*procs));
    for (int i = 0; i < n; i++) {
        PMIX_LOAD_PROCID(&procs[i], me.nspace, (pmix_rank_t) (n - 1 - i));
    }
    pmix_info_t dir;
    bool yes = true;
    PMIX_INFO_LOAD(&dir, PMIX_GROUP_ASSIGN_CONTEXT_ID, &yes, PMIX_BOOL);
    pmix_info_t *results = NULL;
    size_t nresults = 0;
    rc = PMIx_Group_construct("grpA", procs, (size_t) n, &dir, 1, &results, &nresults);
    emit("construct", rc, NULL, NULL);
    for (size_t i = 0; i < nresults; i++) {
        emit("construct-result", rc, results[i].key, &results[i].value);
    }
    if (results) {
        PMIX_INFO_FREE(results, nresults);
    }
    if (PMIX_SUCCESS != rc) {
        return 1;
    }
    if (calls > 0) {
        timed("get-grank", calls, "grpA", 1, PMIX_LOCAL_RANK);
        timed("get-group-names", calls, me.nspace, me.rank, PMIX_GROUP_NAMES);
        timed("get-ctxid", calls, "grpA", PMIX_RANK_WILDCARD, PMIX_GROUP_CONTEXT_ID);
        PMIx_Group_destruct("grpA", NULL, 0);
        PMIx_Finalize(NULL, 0);
        free(procs);
        return 0;
    }
    ask("built", procs, n);
    rc = PMIx_Group_destruct("grpA", NULL, 0);
    emit("destruct", rc, NULL, NULL);
    ask("gone", procs, 1);
    PMIx_Finalize(NULL, 0);
    free(procs);
    return 0;
}
