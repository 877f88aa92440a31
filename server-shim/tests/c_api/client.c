/* The C client of the C API tests: started by server.c with the environment of
 * rshm_server_setup_fork, it attaches with rshm_client_attach(NULL, NULL) and reads back every
 * realm and every value type the server registered or posted, in the three return modes of
 * PMIx_Get (default, PMIX_GET_STATIC_VALUES, PMIX_GET_POINTER_VALUES), and checks the statuses
 * of absent data, scope rules and bad arguments. Expected values are built here with
 * PMIX_VALUE_LOAD from common.c's definitions (what the server registered), never read from the
 * store. One line per check, a summary, exit status 1 on any failure. */
/* pmix_common.h uses strdup and strncasecmp: under -std=c11 they need _GNU_SOURCE (docs/ffi.md). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rshm_client.h>

#include "common.h"

static uint32_t me;
/* Pointer-mode answers from the resources table are copies, made anew on each get
 * (client-shim/src/client.rs, `Client::hold`): no same-pointer check for them. */
static bool pointer_may_copy;
static char store_real[PATH_MAX];

static void report(bool ok, const char *fmt, ...)
{
    char who[32];
    va_list ap;
    snprintf(who, sizeof(who), "[client %u]", me);
    va_start(ap, fmt);
    ct_report(who, rshm_client_last_error, ok, fmt, ap);
    va_end(ap);
}

/* ---- getting ------------------------------------------------------------------------------ */

typedef enum { M_DEFAULT, M_STATIC, M_POINTER } mode_t_;
static const char *const mode_name[] = {"default", "static ", "pointer"};

/* rshm_client_get of (ns, rank, key) with the qualifiers q[0..nq) and the mode's directive. */
static pmix_status_t get_in(const char *ns, pmix_rank_t rank, const char *key,
                            const pmix_info_t *q, size_t nq, mode_t_ mode, pmix_value_t **val)
{
    pmix_proc_t p;
    pmix_info_t infos[8];
    size_t n = 0;
    bool yes = true;
    pmix_status_t rc;

    PMIX_LOAD_PROCID(&p, ns, rank);
    for (; n < nq && n < 7; n++) {
        infos[n] = q[n]; /* shallow: q keeps ownership */
    }
    if (M_STATIC == mode) {
        PMIX_INFO_LOAD(&infos[n], PMIX_GET_STATIC_VALUES, &yes, PMIX_BOOL);
        n++;
    } else if (M_POINTER == mode) {
        PMIX_INFO_LOAD(&infos[n], PMIX_GET_POINTER_VALUES, &yes, PMIX_BOOL);
        n++;
    }
    rc = rshm_client_get(&p, key, n ? infos : NULL, n, val);
    if (M_DEFAULT != mode) {
        PMIX_INFO_DESTRUCT(&infos[n - 1]);
    }
    return rc;
}

/* Whether p points into a file of the store (a mapping of a file under $RSHM_STORE). */
static bool in_store_mapping(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[PATH_MAX + 256];
    bool found = false;
    uintptr_t a = (uintptr_t) p;
    if (NULL == f) {
        return false;
    }
    while (!found && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char *path = strchr(line, '/');
        if (2 != sscanf(line, "%lx-%lx", &lo, &hi) || a < lo || a >= hi) {
            continue;
        }
        found = NULL != path && 0 == strncmp(path, store_real, strlen(store_real));
        break;
    }
    fclose(f);
    return found;
}

static bool is_bytes_type(pmix_data_type_t t)
{
    return PMIX_BYTE_OBJECT == t || PMIX_COMPRESSED_STRING == t || PMIX_REGEX == t
           || PMIX_COMPRESSED_BYTE_OBJECT == t;
}

