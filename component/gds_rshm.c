/*
 * gds_rshm.c - rshm's gds component (pmix_mca_gds_rshm.so): the adapter's logic shared by every
 * OpenPMIx line it is built for, compiled once per line against that line's internal headers
 * (line.h); the per-line files (v42.c, v50.c) hold the module and component structs and the
 * calls whose signatures differ.
 *
 * A thin adapter: OpenPMIx's internal gds module API on one side, rshm's two C ABIs on the other
 * (rshm_server.h: register jobs, committed and fenced data, setup_fork; rshm_client.h: Get from
 * shared memory), both linked in from one Rust staticlib (component/src/lib.rs). No store logic
 * lives here. docs/openpmix.md is the guide; every function below says when OpenPMIx calls it.
 *
 * Roles:
 *  - server (PMIx_server_init'ed process): owns the store. Opens it at the first add_nspace or
 *    setup_fork, publishes registrations, commits and fences into it, exports RSHM_STORE to the
 *    children. Every call is also passed on to the server's own gds/hash module, so the server
 *    answers exactly as it does without rshm (its requests, direct modex, non-rshm clients).
 *  - client: bids in assign_module only when it could attach to the store named by RSHM_STORE;
 *    answers PMIx_Get in the caller's thread (is_tsafe) from the mapping for what
 *    rshm_gds42_fetch serves, and PMIX_ERR_NOT_FOUND otherwise, so the core asks gds/hash and
 *    the server as it would without rshm.
 *
 * Each build is for exactly one OpenPMIx line: the internal gds API drifts between releases
 * while its version stays "1.0.0" (5.0 adds calls, 5.0.7 changes fetch, 6.0 changes
 * store_modex). Loaded by another line's libpmix, the component declines at registration
 * (rshm_check_running_version).
 */

#include "line.h"
#include "pmix.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

#include "src/class/pmix_list.h"
#include "src/include/pmix_globals.h"
#include "src/mca/bfrops/bfrops.h"
#include "src/mca/gds/base/base.h"
#include "src/mca/gds/gds.h"
#include "src/mca/ptl/ptl_types.h"
#include "src/util/pmix_output.h"

#include "gds_rshm.h"
#include "registration.h"
#include "settings.h"
#include "staging.h"
#include "rshm_client.h"
#include "rshm_server.h"

/* The 4.2 answer policy + client Get (component/src/exports.rs). */
pmix_status_t rshm_gds42_fetch(const pmix_proc_t *proc, const char *key, const pmix_info_t *info,
                               size_t ninfo, pmix_value_t **val);
/* Whether the environment names a store (RSHM_STORE; the name is defined once, in abi). */
bool rshm_gds42_store_announced(void);

/* The bid when PMIX_GDS_MODULE names us: above what gds/hash bids when it is named too (its
 * bid is 100 then, as observed in 4.2.2), so "rshm,hash" selects rshm. */
#define RSHM_NAMED_PRIORITY 150
/* The KVAL of register_job_info's reply naming the store (docs/openpmix.md). */
#define RSHM_STORE_KEY "rshm.store"

/* Process state. The server handle is created once (under `lock`) and then only read; the
 * client attach happens once, in assign_module, before any fetch. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static rshm_server_t *server = NULL;
static bool server_failed = false;
static bool client_attached = false;
/* Client fetches answered from shared memory / left to libpmix (for $RSHM_GDS_STATS). */
static int64_t answered = 0, passed = 0;

static bool is_server(void)
{
    return NULL != pmix_globals.mypeer && PMIX_PEER_IS_SERVER(pmix_globals.mypeer);
}

static bool is_plain_client(void)
{
    return NULL != pmix_globals.mypeer && PMIX_PEER_IS_CLIENT(pmix_globals.mypeer)
           && !PMIX_PEER_IS_SERVER(pmix_globals.mypeer) && !PMIX_PEER_IS_TOOL(pmix_globals.mypeer);
}

static void log_error(const char *what, pmix_status_t rc, bool server_side)
{
    char msg[512];
    if (server_side) {
        rshm_server_last_error(msg, sizeof(msg));
    } else {
        rshm_client_last_error(msg, sizeof(msg));
    }
    if (0 < rshm_verbose) {
        pmix_output(0, "rshm: %s: %s (%s)", what, PMIx_Error_string(rc), msg);
    } else {
        pmix_output_verbose(1, pmix_gds_base_output, "gds:rshm: %s: %s (%s)", what,
                            PMIx_Error_string(rc), msg);
    }
}

/* The server's own gds/hash module: every server-side call is passed on to it too. */
static pmix_gds_base_module_t *hash_module(void)
{
    pmix_gds_base_active_module_t *active;
    PMIX_LIST_FOREACH (active, &pmix_gds_globals.actives, pmix_gds_base_active_module_t) {
        if (NULL != active->module && NULL != active->module->name
            && 0 == strcmp(active->module->name, "hash")) {
            return active->module;
        }
    }
    return NULL;
}

/* Open the store on first use, in a server only. Once it is open, a load: `store` runs this
 * per key, and taking `lock` would store to its page (a page copy after each of a forking
 * host's forks). */
