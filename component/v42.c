/*
 * v42.c - the OpenPMIx 4.2 line's part of the gds component (4.2.x, x >= 2; Debian 12's 4.2.2):
 * its gds module struct (17 calls, fetch without the peer argument), its component struct (with
 * the data and priority fields 4.2's pmix_gds_base_component_t has), and the fetch. Everything
 * else is gds_rshm.c's, compiled against the same headers. docs/openpmix.md.
 */

#include "line.h"

#if 42 != RSHM_PMIX_LINE
#    error "v42.c is the OpenPMIx 4.2 line's part (PMIX_LINE=4.2)"
#endif

#include "src/include/pmix_globals.h"
#include "src/mca/gds/base/base.h"
#include "src/mca/gds/gds.h"

#include "gds_rshm.h"

/* Client and server. A client answers from shared memory, in the caller's thread, whatever
 * rshm_gds42_fetch serves; anything else is PMIX_ERR_NOT_FOUND and the core falls back to hash
 * and its server. A server answers from its own gds/hash, exactly as without rshm. */
static pmix_status_t fetch(const pmix_proc_t *proc, pmix_scope_t scope, bool copy,
                           const char *key, pmix_info_t info[], size_t ninfo, pmix_list_t *kvs)
{
    if (!rshm_client_is_attached()) {
        pmix_gds_base_module_t *hash = rshm_hash_module();
        if (rshm_is_server() && NULL != hash && NULL != hash->fetch) {
            return hash->fetch(proc, scope, copy, key, info, ninfo, kvs);
        }
        return PMIX_ERR_NOT_FOUND;
    }
    return rshm_fetch_client(proc, key, info, ninfo, kvs);
}

static pmix_gds_base_module_t rshm_module = {
    .name = RSHM_NAME,
    .is_tsafe = true,
    .init = rshm_init,
    .finalize = rshm_finalize,
    .assign_module = rshm_assign_module,
    .cache_job_info = rshm_cache_job_info,
    .register_job_info = rshm_register_job_info,
    .store_job_info = rshm_store_job_info,
    .store = rshm_store,
    .store_modex = rshm_store_modex,
    .fetch = fetch,
    .setup_fork = rshm_setup_fork,
    .add_nspace = rshm_add_nspace,
    .del_nspace = rshm_del_nspace,
    .assemb_kvs_req = rshm_assemb_kvs_req,
    .accept_kvs_resp = rshm_accept_kvs_resp,
    .fetch_arrays = rshm_fetch_arrays,
};

extern pmix_gds_base_component_t pmix_mca_gds_rshm_component;

static pmix_status_t component_register(void)
{
    return rshm_component_register(&pmix_mca_gds_rshm_component.base);
}

static int component_query(pmix_mca_base_module_t **module, int *priority)
{
    return rshm_component_query(&rshm_module, module, priority);
}

PMIX_EXPORT pmix_gds_base_component_t pmix_mca_gds_rshm_component = {
    .base = {
        PMIX_GDS_BASE_VERSION_1_0_0,
        .pmix_mca_component_name = RSHM_NAME,
        PMIX_MCA_BASE_MAKE_VERSION(component, PMIX_MAJOR_VERSION, PMIX_MINOR_VERSION,
                                   PMIX_RELEASE_VERSION),
        .pmix_mca_query_component = component_query,
        .pmix_mca_register_component_params = component_register,
    },
    .data = {
        .param_field = PMIX_MCA_BASE_METADATA_PARAM_CHECKPOINT,
    },
    .priority = RSHM_PRIORITY,
};