/* The value of (ns, rank, key) under q must equal *exp, in all three modes. */
static void expect_ns(const char *ns, pmix_rank_t rank, const char *key, const pmix_info_t *q,
                      size_t nq, const pmix_value_t *exp, const char *what)
{
    char why[512], rs[32];
    if (PMIX_RANK_WILDCARD == rank) {
        snprintf(rs, sizeof(rs), "*");
    } else if (PMIX_RANK_UNDEF == rank) {
        snprintf(rs, sizeof(rs), "UNDEF");
    } else {
        snprintf(rs, sizeof(rs), "%u", rank);
    }
    for (int m = M_DEFAULT; m <= M_POINTER; m++) {
        pmix_value_t storage, *v = NULL;
        pmix_status_t rc;
        bool ok;
        PMIX_VALUE_CONSTRUCT(&storage);
        if (M_STATIC == m) {
            v = &storage;
        }
        rc = get_in(ns, rank, key, q, nq, (mode_t_) m, &v);
        why[0] = '\0';
        if (PMIX_SUCCESS != rc) {
            snprintf(why, sizeof(why), "status %d (%s)", rc, PMIx_Error_string(rc));
            ok = false;
        } else if (NULL == v || (M_STATIC == m && v != &storage)) {
            snprintf(why, sizeof(why), "no value / not the caller's storage");
            ok = false;
        } else {
            ok = ct_value_equal(v, exp, why, sizeof(why));
            if (ok && ct_pmix_compare_supported(exp)) {
                pmix_value_cmp_t c = PMIx_Value_compare(v, (pmix_value_t *) exp);
                if (PMIX_EQUAL != c) {
                    snprintf(why, sizeof(why), "PMIx_Value_compare: %s",
                             PMIx_Value_comparison_string(c));
                    ok = false;
                }
            }
        }
        if (ok && M_POINTER == m) {
            /* asked again: the same value (strings and bytes are stored once), and bytes that
             * are the mapping's own (no copy) */
            pmix_value_t *v2 = NULL;
            rc = get_in(ns, rank, key, q, nq, M_POINTER, &v2);
            if (PMIX_SUCCESS != rc || NULL == v2) {
                snprintf(why, sizeof(why), "second pointer get: status %d", rc);
                ok = false;
            } else if ((is_bytes_type(exp->type) || PMIX_STRING == exp->type) && v2 != v
                       && !pointer_may_copy) {
                snprintf(why, sizeof(why), "second pointer get returned another pmix_value_t");
                ok = false;
            } else if (is_bytes_type(exp->type) && exp->data.bo.size > 0
                       && (v2->data.bo.bytes != v->data.bo.bytes
                           || !in_store_mapping(v->data.bo.bytes))) {
                snprintf(why, sizeof(why), "pointer-mode bytes are not the mapping's");
                ok = false;
            }
        }
        report(ok, "%s %-10s %s %s %s%s%s", mode_name[m], what, rs, key,
               PMIx_Data_type_string(exp->type), why[0] ? ": " : "", why);
        if (PMIX_SUCCESS == rc && NULL != v) {
            if (M_DEFAULT == m && PMIX_REGEX == v->type) {
                rshm_client_value_release(v); /* libpmix cannot (common.h) */
            } else if (M_DEFAULT == m) {
                ct_value_unleak(v);
                PMIX_VALUE_RELEASE(v); /* libpmix frees what the library malloc'ed */
            } else if (M_STATIC == m) {
                ct_value_destruct(&storage);
            } /* pointer mode: the library's; released by rshm_client_release_pointers */
        }
    }
}

static void expect(pmix_rank_t rank, const char *key, const pmix_info_t *q, size_t nq,
                   const pmix_value_t *exp, const char *what)
{
    expect_ns(CT_NSPACE, rank, key, q, nq, exp, what);
}

/* The status of (ns, rank, key) under q must be want, in all three modes. */
static void expect_status_ns(const char *ns, pmix_rank_t rank, const char *key,
                             const pmix_info_t *q, size_t nq, pmix_status_t want,
                             const char *what)
{
    for (int m = M_DEFAULT; m <= M_POINTER; m++) {
        pmix_value_t storage, *v = NULL;
        pmix_status_t rc;
        PMIX_VALUE_CONSTRUCT(&storage);
        if (M_STATIC == m) {
            v = &storage;
        }
        rc = get_in(ns, rank, key, q, nq, (mode_t_) m, &v);
        report(rc == want, "%s %-10s %s/%d %s -> %s (%d), want %s (%d)", mode_name[m], what, ns,
               (int) rank, key, PMIx_Error_string(rc), rc, PMIx_Error_string(want), want);
        if (PMIX_SUCCESS == rc) {
            if (M_DEFAULT == m && NULL != v) {
                PMIX_VALUE_RELEASE(v);
            } else if (M_STATIC == m) {
                PMIX_VALUE_DESTRUCT(&storage);
            }
        }
    }
}

static void expect_status(pmix_rank_t rank, const char *key, const pmix_info_t *q, size_t nq,
                          pmix_status_t want, const char *what)
{
    expect_status_ns(CT_NSPACE, rank, key, q, nq, want, what);
}

/* Expected scalars, loaded with PMIX_VALUE_LOAD. */
static void expect_typed(pmix_rank_t rank, const char *key, const pmix_info_t *q, size_t nq,
                         const void *data, pmix_data_type_t type, const char *what)
{
    pmix_value_t exp;
    PMIX_VALUE_CONSTRUCT(&exp);
    if (PMIX_SUCCESS != PMIX_VALUE_LOAD(&exp, data, type)) {
        report(false, "PMIX_VALUE_LOAD of the expected %s", key);
        return;
    }
    expect(rank, key, q, nq, &exp, what);
    PMIX_VALUE_DESTRUCT(&exp);
}