static rshm_server_t *server_store(void)
{
    rshm_server_t *s = __atomic_load_n(&server, __ATOMIC_ACQUIRE);
    if (NULL != s) {
        return s;
    }
    pthread_mutex_lock(&lock);
    if (NULL == server && !server_failed && is_server()) {
        pmix_info_t info[RSHM_OPEN_INFO];
        pmix_status_t rc;
        rshm_server_t *opened = NULL;
        /* The node name the core uses (PMIX_HOSTNAME given to PMIx_server_init, else the
         * kernel's): registrations name nodes that way. Where the store goes and who reads it:
         * settings.c (docs/deploy.md). */
        size_t ninfo = rshm_open_info(info, pmix_globals.hostname);
        rc = rshm_server_open(ninfo ? info : NULL, ninfo, &opened);
        for (size_t i = 0; i < ninfo; i++) {
            PMIX_INFO_DESTRUCT(&info[i]);
        }
        if (PMIX_SUCCESS != rc) {
            log_error("cannot open the store", rc, true);
            server_failed = true;
        } else {
            char what[4096];
            __atomic_store_n(&server, opened, __ATOMIC_RELEASE);
            rshm_server_describe(server, what, sizeof(what));
            RSHM_VERBOSE("rshm: %s", what);
            pmix_output_verbose(2, pmix_gds_base_output, "gds:rshm: %s", what);
        }
    }
    s = server;
    pthread_mutex_unlock(&lock);
    return s;
}

/* The store if it is open (read under `lock`, as server_store does; never opens it). */
static rshm_server_t *open_server(void)
{
    rshm_server_t *s;
    pthread_mutex_lock(&lock);
    s = server;
    pthread_mutex_unlock(&lock);
    return s;
}

bool rshm_is_server(void)
{
    return is_server();
}

pmix_gds_base_module_t *rshm_hash_module(void)
{
    return hash_module();
}

/* ---- module functions ------------------------------------------------------------------ */

/* Every process, at framework select, with the info of PMIx_server_init (or PMIx_Init). A
 * server keeps what its store needs later (opened at the first add_nspace or setup_fork):
 * settings.c. */
pmix_status_t rshm_init(pmix_info_t info[], size_t ninfo)
{
    rshm_keep_init_info(info, ninfo);
    return PMIX_SUCCESS;
}

/* gds_rshm_verbose >= 2: at finalize the same counters on stderr, one line per process.
 * RSHM_GDS_STATS=<dir>: at finalize a client writes "answered N\npassed M\n" to <dir>/<pid>,
 * a server "publications N\nbytes_written B\nfiles_written F\n" (what its store published) and
 * "rshm_store_cpu_ns T\nhash_store_cpu_ns H\n" (its progress thread's CPU time storing posted
 * data in the store and in gds/hash) to <dir>/server-<pid>. Called under `lock`. */
static void write_stats(void)
{
    const char *dir = getenv("RSHM_GDS_STATS");
    rshm_server_stats_t st;
    char path[4096];
    FILE *f;
    if (2 <= rshm_verbose) {
        if (client_attached) {
            pmix_output(0, "rshm: client stats: answered %lld passed %lld", (long long) answered,
                        (long long) passed);
        }
        if (NULL != server && PMIX_SUCCESS == rshm_server_stats(server, &st)) {
            pmix_output(0,
                        "rshm: server stats: publications %llu bytes_written %llu "
                        "files_written %llu rshm_store_cpu_ns %llu hash_store_cpu_ns %llu",
                        (unsigned long long) st.publications,
                        (unsigned long long) st.bytes_written,
                        (unsigned long long) st.files_written, rshm_store_cpu_ns,
                        hash_store_cpu_ns);
        }
    }
    if (NULL == dir) {
        return;
    }
    if (client_attached) {
        snprintf(path, sizeof(path), "%s/%d", dir, (int) getpid());
        f = fopen(path, "w");
        if (NULL != f) {
            fprintf(f, "answered %lld\npassed %lld\n", (long long) answered, (long long) passed);
            fclose(f);
        }
    }
    if (NULL != server && PMIX_SUCCESS == rshm_server_stats(server, &st)) {
        snprintf(path, sizeof(path), "%s/server-%d", dir, (int) getpid());
        f = fopen(path, "w");
        if (NULL != f) {
            fprintf(f, "publications %llu\nbytes_written %llu\nfiles_written %llu\n"
                    "rshm_store_cpu_ns %llu\nhash_store_cpu_ns %llu\n",
                    (unsigned long long) st.publications, (unsigned long long) st.bytes_written,
                    (unsigned long long) st.files_written, rshm_store_cpu_ns, hash_store_cpu_ns);
            fclose(f);
        }
    }
}

/* Framework close (the progress thread is paused, its base still alive): publish what is
 * staged, remove the server's store; unmap a client's. */
void rshm_finalize(void)
{
    pthread_mutex_lock(&lock);
    if (NULL != server) {
        rshm_staging_finalize(server);
    }
    write_stats();
    if (client_attached) {
        __atomic_store_n(&client_attached, false, __ATOMIC_RELEASE);
        rshm_client_detach();
    }
    if (NULL != server) {
        rshm_server_t *s = server;
        __atomic_store_n(&server, NULL, __ATOMIC_RELEASE);
        rshm_server_close(s);
    }
    rshm_forget_init_info();
    pthread_mutex_unlock(&lock);
}

