/* The C server of the C API tests: opens a store as node CT_HOST0, registers the job of
 * common.h from pmix_info_t arrays built with the standard's macros (session, job, app, node and
 * proc arrays, node and process maps, a job key of every value type), registers resources,
 * stores posted data (commits and fence batches), then starts the C client (client.c) for two
 * local ranks with the environment rshm_server_setup_fork builds, waits for them, closes the
 * store and checks its directory is gone. Exit status 0 only if every check passed and every
 * client exited 0.
 *
 * usage: server CLIENT_EXE [TMPDIR] */
/* pmix_common.h uses strdup and strncasecmp: under -std=c11 they need _GNU_SOURCE (docs/ffi.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rshm_server.h>

#include "common.h"


static void report(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    ct_report("[server]", rshm_server_last_error, ok, fmt, ap);
    va_end(ap);
}

static bool call(pmix_status_t rc, pmix_status_t want, const char *what)
{
    report(rc == want, "%s -> %s (%d)", what, PMIx_Error_string(rc), rc);
    return rc == want;
}

/* ---- building info arrays --------------------------------------------------------------- */

typedef struct {
    pmix_info_t *v;
    size_t n, cap;
} ilist_t;

static pmix_info_t *il_next(ilist_t *l)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = realloc(l->v, l->cap * sizeof(pmix_info_t));
        if (NULL == l->v) {
            fprintf(stderr, "server: out of memory\n");
            exit(2);
        }
    }
    PMIX_INFO_CONSTRUCT(&l->v[l->n]);
    return &l->v[l->n++];
}

#define IL_LOAD(l, k, d, t) PMIX_INFO_LOAD(il_next(l), (k), (d), (t))

static void il_u32(ilist_t *l, const char *k, uint32_t x)
{
    IL_LOAD(l, k, &x, PMIX_UINT32);
}

static void il_u16(ilist_t *l, const char *k, uint16_t x)
{
    IL_LOAD(l, k, &x, PMIX_UINT16);
}

static void il_rank(ilist_t *l, const char *k, pmix_rank_t x)
{
    IL_LOAD(l, k, &x, PMIX_PROC_RANK);
}

static void il_str(ilist_t *l, const char *k, const char *s)
{
    IL_LOAD(l, k, s, PMIX_STRING);
}

static void il_free(ilist_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        ct_value_destruct(&l->v[i].value); /* regexes by hand (common.h) */
    }
    if (l->n) {
        PMIX_INFO_FREE(l->v, l->n);
    } else {
        free(l->v);
    }
    l->v = NULL;
    l->n = l->cap = 0;
}

/* Append key = a data array of sub's infos (a PMIX_*_INFO_ARRAY); sub is released. */
static void il_array(ilist_t *l, const char *key, ilist_t *sub)
{
    pmix_data_array_t da = {PMIX_INFO, sub->n, sub->v};
    IL_LOAD(l, key, &da, PMIX_DATA_ARRAY); /* a deep copy */
    il_free(sub);
}