static void expect_u32(pmix_rank_t rank, const char *key, const pmix_info_t *q, size_t nq,
                       uint32_t x, const char *what)
{
    expect_typed(rank, key, q, nq, &x, PMIX_UINT32, what);
}

static void expect_u16(pmix_rank_t rank, const char *key, const pmix_info_t *q, size_t nq,
                       uint16_t x, const char *what)
{
    expect_typed(rank, key, q, nq, &x, PMIX_UINT16, what);
}

static void expect_u64(pmix_rank_t rank, const char *key, const pmix_info_t *q, size_t nq,
                       uint64_t x, const char *what)
{
    expect_typed(rank, key, q, nq, &x, PMIX_UINT64, what);
}

static void expect_rank(pmix_rank_t rank, const char *key, const pmix_info_t *q, size_t nq,
                        pmix_rank_t x, const char *what)
{
    expect_typed(rank, key, q, nq, &x, PMIX_PROC_RANK, what);
}

static void expect_str(pmix_rank_t rank, const char *key, const pmix_info_t *q, size_t nq,
                       const char *s, const char *what)
{
    expect_typed(rank, key, q, nq, s, PMIX_STRING, what);
}

static void qfree(pmix_info_t *q, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        PMIX_INFO_DESTRUCT(&q[i]);
    }
}

/* ---- the checks ---------------------------------------------------------------------------- */

static void typed_values(void)
{
    for (size_t i = 0; i < ct_ncases; i++) {
        const ct_case_t *c = &ct_cases[i];
        pmix_value_t exp;
        PMIX_VALUE_CONSTRUCT(&exp);
        if (PMIX_SUCCESS != ct_load(c, &exp)) {
            report(false, "building the expected %s", c->name);
            continue;
        }
        /* registered at job level: rank WILDCARD */
        expect(PMIX_RANK_WILDCARD, c->key, NULL, 0, &exp, "job/type");
        /* posted by a remote rank, GLOBAL */
        expect(CT_TYPED_POSTER, c->posted_key, NULL, 0, &exp, "post/type");
        ct_value_destruct(&exp);
    }
}

static void session_realm(void)
{
    bool yes = true;
    uint32_t sid = CT_SESSION_ID, other = CT_SESSION_ID + 1;
    pmix_info_t q[2];

    PMIX_INFO_LOAD(&q[0], PMIX_SESSION_INFO, &yes, PMIX_BOOL);
    expect_str(PMIX_RANK_WILDCARD, CT_KEY_SESSION_STR, q, 1, CT_SESSION_STR, "session");
    expect_u32(PMIX_RANK_WILDCARD, PMIX_UNIV_SIZE, q, 1, CT_UNIV_SIZE, "session");
    expect_str(PMIX_RANK_WILDCARD, PMIX_CLUSTER_ID, q, 1, CT_CLUSTER_ID, "session");
    PMIX_INFO_LOAD(&q[1], PMIX_SESSION_ID, &sid, PMIX_UINT32);
    expect_str(PMIX_RANK_WILDCARD, CT_KEY_SESSION_STR, q, 2, CT_SESSION_STR, "session");
    qfree(&q[1], 1);
    PMIX_INFO_LOAD(&q[1], PMIX_SESSION_ID, &other, PMIX_UINT32);
    expect_status(PMIX_RANK_WILDCARD, CT_KEY_SESSION_STR, q, 2, PMIX_ERR_NOT_FOUND, "session");
    qfree(q, 2);
    /* session keys default to the session realm (6.1.1): no qualifier needed */
    expect_u32(PMIX_RANK_WILDCARD, PMIX_UNIV_SIZE, NULL, 0, CT_UNIV_SIZE, "session");
    expect_str(PMIX_RANK_WILDCARD, PMIX_CLUSTER_ID, NULL, 0, CT_CLUSTER_ID, "session");
}

static void job_realm(void)
{
    bool yes = true;
    pmix_info_t q[1];
    uint32_t napps = CT_NAPPS;

    expect_str(PMIX_RANK_WILDCARD, PMIX_JOBID, NULL, 0, CT_JOBID, "job");
    expect_str(PMIX_RANK_WILDCARD, PMIX_NSPACE, NULL, 0, CT_NSPACE, "job");
    expect_u32(PMIX_RANK_WILDCARD, PMIX_JOB_NUM_APPS, NULL, 0, napps, "job");
    expect_str(PMIX_RANK_WILDCARD, CT_KEY_JOB_STR, NULL, 0, CT_JOB_STR, "job");
    /* PMIX_JOB_INFO: the job of the target process (6.1) */
    PMIX_INFO_LOAD(&q[0], PMIX_JOB_INFO, &yes, PMIX_BOOL);
    expect_str(me, CT_KEY_JOB_STR, q, 1, CT_JOB_STR, "job");
    expect_str(PMIX_RANK_WILDCARD, CT_KEY_JOB_STR, q, 1, CT_JOB_STR, "job");
    qfree(q, 1);
}