/* Whether PMIX_GDS_MODULE names us (1), names others only (0), or is absent (-1). */
static int named(pmix_info_t *info, size_t ninfo)
{
    for (size_t n = 0; n < ninfo; n++) {
        if (PMIX_CHECK_KEY(&info[n], PMIX_GDS_MODULE) && PMIX_STRING == info[n].value.type) {
            const char *p = info[n].value.data.string;
            size_t len = strlen(RSHM_NAME);
            while (NULL != p && '\0' != *p) {
                const char *end = strchr(p, ',');
                size_t n2 = (NULL == end) ? strlen(p) : (size_t) (end - p);
                if (n2 == len && 0 == strncmp(p, RSHM_NAME, len)) {
                    return 1;
                }
                p = (NULL == end) ? NULL : end + 1;
            }
            return 0;
        }
    }
    return -1;
}

/* A client at its handshake, a server per connecting client: the highest bid wins. A client
 * bids only if it could attach to the store its server announced (RSHM_STORE); otherwise
 * (no store, an unknown format, no permission) it declines and gds/hash serves the job. */
pmix_status_t rshm_assign_module(pmix_info_t *info, size_t ninfo, int *priority)
{
    int asked = named(info, ninfo);
    pmix_output_verbose(2, pmix_gds_base_output, "gds:rshm: assign_module in a %s, named %d",
                        is_server() ? "server" : (is_plain_client() ? "client" : "tool"), asked);
    if (0 == asked) {
        return PMIX_ERROR;
    }
    if (is_plain_client()) {
        pmix_status_t rc = PMIX_SUCCESS;
        pthread_mutex_lock(&lock);
        if (!client_attached) {
            if (!rshm_gds42_store_announced()) {
                RSHM_VERBOSE("rshm: no store announced to this client: declining (hash serves)");
                rc = PMIX_ERR_NOT_AVAILABLE;
            } else {
                rc = rshm_client_attach(NULL, NULL);
                if (PMIX_SUCCESS == rc || PMIX_ERR_EXISTS == rc) {
                    __atomic_store_n(&client_attached, true, __ATOMIC_RELEASE);
                    rc = PMIX_SUCCESS;
                } else {
                    /* PMIX_ERR_NO_PERMISSIONS: not readable, or not owned by the uid
                     * $RSHM_STORE_OWNER names (a store anyone else could have planted) */
                    log_error("client declines the store, hash serves", rc, false);
                }
            }
        }
        pthread_mutex_unlock(&lock);
        if (PMIX_SUCCESS != rc) {
            return rc;
        }
    } else if (!is_server()) {
        /* tools and launchers keep gds/hash */
        return PMIX_ERR_NOT_AVAILABLE;
    }
    *priority = (1 == asked) ? RSHM_NAMED_PRIORITY : RSHM_PRIORITY;
    return PMIX_SUCCESS;
}

/* Only ever called on gds/hash in 4.2. */
pmix_status_t rshm_cache_job_info(struct pmix_namespace_t *ns, pmix_info_t info[],
                                         size_t ninfo)
{
    PMIX_HIDE_UNUSED_PARAMS(ns, info, ninfo);
    return PMIX_SUCCESS;
}

/* Server, once per connecting client: the reply starts with the nspace (PMIX_STRING), then
 * the store path as a KVAL (the client core re-reads the payload as KVALs into its hash). The
 * job data itself is in shared memory; the core appends hash's node/app/session arrays. */
pmix_status_t rshm_register_job_info(struct pmix_peer_t *pr, pmix_buffer_t *reply)
{
    pmix_peer_t *peer = (pmix_peer_t *) pr;
    pmix_status_t rc;
    char *ns = peer->nptr->nspace;
    rshm_server_t *s = server_store();

    PMIX_BFROPS_PACK(rc, peer, reply, &ns, 1, PMIX_STRING);
    if (PMIX_SUCCESS != rc) {
        return rc;
    }
    if (NULL != s) {
        pmix_kval_t kv;
        pmix_value_t val;
        PMIX_CONSTRUCT(&kv, pmix_kval_t);
        val.type = PMIX_STRING;
        val.data.string = (char *) rshm_server_path(s);
        kv.key = RSHM_STORE_KEY;
        kv.value = &val;
        PMIX_BFROPS_PACK(rc, peer, reply, &kv, 1, PMIX_KVAL);
        /* nothing of kv is ours to free */
        kv.key = NULL;
        kv.value = NULL;
        PMIX_DESTRUCT(&kv);
    }
    return rc;
}

/* Client, when register_job_info's reply arrives: the attach already happened at
 * assign_module (from RSHM_STORE), and the core reads the KVALs itself. */
pmix_status_t rshm_store_job_info(const char *nspace, pmix_buffer_t *buf)
{
    PMIX_HIDE_UNUSED_PARAMS(nspace, buf);
    return PMIX_SUCCESS;
}

/* A fence's data could not be stored: withdraw the posted tables of its namespaces (hash holds
 * every value of them, commits included). */
