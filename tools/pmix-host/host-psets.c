/* host-psets.c - process sets, --psets FILE (README.md, "Process sets"): the host defines them
 * with PMIx_server_define_process_set (and through rshm with --rshm) before its clients start,
 * deletes the file's "delete" sets while its clients wait in their first fence, and answers
 * the PMIx_Query_info keys of sets from its own list as PRRTE does: OpenPMIx 4.2.2 hands
 * those queries to its host's query upcall. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "host.h"

typedef struct {
    char *name;
    pmix_proc_t *members;
    size_t n;
    bool deleted;
} pset_t;

static pset_t *sets;
static size_t nsets;
static char **deletes;
static size_t ndeletes;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* "define NAME NSPACE:RANKS [NSPACE:RANKS...]" (NSPACE "@" is the job's, RANKS a rank list or
 * "*" for PMIX_RANK_WILDCARD) or "delete NAME"; '#' starts a comment. */
void psets_load(const char *path, const char *job_nspace)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    if (!f) {
        die("--psets %s: cannot open", path);
    }
    while (fgets(line, sizeof(line), f)) {
        char *save = NULL, *verb = strtok_r(line, " \t\r\n", &save);
        if (!verb || '#' == verb[0]) {
            continue;
        }
        char *name = strtok_r(NULL, " \t\r\n", &save);
        if (!name) {
            die("--psets %s: %s without a name", path, verb);
        }
        if (!strcmp(verb, "delete")) {
            deletes = xrealloc(deletes, (ndeletes + 1) * sizeof(*deletes));
            deletes[ndeletes++] = strdup(name);
            continue;
        }
        if (strcmp(verb, "define")) {
            die("--psets %s: unknown line %s", path, verb);
        }
        pset_t s = {strdup(name), NULL, 0, false};
        for (char *m; (m = strtok_r(NULL, " \t\r\n", &save));) {
            char *colon = strrchr(m, ':');
            if (!colon) {
                die("--psets %s: member %s is not NSPACE:RANKS", path, m);
            }
            *colon = '\0';
            const char *ns = strcmp(m, "@") ? m : job_nspace;
            pmix_rank_t *ranks = NULL;
            int nr;
            if (!strcmp(colon + 1, "*")) {
                ranks = xrealloc(NULL, sizeof(*ranks));
                ranks[0] = PMIX_RANK_WILDCARD;
                nr = 1;
            } else if ((nr = parse_ranklist(colon + 1, &ranks)) < 0) {
                die("--psets %s: bad ranks %s", path, colon + 1);
            }
            s.members = xrealloc(s.members, (s.n + (size_t) nr) * sizeof(pmix_proc_t));
            for (int i = 0; i < nr; i++) {
                /* PMIX_LOAD_PROCID evaluates its arguments more than once */
                pmix_proc_t *p = &s.members[s.n + (size_t) i];
                PMIX_LOAD_PROCID(p, ns, ranks[i]);
            }
            s.n += (size_t) nr;
            free(ranks);
        }
        sets = xrealloc(sets, (nsets + 1) * sizeof(*sets));
        sets[nsets++] = s;
    }
    fclose(f);
}

bool psets_pending_deletes(void)
{
    return ndeletes > 0;
}

/* rshm_pset_t of rshm_server.h */
typedef struct {
    const char *name;
    const pmix_proc_t *members;
    size_t nmembers;
} rshm_pset_t;

void psets_define_all(void)
{
    /* rshm: one generation for all of them (each define rewrites the set index); the first
     * alone through rshm_server_define_pset, so both calls run */
    if (rshm.h && nsets > 0) {
        rshm_check(rshm.define_pset(rshm.h, sets[0].name, sets[0].members, sets[0].n),
                   "define_pset");
        rshm_pset_t *all = xrealloc(NULL, nsets * sizeof(*all));
        for (size_t i = 1; i < nsets; i++) {
            all[i - 1] = (rshm_pset_t){sets[i].name, sets[i].members, sets[i].n};
        }
        rshm_check(rshm.define_psets(rshm.h, all, nsets - 1), "define_psets");
        free(all);
    }
    for (size_t i = 0; i < nsets; i++) {
        /* OpenPMIx 4.2.2 returns a status it never sets (the caddy's lock status): only
         * PMIX_ERR_INIT, returned before the set is recorded, means anything. */
        pmix_status_t rc = PMIx_server_define_process_set(sets[i].members, sets[i].n,
                                                          sets[i].name);
        if (PMIX_ERR_INIT == rc) {
            die("PMIx_server_define_process_set(%s): %s", sets[i].name, PMIx_Error_string(rc));
        }
    }
}

/* The file's deletes, through rshm and libpmix (PMIx_server_delete_process_set thread-shifts
 * into libpmix's progress thread and waits, so never from an upcall). */
static void delete_all(void)
{
    for (size_t d = 0; d < ndeletes; d++) {
        if (rshm.h) {
            rshm_check(rshm.delete_pset(rshm.h, deletes[d]), "delete_pset");
        }
        /* as define's, the status is never set by OpenPMIx 4.2.2 */
        (void) PMIx_server_delete_process_set(deletes[d]);
        pthread_mutex_lock(&lock);
        for (size_t i = 0; i < nsets; i++) {
            if (!sets[i].deleted && !strcmp(sets[i].name, deletes[d])) {
                sets[i].deleted = true;
                break;
            }
        }
        pthread_mutex_unlock(&lock);
    }
    ndeletes = 0;
}