/* The registration of CT_NSPACE (standard 17.2.3.2). */
static void build_registration(ilist_t *top)
{
    ilist_t sub = {0};
    pmix_info_t *nmap;

    /* session realm */
    il_u32(&sub, PMIX_SESSION_ID, CT_SESSION_ID);
    il_u32(&sub, PMIX_UNIV_SIZE, CT_UNIV_SIZE);
    il_str(&sub, CT_KEY_SESSION_STR, CT_SESSION_STR);
    il_array(top, PMIX_SESSION_INFO_ARRAY, &sub);
    /* a session key at the top level: goes to the job's session (6.1.1) */
    il_str(top, PMIX_CLUSTER_ID, CT_CLUSTER_ID);
    /* job realm; PMIX_JOB_SIZE, PMIX_NUM_NODES, PMIX_NODE_LIST, PMIX_LOCAL_PEERS... are left to
     * be derived from the maps */
    il_str(top, PMIX_JOBID, CT_JOBID);
    il_str(top, PMIX_NSPACE, CT_NSPACE);
    il_u32(top, PMIX_JOB_NUM_APPS, CT_NAPPS);
    il_str(top, CT_KEY_JOB_STR, CT_JOB_STR);
    /* the node map as a PMIX_REGEX of PMIx_generate_regex (NUL included): built by hand, since
     * PMIx_Value_load of a regex needs PMIx_Init; the process map as a PMIX_STRING */
    nmap = il_next(top);
    PMIX_LOAD_KEY(nmap->key, PMIX_NODE_MAP);
    nmap->value.type = PMIX_REGEX;
    nmap->value.data.bo.size = strlen(CT_NODE_MAP) + 1;
    nmap->value.data.bo.bytes = strdup(CT_NODE_MAP);
    il_str(top, PMIX_PROC_MAP, CT_PROC_MAP);
    /* a job key of every value type */
    for (size_t i = 0; i < ct_ncases; i++) {
        const ct_case_t *c = &ct_cases[i];
        if (NULL != c->data) {
            IL_LOAD(top, c->key, c->data, c->type);
        } else {
            pmix_info_t *info = il_next(top);
            PMIX_LOAD_KEY(info->key, c->key);
            if (PMIX_SUCCESS != ct_load(c, &info->value)) {
                report(false, "building the value of %s", c->key);
            }
        }
    }
    /* application realm */
    for (uint32_t a = 0; a < CT_NAPPS; a++) {
        il_u32(&sub, PMIX_APPNUM, a);
        il_u32(&sub, PMIX_APP_SIZE, ct_app_size(a));
        il_rank(&sub, PMIX_APPLDR, ct_app_leader(a));
        il_str(&sub, CT_KEY_APP_STR, ct_app_str(a));
        il_array(top, PMIX_APP_INFO_ARRAY, &sub);
    }
    /* node realm */
    for (uint32_t n = 0; n < CT_NNODES; n++) {
        il_u32(&sub, PMIX_NODEID, n);
        il_str(&sub, PMIX_HOSTNAME, ct_host(n));
        il_u32(&sub, PMIX_NODE_SIZE, 4);
        il_str(&sub, CT_KEY_NODE_STR, ct_node_str(n));
        il_array(top, PMIX_NODE_INFO_ARRAY, &sub);
    }
    /* process realm; PMIX_LOCAL_RANK, PMIX_NODE_RANK, PMIX_NODEID and PMIX_HOSTNAME are derived
     * from the maps, except rank 5's node rank (registered: overrides) and rank 7's hostname
     * (registered, equal to its node's) */
    for (uint32_t r = 0; r < CT_NRANKS; r++) {
        uint64_t u64 = CT_PROC_U64(r);
        il_rank(&sub, PMIX_RANK, r);
        il_u32(&sub, PMIX_APPNUM, CT_APP_OF(r));
        il_rank(&sub, PMIX_APP_RANK, CT_APP_RANK_OF(r));
        il_rank(&sub, PMIX_GLOBAL_RANK, r);
        IL_LOAD(&sub, CT_KEY_PROC_U64, &u64, PMIX_UINT64);
        if (CT_NODE_RANK_OVERRIDE_RANK == r) {
            il_u16(&sub, PMIX_NODE_RANK, CT_NODE_RANK_OVERRIDE);
        }
        if (7 == r) {
            il_str(&sub, PMIX_HOSTNAME, ct_host(CT_NODE_OF(r)));
        }
        il_array(top, PMIX_PROC_INFO_ARRAY, &sub);
    }
}

/* ---- posted data ------------------------------------------------------------------------- */

typedef struct {
    rshm_posted_t *v;
    pmix_value_t *vals; /* owned values, one per item */
    size_t n, cap;
} batch_t;

static void batch_add(batch_t *b, uint32_t rank, uint8_t scope, const char *key,
                      const void *data, pmix_data_type_t type, const ct_case_t *c)
{
    if (b->n == b->cap) {
        b->cap = 128; /* fixed: item pointers into vals must stay valid */
        if (NULL != b->v) {
            fprintf(stderr, "server: batch too large\n");
            exit(2);
        }
        b->v = calloc(b->cap, sizeof(rshm_posted_t));
        b->vals = calloc(b->cap, sizeof(pmix_value_t));
        if (NULL == b->v || NULL == b->vals) {
            exit(2);
        }
    }
    PMIX_VALUE_CONSTRUCT(&b->vals[b->n]);
    if (NULL != c) {
        ct_load(c, &b->vals[b->n]);
    } else {
        PMIX_VALUE_LOAD(&b->vals[b->n], data, type);
    }
    PMIX_LOAD_PROCID(&b->v[b->n].proc, CT_NSPACE, rank);
    b->v[b->n].scope = scope;
    b->v[b->n].key = key;
    b->v[b->n].value = &b->vals[b->n];
    b->n++;
}