static void withdraw_batch(rshm_server_t *s, const rshm_posted_t *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) {
            seen = PMIX_CHECK_NSPACE(items[j].proc.nspace, items[i].proc.nspace);
        }
        if (!seen) {
            pmix_status_t rc = rshm_server_withdraw_posted(s, items[i].proc.nspace);
            if (PMIX_SUCCESS != rc) {
                char msg[512];
                rshm_server_last_error(msg, sizeof(msg));
                pmix_output(0, "gds:rshm: cannot withdraw the posted data of %s after a failed "
                            "fence store: clients of this node may read older values (%s: %s)",
                            items[i].proc.nspace, PMIx_Error_string(rc), msg);
            }
        }
    }
}

/* Server, per key of a client's commit (LOCAL/GLOBAL data; REMOTE/GLOBAL goes to hash by the
 * core) and of a direct-modex reply, in the progress thread. Kept in the server's hash at once;
 * staged for the store and published as one generation per commit or reply (staging.c). */
pmix_status_t rshm_store(const pmix_proc_t *proc, pmix_scope_t scope, pmix_kval_t *kv)
{
    pmix_gds_base_module_t *hash = hash_module();
    pmix_status_t rc = PMIX_SUCCESS;
    rshm_server_t *s;
    unsigned long long t0 = rshm_thread_cpu_ns(), t1;

    if (NULL != hash && NULL != hash->store) {
        rc = hash->store(proc, scope, kv);
    }
    t1 = rshm_thread_cpu_ns();
    hash_store_cpu_ns += rshm_cpu_interval(t0, t1);
    /* Values of the three data scopes only: not PMIX_INTERNAL, nor 7.0's removals
     * (PMIX_DEL_*: hash took the key out above; the store keeps what it published). */
    if (!is_server() || NULL == kv || NULL == kv->key || NULL == kv->value
        || (PMIX_LOCAL != scope && PMIX_REMOTE != scope && PMIX_GLOBAL != scope)
        || PMIX_CHECK_RESERVED_KEY(kv->key)) {
        return rc;
    }
    s = server_store();
    if (NULL != s) {
        rshm_stage(s, proc, scope, kv);
        rshm_store_cpu_ns += rshm_cpu_interval(t1, rshm_thread_cpu_ns());
    }
    return rc;
}

/* store_modex: the data of one fence, gathered per proc, then published as one generation. */
typedef struct {
    pmix_namespace_t *nptr;
    rshm_posted_t *items;
    pmix_kval_t **kvs;
    size_t n, cap;
    pmix_status_t status;
} modex_batch_t;

static bool local_rank(pmix_namespace_t *nptr, pmix_rank_t rank)
{
    pmix_rank_info_t *info;
    if (NULL == nptr) {
        return false;
    }
    PMIX_LIST_FOREACH (info, &nptr->ranks, pmix_rank_info_t) {
        if (info->pname.rank == rank) {
            return true;
        }
    }
    return false;
}

/* One value of a fence's data into the batch, which takes `kv` (released with the batch).
 * Reserved keys, a local proc's data and anything without a value are released at once. */
static pmix_status_t batch_add(modex_batch_t *b, const pmix_proc_t *proc, pmix_kval_t *kv)
{
    /* A local proc's data is in the store already (its commit: LOCAL/GLOBAL); what a fence
     * brings back of it is REMOTE/GLOBAL, which local peers must not see (5.3). */
    if (local_rank(b->nptr, proc->rank) || NULL == kv->key || NULL == kv->value
        || PMIX_CHECK_RESERVED_KEY(kv->key)) {
        PMIX_RELEASE(kv);
        return PMIX_SUCCESS;
    }
    if (b->n == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        rshm_posted_t *items = realloc(b->items, cap * sizeof(*items));
        pmix_kval_t **kvs;
        if (NULL == items) {
            PMIX_RELEASE(kv);
            return PMIX_ERR_NOMEM;
        }
        b->items = items;
        kvs = realloc(b->kvs, cap * sizeof(*kvs));
        if (NULL == kvs) {
            PMIX_RELEASE(kv);
            return PMIX_ERR_NOMEM;
        }
        b->kvs = kvs;
        b->cap = cap;
    }
    memset(&b->items[b->n], 0, sizeof(rshm_posted_t));
    PMIX_LOAD_PROCID(&b->items[b->n].proc, proc->nspace, proc->rank);
    b->items[b->n].scope = PMIX_REMOTE;
    b->items[b->n].key = kv->key;
    b->items[b->n].value = kv->value;
    b->kvs[b->n] = kv;
    b->n++;
    return PMIX_SUCCESS;
}

/* Publish the batch as one generation (when `store`), then release it. */
static void batch_finish(rshm_server_t *s, modex_batch_t *b, bool store)
{
    if (store && 0 < b->n) {
        pmix_status_t rc2 = rshm_server_store_fence(s, b->items, b->n);
        if (PMIX_SUCCESS != rc2) {
            log_error("store_fence", rc2, true);
            withdraw_batch(s, b->items, b->n);
        }
    }
    for (size_t i = 0; i < b->n; i++) {
        PMIX_RELEASE(b->kvs[i]);
    }
    free(b->items);
    free(b->kvs);
    b->items = NULL;
    b->kvs = NULL;
    b->n = b->cap = 0;
}

