/* What the C server (server.c) registers and the C client (client.c) expects: the job's layout,
 * the per-realm values, the typed values (one case per value type the abi converts) and the
 * posted data. Both programs build their values from these definitions with the standard's
 * macros; the client never takes an expected value from the store.
 *
 * The comparison of values is in compare.h (included here). */
#ifndef RSHM_CTEST_COMMON_H
#define RSHM_CTEST_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pmix.h>

#include "compare.h"

/* ---- the job ---------------------------------------------------------------------------- */

#define CT_NSPACE "rshm.ctest"
/* Registered, then deregistered by the server: the client must not find it. */
#define CT_NSPACE_GONE "rshm.ctest.gone"
#define CT_SESSION_ID 7u
#define CT_UNIV_SIZE 16u
#define CT_CLUSTER_ID "ctest-cluster"
#define CT_JOBID "rshm.ctest@0"
#define CT_NRANKS 8u
#define CT_NNODES 2u
#define CT_NAPPS 2u
/* The server's own node is CT_HOST0 (rshm_server_open's PMIX_HOSTNAME). */
#define CT_HOST0 "cnode01"
#define CT_HOST1 "cnode02"
/* PMIX_NODE_MAP as OpenPMIx's PMIx_generate_regex writes it (PMIX_REGEX, NUL included), and
 * PMIX_PROC_MAP in the raw form (PMIX_STRING): ranks interleaved over the two nodes. */
#define CT_NODE_MAP "pmix[cnode[2:1-2]]"
#define CT_PROC_MAP "raw:0,2,4,6;1,3,5,7"
/* The node of rank r, its local rank, its app, its rank within the app. */
#define CT_NODE_OF(r) ((uint32_t) (r) % 2u)
#define CT_LOCAL_RANK_OF(r) ((uint16_t) ((r) / 2u))
#define CT_APP_OF(r) ((uint32_t) ((r) < 6u ? 0u : 1u))
#define CT_APP_RANK_OF(r) ((pmix_rank_t) ((r) < 6u ? (r) : (r) - 6u))
/* Rank 5's PMIX_NODE_RANK is registered (9), overriding the derived value (its local rank). */
#define CT_NODE_RANK_OVERRIDE_RANK 5u
#define CT_NODE_RANK_OVERRIDE 9u
/* The client processes the server starts (both on CT_HOST0, in different apps). */
#define CT_CLIENT_RANK_A 0u
#define CT_CLIENT_RANK_B 6u

const char *ct_host(uint32_t node);
/* Ranks of app a: app 0 = 0-5, app 1 = 6-7. */
uint32_t ct_app_size(uint32_t app);
pmix_rank_t ct_app_leader(uint32_t app);

/* Realm-specific custom keys and their values. */
#define CT_KEY_SESSION_STR "ctest.session.str"
#define CT_SESSION_STR "session-seven"
#define CT_KEY_JOB_STR "ctest.job.str"
#define CT_JOB_STR "hello job"
#define CT_KEY_APP_STR "ctest.app.str"
const char *ct_app_str(uint32_t app); /* "app-0", "app-1" */
#define CT_KEY_NODE_STR "ctest.node.str"
const char *ct_node_str(uint32_t node); /* "node-cnode01", ... */
#define CT_KEY_PROC_U64 "ctest.proc.u64"
#define CT_PROC_U64(r) ((uint64_t) 1000u + (r))
/* Resources (register_resources): a key of the local node, one of CT_HOST1, and a node key the
 * namespace also registers (the namespace's value wins). */
#define CT_KEY_RES_LOCAL "ctest.res.fabric"
#define CT_RES_LOCAL "fabric-local"
#define CT_KEY_RES_REMOTE "ctest.res.gpu"
#define CT_RES_REMOTE "gpu-b"
#define CT_RES_OVERRIDDEN "resources-lose"

/* ---- posted data ------------------------------------------------------------------------- */

/* Every rank posts a GLOBAL card (a byte object, NULs and high bytes included): local ranks
 * (0,2,4,6) by rshm_server_store (their commits), remote ranks (1,3,5,7) in a fence batch. */
#define CT_KEY_CARD "ctest.card"
/* Fills buf (>= 96 bytes) with rank r's card; returns its size. */
size_t ct_card(uint32_t rank, char *buf);
/* LOCAL and REMOTE data of every rank (same key for all): a string / a uint32. */
#define CT_KEY_LOCAL "ctest.local"
#define CT_KEY_REMOTE "ctest.remote"
const char *ct_local_str(uint32_t rank); /* "local-of-<r>" */
#define CT_REMOTE_U32(r) ((uint32_t) 500u + (r))
/* Rank 2 posts this twice: the second value wins. */
#define CT_KEY_LATEST "ctest.latest"
#define CT_LATEST_OLD 1u
#define CT_LATEST_NEW 2u
/* Posted by rank 5 only (GLOBAL): found with PMIX_RANK_UNDEF. */
#define CT_KEY_UNIQUE "ctest.unique"
#define CT_UNIQUE_STR "only rank 5 has it"
/* A fence batch with one reserved key is refused whole: this key of it is never stored. */
#define CT_KEY_BADBATCH "ctest.badbatch"
/* The typed values are also posted (GLOBAL, by remote rank 3): key "ctest.p.<name>". */
#define CT_TYPED_POSTER 3u

/* ---- the typed values -------------------------------------------------------------------- */

typedef struct {
    const char *name;      /* "bool", "darray_info", ... */
    char key[64];          /* job key "ctest.t.<name>" */
    char posted_key[64];   /* posted key "ctest.p.<name>" */
    pmix_data_type_t type; /* the value's type */
    const void *data;      /* for PMIX_INFO_LOAD / PMIX_VALUE_LOAD, NULL: built by hand */
} ct_case_t;

extern ct_case_t ct_cases[];
extern size_t ct_ncases;

/* Fill ct_cases (call once, first). Returns 0, or -1 (with a message) on failure. */
int ct_init(void);
/* Build case c's value into *v (constructed by the caller): PMIX_VALUE_LOAD, or by hand for the
 * types libpmix 4.2.2 cannot load outside PMIx_Init (see common.c). Returns a status. */
pmix_status_t ct_load(const ct_case_t *c, pmix_value_t *v);

/* PMIX_VALUE_DESTRUCT, except for a PMIX_REGEX: libpmix 4.2.2's PMIx_Value_destruct of a regex
 * calls its preg framework, which only exists after PMIx_Init (it crashes before), so the bytes
 * are freed here. */
void ct_value_destruct(pmix_value_t *v);
/* Before PMIX_VALUE_RELEASE / PMIX_VALUE_DESTRUCT: libpmix 4.2.2's PMIx_Value_destruct does not
 * free a PMIX_PROC_NSPACE value's pmix_nspace_t (valgrind: its own values leak the same way), so
 * it is freed here, keeping leak checks meaningful. */
void ct_value_unleak(pmix_value_t *v);

/* ---- reporting -------------------------------------------------------------------------- */

/* Checks passed and failed so far (ct_report counts them). */
extern unsigned ct_npass, ct_nfail;
/* Print one check as "<who> ok|FAIL <message>"; a failure adds the library's last error, read
 * with last_error (rshm_server_last_error or rshm_client_last_error). */
void ct_report(const char *who, size_t (*last_error)(char *, size_t), bool ok, const char *fmt,
               va_list ap);

#endif
