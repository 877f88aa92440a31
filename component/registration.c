/*
 * registration.c - what the gds component keeps of namespace registrations: the arrays it hands
 * the store (filtered of what the store cannot hold) and the namespaces whose registration the
 * store refused (component/gds_rshm.c's add_nspace and setup_fork).
 */

#include "src/include/pmix_config.h"
#include "pmix_common.h"
#include "pmix_version.h"

#if !defined(PMIX_VERSION_MAJOR) || PMIX_VERSION_MAJOR != 4L || PMIX_VERSION_MINOR != 2L
#    error "registration.c is written for OpenPMIx 4.2 (see docs/openpmix.md)"
#endif

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "registration.h"

/* Namespaces whose registration the store refused: their clients are not told about the store
 * (setup_fork), so they decline rshm and run on gds/hash. Guarded by `failed_lock`. */
typedef struct failed_ns {
    struct failed_ns *next;
    char nspace[PMIX_MAX_NSLEN + 1];
} failed_ns_t;
static failed_ns_t *failed = NULL;
static pthread_mutex_t failed_lock = PTHREAD_MUTEX_INITIALIZER;

bool rshm_nspace_failed(const char *nspace)
{
    bool found = false;
    pthread_mutex_lock(&failed_lock);
    for (failed_ns_t *f = failed; NULL != f; f = f->next) {
        if (PMIX_CHECK_NSPACE(f->nspace, nspace)) {
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&failed_lock);
    return found;
}

void rshm_set_nspace_failed(const char *nspace, bool fail)
{
    failed_ns_t **pp;
    pthread_mutex_lock(&failed_lock);
    for (pp = &failed; NULL != *pp; pp = &(*pp)->next) {
        if (PMIX_CHECK_NSPACE((*pp)->nspace, nspace)) {
            if (!fail) {
                failed_ns_t *gone = *pp;
                *pp = gone->next;
                free(gone);
            }
            pthread_mutex_unlock(&failed_lock);
            return;
        }
    }
    if (fail) {
        failed_ns_t *f = calloc(1, sizeof(*f));
        if (NULL != f) {
            pmix_strncpy(f->nspace, nspace, PMIX_MAX_NSLEN);
            f->next = failed;
            failed = f;
        }
    }
    pthread_mutex_unlock(&failed_lock);
}

/* A shallow copy of a registration array without PMIX_STRING values whose string is NULL (Open
 * MPI 4.1 registers PMIX_CPUSET so for unbound processes; the store has no NULL string, and
 * libpmix answers those keys from hash as before). Nested info arrays are copied the same way;
 * free with rshm_free_filtered. Returns NULL (and *out_n 0) for an empty result or no memory. */
pmix_info_t *rshm_filter_infos(const pmix_info_t *info, size_t ninfo, size_t *out_n, bool *nomem)
{
    pmix_info_t *out = NULL;
    size_t n = 0;
    *out_n = 0;
    if (0 == ninfo || NULL == info) {
        return NULL;
    }
    out = calloc(ninfo, sizeof(pmix_info_t));
    if (NULL == out) {
        *nomem = true;
        return NULL;
    }
    for (size_t i = 0; i < ninfo; i++) {
        const pmix_value_t *v = &info[i].value;
        if (PMIX_STRING == v->type && NULL == v->data.string) {
            continue;
        }
        memcpy(&out[n], &info[i], sizeof(pmix_info_t));
        if (PMIX_DATA_ARRAY == v->type && NULL != v->data.darray
            && PMIX_INFO == v->data.darray->type) {
            pmix_data_array_t *da = calloc(1, sizeof(*da));
            size_t m = 0;
            if (NULL == da) {
                *nomem = true;
                out[n].value.type = PMIX_UNDEF; /* nothing of ours to free in it */
                break;
            }
            da->type = PMIX_INFO;
            da->array = rshm_filter_infos((const pmix_info_t *) v->data.darray->array,
                                     v->data.darray->size, &m, nomem);
            da->size = m;
            out[n].value.data.darray = da;
        }
        n++;
    }
    *out_n = n;
    return out;
}

void rshm_free_filtered(pmix_info_t *info, size_t ninfo)
{
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_DATA_ARRAY == info[i].value.type && NULL != info[i].value.data.darray
            && PMIX_INFO == info[i].value.data.darray->type) {
            rshm_free_filtered((pmix_info_t *) info[i].value.data.darray->array,
                          info[i].value.data.darray->size);
            free(info[i].value.data.darray);
        }
    }
    free(info);
}