#if RSHM_PMIX_LINE < 70
static pmix_status_t modex_proc(pmix_gds_base_ctx_t ctx, pmix_proc_t *proc,
                                pmix_gds_modex_key_fmt_t key_fmt, char **kmap,
                                pmix_buffer_t *pbkt)
{
    modex_batch_t *b = (modex_batch_t *) ctx;
    pmix_status_t rc;

    for (;;) {
        pmix_kval_t *kv = PMIX_NEW(pmix_kval_t);
        if (NULL == kv) {
            return PMIX_ERR_NOMEM;
        }
        rc = pmix_gds_base_modex_unpack_kval(key_fmt, pbkt, kmap, kv);
        if (PMIX_SUCCESS != rc) {
            PMIX_RELEASE(kv);
            break;
        }
        rc = batch_add(b, proc, kv);
        if (PMIX_SUCCESS != rc) {
            return rc;
        }
    }
    if (PMIX_ERR_UNPACK_READ_PAST_END_OF_BUFFER == rc) {
        rc = PMIX_SUCCESS;
    }
    return rc;
}

/* Server, at fence completion with PMIX_COLLECT_DATA when the host returned data (4.2, 5.0). */
pmix_status_t rshm_store_modex(struct pmix_namespace_t *ns, pmix_buffer_t *buff,
                                      void *cbdata)
{
    pmix_gds_base_module_t *hash = hash_module();
    pmix_namespace_t *nptr = (pmix_namespace_t *) ns;
    modex_batch_t b = {.nptr = nptr, .status = PMIX_SUCCESS};
    rshm_server_t *s = server_store();
    char *start = buff->unpack_ptr;
    pmix_status_t rc = PMIX_SUCCESS;
    unsigned long long t0 = rshm_thread_cpu_ns(), t1;

    if (NULL != s) {
        /* committed values first: the fence's data is newer */
        rshm_flush_staged(s);
        rc = pmix_gds_base_store_modex(ns, buff, &b, modex_proc, cbdata);
        batch_finish(s, &b, PMIX_SUCCESS == rc);
        /* hash reads the same envelope */
        buff->unpack_ptr = start;
    }
    t1 = rshm_thread_cpu_ns();
    rshm_store_cpu_ns += rshm_cpu_interval(t0, t1);
    if (NULL != hash && NULL != hash->store_modex) {
        rc = hash->store_modex(ns, buff, cbdata);
    }
    hash_store_cpu_ns += rshm_cpu_interval(t1, rshm_thread_cpu_ns());
    return rc;
}
#else
/* 7.0: the envelope walker's callback carries no context; store_modex runs in the progress
 * thread, one walk at a time, so the walk's batch is this. */
static modex_batch_t *walk_batch = NULL;

/* One proc's blob: its pmix_kval_t's, packed as gds/hash unpacks them. A value of type
 * PMIX_UNDEF is a removal (hash takes the key out; the store keeps what it published). */
static pmix_status_t modex_proc(pmix_proc_t *proc, pmix_buffer_t *pbkt, uint8_t kind)
{
    modex_batch_t *b = walk_batch;
    pmix_status_t rc;
    int32_t cnt;
    PMIX_HIDE_UNUSED_PARAMS(kind);

    if (NULL == pbkt || NULL == b) {
        return PMIX_SUCCESS;
    }
    for (;;) {
        pmix_kval_t *kv = PMIX_NEW(pmix_kval_t);
        if (NULL == kv) {
            return PMIX_ERR_NOMEM;
        }
        cnt = 1;
        PMIX_BFROPS_UNPACK(rc, pmix_globals.mypeer, pbkt, kv, &cnt, PMIX_KVAL);
        if (PMIX_SUCCESS != rc) {
            PMIX_RELEASE(kv);
            break;
        }
        if (NULL != kv->value && PMIX_UNDEF == kv->value->type) {
            PMIX_RELEASE(kv);
            continue;
        }
        rc = batch_add(b, proc, kv);
        if (PMIX_SUCCESS != rc) {
            return rc;
        }
    }
    if (PMIX_ERR_UNPACK_READ_PAST_END_OF_BUFFER == rc) {
        rc = PMIX_SUCCESS;
    }
    return rc;
}

static pmix_namespace_t *find_nspace(const char *nspace)
{
    pmix_namespace_t *ns;
    if (NULL == nspace) {
        return NULL;
    }
    PMIX_LIST_FOREACH (ns, &pmix_globals.nspaces, pmix_namespace_t) {
        if (PMIX_CHECK_NSPACE(ns->nspace, nspace)) {
            return ns;
        }
    }
    return NULL;
}

/* Server (7.0), at fence completion with PMIX_COLLECT_DATA, once per participating namespace
 * whose local clients chose rshm: that namespace's blobs (all of them when `nspace` is NULL)
 * into the store as one generation, then the same envelope to the server's hash. */
