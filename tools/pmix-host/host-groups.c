/* host-groups.c - the server module's group upcall (PMIx_Group_construct / _destruct reach the
 * host when a context id is asked for or members are remote): a single node completes at once,
 * assigning context ids 1, 2, ... on request and handing the collected endpoint data back as
 * the whole job's. With --rshm the result is also published through rshm_server_group_*. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "host.h"

typedef struct {
    pmix_info_t *v;
    size_t n;
} results_t;

static void release_results(void *p)
{
    results_t *r = p;
    PMIX_INFO_FREE(r->v, r->n);
    free(r);
}

pmix_status_t host_group(pmix_group_operation_t op, char grp[], const pmix_proc_t procs[],
                         size_t nprocs, const pmix_info_t directives[], size_t ndirs,
                         pmix_info_cbfunc_t cbfunc, void *cbdata)
{
    static size_t next_ctxid = 1;
    if (PMIX_GROUP_DESTRUCT == op) {
        if (rshm.h) {
            rshm_check(rshm.group_destruct(rshm.h, grp), "group_destruct");
        }
        cbfunc(PMIX_SUCCESS, NULL, 0, cbdata, NULL, NULL);
        return PMIX_SUCCESS;
    }
    bool want_ctxid = false;
    const pmix_byte_object_t *endpt = NULL;
    for (size_t i = 0; i < ndirs; i++) {
        if (PMIX_CHECK_KEY(&directives[i], PMIX_GROUP_ASSIGN_CONTEXT_ID)) {
            want_ctxid = PMIX_INFO_TRUE(&directives[i]);
        } else if (PMIX_CHECK_KEY(&directives[i], PMIX_GROUP_ENDPT_DATA) &&
                   PMIX_BYTE_OBJECT == directives[i].value.type) {
            endpt = &directives[i].value.data.bo;
        }
    }
    size_t ctxid = next_ctxid;
    if (want_ctxid) {
        next_ctxid++;
    }
    if (rshm.h) {
        rshm_check(rshm.group_construct(rshm.h, grp, procs, nprocs, want_ctxid ? &ctxid : NULL,
                                        NULL, 0, NULL, 0),
                   "group_construct");
    }
    results_t *r = calloc(1, sizeof(*r));
    PMIX_INFO_CREATE(r->v, 2);
    if (want_ctxid) {
        PMIX_INFO_LOAD(&r->v[r->n], PMIX_GROUP_CONTEXT_ID, &ctxid, PMIX_SIZE);
        r->n++;
    }
    if (endpt) {
        /* one node: the local contribution is everyone's */
        PMIX_INFO_LOAD(&r->v[r->n], PMIX_GROUP_ENDPT_DATA, endpt, PMIX_BYTE_OBJECT);
        r->n++;
    }
    if (verbose) {
        fprintf(stderr, "pmix-host: group construct %s, %zu members, ctxid %zu\n", grp, nprocs,
                want_ctxid ? ctxid : 0);
    }
    cbfunc(PMIX_SUCCESS, r->v, r->n, cbdata, release_results, r);
    return PMIX_SUCCESS;
}