static void derived_keys(void)
{
    pmix_info_t q[2];
    bool yes = true;
    char *host1 = CT_HOST1;
    /* from the node and process maps (docs/jobdata.md "Derived keys") */
    expect_u32(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, NULL, 0, CT_NRANKS, "derived");
    expect_u32(PMIX_RANK_WILDCARD, PMIX_MAX_PROCS, NULL, 0, CT_NRANKS, "derived");
    expect_u32(PMIX_RANK_WILDCARD, PMIX_NUM_NODES, NULL, 0, CT_NNODES, "derived");
    expect_str(PMIX_RANK_WILDCARD, PMIX_NODE_LIST, NULL, 0, CT_HOST0 "," CT_HOST1, "derived");
    expect_str(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, NULL, 0, "0,2,4,6", "derived");
    expect_u32(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, NULL, 0, 4, "derived");
    expect_rank(PMIX_RANK_WILDCARD, PMIX_LOCALLDR, NULL, 0, 0, "derived");
    /* of another node (6.1.2: with a node selector) */
    PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[1], PMIX_HOSTNAME, host1, PMIX_STRING);
    expect_str(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, q, 2, "1,3,5,7", "derived");
    expect_u32(PMIX_RANK_WILDCARD, PMIX_LOCAL_SIZE, q, 2, 4, "derived");
    expect_rank(PMIX_RANK_WILDCARD, PMIX_LOCALLDR, q, 2, 1, "derived");
    qfree(q, 2);
}

static void app_realm(void)
{
    bool yes = true;
    pmix_info_t q[2];
    for (uint32_t a = 0; a < CT_NAPPS; a++) {
        PMIX_INFO_LOAD(&q[0], PMIX_APP_INFO, &yes, PMIX_BOOL);
        PMIX_INFO_LOAD(&q[1], PMIX_APPNUM, &a, PMIX_UINT32);
        expect_u32(PMIX_RANK_WILDCARD, PMIX_APP_SIZE, q, 2, ct_app_size(a), "app");
        expect_rank(PMIX_RANK_WILDCARD, PMIX_APPLDR, q, 2, ct_app_leader(a), "app");
        expect_str(PMIX_RANK_WILDCARD, CT_KEY_APP_STR, q, 2, ct_app_str(a), "app");
        qfree(q, 2);
    }
    {
        uint32_t nope = 5;
        PMIX_INFO_LOAD(&q[0], PMIX_APP_INFO, &yes, PMIX_BOOL);
        PMIX_INFO_LOAD(&q[1], PMIX_APPNUM, &nope, PMIX_UINT32);
        expect_status(PMIX_RANK_WILDCARD, PMIX_APP_SIZE, q, 2, PMIX_ERR_NOT_FOUND, "app");
        qfree(q, 2);
    }
    /* app keys default to the app realm: of the target, else of the caller (6.1.3) */
    expect_rank(PMIX_RANK_WILDCARD, PMIX_APPLDR, NULL, 0, ct_app_leader(CT_APP_OF(me)), "app");
    expect_rank(7, PMIX_APPLDR, NULL, 0, ct_app_leader(1), "app");
    /* my app, from my own proc (6.2.1.3) */
    expect_u32(me, PMIX_APP_SIZE, NULL, 0, ct_app_size(CT_APP_OF(me)), "app");
    PMIX_INFO_LOAD(&q[0], PMIX_APP_INFO, &yes, PMIX_BOOL);
    expect_str(me, CT_KEY_APP_STR, q, 1, ct_app_str(CT_APP_OF(me)), "app");
    /* the app of another process (rank 7: app 1) */
    expect_str(7, CT_KEY_APP_STR, q, 1, ct_app_str(1), "app");
    qfree(q, 1);
}