pmix_status_t rshm_store_modex70(pmix_buffer_t *buff, const char *nspace, void *cbdata)
{
    pmix_gds_base_module_t *hash = hash_module();
    modex_batch_t b = {.nptr = find_nspace(nspace), .status = PMIX_SUCCESS};
    rshm_server_t *s = server_store();
    char *start = buff->unpack_ptr;
    pmix_status_t rc = PMIX_SUCCESS;
    unsigned long long t0 = rshm_thread_cpu_ns(), t1;

    if (NULL != s) {
        rshm_flush_staged(s);
        walk_batch = &b;
        rc = pmix_gds_base_store_modex(buff, nspace, modex_proc, cbdata);
        walk_batch = NULL;
        batch_finish(s, &b, PMIX_SUCCESS == rc);
        buff->unpack_ptr = start;
    }
    t1 = rshm_thread_cpu_ns();
    rshm_store_cpu_ns += rshm_cpu_interval(t0, t1);
    if (NULL != hash && NULL != hash->store_modex) {
        rc = hash->store_modex(buff, nspace, cbdata);
    }
    hash_store_cpu_ns += rshm_cpu_interval(t1, rshm_thread_cpu_ns());
    return rc;
}
#endif

static pmix_status_t append(pmix_list_t *kvs, const char *key, pmix_value_t *val)
{
    pmix_kval_t *kv = PMIX_NEW(pmix_kval_t);
    if (NULL == kv) {
        PMIX_VALUE_RELEASE(val);
        return PMIX_ERR_NOMEM;
    }
    kv->key = strdup(key);
    kv->value = val;
    pmix_list_append(kvs, &kv->super);
    return PMIX_SUCCESS;
}

/* Read by fetch in any thread (is_tsafe): set once in assign_module, cleared at finalize. */
bool rshm_client_is_attached(void)
{
    return __atomic_load_n(&client_attached, __ATOMIC_ACQUIRE);
}

/* A client attached to the store, in the caller's thread: whatever rshm_gds42_fetch serves;
 * anything else is PMIX_ERR_NOT_FOUND and the core falls back to hash and its server. */
pmix_status_t rshm_fetch_client(const pmix_proc_t *proc, const char *key, pmix_info_t info[],
                                size_t ninfo, pmix_list_t *kvs)
{
    pmix_value_t *val = NULL;
    pmix_status_t rc;

    if (NULL == key || NULL == proc) {
        /* all keys of a rank: the store does not enumerate; hash does */
        return PMIX_ERR_NOT_FOUND;
    }
    rc = rshm_gds42_fetch(proc, key, info, ninfo, &val);
    if (PMIX_SUCCESS != rc || NULL == val) {
        __atomic_fetch_add(&passed, 1, __ATOMIC_RELAXED);
        return PMIX_ERR_NOT_FOUND;
    }
    __atomic_fetch_add(&answered, 1, __ATOMIC_RELAXED);
    return append(kvs, key, val);
}

/* Server, in the host's thread, for every child: RSHM_STORE, RSHM_NSPACE, RSHM_RANK. */
pmix_status_t rshm_setup_fork(const pmix_proc_t *proc, char ***env)
{
    rshm_server_t *s = server_store();
    pmix_status_t rc;
    if (NULL == s || rshm_nspace_failed(proc->nspace)) {
        return PMIX_SUCCESS;
    }
    rc = rshm_server_setup_fork(s, proc, env);
    if (PMIX_SUCCESS != rc) {
        log_error("setup_fork", rc, true);
    }
    return PMIX_SUCCESS;
}

#if RSHM_PMIX_LINE >= 70
#    include "pmix_server.h"
/* 7.0's PRRTE registers PMIX_NODE_MAP and PMIX_PROC_MAP as PMIX_REGEX2 (a pmix_regex2_t, in any
 * encoding), which the store does not read: a shallow copy of the array with those maps
 * expanded by libpmix's PMIx_parse_regex2 into "raw:LIST" strings (what the server preload does
 * for the same maps), or NULL when nothing needs it. *maps collects the strings to free. */
static pmix_info_t *expand_regex2(pmix_info_t info[], size_t ninfo, char ***maps, size_t *nmaps)
{
    pmix_info_t *copy = NULL;
    *maps = NULL;
    *nmaps = 0;
    for (size_t i = 0; i < ninfo; i++) {
        char *list = NULL, *raw;
        size_t len;
        if (PMIX_REGEX2 != info[i].value.type || NULL == info[i].value.data.regex2
            || !(PMIX_CHECK_KEY(&info[i], PMIX_NODE_MAP) || PMIX_CHECK_KEY(&info[i], PMIX_PROC_MAP))) {
            continue;
        }
        if (NULL == copy) {
            copy = malloc(ninfo * sizeof(*copy));
            *maps = calloc(ninfo, sizeof(char *));
            if (NULL == copy || NULL == *maps) {
                free(copy);
                free(*maps);
                *maps = NULL;
                return NULL;
            }
            memcpy(copy, info, ninfo * sizeof(*copy));
        }
        if (PMIX_SUCCESS != PMIx_parse_regex2(info[i].value.data.regex2, NULL, 0, &list)
            || NULL == list) {
            free(list);
            continue; /* left as it is: the store refuses it, the job runs on hash */
        }
        len = strlen(list);
        raw = malloc(len + 5);
        if (NULL != raw) {
            memcpy(raw, "raw:", 4);
            memcpy(raw + 4, list, len + 1);
            copy[i].value.type = PMIX_STRING;
            copy[i].value.data.string = raw;
            (*maps)[(*nmaps)++] = raw;
        }
        free(list);
    }
    return copy;
}
#endif