static void batch_free(batch_t *b)
{
    for (size_t i = 0; i < b->n; i++) {
        ct_value_destruct(&b->vals[i]);
    }
    free(b->v);
    free(b->vals);
    memset(b, 0, sizeof(*b));
}

static void store_one(rshm_server_t *s, uint32_t rank, uint8_t scope, const char *key,
                      const void *data, pmix_data_type_t type, pmix_status_t want)
{
    pmix_proc_t p;
    pmix_value_t v;
    char what[160];
    PMIX_LOAD_PROCID(&p, CT_NSPACE, rank);
    PMIX_VALUE_CONSTRUCT(&v);
    PMIX_VALUE_LOAD(&v, data, type);
    snprintf(what, sizeof(what), "rshm_server_store(rank %u, scope %u, %s)", rank,
             (unsigned) scope, key);
    call(rshm_server_store(s, &p, scope, key, &v), want, what);
    PMIX_VALUE_DESTRUCT(&v);
}

static void post_data(rshm_server_t *s)
{
    char cards[CT_NRANKS][128];
    pmix_byte_object_t bo[CT_NRANKS];
    batch_t b = {0};
    uint32_t u;

    for (uint32_t r = 0; r < CT_NRANKS; r++) {
        bo[r].bytes = cards[r];
        bo[r].size = ct_card(r, cards[r]);
    }
    /* local clients' commits (ranks on CT_HOST0) */
    for (uint32_t r = 0; r < CT_NRANKS; r += 2) {
        store_one(s, r, PMIX_GLOBAL, CT_KEY_CARD, &bo[r], PMIX_BYTE_OBJECT, PMIX_SUCCESS);
        store_one(s, r, PMIX_LOCAL, CT_KEY_LOCAL, ct_local_str(r), PMIX_STRING, PMIX_SUCCESS);
        u = CT_REMOTE_U32(r);
        store_one(s, r, PMIX_REMOTE, CT_KEY_REMOTE, &u, PMIX_UINT32, PMIX_SUCCESS);
    }
    u = CT_LATEST_OLD;
    store_one(s, 2, PMIX_GLOBAL, CT_KEY_LATEST, &u, PMIX_UINT32, PMIX_SUCCESS);
    u = CT_LATEST_NEW;
    store_one(s, 2, PMIX_LOCAL, CT_KEY_LATEST, &u, PMIX_UINT32, PMIX_SUCCESS);
    /* refused commits: a reserved key, PMIX_INTERNAL data */
    u = 1;
    store_one(s, 0, PMIX_GLOBAL, "pmix.ctest.reserved", &u, PMIX_UINT32, PMIX_ERR_BAD_PARAM);
    store_one(s, 0, PMIX_INTERNAL, "ctest.internal", &u, PMIX_UINT32, PMIX_ERR_BAD_PARAM);

    /* a fence's collected data from the remote ranks: one generation */
    uint32_t remote_u32[CT_NRANKS];
    for (uint32_t r = 1; r < CT_NRANKS; r += 2) {
        remote_u32[r] = CT_REMOTE_U32(r);
        batch_add(&b, r, PMIX_GLOBAL, CT_KEY_CARD, &bo[r], PMIX_BYTE_OBJECT, NULL);
        batch_add(&b, r, PMIX_LOCAL, CT_KEY_LOCAL, ct_local_str(r), PMIX_STRING, NULL);
        batch_add(&b, r, PMIX_REMOTE, CT_KEY_REMOTE, &remote_u32[r], PMIX_UINT32, NULL);
    }
    batch_add(&b, 5, PMIX_GLOBAL, CT_KEY_UNIQUE, CT_UNIQUE_STR, PMIX_STRING, NULL);
    call(rshm_server_store_fence(s, b.v, b.n), PMIX_SUCCESS, "rshm_server_store_fence (cards)");
    batch_free(&b);

    /* the typed values, posted by a remote rank */
    for (size_t i = 0; i < ct_ncases; i++) {
        batch_add(&b, CT_TYPED_POSTER, PMIX_GLOBAL, ct_cases[i].posted_key, NULL, PMIX_UNDEF,
                  &ct_cases[i]);
    }
    call(rshm_server_store_fence(s, b.v, b.n), PMIX_SUCCESS,
         "rshm_server_store_fence (every value type)");
    batch_free(&b);

    /* a batch with one reserved key: refused whole */
    u = 3;
    batch_add(&b, 1, PMIX_GLOBAL, CT_KEY_BADBATCH, &u, PMIX_UINT32, NULL);
    batch_add(&b, 1, PMIX_GLOBAL, "pmix.ctest.reserved", &u, PMIX_UINT32, NULL);
    call(rshm_server_store_fence(s, b.v, b.n), PMIX_ERR_BAD_PARAM,
         "rshm_server_store_fence with a reserved key");
    batch_free(&b);
    call(rshm_server_store_fence(s, NULL, 0), PMIX_SUCCESS, "rshm_server_store_fence (empty)");
    call(rshm_server_store_fence(s, NULL, 1), PMIX_ERR_BAD_PARAM,
         "rshm_server_store_fence (NULL items)");
}

