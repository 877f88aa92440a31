/*
 * v70.c - the OpenPMIx 7.0 line's part of the gds component (7.0.x; Debian unstable's 7.0.0rc1):
 * its gds module struct (the gds framework's interface 2.0.0: 24 calls, del_key inserted after
 * del_nspace, five appended), its component struct (pmix_gds_base_component_t is the bare
 * pmix_mca_base_component_t, stamped with PMIX_MCA_BASE_VERSION(gds)), and the calls whose
 * signatures differ from 4.2's. Everything else is gds_rshm.c's, compiled against the same
 * headers. docs/openpmix.md "OpenPMIx lines".
 *
 * What 7.0's core does, and what the component does about it:
 *  - a client's commit reaches its server through the client's module (`store`), and so does
 *    the data of a collecting fence (`store_modex`, resolved from a local peer of each
 *    participating namespace, with that namespace's name): rshm stores both, so a 7.0 store
 *    holds every card, local and remote (5.0.7 gave fence data to the server's hash alone);
 *  - PMIx_Get asks the client's module in the caller's thread, before the hand-off to the
 *    progress thread, when the module declares `is_tsafe` (try_local_fetch): the store's answers
 *    need no preload there. What the store does not answer is the client's own hash's, and
 *    hash is not thread-safe: fetch asks it in the progress thread (shifting there and waiting
 *    when called from another);
 *  - fetch gets the realm the framework computed once per request: the store's answer policy
 *    reads the same key and qualifiers, and hash is handed the realm;
 *  - the job data a server sends a connecting client (`register_job_info` / `store_job_info`),
 *    the modex-complete pair and the update pair (`pack_update` / `accept_update`) are passed
 *    to hash, as in 5.0;
 *  - add_session, del_session and add_job_data are fan-outs to every active module, hash
 *    included: rshm leaves them to hash (NULL slots). Job data added after registration is not
 *    in the store: the store does not answer keys it lacks, hash does; a key whose value
 *    changed that way is answered as registered.
 *  - del_key and the removal scopes (PMIX_DEL_*): hash takes the key out; the store keeps
 *    what it published (docs/openpmix.md).
 */

#include "line.h"

#if 70 != RSHM_PMIX_LINE
#    error "v70.c is the OpenPMIx 7.0 line's part (PMIX_LINE=7.0)"
#endif

#include "src/include/pmix_globals.h"
#include "src/mca/gds/base/base.h"
#include "src/mca/gds/gds.h"
#include "src/threads/pmix_threads.h"

#include "gds_rshm.h"

/* src/runtime/pmix_progress_threads.h's (that header includes "pmix_config.h" by a name the
 * installed tree does not resolve): whether the caller is the progress thread in its loop. */
bool pmix_progress_thread_is_current(void);

/* A fetch from gds/hash, run in the progress thread. */
typedef struct {
    pmix_event_t ev;
    pmix_lock_t lock;
    pmix_gds_base_module_t *hash;
    struct pmix_peer_t *peer;
    const pmix_proc_t *proc;
    pmix_scope_t scope;
    bool copy;
    const char *key;
    pmix_info_t *info;
    size_t ninfo;
    pmix_realm_t realm;
    pmix_list_t *kvs;
    pmix_status_t status;
} hash_fetch_t;

static void shifted_fetch(int sd, short args, void *cbdata)
{
    hash_fetch_t *f = (hash_fetch_t *) cbdata;
    PMIX_HIDE_UNUSED_PARAMS(sd, args);
    PMIX_ACQUIRE_OBJECT(f);
    f->status = f->hash->fetch(f->peer, f->proc, f->scope, f->copy, f->key, f->info, f->ninfo,
                               f->realm, f->kvs);
    PMIX_POST_OBJECT(f);
    PMIX_WAKEUP_THREAD(&f->lock);
}

/* gds/hash's fetch, in the progress thread: hash's tables are written there, and a read from
 * another thread may walk a table being grown. Called in the progress thread (or with none to
 * shift to: stopped, or progress driven by the host), it asks hash directly; otherwise it shifts
 * the fetch there and waits, as the core's own Get path does. */
static pmix_status_t hash_fetch(struct pmix_peer_t *peer, const pmix_proc_t *proc,
                                pmix_scope_t scope, bool copy, const char *key,
                                pmix_info_t info[], size_t ninfo, pmix_realm_t realm,
                                pmix_list_t *kvs)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    hash_fetch_t f;

    if (NULL == hash || NULL == hash->fetch) {
        return PMIX_ERR_NOT_FOUND;
    }
    if (pmix_progress_thread_is_current() || pmix_globals.external_progress
        || pmix_atomic_check_bool(&pmix_globals.progress_thread_stopped)) {
        return hash->fetch(peer, proc, scope, copy, key, info, ninfo, realm, kvs);
    }
    memset(&f, 0, sizeof(f));
    PMIX_CONSTRUCT_LOCK(&f.lock);
    f.hash = hash;
    f.peer = peer;
    f.proc = proc;
    f.scope = scope;
    f.copy = copy;
    f.key = key;
    f.info = info;
    f.ninfo = ninfo;
    f.realm = realm;
    f.kvs = kvs;
    f.status = PMIX_ERR_NOT_FOUND;
    PMIX_THREADSHIFT(&f, shifted_fetch);
    PMIX_WAIT_THREAD(&f.lock);
    PMIX_ACQUIRE_OBJECT(&f);
    PMIX_DESTRUCT_LOCK(&f.lock);
    return f.status;
}

