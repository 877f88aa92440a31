/*
 * v50.c - the OpenPMIx 5.0 line's part of the gds component (5.0.x, x >= 7; Debian 13's 5.0.7):
 * its gds module struct (19 calls: fetch takes the asking peer first, and the two modex-complete
 * calls are new), its component struct (5.0's pmix_gds_base_component_t is the bare
 * pmix_mca_base_component_t), and those calls. Everything else is gds_rshm.c's, compiled against
 * the same headers. docs/openpmix.md "The OpenPMIx lines".
 *
 * What 5.0.7's core does differently, and what the component does about it:
 *  - a client's commit reaches its server through the client's module (`store`): rshm stores it,
 *    as in 4.2;
 *  - fence data (`store_modex`) always goes to the server's own module, and 5.0.7 makes that
 *    gds/hash: rshm never sees it, and clients read other nodes' cards through hash and the
 *    server (on one node every card is a commit, so the store holds them all);
 *  - `mark_modex_complete` (server) and `recv_modex_complete` (client, at a fence's release)
 *    are called on the process's own module, which is gds/hash in 5.0.7 (a client's own module
 *    is hash; rshm is its server's): the component's are passed to hash should a release call
 *    them;
 *  - the job data a server sends a connecting client (`register_job_info`) goes to the client's
 *    module alone (`store_job_info`), where 4.2's core read it into the client's hash itself:
 *    both are passed to hash, so the client's hash holds what it holds without rshm and answers
 *    whatever the store does not (the client's core asks it after the module, as in 4.2).
 */

#include "line.h"

#if 50 != RSHM_PMIX_LINE
#    error "v50.c is the OpenPMIx 5.0 line's part (PMIX_LINE=5.0)"
#endif

#include "src/include/pmix_globals.h"
#include "src/mca/gds/base/base.h"
#include "src/mca/gds/gds.h"

#include "gds_rshm.h"

/* Client and server, `peer` the process the core asks for (its server in a client, itself in a
 * server). A client answers from shared memory, in the caller's thread, whatever
 * rshm_gds42_fetch serves (the answer policy is the same for every line); anything else is
 * PMIX_ERR_NOT_FOUND and the core falls back to hash and its server. Anything else asks hash. */
static pmix_status_t fetch(struct pmix_peer_t *peer, const pmix_proc_t *proc, pmix_scope_t scope,
                           bool copy, const char *key, pmix_info_t info[], size_t ninfo,
                           pmix_list_t *kvs)
{
    if (!rshm_client_is_attached()) {
        pmix_gds_base_module_t *hash = rshm_hash_module();
        if (rshm_is_server() && NULL != hash && NULL != hash->fetch) {
            return hash->fetch(peer, proc, scope, copy, key, info, ninfo, kvs);
        }
        return PMIX_ERR_NOT_FOUND;
    }
    pmix_status_t rc = rshm_fetch_client(proc, key, info, ninfo, kvs);
    if (PMIX_ERR_NOT_FOUND != rc) {
        return rc;
    }
    /* Not the store's to answer: the client's own hash, which holds the job data
     * (store_job_info). PMIx_Get would ask it next anyway, but 5.0.7's internal lookups (the
     * topology a client takes from its server at init, among them) ask this module alone: left
     * at NOT_FOUND, a client loads its own topology from /sys (~0.2 s per process). */
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->fetch) {
        return hash->fetch(peer, proc, scope, copy, key, info, ninfo, kvs);
    }
    return rc;
}

/* Server, at a fence's completion, for the release message to `peer`: hash's (it adds nothing
 * in 5.0.7, which calls the server's own module, hash, anyway). */
static pmix_status_t mark_modex_complete(struct pmix_peer_t *peer, pmix_list_t *nslist,
                                         pmix_buffer_t *buff)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->mark_modex_complete) {
        return hash->mark_modex_complete(peer, nslist, buff);
    }
    return PMIX_SUCCESS;
}

/* Client, when a fence's release arrives: what mark_modex_complete packed, hash's (5.0.7 calls
 * the client's own module, hash). */
static pmix_status_t recv_modex_complete(pmix_buffer_t *buff)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->recv_modex_complete) {
        return hash->recv_modex_complete(buff);
    }
    return PMIX_SUCCESS;
}

/* Server, once per connecting client: hash's payload of the job's data, which the client's
 * store_job_info gives its own hash. (The store is named by RSHM_STORE in the client's
 * environment, set by setup_fork: the client attached in assign_module.) */
static pmix_status_t register_job_info(struct pmix_peer_t *pr, pmix_buffer_t *reply)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->register_job_info) {
        return hash->register_job_info(pr, reply);
    }
    return PMIX_ERR_NOT_SUPPORTED;
}

/* Client, when register_job_info's reply arrives: into the client's hash. */
static pmix_status_t store_job_info(const char *nspace, pmix_buffer_t *buf)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->store_job_info) {
        return hash->store_job_info(nspace, buf);
    }
    return PMIX_ERR_NOT_SUPPORTED;
}

static pmix_gds_base_module_t rshm_module = {
    .name = RSHM_NAME,
    .is_tsafe = true,
    .init = rshm_init,
    .finalize = rshm_finalize,
    .assign_module = rshm_assign_module,
    .cache_job_info = rshm_cache_job_info,
    .register_job_info = register_job_info,
    .store_job_info = store_job_info,
    .store = rshm_store,
    .store_modex = rshm_store_modex,
    .fetch = fetch,
    .setup_fork = rshm_setup_fork,
    .add_nspace = rshm_add_nspace,
    .del_nspace = rshm_del_nspace,
    .assemb_kvs_req = rshm_assemb_kvs_req,
    .accept_kvs_resp = rshm_accept_kvs_resp,
    .fetch_arrays = rshm_fetch_arrays,
    .mark_modex_complete = mark_modex_complete,
    .recv_modex_complete = recv_modex_complete,
};

extern pmix_gds_base_component_t pmix_mca_gds_rshm_component;

static pmix_status_t component_register(void)
{
    return rshm_component_register(&pmix_mca_gds_rshm_component);
}

static int component_query(pmix_mca_base_module_t **module, int *priority)
{
    return rshm_component_query(&rshm_module, module, priority);
}

PMIX_EXPORT pmix_gds_base_component_t pmix_mca_gds_rshm_component = {
    PMIX_GDS_BASE_VERSION_1_0_0,
    .pmix_mca_component_name = RSHM_NAME,
    PMIX_MCA_BASE_MAKE_VERSION(component, PMIX_MAJOR_VERSION, PMIX_MINOR_VERSION,
                               PMIX_RELEASE_VERSION),
    .pmix_mca_query_component = component_query,
    .pmix_mca_register_component_params = component_register,
};
