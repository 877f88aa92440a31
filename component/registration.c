/*
 * registration.c - what the gds component keeps of namespace registrations: the namespaces whose
 * registration the store refused (component/gds_rshm.c's add_nspace and setup_fork).
 */

#include "line.h"

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