/* Client and server, `peer` the process the core asks for (its server in a client). An
 * attached client answers from shared memory, in the calling thread (is_tsafe: the store is
 * read lock-free, the counters are atomic), whatever rshm_gds42_fetch serves (the answer
 * policy is the same for every line; `realm` is computed by the framework from the same key
 * and qualifiers the policy reads). Anything else, and every fetch of a server or an unattached
 * client, is gds/hash's (hash_fetch): 7.0's internal lookups, as 5.0.7's, ask this module
 * alone. */
static pmix_status_t fetch(struct pmix_peer_t *peer, const pmix_proc_t *proc, pmix_scope_t scope,
                           bool copy, const char *key, pmix_info_t info[], size_t ninfo,
                           pmix_realm_t realm, pmix_list_t *kvs)
{
    if (rshm_client_is_attached()) {
        pmix_status_t rc = rshm_fetch_client(proc, key, info, ninfo, kvs);
        if (PMIX_ERR_NOT_FOUND != rc) {
            return rc;
        }
    } else if (!rshm_is_server()) {
        return PMIX_ERR_NOT_FOUND;
    }
    return hash_fetch(peer, proc, scope, copy, key, info, ninfo, realm, kvs);
}

/* Client, the reply to a Get its server answered: hash's (7.0 calls the client's own module,
 * hash; pass on should it call this one). */
static pmix_status_t accept_kvs_resp(pmix_buffer_t *buf, pmix_list_t *jobvals)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->accept_kvs_resp) {
        return hash->accept_kvs_resp(buf, jobvals);
    }
    return PMIX_ERR_NOT_SUPPORTED;
}

/* Server, at a fence's completion, for the release message to `peer` (resolved from the peer:
 * rshm's clients reach this): hash's. */
static pmix_status_t mark_modex_complete(struct pmix_peer_t *peer, pmix_list_t *nslist,
                                         pmix_buffer_t *buff)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->mark_modex_complete) {
        return hash->mark_modex_complete(peer, nslist, buff);
    }
    return PMIX_SUCCESS;
}

/* Client, when a fence's release arrives: what mark_modex_complete packed, hash's. */
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

/* Server, what a peer bound to this module needs to see data added since it last looked:
 * hash's (it packs nothing when it has nothing to say). */
static pmix_status_t pack_update(struct pmix_peer_t *peer, pmix_buffer_t *buff)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->pack_update) {
        return hash->pack_update(peer, buff);
    }
    return PMIX_SUCCESS;
}

/* Client, what pack_update packed: hash's. */
static pmix_status_t accept_update(pmix_buffer_t *buff)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->accept_update) {
        return hash->accept_update(buff);
    }
    return PMIX_SUCCESS;
}

/* A key removed (resolved from the namespace's module): hash's, which takes removals through
 * its store and leaves this NULL. The store keeps answering what it published. */
static pmix_status_t del_key(const pmix_proc_t *proc, const char *key)
{
    pmix_gds_base_module_t *hash = rshm_hash_module();
    if (NULL != hash && NULL != hash->del_key) {
        return hash->del_key(proc, key);
    }
    return PMIX_SUCCESS;
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
    .store_modex = rshm_store_modex70,
    .fetch = fetch,
    .setup_fork = rshm_setup_fork,
    .add_nspace = rshm_add_nspace,
    .del_nspace = rshm_del_nspace,
    .del_key = del_key,
    .assemb_kvs_req = rshm_assemb_kvs_req,
    .accept_kvs_resp = accept_kvs_resp,
    .fetch_arrays = rshm_fetch_arrays,
    .mark_modex_complete = mark_modex_complete,
    .recv_modex_complete = recv_modex_complete,
    /* fan-outs that reach hash anyway */
    .add_session = NULL,
    .del_session = NULL,
    .pack_update = pack_update,
    .accept_update = accept_update,
    .add_job_data = NULL,
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
    PMIX_MCA_BASE_VERSION(gds),
    .pmix_mca_component_name = RSHM_NAME,
    PMIX_MCA_BASE_MAKE_VERSION(component, PMIX_MAJOR_VERSION, PMIX_MINOR_VERSION,
                               PMIX_RELEASE_VERSION),
    .pmix_mca_query_component = component_query,
    .pmix_mca_register_component_params = component_register,
};
