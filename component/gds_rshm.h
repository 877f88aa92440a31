/*
 * gds_rshm.h - what the shared part of the adapter (gds_rshm.c) gives the per-line files
 * (v42.c, v50.c, v70.c): the gds module functions whose signatures every supported line shares, the
 * client's fetch from the store, the server's own gds/hash module, and the component's
 * registration and query. A per-line file holds only what differs between lines: the module
 * and component structs and the functions whose signatures changed (fetch's peer argument, the
 * 5.0 modex-complete calls). docs/openpmix.md "The OpenPMIx lines".
 */
#ifndef RSHM_GDS_RSHM_H
#define RSHM_GDS_RSHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmix_common.h"
#include "src/class/pmix_list.h"
#include "src/mca/bfrops/bfrops_types.h"
#include "src/mca/gds/gds.h"
#include "src/mca/mca.h"

#define RSHM_NAME "rshm"
/* Component priority (framework select order), and the assign_module bid when PMIX_GDS_MODULE
 * does not name a module. */
#define RSHM_PRIORITY 50

/* Module functions of the same signature in every supported line. */
pmix_status_t rshm_init(pmix_info_t info[], size_t ninfo);
void rshm_finalize(void);
pmix_status_t rshm_assign_module(pmix_info_t *info, size_t ninfo, int *priority);
pmix_status_t rshm_cache_job_info(struct pmix_namespace_t *ns, pmix_info_t info[], size_t ninfo);
pmix_status_t rshm_register_job_info(struct pmix_peer_t *pr, pmix_buffer_t *reply);
pmix_status_t rshm_store_job_info(const char *nspace, pmix_buffer_t *buf);
pmix_status_t rshm_store(const pmix_proc_t *proc, pmix_scope_t scope, pmix_kval_t *kv);
#if RSHM_PMIX_LINE < 70
pmix_status_t rshm_store_modex(struct pmix_namespace_t *ns, pmix_buffer_t *buff, void *cbdata);
#else
/* 7.0's store_modex (the envelope of the namespace `nspace` of a fence). */
pmix_status_t rshm_store_modex70(pmix_buffer_t *buff, const char *nspace, void *cbdata);
#endif
pmix_status_t rshm_setup_fork(const pmix_proc_t *proc, char ***env);
pmix_status_t rshm_add_nspace(const char *nspace, uint32_t nlocalprocs, pmix_info_t info[],
                              size_t ninfo);
pmix_status_t rshm_del_nspace(const char *nspace);
pmix_status_t rshm_assemb_kvs_req(const pmix_proc_t *proc, pmix_list_t *kvs, pmix_buffer_t *buf,
                                  void *cbdata);
#if RSHM_PMIX_LINE < 70
pmix_status_t rshm_accept_kvs_resp(pmix_buffer_t *buf);
#endif
pmix_status_t rshm_fetch_arrays(struct pmix_peer_t *pr, pmix_buffer_t *reply);

/* The process's own gds/hash module (every call rshm does not answer is passed on to it), or
 * NULL. */
pmix_gds_base_module_t *rshm_hash_module(void);
/* Whether this process is a PMIx server. */
bool rshm_is_server(void);
/* Whether this client attached to its server's store (assign_module); its fetches are then
 * answered by rshm_fetch_client, a server's and an unattached client's by hash. */
bool rshm_client_is_attached(void);
/* A client's fetch: the value from the store appended to `kvs` where the answer policy takes
 * it, else PMIX_ERR_NOT_FOUND (the core then asks gds/hash and the server). */
pmix_status_t rshm_fetch_client(const pmix_proc_t *proc, const char *key, pmix_info_t info[],
                                size_t ninfo, pmix_list_t *kvs);

/* The component's pmix_mca_register_component_params: checks the running libpmix's version
 * first (line.h's line), then registers the MCA parameters; PMIX_ERR_NOT_AVAILABLE (the
 * framework's "skip me") under another line. */
pmix_status_t rshm_component_register(const pmix_mca_base_component_t *component);
/* The component's pmix_mca_query_component, handing out `module` when the version fits. */
int rshm_component_query(pmix_gds_base_module_t *module, pmix_mca_base_module_t **out,
                         int *priority);

#endif