typedef struct {
    pmix_modex_cbfunc_t cbfunc;
    void *cbdata;
    char *data;
    size_t ndata;
} fence_t;

static void release_data(void *p)
{
    free(p);
}

static void *fence_thread(void *arg)
{
    fence_t *f = arg;
    delete_all();
    f->cbfunc(PMIX_SUCCESS, f->data, f->ndata, f->cbdata, release_data, f->data);
    free(f);
    return NULL;
}

/* The first fence with deletes pending: delete them on a thread, then complete the fence. */
bool psets_fence(char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    static bool once;
    if (!psets_pending_deletes() || once || !cbfunc) {
        return false;
    }
    once = true;
    fence_t *f = xrealloc(NULL, sizeof(*f));
    f->cbfunc = cbfunc;
    f->cbdata = cbdata;
    f->ndata = ndata;
    f->data = ndata ? xrealloc(NULL, ndata) : NULL;
    if (ndata) {
        memcpy(f->data, data, ndata);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, fence_thread, f)) {
        die("pthread_create");
    }
    pthread_detach(t);
    return true;
}

static void release_infos(void *p)
{
    infolist_t *l = p;
    PMIX_INFO_FREE(l->v, l->n);
    free(l);
}

static void add_info(infolist_t *l, const char *key, const void *val, pmix_data_type_t t)
{
    l->v = xrealloc(l->v, (l->n + 1) * sizeof(pmix_info_t));
    PMIX_INFO_CONSTRUCT(&l->v[l->n]);
    PMIX_INFO_LOAD(&l->v[l->n], key, val, t);
    l->n++;
}

/* PMIx_Query_info's host side for the set keys, as PRRTE 3 answers them: PMIX_QUERY_NUM_PSETS
 * a size_t, PMIX_QUERY_PSET_NAMES the names joined by ',' (no set: not found),
 * PMIX_QUERY_PSET_MEMBERSHIP the members of the set its PMIX_PSET_NAME qualifier names (no
 * qualifier: bad parameter; an unknown set: not found). Other keys get no answer: success when
 * every key was answered, PMIX_QUERY_PARTIAL_SUCCESS when some were, else not found. */
pmix_status_t host_query(pmix_proc_t *proct, pmix_query_t *queries, size_t nqueries,
                         pmix_info_cbfunc_t cbfunc, void *cbdata)
{
    (void) proct;
    infolist_t *res = calloc(1, sizeof(*res));
    size_t asked = 0;
    pmix_status_t rc = PMIX_SUCCESS;
    pthread_mutex_lock(&lock);
    for (size_t q = 0; q < nqueries && PMIX_SUCCESS == rc; q++) {
        const char *pset = NULL;
        for (size_t j = 0; j < queries[q].nqual; j++) {
            if (PMIX_CHECK_KEY(&queries[q].qualifiers[j], PMIX_PSET_NAME)) {
                pset = queries[q].qualifiers[j].value.data.string;
            }
        }
        for (size_t k = 0; queries[q].keys && queries[q].keys[k]; k++) {
            const char *key = queries[q].keys[k];
            asked++;
            if (!strcmp(key, PMIX_QUERY_NUM_PSETS)) {
                size_t n = 0;
                for (size_t i = 0; i < nsets; i++) {
                    n += !sets[i].deleted;
                }
                add_info(res, key, &n, PMIX_SIZE);
            } else if (!strcmp(key, PMIX_QUERY_PSET_NAMES)) {
                size_t len = 0;
                for (size_t i = 0; i < nsets; i++) {
                    len += sets[i].deleted ? 0 : strlen(sets[i].name) + 1;
                }
                if (0 == len) {
                    rc = PMIX_ERR_NOT_FOUND;
                    break;
                }
                char *names = calloc(1, len);
                for (size_t i = 0; i < nsets; i++) {
                    if (!sets[i].deleted) {
                        if (names[0]) {
                            strcat(names, ",");
                        }
                        strcat(names, sets[i].name);
                    }
                }
                add_info(res, key, names, PMIX_STRING);
                free(names);
            } else if (!strcmp(key, PMIX_QUERY_PSET_MEMBERSHIP)) {
                if (!pset) {
                    rc = PMIX_ERR_BAD_PARAM;
                    break;
                }
                pset_t *s = NULL;
                for (size_t i = 0; i < nsets; i++) {
                    if (!sets[i].deleted && !strcmp(sets[i].name, pset)) {
                        s = &sets[i];
                    }
                }
                if (!s) {
                    rc = PMIX_ERR_NOT_FOUND;
                    break;
                }
                pmix_data_array_t da = {PMIX_PROC, s->n, s->members};
                add_info(res, key, &da, PMIX_DATA_ARRAY);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    if (PMIX_SUCCESS == rc) {
        rc = 0 == res->n ? PMIX_ERR_NOT_FOUND
             : res->n < asked ? PMIX_QUERY_PARTIAL_SUCCESS : PMIX_SUCCESS;
    }
    if (PMIX_SUCCESS != rc && PMIX_QUERY_PARTIAL_SUCCESS != rc) {
        PMIX_INFO_FREE(res->v, res->n);
        res->n = 0;
    }
    cbfunc(rc, res->v, res->n, cbdata, release_infos, res);
    return PMIX_SUCCESS;
}
