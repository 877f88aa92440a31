/*
 * staging.c - one generation per commit: the gds component's server keeps each key libpmix
 * stores (its module's `store` is called once per key of a commit or of a direct-modex reply),
 * retaining its kval rather than copying it, and publishes one process's keys with one
 * rshm_server_commit from a zero-delay event on libpmix's progress base (or when a key of
 * another process arrives): the values go from libpmix's memory straight into the store. docs/openpmix.md "One generation per commit" says why no
 * peer can see a fence released before the commits it follows are published.
 */

#include "line.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/include/pmix_globals.h"
#include "src/mca/gds/base/base.h"
#include "src/util/pmix_output.h"

#include "settings.h"
#include "staging.h"

unsigned long long rshm_store_cpu_ns = 0, hash_store_cpu_ns = 0;

/* $RSHM_GDS_STATS set or gds_rshm_verbose >= 2, read once: otherwise nothing is timed (a thread
 * CPU clock reading is a system call, and the store path makes three per key). */
static pthread_once_t stats_once = PTHREAD_ONCE_INIT;
static bool stats_on = false;

static void read_stats_setting(void)
{
    stats_on = NULL != getenv("RSHM_GDS_STATS") || 2 <= rshm_verbose;
}

bool rshm_stats_on(void)
{
    pthread_once(&stats_once, read_stats_setting);
    return stats_on;
}

unsigned long long rshm_thread_cpu_ns(void)
{
    struct timespec ts;
    if (!rshm_stats_on() || 0 != clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) {
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
    if (!rshm_stats_on()) {
        return 0;
    }
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

/* The staged keys: one process's, in the order stored, each kval retained until published.
 * The first STAGED_INLINE, with the process and the count, live in one page-aligned block: a
 * host that forks its clients while they commit makes the next store to each page it shares
 * with a child a page copy, so staging a commit writes one page. More keys move to the heap. */
#define STAGED_INLINE 64
static struct {
    pmix_proc_t proc;
    size_t n;
    rshm_kv_t kvs[STAGED_INLINE];
    pmix_kval_t *held[STAGED_INLINE];
} block __attribute__((aligned(4096)));
_Static_assert(sizeof(block) <= 4096, "the staging block is one page");
static rshm_kv_t *staged = block.kvs;
static pmix_kval_t **held = block.held;
static size_t staged_cap = STAGED_INLINE;
#define staged_proc block.proc
#define nstaged block.n

/* Room for twice as many staged keys (on the heap); false if there is none. */
static bool grow_staged(void)
{
    size_t cap = 2 * staged_cap;
    rshm_kv_t *kvs = malloc(cap * sizeof(*kvs));
    pmix_kval_t **kept = malloc(cap * sizeof(*kept));
    if (NULL == kvs || NULL == kept) {
        free(kvs);
        free(kept);
        return false;
    }
    memcpy(kvs, staged, nstaged * sizeof(*kvs));
    memcpy(kept, held, nstaged * sizeof(*kept));
    if (staged != block.kvs) {
        free(staged);
        free(held);
    }
    staged = kvs;
    held = kept;
    staged_cap = cap;
    return true;
}

/* Publish the staged keys as one generation (rshm_server_commit). If that fails, the server
 * withdraws them instead (or the posted data of their namespace), so that clients read them
 * from hash, never an older value from the store. */
void rshm_flush_staged(rshm_server_t *s)
{
    rshm_flushed_t f;
    pmix_status_t rc;
    size_t n = nstaged;
    if (0 == n) {
        return;
    }
    nstaged = 0;
    rc = rshm_server_commit(s, &staged_proc, staged, n, &f);
    for (size_t i = 0; i < n; i++) {
        PMIX_RELEASE(held[i]);
    }
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

void rshm_stage(rshm_server_t *s, const pmix_proc_t *proc, pmix_scope_t scope, pmix_kval_t *kv)
{
    /* a key of another process begins another commit: the staged one is published on its own */
    if (0 < nstaged
        && !(PMIX_CHECK_NSPACE(staged_proc.nspace, proc->nspace) && staged_proc.rank == proc->rank)) {
        rshm_flush_staged(s);
    }
    if (nstaged == staged_cap && !grow_staged()) {
        /* no room to keep it: publish what is staged, then this key alone */
        rshm_kv_t one = {.scope = (uint8_t) scope, .key = kv->key, .value = kv->value};
        rshm_flushed_t f;
        rshm_flush_staged(s);
        if (PMIX_SUCCESS != rshm_server_commit(s, proc, &one, 1, &f)) {
            pmix_output(0, "gds:rshm: cannot publish %s of %s:%u: clients of this node may "
                        "read its older value", kv->key, proc->nspace, proc->rank);
        }
        return;
    }
    if (0 == nstaged) {
        PMIX_LOAD_PROCID(&staged_proc, proc->nspace, proc->rank);
    }
    PMIX_RETAIN(kv);
    held[nstaged] = kv;
    staged[nstaged] = (rshm_kv_t){.scope = (uint8_t) scope, .key = kv->key, .value = kv->value};
    if (1 == ++nstaged) {
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
    if (staged != block.kvs) {
        free(staged);
        free(held);
        staged = block.kvs;
        held = block.held;
        staged_cap = STAGED_INLINE;
    }
}