static void node_realm(void)
{
    bool yes = true;
    pmix_info_t q[2];
    for (uint32_t n = 0; n < CT_NNODES; n++) {
        char *host = (char *) ct_host(n);
        /* by hostname */
        PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
        PMIX_INFO_LOAD(&q[1], PMIX_HOSTNAME, host, PMIX_STRING);
        expect_u32(PMIX_RANK_WILDCARD, PMIX_NODE_SIZE, q, 2, 4, "node");
        expect_str(PMIX_RANK_WILDCARD, CT_KEY_NODE_STR, q, 2, ct_node_str(n), "node");
        expect_u32(PMIX_RANK_WILDCARD, PMIX_NODEID, q, 2, n, "node");
        qfree(q, 2);
        /* by node id */
        PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
        PMIX_INFO_LOAD(&q[1], PMIX_NODEID, &n, PMIX_UINT32);
        expect_str(PMIX_RANK_WILDCARD, CT_KEY_NODE_STR, q, 2, ct_node_str(n), "node");
        expect_str(PMIX_RANK_WILDCARD, PMIX_HOSTNAME, q, 2, host, "node");
        qfree(q, 2);
        /* a node key with a node selector and no PMIX_NODE_INFO (6.2.1.5) */
        PMIX_INFO_LOAD(&q[0], PMIX_HOSTNAME, host, PMIX_STRING);
        expect_u32(PMIX_RANK_WILDCARD, PMIX_NODE_SIZE, q, 1, 4, "node");
        qfree(q, 1);
    }
    /* no selector: the local node */
    PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
    expect_str(PMIX_RANK_WILDCARD, CT_KEY_NODE_STR, q, 1, ct_node_str(0), "node");
    qfree(q, 1);
    expect_str(PMIX_RANK_WILDCARD, PMIX_HOSTNAME, NULL, 0, CT_HOST0, "node");
    /* resources: the local node's, another node's; the namespace's own value wins */
    pointer_may_copy = true;
    PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
    expect_str(PMIX_RANK_WILDCARD, CT_KEY_RES_LOCAL, q, 1, CT_RES_LOCAL, "resources");
    expect_str(PMIX_RANK_WILDCARD, CT_KEY_NODE_STR, q, 1, ct_node_str(0), "resources");
    PMIX_INFO_LOAD(&q[1], PMIX_HOSTNAME, CT_HOST1, PMIX_STRING);
    expect_str(PMIX_RANK_WILDCARD, CT_KEY_RES_REMOTE, q, 2, CT_RES_REMOTE, "resources");
    qfree(q, 2);
    pointer_may_copy = false;
    /* an unknown node */
    PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[1], PMIX_HOSTNAME, "cnode09", PMIX_STRING);
    expect_status(PMIX_RANK_WILDCARD, PMIX_NODE_SIZE, q, 2, PMIX_ERR_NOT_FOUND, "node");
    qfree(q, 2);
}

static void proc_realm(void)
{
    for (uint32_t r = 0; r < CT_NRANKS; r++) {
        uint16_t nrank = r == CT_NODE_RANK_OVERRIDE_RANK ? (uint16_t) CT_NODE_RANK_OVERRIDE
                                                         : CT_LOCAL_RANK_OF(r);
        expect_u16(r, PMIX_LOCAL_RANK, NULL, 0, CT_LOCAL_RANK_OF(r), "proc");
        expect_u16(r, PMIX_NODE_RANK, NULL, 0, nrank, "proc");
        expect_u32(r, PMIX_NODEID, NULL, 0, CT_NODE_OF(r), "proc");
        expect_str(r, PMIX_HOSTNAME, NULL, 0, ct_host(CT_NODE_OF(r)), "proc");
        expect_u32(r, PMIX_APPNUM, NULL, 0, CT_APP_OF(r), "proc");
        expect_rank(r, PMIX_APP_RANK, NULL, 0, CT_APP_RANK_OF(r), "proc");
        expect_rank(r, PMIX_GLOBAL_RANK, NULL, 0, r, "proc");
        expect_u64(r, CT_KEY_PROC_U64, NULL, 0, CT_PROC_U64(r), "proc");
    }
    expect_status(CT_NRANKS + 1, CT_KEY_PROC_U64, NULL, 0, PMIX_ERR_NOT_FOUND, "proc");
}

