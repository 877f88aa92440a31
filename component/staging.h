/*
 * staging.h - the gds component's staging of committed values (staging.c): one generation per
 * commit or direct-modex reply, not one per key (docs/openpmix.md "One generation per commit").
 */
#ifndef RSHM_GDS_STAGING_H
#define RSHM_GDS_STAGING_H

#include <stdbool.h>

#include "pmix_common.h"
#include "rshm_server.h"
#include "src/include/pmix_globals.h"

/* Stage one key of a commit or reply (progress thread): `kv` is retained, not copied, until
 * it is published by a flush that runs once the current progress-thread event returns, or
 * before a key of another process is staged. */
void rshm_stage(rshm_server_t *s, const pmix_proc_t *proc, pmix_scope_t scope, pmix_kval_t *kv);
/* Publish what is staged now (before other changes of posted data). */
void rshm_flush_staged(rshm_server_t *s);
/* At finalize, before the store is closed: cancel the scheduled flush and publish what is
 * staged. */
void rshm_staging_finalize(rshm_server_t *s);

/* Whether $RSHM_GDS_STATS asked for the counters (read once). */
bool rshm_stats_on(void);
/* CPU time of the calling thread, in nanoseconds; 0, without a reading, unless rshm_stats_on. */
unsigned long long rshm_thread_cpu_ns(void);
/* The CPU time between two rshm_thread_cpu_ns readings, less the reading's own cost (a
 * system call of about a microsecond here, which per-key intervals would otherwise count). */
unsigned long long rshm_cpu_interval(unsigned long long from, unsigned long long to);
/* CPU time the server spent storing posted data (progress thread; read at finalize for
 * $RSHM_GDS_STATS): in the store (staging, flushes, fence batches) and in gds/hash's store
 * calls the component makes for the same data. */
extern unsigned long long rshm_store_cpu_ns, hash_store_cpu_ns;

#endif
