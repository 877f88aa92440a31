/*
 * staging.c - one generation per commit: the gds component's server stages each key libpmix
 * stores (its module's `store` is called once per key of a commit or of a direct-modex reply)
 * in the server shim, and publishes the staged keys with one rshm_server_flush from a zero-delay
 * event on libpmix's progress base. docs/openpmix.md "One generation per commit" says why no
 * peer can see a fence released before the commits it follows are published.
 */

#include "src/include/pmix_config.h"
#include "pmix_common.h"
#include "pmix_version.h"

#if !defined(PMIX_VERSION_MAJOR) || PMIX_VERSION_MAJOR != 4L || PMIX_VERSION_MINOR != 2L
#    error "staging.c is written for OpenPMIx 4.2 (see docs/openpmix.md)"
#endif

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "src/include/pmix_globals.h"
#include "src/mca/gds/base/base.h"
#include "src/util/pmix_output.h"

#include "staging.h"

unsigned long long rshm_store_cpu_ns = 0, hash_store_cpu_ns = 0;

unsigned long long rshm_thread_cpu_ns(void)
{
    struct timespec ts;
    if (0 != clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) {
        return 0;
    }
    return (unsigned long long) ts.tv_sec * 1000000000ULL + (unsigned long long) ts.tv_nsec;
}

/* One reading's own cost: the least of 32 empty intervals, measured once. Subtracting the
 * least never takes away more than the probes cost. */
static unsigned long long probe_ns = ~0ULL;

unsigned long long rshm_cpu_interval(unsigned long long from, unsigned long long to)
{
    unsigned long long d = to - from;
    if (~0ULL == probe_ns) {
        unsigned long long least = ~0ULL;
        for (int i = 0; i < 32; i++) {
            unsigned long long a = rshm_thread_cpu_ns(), b = rshm_thread_cpu_ns();
            least = b - a < least ? b - a : least;
        }
        probe_ns = least;
    }
    return to < from ? 0 : d > probe_ns ? d - probe_ns : 0;
}

/* The flush event, assigned once (to the server's handle) under `ev_lock`. */
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pmix_event_t flush_ev;
static bool flush_ev_assigned = false;

/* The store could not stage a newer value of (proc, key): withdraw the older one it may hold
 * (every scope, one generation; if that cannot be published, the namespace's posted table), so
 * that clients read the key from hash. */
static void withdraw_key(rshm_server_t *s, const pmix_proc_t *proc, const char *key)
{
    bool whole = false;
    pmix_status_t rc = rshm_server_withdraw(s, proc, key, &whole);
    if (PMIX_SUCCESS != rc) {
        char msg[512];
        rshm_server_last_error(msg, sizeof(msg));
        pmix_output(0, "gds:rshm: cannot withdraw %s of %s:%u after a failed store: clients of "
                    "this node may read its older value (%s: %s)",
                    key, proc->nspace, proc->rank, PMIx_Error_string(rc), msg);
    } else if (whole) {
        pmix_output_verbose(1, pmix_gds_base_output,
                            "gds:rshm: posted data of %s withdrawn (served by hash)",
                            proc->nspace);
    }
}

/* Publish every staged value as one generation (rshm_server_flush). If that fails, the server
 * withdraws the staged keys instead (or the posted data of their namespaces), so that clients
 * read them from hash, never an older value from the store. */
void rshm_flush_staged(rshm_server_t *s)
{
    rshm_flushed_t f;
    pmix_status_t rc = rshm_server_flush(s, &f);
    if (PMIX_SUCCESS != rc) {
        char msg[512];
        rshm_server_last_error(msg, sizeof(msg));
        if (RSHM_WITHDRAWN_NONE == f.withdrawn) {
            pmix_output(0, "gds:rshm: cannot publish %zu staged values nor withdraw their "
                        "keys: clients of this node may read older values (%s: %s)",
                        f.values, PMIx_Error_string(rc), msg);
        } else {
            const char *what = "the store's posted data (for good)";
            if (RSHM_WITHDRAWN_KEYS == f.withdrawn) {
                what = "their keys";
            } else if (RSHM_WITHDRAWN_NAMESPACES == f.withdrawn) {
                what = "their namespaces' posted data";
            }
            pmix_output_verbose(1, pmix_gds_base_output,
                                "gds:rshm: %zu staged values not published, %s withdrawn "
                                "(served by hash): %s: %s",
                                f.values, what, PMIx_Error_string(rc), msg);
        }
    } else if (0 < f.refused) {
        pmix_output_verbose(1, pmix_gds_base_output,
                            "gds:rshm: %zu staged values the store does not hold: their keys "
                            "withdrawn (served by hash)", f.refused);
    }
}

/* The zero-delay event (cbdata: the server): runs on the progress thread after the event that
 * staged the values (and every event queued before it) has returned. */
static void flush_cb(int sd, short args, void *cbdata)
{
    unsigned long long t0 = rshm_thread_cpu_ns();
    PMIX_HIDE_UNUSED_PARAMS(sd, args);
    rshm_flush_staged((rshm_server_t *) cbdata);
    rshm_store_cpu_ns += rshm_cpu_interval(t0, rshm_thread_cpu_ns());
}

/* Make the flush run once the current progress-thread event returns. Activating an event that
 * is already active does nothing: one flush takes everything staged until it runs. */
static void schedule_flush(rshm_server_t *s)
{
    bool ready;
    pthread_mutex_lock(&ev_lock);
    if (!flush_ev_assigned && NULL != pmix_globals.evbase) {
        pmix_event_assign(&flush_ev, pmix_globals.evbase, -1, EV_WRITE, flush_cb, s);
        flush_ev_assigned = true;
    }
    ready = flush_ev_assigned;
    pthread_mutex_unlock(&ev_lock);
    if (ready) {
        pmix_event_active(&flush_ev, EV_WRITE, 1);
    } else {
        rshm_flush_staged(s);
    }
}

void rshm_stage(rshm_server_t *s, const pmix_proc_t *proc, pmix_scope_t scope, const char *key,
                const pmix_value_t *value)
{
    bool first = false;
    pmix_status_t rc;
    /* a key of another process begins another commit: the staged one is published on its own */
    if (rshm_server_staged_by_other(s, proc)) {
        rshm_flush_staged(s);
    }
    rc = rshm_server_stage(s, proc, scope, key, value, &first);
    if (PMIX_SUCCESS != rc) {
        /* nothing staged (a key the store cannot name): withdraw the key now, after what is
         * staged, in case the store holds an older value of it */
        char msg[512];
        rshm_server_last_error(msg, sizeof(msg));
        pmix_output_verbose(1, pmix_gds_base_output, "gds:rshm: stage %s: %s (%s)", key,
                            PMIx_Error_string(rc), msg);
        rshm_flush_staged(s);
        withdraw_key(s, proc, key);
    } else if (first) {
        schedule_flush(s);
    }
}

void rshm_staging_finalize(rshm_server_t *s)
{
    pthread_mutex_lock(&ev_lock);
    if (flush_ev_assigned) {
        pmix_event_del(&flush_ev);
        flush_ev_assigned = false;
    }
    pthread_mutex_unlock(&ev_lock);
    rshm_flush_staged(s);
}