static void posted_data(void)
{
    char card[128];
    pmix_info_t q[1];
    pmix_scope_t scope;
    uint32_t latest = CT_LATEST_NEW;

    for (uint32_t r = 0; r < CT_NRANKS; r++) {
        pmix_byte_object_t bo = {card, ct_card(r, card)};
        expect_typed(r, CT_KEY_CARD, NULL, 0, &bo, PMIX_BYTE_OBJECT, "card");
    }
    /* scopes (5.2.1.1, 5.3): this client is on CT_HOST0 with ranks 0,2,4,6 */
    expect_str(2, CT_KEY_LOCAL, NULL, 0, ct_local_str(2), "scope");
    expect_str(me, CT_KEY_LOCAL, NULL, 0, ct_local_str(me), "scope");
    expect_status(2, CT_KEY_REMOTE, NULL, 0, PMIX_ERR_EXISTS_OUTSIDE_SCOPE, "scope");
    expect_u32(1, CT_KEY_REMOTE, NULL, 0, CT_REMOTE_U32(1), "scope");
    expect_status(1, CT_KEY_LOCAL, NULL, 0, PMIX_ERR_EXISTS_OUTSIDE_SCOPE, "scope");
    /* PMIX_DATA_SCOPE narrows the search (5.4) */
    scope = PMIX_LOCAL;
    PMIX_INFO_LOAD(&q[0], PMIX_DATA_SCOPE, &scope, PMIX_SCOPE);
    expect_str(2, CT_KEY_LOCAL, q, 1, ct_local_str(2), "scope");
    expect_status(2, CT_KEY_CARD, q, 1, PMIX_ERR_EXISTS_OUTSIDE_SCOPE, "scope");
    qfree(q, 1);
    scope = PMIX_GLOBAL;
    PMIX_INFO_LOAD(&q[0], PMIX_DATA_SCOPE, &scope, PMIX_SCOPE);
    expect_status(2, CT_KEY_LOCAL, q, 1, PMIX_ERR_EXISTS_OUTSIDE_SCOPE, "scope");
    {
        pmix_byte_object_t bo = {card, ct_card(2, card)};
        expect_typed(2, CT_KEY_CARD, q, 1, &bo, PMIX_BYTE_OBJECT, "scope");
    }
    qfree(q, 1);
    /* latest wins; PMIX_RANK_UNDEF finds the one poster */
    expect_typed(2, CT_KEY_LATEST, NULL, 0, &latest, PMIX_UINT32, "latest");
    expect_str(PMIX_RANK_UNDEF, CT_KEY_UNIQUE, NULL, 0, CT_UNIQUE_STR, "undef");
    /* never posted; posted in a refused batch */
    expect_status(2, "ctest.never", NULL, 0, PMIX_ERR_NOT_FOUND, "posted");
    expect_status(1, CT_KEY_BADBATCH, NULL, 0, PMIX_ERR_NOT_FOUND, "posted");
    expect_status(PMIX_RANK_UNDEF, "ctest.never", NULL, 0, PMIX_ERR_NOT_FOUND, "posted");
}

/* PMIX_GET_POINTER_VALUES of a card: the library's value, its bytes the mapping's. */
static void pointer_card(void)
{
    char card[128];
    size_t n = ct_card(3, card);
    pmix_value_t *v1 = NULL, *v2 = NULL;
    pmix_status_t rc1 = get_in(CT_NSPACE, 3, CT_KEY_CARD, NULL, 0, M_POINTER, &v1);
    pmix_status_t rc2 = get_in(CT_NSPACE, 3, CT_KEY_CARD, NULL, 0, M_POINTER, &v2);
    bool ok = PMIX_SUCCESS == rc1 && PMIX_SUCCESS == rc2 && NULL != v1 && NULL != v2;
    report(ok, "pointer card: two gets succeed (%d, %d)", rc1, rc2);
    if (!ok) {
        return;
    }
    report(PMIX_BYTE_OBJECT == v1->type && v1->data.bo.size == n
               && 0 == memcmp(v1->data.bo.bytes, card, n),
           "pointer card: the bytes are rank 3's card");
    report(v1 == v2, "pointer card: the same pmix_value_t both times (%p, %p)", (void *) v1,
           (void *) v2);
    report(v1->data.bo.bytes == v2->data.bo.bytes,
           "pointer card: the same byte pointer both times (no copy)");
    report(in_store_mapping(v1->data.bo.bytes),
           "pointer card: the bytes lie in a mapping of a file under the store (%s)",
           store_real);
    {
        size_t released = rshm_client_release_pointers();
        report(released > 0, "rshm_client_release_pointers released %zu values", released);
        report(0 == rshm_client_release_pointers(), "a second release finds none");
    }
    /* after the release, pointer mode still works */
    v1 = NULL;
    rc1 = get_in(CT_NSPACE, 3, CT_KEY_CARD, NULL, 0, M_POINTER, &v1);
    report(PMIX_SUCCESS == rc1 && NULL != v1 && v1->data.bo.size == n,
           "pointer card after release: status %d", rc1);
}

static void not_found(void)
{
    expect_status(PMIX_RANK_WILDCARD, "ctest.none", NULL, 0, PMIX_ERR_NOT_FOUND, "absent");
    expect_status(PMIX_RANK_WILDCARD, "pmix.ctest.none", NULL, 0, PMIX_ERR_NOT_FOUND, "absent");
    expect_status(PMIX_RANK_WILDCARD, PMIX_APP_ARGV, NULL, 0, PMIX_ERR_NOT_FOUND, "absent");
    expect_status(PMIX_RANK_WILDCARD, PMIX_UNIV_SIZE "x", NULL, 0, PMIX_ERR_NOT_FOUND, "absent");
    expect_status_ns("no.such.nspace", PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, NULL, 0,
                     PMIX_ERR_NOT_FOUND, "absent");
    expect_status_ns("no.such.nspace", 0, CT_KEY_CARD, NULL, 0, PMIX_ERR_NOT_FOUND, "absent");
    expect_status_ns(CT_NSPACE_GONE, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, NULL, 0,
                     PMIX_ERR_NOT_FOUND, "deregistered");
}