/* Server, at PMIx_server_register_nspace (progress thread), with the registration array. */
pmix_status_t rshm_add_nspace(const char *nspace, uint32_t nlocalprocs, pmix_info_t info[],
                                     size_t ninfo)
{
    rshm_server_t *s;
    pmix_status_t rc;
    if (!is_server()) {
        return PMIX_SUCCESS;
    }
    rshm_record_registration(nspace, nlocalprocs, info, ninfo);
    s = server_store();
    if (NULL == s) {
        return PMIX_SUCCESS;
    }
    /* As the host passed it: a NULL PMIX_STRING (Open MPI's PMIX_LOCALITY_STRING and PMIX_CPUSET
     * of unbound processes) is stored as one, and answered as hash answers it. */
#if RSHM_PMIX_LINE >= 70
    {
        char **maps;
        size_t nmaps;
        pmix_info_t *expanded = expand_regex2(info, ninfo, &maps, &nmaps);
        rc = rshm_server_register_nspace(s, nspace, (int) nlocalprocs,
                                         NULL != expanded ? expanded : info, ninfo);
        for (size_t i = 0; i < nmaps; i++) {
            free(maps[i]);
        }
        free(maps);
        free(expanded);
    }
#else
    rc = rshm_server_register_nspace(s, nspace, (int) nlocalprocs, info, ninfo);
#endif
    /* A refused registration: its clients are not told about the store (setup_fork), so they
     * decline rshm and the job runs on gds/hash. */
    rshm_set_nspace_failed(nspace, PMIX_SUCCESS != rc);
    if (PMIX_SUCCESS != rc) {
        log_error("register_nspace (its clients will use hash)", rc, true);
    }
    return PMIX_SUCCESS;
}

/* Every active module at deregister; a client at disconnect. */
pmix_status_t rshm_del_nspace(const char *nspace)
{
    rshm_server_t *s = open_server();
    if (is_server() && NULL != s) {
        rshm_flush_staged(s);
        rshm_server_deregister_nspace(s, nspace);
        rshm_set_nspace_failed(nspace, false);
    }
    return PMIX_SUCCESS;
}

/* Server packing a GET reply for a client of ours: hash's format, as without rshm. */
pmix_status_t rshm_assemb_kvs_req(const pmix_proc_t *proc, pmix_list_t *kvs,
                                         pmix_buffer_t *buf, void *cbdata)
{
    pmix_gds_base_module_t *hash = hash_module();
    if (NULL != hash && NULL != hash->assemb_kvs_req) {
        return hash->assemb_kvs_req(proc, kvs, buf, cbdata);
    }
    return PMIX_ERR_NOT_SUPPORTED;
}

#if RSHM_PMIX_LINE < 70
/* Client side it is only ever called on hash in 4.2; pass on anyway. */
pmix_status_t rshm_accept_kvs_resp(pmix_buffer_t *buf)
{
    pmix_gds_base_module_t *hash = hash_module();
    if (NULL != hash && NULL != hash->accept_kvs_resp) {
        return hash->accept_kvs_resp(buf);
    }
    return PMIX_ERR_NOT_SUPPORTED;
}
#endif

/* Always resolved to hash by the core in 4.2; pass on anyway. */
pmix_status_t rshm_fetch_arrays(struct pmix_peer_t *pr, pmix_buffer_t *reply)
{
    pmix_gds_base_module_t *hash = hash_module();
    if (NULL != hash && NULL != hash->fetch_arrays) {
        return hash->fetch_arrays(pr, reply);
    }
    return PMIX_ERR_NOT_SUPPORTED;
}

/* ---- component ------------------------------------------------------------------------- */

/* Whether the running libpmix is the OpenPMIx line this adapter was compiled for. Set by
 * rshm_component_register, the framework's first call into the component. */
static bool version_fits = false;

/* A verbose setting in the environment, read without libpmix: gds_base_verbose or
 * gds_rshm_verbose set to anything but 0 / none. */
static bool verbose_env(const char *name)
{
    const char *v = getenv(name);
    return NULL != v && '\0' != v[0] && 0 != strcmp(v, "0") && 0 != strcmp(v, "none");
}

