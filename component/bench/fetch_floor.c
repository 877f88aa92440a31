/*
 * fetch_floor.c - how much of an OpenPMIx 7.0 PMIx_Get the gds module answers is libpmix's own
 * path, and how much is the module's fetch: in one client, the per-call p50 of
 *   get    PMIx_Get(key) + PMIX_VALUE_RELEASE, answered by the module in the caller's thread
 *          (7.0's try_local_fetch, the module declaring is_tsafe)
 *   fetch  the module's fetch called alone (the module struct from the component's query),
 *          for the same key, + the list of pmix_kval_t it appended released
 * and their difference, the libpmix floor no gds module can go below. Compiled against the
 * line's internal headers (as the component is); run by fetch-floor.sh under mpirun.
 *
 *   fetch_floor <component .so> <calls>
 *   prints "floor <case> get_p50_ns <a> fetch_p50_ns <b> libpmix_ns <a-b>  best: ..." per case
 *   (rank 0; p50 and least of the per-call times of batches of 32, the batches of both kinds
 *   interleaved)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pmix.h>

#include "src/class/pmix_list.h"
#include "src/include/pmix_globals.h"
#include "src/mca/gds/gds.h"

enum { BATCH = 32 };

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *) a, y = *(const long long *) b;
    return (x > y) - (x < y);
}

static long long median(long long *per, size_t nb)
{
    qsort(per, nb, sizeof(long long), cmp_ll);
    return per[nb / 2];
}

static pmix_gds_base_module_t *module;

/* One batch of PMIx_Get (+ release): ns per call, -1 on a failed Get. */
static long long get_batch(const pmix_proc_t *p, const char *key)
{
    long long t0 = now_ns();
    for (int i = 0; i < BATCH; i++) {
        pmix_value_t *val = NULL;
        if (PMIX_SUCCESS != PMIx_Get(p, key, NULL, 0, &val)) {
            return -1;
        }
        PMIX_VALUE_RELEASE(val);
    }
    return (now_ns() - t0) / BATCH;
}

/* One batch of the module's fetch alone (+ the appended pmix_kval_t released). */
static long long fetch_batch(const pmix_proc_t *p, const char *key)
{
    long long t0 = now_ns();
    for (int i = 0; i < BATCH; i++) {
        pmix_list_t kvs;
        PMIX_CONSTRUCT(&kvs, pmix_list_t);
        pmix_status_t rc = module->fetch(NULL, p, PMIX_SCOPE_UNDEF, false, key, NULL, 0,
                                         PMIX_REALM_UNDEF, &kvs);
        PMIX_LIST_DESTRUCT(&kvs);
        if (PMIX_SUCCESS != rc) {
            return -1;
        }
    }
    return (now_ns() - t0) / BATCH;
}

int main(int argc, char **argv)
{
    pmix_proc_t me, p;
    if (argc != 3) {
        fprintf(stderr, "usage: fetch_floor <component .so> <calls>\n");
        return 2;
    }
    size_t nb = (size_t) atol(argv[2]) / BATCH;
    if (nb == 0) {
        nb = 1;
    }
    if (PMIX_SUCCESS != PMIx_Init(&me, NULL, 0)) {
        return 1;
    }
    /* the component libpmix loaded: its module, as the component's query hands it out */
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
    pmix_mca_base_component_t *c = h ? dlsym(h, "pmix_mca_gds_rshm_component") : NULL;
    int prio = 0;
    if (NULL == c || PMIX_SUCCESS != c->pmix_mca_query_component((pmix_mca_base_module_t **) &module, &prio)) {
        fprintf(stderr, "fetch_floor: the component is not loaded (PMIX_MCA_gds=rshm,hash?)\n");
        return 1;
    }
    char card[64];
    pmix_value_t v;
    snprintf(card, sizeof(card), "card-of-%u", me.rank);
    PMIX_VALUE_LOAD(&v, card, PMIX_STRING);
    PMIx_Put(PMIX_GLOBAL, "card", &v);
    PMIX_VALUE_DESTRUCT(&v);
    PMIx_Commit();
    pmix_info_t collect;
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIx_Fence(NULL, 0, &collect, 1);
    long long *pg = calloc(nb, sizeof(long long)), *pf = calloc(nb, sizeof(long long));
    struct {
        const char *name, *key;
        pmix_rank_t rank;
    } cases[] = {
        {"job-key", PMIX_JOB_SIZE, PMIX_RANK_WILDCARD},
        {"proc-key", PMIX_LOCAL_RANK, me.rank},
        {"peer-hostname", PMIX_HOSTNAME, (me.rank + 1) % 2},
        {"peer-card", "card", (me.rank + 1) % 2},
    };
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            /* batches of both, interleaved: machine noise hits them alike */
            PMIX_LOAD_PROCID(&p, me.nspace, cases[i].rank);
            long long bad = 0;
            for (size_t b = 0; b < nb; b++) {
                pg[b] = get_batch(&p, cases[i].key);
                pf[b] = fetch_batch(&p, cases[i].key);
                bad |= pg[b] < 0 || pf[b] < 0;
            }
            long long g = median(pg, nb), f = median(pf, nb);
            if (round == 1 && me.rank == 0) {
                printf("floor %-13s get_p50_ns %6lld fetch_p50_ns %6lld libpmix_ns %6lld"
                       "  best: get %6lld fetch %6lld libpmix %6lld%s\n",
                       cases[i].name, g, f, g - f, pg[0], pf[0], pg[0] - pf[0],
                       bad ? " (a call failed)" : "");
            }
        }
    }
    fflush(stdout);
    PMIx_Fence(NULL, 0, NULL, 0);
    PMIx_Finalize(NULL, 0);
    return 0;
}