static void bad_params(void)
{
    pmix_proc_t p;
    pmix_value_t *v = NULL;
    pmix_info_t q[2];
    bool yes = true;
    uint32_t u = 1;
    int timeout = 5;
    char longkey[600];
    char err[256];
    pmix_status_t rc;

    PMIX_LOAD_PROCID(&p, CT_NSPACE, PMIX_RANK_WILDCARD);
    rc = rshm_client_get(&p, NULL, NULL, 0, &v);
    report(PMIX_ERR_BAD_PARAM == rc, "NULL key -> %d", rc);
    report(rshm_client_last_error(err, sizeof(err)) > 0 && err[0],
           "the last error says why: \"%s\"", err);
    rc = rshm_client_get(NULL, PMIX_JOB_SIZE, NULL, 0, &v);
    report(PMIX_ERR_BAD_PARAM == rc, "NULL proc -> %d", rc);
    rc = rshm_client_get(&p, PMIX_JOB_SIZE, NULL, 0, NULL);
    report(PMIX_ERR_BAD_PARAM == rc, "NULL val -> %d", rc);
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    rc = rshm_client_get(&p, longkey, NULL, 0, &v);
    report(PMIX_ERR_BAD_PARAM == rc, "599-byte key -> %d", rc);
    rc = rshm_client_get(&p, PMIX_JOB_SIZE, NULL, 1, &v);
    report(PMIX_ERR_BAD_PARAM == rc, "NULL info with ninfo 1 -> %d", rc);
    /* static mode with no storage */
    PMIX_INFO_LOAD(&q[0], PMIX_GET_STATIC_VALUES, &yes, PMIX_BOOL);
    v = NULL;
    rc = rshm_client_get(&p, PMIX_JOB_SIZE, q, 1, &v);
    report(PMIX_ERR_BAD_PARAM == rc, "PMIX_GET_STATIC_VALUES with NULL storage -> %d", rc);
    qfree(q, 1);
    /* a qualifier of the wrong type */
    PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[1], PMIX_HOSTNAME, &u, PMIX_UINT32);
    v = NULL;
    rc = rshm_client_get(&p, PMIX_NODE_SIZE, q, 2, &v);
    report(PMIX_ERR_BAD_PARAM == rc, "PMIX_HOSTNAME qualifier of type uint32 -> %d", rc);
    qfree(q, 2);
    /* unknown directives: ignored, unless required */
    PMIX_INFO_LOAD(&q[0], "ctest.vendor.directive", &yes, PMIX_BOOL);
    v = NULL;
    rc = rshm_client_get(&p, PMIX_JOB_SIZE, q, 1, &v);
    report(PMIX_SUCCESS == rc && NULL != v && CT_NRANKS == v->data.uint32,
           "unknown optional directive ignored -> %d", rc);
    if (PMIX_SUCCESS == rc) {
        PMIX_VALUE_RELEASE(v);
    }
    PMIX_INFO_REQUIRED(&q[0]);
    v = NULL;
    rc = rshm_client_get(&p, PMIX_JOB_SIZE, q, 1, &v);
    report(PMIX_ERR_NOT_SUPPORTED == rc, "unknown required directive -> %d", rc);
    qfree(q, 1);
    /* PMIX_OPTIONAL / PMIX_IMMEDIATE change nothing: the store never waits */
    PMIX_INFO_LOAD(&q[0], PMIX_OPTIONAL, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[1], PMIX_IMMEDIATE, &yes, PMIX_BOOL);
    expect_status(2, "ctest.never", q, 2, PMIX_ERR_NOT_FOUND, "optional");
    expect_u32(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, q, 2, CT_NRANKS, "optional");
    qfree(q, 2);
    /* PMIX_TIMEOUT changes nothing either, even required; PMIX_GET_REFRESH_CACHE is for a PMIx
     * host library to honour, which the direct client has not (docs/jobdata.md "Answer policy") */
    PMIX_INFO_LOAD(&q[0], PMIX_TIMEOUT, &timeout, PMIX_INT);
    PMIX_INFO_REQUIRED(&q[0]);
    expect_u32(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, q, 1, CT_NRANKS, "required timeout");
    qfree(q, 1);
    PMIX_INFO_LOAD(&q[0], PMIX_GET_REFRESH_CACHE, &yes, PMIX_BOOL);
    expect_status(PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, q, 1, PMIX_ERR_NOT_SUPPORTED, "refresh");
    qfree(q, 1);
    /* rshm_client_value_release frees a default-mode value too */
    v = NULL;
    rc = rshm_client_get(&p, PMIX_NODE_LIST, NULL, 0, &v);
    report(PMIX_SUCCESS == rc, "rshm_client_value_release of a default-mode value");
    if (PMIX_SUCCESS == rc) {
        rshm_client_value_release(v);
    }
    rshm_client_value_release(NULL);
}