/* ---- clients ------------------------------------------------------------------------------- */

static bool env_has(char **env, const char *entry)
{
    size_t n = 0;
    for (char **e = env; NULL != e && NULL != *e; e++) {
        n += 0 == strcmp(*e, entry);
    }
    return 1 == n; /* once: replaced, not appended twice */
}

static void run_client(rshm_server_t *s, const char *exe, uint32_t rank)
{
    extern char **environ;
    size_t n = 0;
    char **env;
    char entry[4200];
    pmix_proc_t p;
    pid_t pid;
    int status = 0;

    /* a malloc'ed copy of our environment, as PMIx_server_setup_fork receives */
    while (NULL != environ[n]) {
        n++;
    }
    env = calloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        env[i] = strdup(environ[i]);
    }
    PMIX_LOAD_PROCID(&p, CT_NSPACE, rank);
    call(rshm_server_setup_fork(s, &p, &env), PMIX_SUCCESS, "rshm_server_setup_fork");
    /* twice: the entries are replaced, not duplicated */
    call(rshm_server_setup_fork(s, &p, &env), PMIX_SUCCESS, "rshm_server_setup_fork (again)");
    snprintf(entry, sizeof(entry), "RSHM_STORE=%s", rshm_server_path(s));
    report(env_has(env, entry), "client env has %s", entry);
    report(env_has(env, "RSHM_NSPACE=" CT_NSPACE), "client env has RSHM_NSPACE=%s", CT_NSPACE);
    snprintf(entry, sizeof(entry), "RSHM_RANK=%u", rank);
    report(env_has(env, entry), "client env has %s", entry);

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (0 == pid) {
        char *argv[] = {(char *) exe, NULL};
        execve(exe, argv, env);
        perror("execve");
        _exit(127);
    }
    if (pid < 0 || pid != waitpid(pid, &status, 0)) {
        report(false, "fork/wait of the client of rank %u", rank);
    } else {
        report(WIFEXITED(status) && 0 == WEXITSTATUS(status),
               "client of rank %u exited with status %d", rank,
               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    for (char **e = env; NULL != *e; e++) {
        free(*e);
    }
    free(env);
}

int main(int argc, char **argv)
{
    const char *client, *tmpdir;
    rshm_server_t *s = NULL;
    ilist_t l = {0};
    char *path;
    struct stat st;

    if (argc < 2) {
        fprintf(stderr, "usage: server CLIENT_EXE [TMPDIR]\n");
        return 2;
    }
    alarm(300); /* never hang a test run */
    client = argv[1];
    tmpdir = argc > 2 ? argv[2] : (getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (0 != ct_init()) {
        return 2;
    }

    /* open */
    call(rshm_server_open(NULL, 0, NULL), PMIX_ERR_BAD_PARAM, "rshm_server_open(out NULL)");
    il_str(&l, PMIX_HOSTNAME, CT_HOST0);
    il_str(&l, RSHM_SERVER_INFO_DIR, tmpdir);
    if (!call(rshm_server_open(l.v, l.n, &s), PMIX_SUCCESS, "rshm_server_open")) {
        return 1;
    }
    il_free(&l);
    path = strdup(rshm_server_path(s));
    report(0 == stat(path, &st) && S_ISDIR(st.st_mode), "the store is a directory: %s", path);
    report(NULL == rshm_server_path(NULL), "rshm_server_path(NULL) is NULL");
    {
        char line[4096], prefix[4200], tiny[8];
        size_t n = rshm_server_describe(s, line, sizeof(line));
        snprintf(prefix, sizeof(prefix), "store %s (", path);
        report(n == strlen(line) && 0 == strncmp(line, prefix, strlen(prefix))
                   && NULL != strstr(line, "readable by uid - gid -"),
               "rshm_server_describe: %s", line);
        report(n == rshm_server_describe(s, tiny, sizeof(tiny)) && 7 == strlen(tiny),
               "rshm_server_describe truncates to its buffer and returns the full length");
        report(0 == rshm_server_describe(NULL, line, sizeof(line)),
               "rshm_server_describe(NULL) is 0");
    }

    /* a malformed registration: an app array without PMIX_APPNUM */
    {
        ilist_t bad = {0}, app = {0};
        il_u32(&app, PMIX_APP_SIZE, 2);
        il_array(&bad, PMIX_APP_INFO_ARRAY, &app);
        call(rshm_server_register_nspace(s, "ctest.bad", 1, bad.v, bad.n), PMIX_ERR_BAD_PARAM,
             "register_nspace of an app array without PMIX_APPNUM");
        il_free(&bad);
        call(rshm_server_register_nspace(s, NULL, 1, NULL, 0), PMIX_ERR_BAD_PARAM,
             "register_nspace(nspace NULL)");
        call(rshm_server_register_nspace(NULL, "x", 1, NULL, 0), PMIX_ERR_BAD_PARAM,
             "register_nspace(server NULL)");
    }

    /* the job */
    build_registration(&l);
    printf("[server] registration: %zu top-level infos, %zu typed values\n", l.n, ct_ncases);
    call(rshm_server_register_nspace(s, CT_NSPACE, 4, l.v, l.n), PMIX_SUCCESS,
         "rshm_server_register_nspace(" CT_NSPACE ")");
    il_free(&l);

    /* a namespace registered then deregistered */
    il_str(&l, PMIX_NODE_MAP, CT_HOST0);
    il_u32(&l, PMIX_JOB_SIZE, 1);
    call(rshm_server_register_nspace(s, CT_NSPACE_GONE, 1, l.v, l.n), PMIX_SUCCESS,
         "rshm_server_register_nspace(" CT_NSPACE_GONE ")");
    il_free(&l);
    call(rshm_server_deregister_nspace(s, CT_NSPACE_GONE), PMIX_SUCCESS,
         "rshm_server_deregister_nspace(" CT_NSPACE_GONE ")");

    /* resources: the local node (top level), another node (a node array) */
    {
        ilist_t node = {0};
        il_str(&l, CT_KEY_RES_LOCAL, CT_RES_LOCAL);
        il_str(&l, CT_KEY_NODE_STR, CT_RES_OVERRIDDEN);
        il_str(&node, PMIX_HOSTNAME, CT_HOST1);
        il_str(&node, CT_KEY_RES_REMOTE, CT_RES_REMOTE);
        il_array(&l, PMIX_NODE_INFO_ARRAY, &node);
        call(rshm_server_register_resources(s, l.v, l.n), PMIX_SUCCESS,
             "rshm_server_register_resources");
        il_free(&l);
    }

    post_data(s);

    /* the clients: two local ranks of different apps */
    run_client(s, client, CT_CLIENT_RANK_A);
    run_client(s, client, CT_CLIENT_RANK_B);

    /* close: every file removed */
    call(rshm_server_close(s), PMIX_SUCCESS, "rshm_server_close");
    errno = 0;
    report(0 != stat(path, &st) && ENOENT == errno, "the store directory is gone after close");
    free(path);
    call(rshm_server_close(NULL), PMIX_ERR_BAD_PARAM, "rshm_server_close(NULL)");

    printf("[server] summary: %u checks, %u passed, %u failed\n", ct_npass + ct_nfail, ct_npass,
           ct_nfail);
    return 0 == ct_nfail ? 0 : 1;
}