/* The running libpmix's version, from the public PMIx_Get_version() that every release has:
 * "OpenPMIx 4.2.2rc2 (PMIx Standard: 4.2, Stable ABI: 0.0, Provisional ABI: 0.0)" (Debian 12),
 * "OpenPMIx 5.0.7a1 (PMIx Standard: 5.1, Stable ABI: 5.0, Provisional ABI: 5.0)" (Debian 13).
 * The adapter uses libpmix's internal symbols and structures, which change between lines while
 * the gds framework's version stays 1.0.0 (5.0 removes pmix_output_check_verbosity, which every
 * 4.2 pmix_output_verbose calls; 5.0.7 adds fetch's peer argument), so another line, or a release
 * of the line older than line.h's minimum (4.2.2, 5.0.7), is declined here,
 * before any internal symbol is used: with libpmix's lazy binding (RTLD_LAZY), the first call of
 * a function the running library lacks kills the process. Until the check passes only libc and
 * the public PMIx_Get_version are called. (The data symbols the .so imports are bound at dlopen;
 * a missing one fails the dlopen, which the framework reports and skips.) The reason is printed
 * with fprintf, not pmix_output, and only when the environment asks for gds verbosity
 * (PMIX_MCA_gds_base_verbose or PMIX_MCA_gds_rshm_verbose: the component's own parameter is not
 * registered then, and a parameter file is not read). */
/* A decimal number at *p (at most 6 digits), *p moved past it; false if there is none. Not
 * sscanf or strtoul: built against glibc >= 2.38 headers (Debian 13) with _GNU_SOURCE, those
 * bind to __isoc23_* symbols, which an older glibc lacks, and the check must run wherever the
 * component is loaded (a 5.0 build dropped into Debian 12's 4.2.2 must load, to decline). */
static bool number(const char **p, unsigned *out)
{
    unsigned v = 0;
    int n = 0;
    while (n < 6 && '0' <= **p && **p <= '9') {
        v = 10 * v + (unsigned) (**p - '0');
        (*p)++;
        n++;
    }
    *out = v;
    return 0 < n;
}

/* "OpenPMIx MAJOR.MINOR.RELEASE..." */
static bool parse_version(const char *s, unsigned *major, unsigned *minor, unsigned *release)
{
    const char *prefix = "OpenPMIx ";
    if (NULL == s || 0 != strncmp(s, prefix, strlen(prefix))) {
        return false;
    }
    s += strlen(prefix);
    return number(&s, major) && '.' == *s++ && number(&s, minor) && '.' == *s++
           && number(&s, release);
}

static bool check_running_version(void)
{
    const char *running = PMIx_Get_version();
    unsigned major = 0, minor = 0, release = 0;
    /* a variable: with 7.0's minimum of 0 the comparison is otherwise always true (-Wtype-limits) */
    const unsigned min_release = RSHM_LINE_MIN_RELEASE;
    bool fits = parse_version(running, &major, &minor, &release)
                && RSHM_LINE_MAJOR == major && RSHM_LINE_MINOR == minor
                && min_release <= release;
    if (!fits
        && (verbose_env("PMIX_MCA_gds_base_verbose") || verbose_env("PMIX_MCA_gds_rshm_verbose"))) {
        fprintf(stderr,
                "gds:rshm: declined (pid %d): built for OpenPMIx %d.%d.x (>= %d.%d.%d), the "
                "running libpmix is \"%s\"; the component skips itself and the job runs on the "
                "other gds components\n",
                (int) getpid(), RSHM_LINE_MAJOR, RSHM_LINE_MINOR, RSHM_LINE_MAJOR,
                RSHM_LINE_MINOR, RSHM_LINE_MIN_RELEASE, NULL != running ? running : "(no version)");
    }
    return fits;
}

pmix_status_t rshm_component_register(const pmix_mca_base_component_t *component)
{
    version_fits = check_running_version();
    if (!version_fits) {
        /* The framework's cue to drop the component from its list without an error message,
         * in 4.2 and 5.0 alike (pmix_mca_base_components_register.c). */
        return PMIX_ERR_NOT_AVAILABLE;
    }
    return rshm_register_params(component);
}

/* Whether the gds selection (the framework's `gds` parameter: PMIX_MCA_gds, a parameter file's
 * `gds = ...`, Slurm's PMIxEnv) names rshm in its list. An installed component is then off
 * until one line turns it on, and removing the line turns it off: without this check its
 * priority made every job that names no gds take it. An exclusion list ("^...") never names
 * it. */
static bool named_by_selection(void)
{
    const char *sel = pmix_gds_base_framework.framework_selection;
    if (NULL == sel || '^' == sel[0]) {
        return false;
    }
    size_t n = strlen(RSHM_NAME);
    for (const char *p = sel; '\0' != *p;) {
        const char *end = strchr(p, ',');
        size_t len = NULL == end ? strlen(p) : (size_t) (end - p);
        if (len == n && 0 == strncmp(p, RSHM_NAME, n)) {
            return true;
        }
        if (NULL == end) {
            break;
        }
        p = end + 1;
    }
    return false;
}

int rshm_component_query(pmix_gds_base_module_t *module, pmix_mca_base_module_t **out,
                         int *priority)
{
    if (!version_fits) {
        return PMIX_ERR_NOT_AVAILABLE;
    }
    if (!named_by_selection()) {
        pmix_output_verbose(2, pmix_gds_base_framework.framework_output,
                            "gds:rshm: not selected: the gds setting does not name rshm "
                            "(gds = rshm,hash turns it on)");
        return PMIX_ERR_NOT_AVAILABLE;
    }
    *priority = RSHM_PRIORITY;
    *out = (pmix_mca_base_module_t *) module;
    return PMIX_SUCCESS;
}