/* rshm_client_get_into: the value lands in the caller's pmix_value_t. */
static void get_into(void)
{
    pmix_proc_t p;
    pmix_value_t v;
    pmix_status_t rc;

    PMIX_LOAD_PROCID(&p, CT_NSPACE, PMIX_RANK_WILDCARD);
    rc = rshm_client_get_into(&p, PMIX_JOB_SIZE, NULL, 0, &v);
    report(PMIX_SUCCESS == rc && PMIX_UINT32 == v.type && CT_NRANKS == v.data.uint32,
           "get_into job size -> %d", rc);
    rshm_client_value_destruct(&v);
    rc = rshm_client_get_into(&p, PMIX_CLUSTER_ID, NULL, 0, &v);
    report(PMIX_SUCCESS == rc && PMIX_STRING == v.type && NULL != v.data.string
               && 0 == strcmp(v.data.string, CT_CLUSTER_ID),
           "get_into string -> %d", rc);
    rshm_client_value_destruct(&v);
    report(PMIX_UNDEF == v.type, "value_destruct leaves UNDEF");
    rc = rshm_client_get_into(&p, "ctest.never.posted", NULL, 0, &v);
    report(PMIX_ERR_NOT_FOUND == rc && PMIX_UNDEF == v.type, "get_into absent key -> %d", rc);
    rc = rshm_client_get_into(&p, PMIX_JOB_SIZE, NULL, 0, NULL);
    report(PMIX_ERR_BAD_PARAM == rc, "get_into NULL val -> %d", rc);
    rshm_client_value_destruct(NULL);
}

static void attach_detach(void)
{
    pmix_proc_t self, p;
    pmix_value_t *v = NULL;
    pmix_status_t rc = rshm_client_attach(NULL, NULL);
    report(PMIX_ERR_EXISTS == rc, "attach while attached -> %d (PMIX_ERR_EXISTS)", rc);
    rc = rshm_client_detach();
    report(PMIX_SUCCESS == rc, "detach -> %d", rc);
    PMIX_LOAD_PROCID(&p, CT_NSPACE, PMIX_RANK_WILDCARD);
    rc = rshm_client_get(&p, PMIX_JOB_SIZE, NULL, 0, &v);
    report(PMIX_ERR_INIT == rc, "get after detach -> %d (PMIX_ERR_INIT)", rc);
    rc = rshm_client_detach();
    report(PMIX_ERR_INIT == rc, "detach while detached -> %d", rc);
    rc = rshm_client_attach("/nonexistent/rshm-store", NULL);
    report(PMIX_ERR_NOT_FOUND == rc, "attach to no store -> %d (PMIX_ERR_NOT_FOUND)", rc);
    /* attach with an explicit path and identity */
    PMIX_LOAD_PROCID(&self, CT_NSPACE, me);
    rc = rshm_client_attach(getenv("RSHM_STORE"), &self);
    report(PMIX_SUCCESS == rc, "attach with a path and proc -> %d", rc);
    expect_str(2, CT_KEY_LOCAL, NULL, 0, ct_local_str(2), "reattach");
    rc = rshm_client_detach();
    report(PMIX_SUCCESS == rc, "final detach -> %d", rc);
}

int main(int argc, char **argv)
{
    const char *rank_s = getenv("RSHM_RANK");
    const char *store = getenv("RSHM_STORE");
    const char *ns = getenv("RSHM_NSPACE");
    pmix_status_t rc;

    (void) argc;
    (void) argv;
    if (NULL == rank_s || NULL == store || NULL == ns) {
        fprintf(stderr, "client: RSHM_RANK/RSHM_STORE/RSHM_NSPACE not set (setup_fork)\n");
        return 2;
    }
    me = (uint32_t) strtoul(rank_s, NULL, 10);
    if (NULL == realpath(store, store_real)) {
        fprintf(stderr, "client: realpath(%s) failed\n", store);
        return 2;
    }
    if (0 != ct_init()) {
        return 2;
    }
    report(0 == strcmp(ns, CT_NSPACE), "RSHM_NSPACE is %s", ns);
    rc = rshm_client_attach(NULL, NULL);
    report(PMIX_SUCCESS == rc, "rshm_client_attach(NULL, NULL) from the environment -> %d", rc);
    if (PMIX_SUCCESS != rc) {
        printf("[client %u] summary: %u passed, %u failed\n", me, ct_npass, ct_nfail);
        return 1;
    }

    typed_values();
    session_realm();
    job_realm();
    app_realm();
    node_realm();
    proc_realm();
    derived_keys();
    posted_data();
    pointer_card();
    not_found();
    bad_params();
    get_into();
    attach_detach();

    printf("[client %u] summary: %u checks, %u passed, %u failed\n", me, ct_npass + ct_nfail,
           ct_npass, ct_nfail);
    return 0 == ct_nfail ? 0 : 1;
}
