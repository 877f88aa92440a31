/*
 * pmix-host - a minimal single-node PMIx server host over OpenPMIx.
 *
 * Job mode:
 *   pmix-host --job JOBFILE [--clients N] --client-cmd "prog args..."
 *             [--tmpdir DIR] [--minimal] [--timeout SEC] [--verbose]
 *             [--dump-registration FILE]
 *   Initialises the PMIx server library, registers ONE namespace built
 *   from JOBFILE (format: README.md), registers and forks a client for
 *   each rank on the local node (the first N of them if --clients is
 *   given; N=0 only registers and deregisters, e.g. for timing), waits
 *   for them, deregisters and finalizes. Exit status 0 iff every client
 *   exited 0. "%r" in the client command is replaced by the rank; the
 *   client also gets RSHM_HOST_RANK=<rank> in its environment.
 *   Prints "pmix-host: register_nspace_us=<n>" and, at the end,
 *   "pmix-host: direct_modex_calls=<n>" to stderr (--verbose also logs
 *   every direct-modex request). --minimal = "register minimal".
 *   --dump-registration FILE writes the exact info array passed to
 *   PMIx_server_register_nspace (format: README.md, "Registration dump").
 *
 * Regex mode:
 *   pmix-host [--regex "node001,node002"] [--ppn "0,1;2,3"] [--tmpdir DIR]
 *   Prints what PMIx_generate_regex / PMIx_generate_ppn return, as
 *     regex <input> => <output>
 *     ppn <input> => <output>
 *   with both sides as C-escaped quoted strings (the library must be
 *   initialised first: before PMIx_server_init they return nothing).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

#include "common.h"

extern char **environ;

/* ------------------------------------------------------------------ */
/* small utilities                                                     */
/* ------------------------------------------------------------------ */

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pmix-host: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n);
    if (!p && n) {
        die("out of memory");
    }
    return p;
}

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Blocking wait for a PMIx op callback. */
typedef struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    bool done;
    pmix_status_t status;
} waiter_t;

#define WAITER_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, PMIX_SUCCESS}

static void op_cb(pmix_status_t status, void *cbdata)
{
    waiter_t *w = cbdata;
    pthread_mutex_lock(&w->m);
    w->status = status;
    w->done = true;
    pthread_cond_signal(&w->c);
    pthread_mutex_unlock(&w->m);
}

static pmix_status_t wait_op(waiter_t *w)
{
    pthread_mutex_lock(&w->m);
    while (!w->done) {
        pthread_cond_wait(&w->c, &w->m);
    }
    w->done = false;
    pthread_mutex_unlock(&w->m);
    return w->status;
}

/* ------------------------------------------------------------------ */
/* growable pmix_info_t lists                                          */
/* ------------------------------------------------------------------ */

typedef struct {
    pmix_info_t *v;
    size_t n, cap;
} infolist_t;

/* Slot for key: with replace, an existing entry with that key is
 * reused ("set" semantics, so job-file keys override derived ones);
 * otherwise a new entry is appended. */
static pmix_info_t *il_slot_ex(infolist_t *l, const char *key, bool replace)
{
    for (size_t i = 0; replace && i < l->n; i++) {
        if (PMIX_CHECK_KEY(&l->v[i], key)) {
            PMIX_INFO_DESTRUCT(&l->v[i]);
            PMIX_INFO_CONSTRUCT(&l->v[i]);
            return &l->v[i];
        }
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = xrealloc(l->v, l->cap * sizeof(pmix_info_t));
    }
    PMIX_INFO_CONSTRUCT(&l->v[l->n]);
    return &l->v[l->n++];
}

static pmix_info_t *il_slot(infolist_t *l, const char *key)
{
    return il_slot_ex(l, key, true);
}

/* Add (or replace) key with a copy of *data of the given type. */
static void il_add(infolist_t *l, const char *key, const void *data, pmix_data_type_t type)
{
    pmix_info_t *i = il_slot(l, key);
    if (PMIX_SUCCESS != PMIx_Info_load(i, key, data, type)) {
        die("PMIx_Info_load(%s) failed", key);
    }
}

static void il_add_value(infolist_t *l, const char *key, const pmix_value_t *v)
{
    pmix_info_t *i = il_slot(l, key);
    PMIX_LOAD_KEY(i->key, key);
    PMIx_Value_xfer(&i->value, v);
}

static void il_add_u32(infolist_t *l, const char *key, uint32_t x) { il_add(l, key, &x, PMIX_UINT32); }
static void il_add_u16(infolist_t *l, const char *key, uint16_t x) { il_add(l, key, &x, PMIX_UINT16); }
static void il_add_rank(infolist_t *l, const char *key, pmix_rank_t x) { il_add(l, key, &x, PMIX_PROC_RANK); }
static void il_add_str(infolist_t *l, const char *key, const char *s) { il_add(l, key, s, PMIX_STRING); }

/* Append key = (data array of the infos in sub); sub's storage moves.
 * Always appends: there is one PMIX_xxx_INFO_ARRAY per app/node/proc. */
static void il_add_array(infolist_t *l, const char *key, infolist_t *sub)
{
    pmix_info_t *i = il_slot_ex(l, key, false);
    pmix_data_array_t *d = xrealloc(NULL, sizeof(*d));
    d->type = PMIX_INFO;
    d->size = sub->n;
    d->array = sub->v;
    PMIX_LOAD_KEY(i->key, key);
    i->value.type = PMIX_DATA_ARRAY;
    i->value.data.darray = d;
    sub->v = NULL;
    sub->n = sub->cap = 0;
}

/* ------------------------------------------------------------------ */
/* job description                                                     */
/* ------------------------------------------------------------------ */

typedef struct {
    char *key; /* resolved key string */
    pmix_value_t val;
} kv_t;

typedef struct {
    kv_t *v;
    size_t n;
} kvlist_t;

typedef struct {
    char *name;
    pmix_rank_t *ranks; /* as listed; we sort them */
    int nranks;
    kvlist_t extra;
} node_t;

typedef struct {
    uint32_t num;
    pmix_rank_t *ranks;
    int nranks;
    kvlist_t extra;
} app_t;

typedef struct {
    int node;      /* index into job.nodes */
    int app;       /* index into job.apps */
    uint16_t lrank; /* local rank == node rank (single job) */
    uint32_t apprank;
    kvlist_t extra;
} proc_t;

static struct {
    char *nspace;
    node_t *nodes;
    int nnodes;
    app_t *apps;
    int napps;
    proc_t *procs; /* indexed by rank */
    uint32_t size;
    int local;     /* index of the local node */
    char *local_name;
    bool minimal;
    uint32_t sessionid;
    kvlist_t job_extra, session_extra;
} job;

static void kv_push(kvlist_t *l, const char *name, const char *type, const char *text, const char *where)
{
    pmix_data_type_t t = type_by_name(type);
    if (PMIX_UNDEF == t) {
        die("%s: unknown type '%s'", where, type);
    }
    l->v = xrealloc(l->v, (l->n + 1) * sizeof(kv_t));
    kv_t *kv = &l->v[l->n++];
    kv->key = strdup(resolve_key(name));
    if (parse_value(t, text, &kv->val)) {
        die("%s: bad value", where);
    }
}

static void il_add_extra(infolist_t *l, const kvlist_t *x)
{
    for (size_t i = 0; i < x->n; i++) {
        il_add_value(l, x->v[i].key, &x->v[i].val);
    }
}

static int cmp_rank(const void *a, const void *b)
{
    pmix_rank_t x = *(const pmix_rank_t *) a, y = *(const pmix_rank_t *) b;
    return x < y ? -1 : x > y;
}

static int find_node(const char *name)
{
    for (int i = 0; i < job.nnodes; i++) {
        if (!strcmp(job.nodes[i].name, name)) {
            return i;
        }
    }
    return -1;
}

static int find_app(uint32_t num)
{
    for (int i = 0; i < job.napps; i++) {
        if (job.apps[i].num == num) {
            return i;
        }
    }
    return -1;
}

/* Join tokens tok[from..n) with single spaces (the rest of a line). */
static char *join_rest(char **tok, int from, int n)
{
    size_t len = 1;
    for (int i = from; i < n; i++) {
        len += strlen(tok[i]) + 1;
    }
    char *s = xrealloc(NULL, len);
    s[0] = '\0';
    for (int i = from; i < n; i++) {
        if (i > from) {
            strcat(s, " ");
        }
        strcat(s, tok[i]);
    }
    return s;
}

/* Per-proc key lines are kept until the job size is known. */
typedef struct {
    pmix_rank_t rank;
    char *key, *type, *value, *where;
} pending_t;

static void load_job(const char *path)
{
    FILE *f = fopen(path, "r");
    char *line = NULL, where[512];
    size_t cap = 0;
    int lineno = 0;
    pending_t *pend = NULL;
    size_t npend = 0;
    struct {
        char *node, *key, *type, *value, *where;
    } *npend_nodes = NULL;
    size_t nnodekeys = 0;
    struct {
        uint32_t app;
        char *key, *type, *value, *where;
    } *appkeys = NULL;
    size_t nappkeys = 0;

    if (!f) {
        die("cannot open job file %s: %s", path, strerror(errno));
    }
    job.sessionid = 1;
    while (getline(&line, &cap, f) > 0) {
        char *tok[64], *save = NULL;
        int n = 0;
        lineno++;
        snprintf(where, sizeof(where), "%s:%d", path, lineno);
        for (char *t = strtok_r(line, " \t\r\n", &save); t && n < 64; t = strtok_r(NULL, " \t\r\n", &save)) {
            if ('#' == t[0]) {
                break; /* comment to end of line */
            }
            tok[n++] = t;
        }
        if (0 == n) {
            continue;
        }
        const char *d = tok[0];
        if (!strcmp(d, "nspace") && 2 == n) {
            job.nspace = strdup(tok[1]);
        } else if (!strcmp(d, "local") && 2 == n) {
            job.local_name = strdup(tok[1]);
        } else if (!strcmp(d, "register") && 2 == n) {
            if (!strcmp(tok[1], "minimal")) {
                job.minimal = true;
            } else if (!strcmp(tok[1], "full")) {
                job.minimal = false;
            } else {
                die("%s: register full|minimal", where);
            }
        } else if (!strcmp(d, "sessionid") && 2 == n) {
            job.sessionid = (uint32_t) strtoul(tok[1], NULL, 10);
        } else if (!strcmp(d, "node") && 3 == n) {
            job.nodes = xrealloc(job.nodes, (job.nnodes + 1) * sizeof(node_t));
            node_t *nd = &job.nodes[job.nnodes++];
            memset(nd, 0, sizeof(*nd));
            nd->name = strdup(tok[1]);
            nd->nranks = parse_ranklist(tok[2], &nd->ranks);
            if (nd->nranks <= 0) {
                die("%s: bad rank list '%s'", where, tok[2]);
            }
            qsort(nd->ranks, nd->nranks, sizeof(pmix_rank_t), cmp_rank);
        } else if (!strcmp(d, "app") && 3 == n) {
            job.apps = xrealloc(job.apps, (job.napps + 1) * sizeof(app_t));
            app_t *a = &job.apps[job.napps++];
            memset(a, 0, sizeof(*a));
            a->num = (uint32_t) strtoul(tok[1], NULL, 10);
            a->nranks = parse_ranklist(tok[2], &a->ranks);
            if (a->nranks <= 0) {
                die("%s: bad rank list '%s'", where, tok[2]);
            }
            qsort(a->ranks, a->nranks, sizeof(pmix_rank_t), cmp_rank);
        } else if (!strcmp(d, "job") && n >= 4) {
            char *v = join_rest(tok, 3, n);
            kv_push(&job.job_extra, tok[1], tok[2], v, where);
            free(v);
        } else if (!strcmp(d, "session") && n >= 4) {
            char *v = join_rest(tok, 3, n);
            kv_push(&job.session_extra, tok[1], tok[2], v, where);
            free(v);
        } else if (!strcmp(d, "appkey") && n >= 5) {
            appkeys = xrealloc(appkeys, (nappkeys + 1) * sizeof(*appkeys));
            appkeys[nappkeys].app = (uint32_t) strtoul(tok[1], NULL, 10);
            appkeys[nappkeys].key = strdup(tok[2]);
            appkeys[nappkeys].type = strdup(tok[3]);
            appkeys[nappkeys].value = join_rest(tok, 4, n);
            appkeys[nappkeys++].where = strdup(where);
        } else if (!strcmp(d, "nodekey") && n >= 5) {
            npend_nodes = xrealloc(npend_nodes, (nnodekeys + 1) * sizeof(*npend_nodes));
            npend_nodes[nnodekeys].node = strdup(tok[1]);
            npend_nodes[nnodekeys].key = strdup(tok[2]);
            npend_nodes[nnodekeys].type = strdup(tok[3]);
            npend_nodes[nnodekeys].value = join_rest(tok, 4, n);
            npend_nodes[nnodekeys++].where = strdup(where);
        } else if (!strcmp(d, "prockey") && n >= 5) {
            pend = xrealloc(pend, (npend + 1) * sizeof(*pend));
            pend[npend].rank = (pmix_rank_t) strtoul(tok[1], NULL, 10);
            pend[npend].key = strdup(tok[2]);
            pend[npend].type = strdup(tok[3]);
            pend[npend].value = join_rest(tok, 4, n);
            pend[npend++].where = strdup(where);
        } else {
            die("%s: cannot parse '%s' line", where, d);
        }
    }
    free(line);
    fclose(f);

    /* ---- validate and derive ---- */
    if (!job.nspace) {
        die("%s: no nspace line", path);
    }
    if (0 == job.nnodes) {
        die("%s: no node lines", path);
    }
    for (int i = 0; i < job.nnodes; i++) {
        for (int j = 0; j < job.nodes[i].nranks; j++) {
            if (job.nodes[i].ranks[j] + 1 > job.size) {
                job.size = job.nodes[i].ranks[j] + 1;
            }
        }
    }
    job.procs = calloc(job.size, sizeof(proc_t));
    for (uint32_t r = 0; r < job.size; r++) {
        job.procs[r].node = -1;
        job.procs[r].app = -1;
    }
    for (int i = 0; i < job.nnodes; i++) {
        for (int j = 0; j < job.nodes[i].nranks; j++) {
            proc_t *p = &job.procs[job.nodes[i].ranks[j]];
            if (p->node >= 0) {
                die("rank %u is on two nodes", job.nodes[i].ranks[j]);
            }
            p->node = i;
            p->lrank = (uint16_t) j; /* ranks are sorted */
        }
    }
    if (0 == job.napps) { /* default: one app 0 with every rank */
        job.apps = calloc(1, sizeof(app_t));
        job.napps = 1;
        job.apps[0].ranks = malloc(job.size * sizeof(pmix_rank_t));
        for (uint32_t r = 0; r < job.size; r++) {
            job.apps[0].ranks[r] = r;
        }
        job.apps[0].nranks = (int) job.size;
    }
    for (int a = 0; a < job.napps; a++) {
        for (int j = 0; j < job.apps[a].nranks; j++) {
            pmix_rank_t r = job.apps[a].ranks[j];
            if (r >= job.size || job.procs[r].app >= 0) {
                die("app %u: rank %u unknown or in two apps", job.apps[a].num, r);
            }
            job.procs[r].app = a;
            job.procs[r].apprank = (uint32_t) j;
        }
    }
    for (uint32_t r = 0; r < job.size; r++) {
        if (job.procs[r].node < 0 || job.procs[r].app < 0) {
            die("rank %u has no node or no app (ranks must be 0..%u)", r, job.size - 1);
        }
    }
    job.local = 0;
    if (job.local_name && (job.local = find_node(job.local_name)) < 0) {
        die("local node %s has no node line", job.local_name);
    }
    for (size_t i = 0; i < nappkeys; i++) {
        int a = find_app(appkeys[i].app);
        if (a < 0) {
            die("%s: no app %u", appkeys[i].where, appkeys[i].app);
        }
        kv_push(&job.apps[a].extra, appkeys[i].key, appkeys[i].type, appkeys[i].value, appkeys[i].where);
    }
    for (size_t i = 0; i < nnodekeys; i++) {
        int nd = find_node(npend_nodes[i].node);
        if (nd < 0) {
            die("%s: no node %s", npend_nodes[i].where, npend_nodes[i].node);
        }
        kv_push(&job.nodes[nd].extra, npend_nodes[i].key, npend_nodes[i].type, npend_nodes[i].value,
                npend_nodes[i].where);
    }
    for (size_t i = 0; i < npend; i++) {
        if (pend[i].rank >= job.size) {
            die("%s: no rank %u", pend[i].where, pend[i].rank);
        }
        kv_push(&job.procs[pend[i].rank].extra, pend[i].key, pend[i].type, pend[i].value, pend[i].where);
    }
    /* the pending-line copies are deliberately not freed: tiny, one-shot */
}

/* "0,1,2" from a sorted rank array */
static char *rank_csv(const pmix_rank_t *r, int n)
{
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);
    for (int i = 0; i < n; i++) {
        fprintf(f, "%s%u", i ? "," : "", r[i]);
    }
    fclose(f);
    return s;
}

/* Build the PMIx_server_register_nspace info array following
 * "Assembling the registration information" (PMIx v5 std 17.2.3.2). */
static void build_registration(infolist_t *top, const char *client_cmd)
{
    char *s, *regex = NULL, *ppn = NULL, cwd[4096];
    FILE *f;
    size_t len;
    pmix_status_t rc;

    /* node map: node names in node order */
    f = open_memstream(&s, &len);
    for (int i = 0; i < job.nnodes; i++) {
        fprintf(f, "%s%s", i ? "," : "", job.nodes[i].name);
    }
    fclose(f);
    if (PMIX_SUCCESS != (rc = PMIx_generate_regex(s, &regex)) || !regex) {
        die("PMIx_generate_regex failed: %s", PMIx_Error_string(rc));
    }
    free(s);
    /* proc map: per node (same order) the ranks, ';'-separated */
    f = open_memstream(&s, &len);
    for (int i = 0; i < job.nnodes; i++) {
        char *csv = rank_csv(job.nodes[i].ranks, job.nodes[i].nranks);
        fprintf(f, "%s%s", i ? ";" : "", csv);
        free(csv);
    }
    fclose(f);
    if (PMIX_SUCCESS != (rc = PMIx_generate_ppn(s, &ppn)) || !ppn) {
        die("PMIx_generate_ppn failed: %s", PMIx_Error_string(rc));
    }
    free(s);

    /* session realm */
    if (job.session_extra.n) {
        infolist_t ss = {0};
        il_add_u32(&ss, PMIX_SESSION_ID, job.sessionid);
        il_add_extra(&ss, &job.session_extra);
        il_add_array(top, PMIX_SESSION_INFO_ARRAY, &ss);
    }
    /* job realm */
    if (!job.minimal) {
        il_add_u32(top, PMIX_UNIV_SIZE, job.size);
        il_add_str(top, PMIX_NSPACE, job.nspace);
        il_add_str(top, PMIX_JOBID, job.nspace);
        il_add_u32(top, PMIX_JOB_SIZE, job.size);
        il_add_u32(top, PMIX_MAX_PROCS, job.size);
        il_add_u32(top, PMIX_NUM_NODES, (uint32_t) job.nnodes);
        il_add_u32(top, PMIX_JOB_NUM_APPS, (uint32_t) job.napps);
    }
    il_add(top, PMIX_NODE_MAP, regex, PMIX_REGEX);
    il_add(top, PMIX_PROC_MAP, ppn, PMIX_REGEX);
    free(regex);
    free(ppn);
    il_add_extra(top, &job.job_extra);

    /* application realm: one array per app, APPNUM first */
    if (NULL == getcwd(cwd, sizeof(cwd))) {
        strcpy(cwd, "/");
    }
    for (int a = 0; a < job.napps; a++) {
        app_t *ap = &job.apps[a];
        infolist_t al = {0};
        if (job.minimal && 0 == ap->extra.n) {
            continue;
        }
        il_add_u32(&al, PMIX_APPNUM, ap->num);
        if (!job.minimal) {
            il_add_u32(&al, PMIX_APP_SIZE, (uint32_t) ap->nranks);
            il_add_rank(&al, PMIX_APPLDR, ap->ranks[0]);
            il_add_u32(&al, PMIX_MAX_PROCS, (uint32_t) ap->nranks);
            il_add_str(&al, PMIX_WDIR, cwd);
            il_add_str(&al, PMIX_APP_ARGV, client_cmd ? client_cmd : "");
        }
        il_add_extra(&al, &ap->extra);
        il_add_array(top, PMIX_APP_INFO_ARRAY, &al);
    }

    /* node realm: one array per node */
    for (int i = 0; i < job.nnodes; i++) {
        node_t *nd = &job.nodes[i];
        infolist_t nl = {0};
        if (job.minimal && 0 == nd->extra.n) {
            continue;
        }
        il_add_u32(&nl, PMIX_NODEID, (uint32_t) i);
        il_add_str(&nl, PMIX_HOSTNAME, nd->name);
        if (!job.minimal) {
            char *peers = rank_csv(nd->ranks, nd->nranks);
            il_add_u32(&nl, PMIX_LOCAL_SIZE, (uint32_t) nd->nranks);
            il_add_u32(&nl, PMIX_NODE_SIZE, (uint32_t) nd->nranks);
            il_add_rank(&nl, PMIX_LOCALLDR, nd->ranks[0]);
            il_add_str(&nl, PMIX_LOCAL_PEERS, peers);
            free(peers);
        }
        il_add_extra(&nl, &nd->extra);
        il_add_array(top, PMIX_NODE_INFO_ARRAY, &nl);
    }

    /* process realm: one array per rank, RANK first */
    for (uint32_t r = 0; r < job.size; r++) {
        proc_t *p = &job.procs[r];
        infolist_t pl = {0};
        if (job.minimal && 0 == p->extra.n) {
            continue;
        }
        il_add_rank(&pl, PMIX_RANK, r);
        if (!job.minimal) {
            il_add_u32(&pl, PMIX_APPNUM, job.apps[p->app].num);
            il_add_rank(&pl, PMIX_APP_RANK, p->apprank);
            il_add_rank(&pl, PMIX_GLOBAL_RANK, r);
            il_add_u16(&pl, PMIX_LOCAL_RANK, p->lrank);
            il_add_u16(&pl, PMIX_NODE_RANK, p->lrank);
            il_add_u32(&pl, PMIX_NODEID, (uint32_t) p->node);
            il_add_str(&pl, PMIX_HOSTNAME, job.nodes[p->node].name);
        }
        il_add_extra(&pl, &p->extra);
        il_add_array(top, PMIX_PROC_INFO_ARRAY, &pl);
    }
}

/* ------------------------------------------------------------------ */
/* --dump-registration                                                 */
/* ------------------------------------------------------------------ */

/* One info (and, for a data array of PMIX_INFO, its children) per line:
 *   <indent><depth> <key> <PMIX_TYPE_NAME> <value>
 * indent = 2 blanks per depth. Values are the canonical text (fmt_value)
 * except where that would lose information:
 *   PMIX_REGEX / PMIX_STRING: every byte, quoted (a regex keeps its NUL);
 *   PMIX_STATUS: the decimal code;
 *   data array of PMIX_INFO: "PMIX_INFO <n>", the n elements follow
 *   at depth+1; other data arrays: "<ELEM_TYPE> <n> [a,b,...]". */
static void dump_infos(FILE *f, const pmix_info_t *v, size_t n, int depth)
{
    for (size_t i = 0; i < n; i++) {
        const pmix_value_t *val = &v[i].value;
        fprintf(f, "%*s%d %s %s ", 2 * depth, "", depth, v[i].key, PMIx_Data_type_string(val->type));
        switch (val->type) {
        case PMIX_REGEX:
            fmt_bytes_quoted(f, val->data.bo.bytes, val->data.bo.size);
            fputc('\n', f);
            break;
        case PMIX_STATUS:
            fprintf(f, "%d\n", (int) val->data.status);
            break;
        case PMIX_DATA_ARRAY: {
            const pmix_data_array_t *d = val->data.darray;
            if (NULL == d) {
                fputs("PMIX_UNDEF 0\n", f);
            } else if (PMIX_INFO == d->type) {
                fprintf(f, "PMIX_INFO %zu\n", d->size);
                dump_infos(f, (const pmix_info_t *) d->array, d->size, depth + 1);
            } else {
                fprintf(f, "%s %zu ", PMIx_Data_type_string(d->type), d->size);
                fmt_value(f, val);
                fputc('\n', f);
            }
            break;
        }
        default:
            fmt_value(f, val);
            fputc('\n', f);
            break;
        }
    }
}

/* The header lines, then every top-level info (see README.md,
 * "Registration dump"). */
static void dump_registration(const char *path, const infolist_t *reg, uint32_t nlocalprocs)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        die("cannot write %s: %s", path, strerror(errno));
    }
    fprintf(f, "# pmix-host registration dump v1\n");
    fprintf(f, "nspace %s\n", job.nspace);
    fprintf(f, "local %s\n", job.nodes[job.local].name);
    fprintf(f, "nlocalprocs %u\n", nlocalprocs);
    fprintf(f, "ninfo %zu\n", reg->n);
    dump_infos(f, reg->v, reg->n, 0);
    if (fclose(f)) {
        die("writing %s: %s", path, strerror(errno));
    }
}

/* ------------------------------------------------------------------ */
/* server module                                                       */
/* ------------------------------------------------------------------ */

static pid_t *children;
static int nchildren;
static volatile sig_atomic_t aborted;

static pmix_status_t client_connected(const pmix_proc_t *proc, void *obj, pmix_op_cbfunc_t cbfunc,
                                      void *cbdata)
{
    (void) proc;
    (void) obj;
    if (cbfunc) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

static pmix_status_t client_finalized(const pmix_proc_t *proc, void *obj, pmix_op_cbfunc_t cbfunc,
                                      void *cbdata)
{
    (void) proc;
    (void) obj;
    if (cbfunc) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

/* A client called PMIx_Abort: report it and kill all clients. */
static pmix_status_t abort_fn(const pmix_proc_t *proc, void *obj, int status, const char msg[],
                              pmix_proc_t procs[], size_t nprocs, pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    (void) obj;
    (void) procs;
    (void) nprocs;
    fprintf(stderr, "pmix-host: %s:%u called PMIx_Abort(%d, \"%s\")\n", proc->nspace, proc->rank, status,
            msg ? msg : "");
    aborted = 1;
    for (int i = 0; i < nchildren; i++) {
        if (children[i] > 0) {
            kill(children[i], SIGKILL);
        }
    }
    if (cbfunc) {
        cbfunc(PMIX_SUCCESS, cbdata);
    }
    return PMIX_SUCCESS;
}

static void release_copy(void *cbdata)
{
    free(cbdata);
}

/* Single node: every participant is local, so the collective is
 * complete as soon as the server library calls us. Hand the local
 * contribution straight back - that is the whole job's data, which is
 * what makes PMIX_COLLECT_DATA work. The data is copied because the
 * library may release its buffer when we return. */
static pmix_status_t fence_nb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                              size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc,
                              void *cbdata)
{
    (void) procs;
    (void) nprocs;
    (void) info;
    (void) ninfo;
    char *copy = NULL;
    if (ndata) {
        copy = malloc(ndata);
        memcpy(copy, data, ndata);
    }
    if (cbfunc) {
        cbfunc(PMIX_SUCCESS, copy, ndata, cbdata, release_copy, copy);
    } else {
        free(copy);
    }
    return PMIX_SUCCESS;
}

/* No other nodes exist, so there is nobody to ask: refuse. The
 * library hands PMIX_ERR_NOT_SUPPORTED back to the client's PMIx_Get,
 * so a NOT-SUPPORTED answer means "OpenPMIx asked the host". Calls are
 * counted (and with --verbose logged) so tests can see them. */
static volatile int dmodex_calls;
static bool verbose;

static pmix_status_t direct_modex(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
                                  pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    (void) cbfunc;
    (void) cbdata;
    __atomic_add_fetch(&dmodex_calls, 1, __ATOMIC_RELAXED);
    if (verbose) {
        fprintf(stderr, "pmix-host: direct_modex %s:", proc->nspace);
        fmt_rank(stderr, proc->rank);
        for (size_t i = 0; i < ninfo; i++) {
            fprintf(stderr, " %s=", info[i].key);
            fmt_value(stderr, &info[i].value);
        }
        fputc('\n', stderr);
    }
    return PMIX_ERR_NOT_SUPPORTED;
}

static pmix_server_module_t module = {
    .client_connected = client_connected,
    .client_finalized = client_finalized,
    .abort = abort_fn,
    .fence_nb = fence_nb,
    .direct_modex = direct_modex,
};

/* ------------------------------------------------------------------ */
/* main                                                                */
/* ------------------------------------------------------------------ */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void) sb;
    (void) flag;
    (void) ftw;
    remove(p);
    return 0;
}

static void server_init(const char *tmpdir, const char *hostname, uint32_t nodeid)
{
    pmix_info_t info[4];
    size_t n = 0;
    pmix_status_t rc;

    PMIX_INFO_LOAD(&info[n], PMIX_SERVER_TMPDIR, tmpdir, PMIX_STRING);
    n++;
    PMIX_INFO_LOAD(&info[n], PMIX_SYSTEM_TMPDIR, tmpdir, PMIX_STRING);
    n++;
    if (hostname) {
        /* make the library agree with the job file about who we are */
        PMIX_INFO_LOAD(&info[n], PMIX_HOSTNAME, hostname, PMIX_STRING);
        n++;
        PMIX_INFO_LOAD(&info[n], PMIX_NODEID, &nodeid, PMIX_UINT32);
        n++;
    }
    if (PMIX_SUCCESS != (rc = PMIx_server_init(&module, info, n))) {
        die("PMIx_server_init failed: %s", PMIx_Error_string(rc));
    }
    for (size_t i = 0; i < n; i++) {
        PMIX_INFO_DESTRUCT(&info[i]);
    }
}

/* Print a generated regex; the zlib "blob" form embeds NULs:
 *   "blob:\0component=zlib:\0size=<N>:\0<N bytes>" */
static void print_regex(const char *what, const char *input, const char *out)
{
    size_t len;
    printf("%s ", what);
    fmt_bytes_quoted(stdout, input, strlen(input));
    printf(" => ");
    if (!out) {
        printf("NULL\n");
        return;
    }
    len = strlen(out);
    if (0 == strncmp(out, "blob:", 5)) {
        const char *c = out + len + 1;                  /* "component=zlib:" */
        const char *sz = c + strlen(c) + 1;             /* "size=N:" */
        size_t n = strtoul(sz + 5, NULL, 10);
        len = (size_t) (sz + strlen(sz) + 1 - out) + n; /* whole blob */
    }
    fmt_bytes_quoted(stdout, out, len);
    printf("\n");
}

static void usage(void)
{
    fprintf(stderr, "usage: pmix-host --job JOBFILE --client-cmd \"prog args\" [--clients N]\n"
                    "                 [--tmpdir DIR] [--minimal] [--timeout SEC] [--verbose]\n"
                    "                 [--dump-registration FILE] [--rshm LIBRSHM_SERVER.so]\n"
                    "       pmix-host [--regex NODELIST] [--ppn PPNLIST] [--tmpdir DIR]\n");
    exit(2);
}

static char **split_ws(const char *s, int *n)
{
    char *copy = strdup(s), *save = NULL;
    char **v = NULL;
    *n = 0;
    for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        v = xrealloc(v, (*n + 2) * sizeof(char *));
        v[(*n)++] = strdup(t);
    }
    if (v) {
        v[*n] = NULL;
    }
    free(copy);
    return v;
}

/* argv copy with "%r" replaced by the rank */
static char **subst_rank(char **argv, int argc, pmix_rank_t r)
{
    char **v = calloc(argc + 1, sizeof(char *));
    for (int i = 0; i < argc; i++) {
        char *buf;
        size_t len;
        FILE *f = open_memstream(&buf, &len);
        for (const char *p = argv[i]; *p; p++) {
            if ('%' == p[0] && 'r' == p[1]) {
                fprintf(f, "%u", r);
                p++;
            } else {
                fputc(*p, f);
            }
        }
        fclose(f);
        v[i] = buf;
    }
    return v;
}

/* Set NAME=VAL in a malloc'd NULL-terminated env array. */
static void env_set(char ***envp, const char *name, const char *val)
{
    char **env = *envp, *entry;
    size_t nl = strlen(name), n = 0;
    if (0 > asprintf(&entry, "%s=%s", name, val)) {
        die("out of memory");
    }
    for (; env && env[n]; n++) {
        if (!strncmp(env[n], name, nl) && '=' == env[n][nl]) {
            free(env[n]);
            env[n] = entry;
            return;
        }
    }
    env = xrealloc(env, (n + 2) * sizeof(char *));
    env[n] = entry;
    env[n + 1] = NULL;
    *envp = env;
}


/* ---------------- rshm server-shim, loaded with --rshm LIB ----------------
 * The host registers the same array with rshm beside OpenPMIx and adds what a client needs
 * to attach to its environment. Loaded with dlopen so this tool builds without Rust; the
 * signatures are those of server-shim/include/rshm_server.h. */
typedef struct rshm_server_t rshm_server_t;
static struct {
    rshm_server_t *h;
    pmix_status_t (*open)(const pmix_info_t *, size_t, rshm_server_t **);
    pmix_status_t (*close)(rshm_server_t *);
    pmix_status_t (*reg)(rshm_server_t *, const char *, int, const pmix_info_t *, size_t);
    pmix_status_t (*dereg)(rshm_server_t *, const char *);
    pmix_status_t (*fork)(rshm_server_t *, const pmix_proc_t *, char ***);
    size_t (*last_error)(char *, size_t);
} rshm;

static void *rshm_sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        die("--rshm: %s: %s", name, dlerror());
    }
    return p;
}

static void rshm_check(pmix_status_t rc, const char *what)
{
    if (PMIX_SUCCESS != rc) {
        char msg[512] = "";
        rshm.last_error(msg, sizeof(msg));
        die("rshm %s: %s (%s)", what, PMIx_Error_string(rc), msg);
    }
}

static void rshm_load(const char *path, const char *tmpdir, const char *hostname)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        die("--rshm %s: %s", path, dlerror());
    }
    /* POSIX: a data pointer from dlsym converts to a function pointer through memcpy. */
    void *p;
    p = rshm_sym(lib, "rshm_server_open");           memcpy(&rshm.open, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_close");          memcpy(&rshm.close, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_register_nspace"); memcpy(&rshm.reg, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_deregister_nspace"); memcpy(&rshm.dereg, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_setup_fork");     memcpy(&rshm.fork, &p, sizeof(p));
    p = rshm_sym(lib, "rshm_server_last_error");     memcpy(&rshm.last_error, &p, sizeof(p));
    pmix_info_t info[2];
    PMIX_INFO_LOAD(&info[0], PMIX_SERVER_TMPDIR, tmpdir, PMIX_STRING);
    PMIX_INFO_LOAD(&info[1], PMIX_HOSTNAME, hostname, PMIX_STRING);
    rshm_check(rshm.open(info, 2, &rshm.h), "open");
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
}

int main(int argc, char **argv)
{
    const char *jobfile = NULL, *client_cmd = NULL, *tmpdir = NULL, *regex_in = NULL, *ppn_in = NULL;
    const char *dump_path = NULL, *rshm_lib = NULL;
    int nclients = -1, timeout = 60, failures = 0;
    bool minimal = false, own_tmpdir = false;
    char tmpl[] = "/tmp/pmix-host.XXXXXX";
    pmix_status_t rc;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--minimal")) {
            minimal = true;
            continue;
        }
        if (!strcmp(a, "--verbose")) {
            verbose = true;
            continue;
        }
        if (i + 1 >= argc) {
            usage();
        }
        if (!strcmp(a, "--job")) {
            jobfile = argv[++i];
        } else if (!strcmp(a, "--clients")) {
            nclients = atoi(argv[++i]);
        } else if (!strcmp(a, "--client-cmd")) {
            client_cmd = argv[++i];
        } else if (!strcmp(a, "--tmpdir")) {
            tmpdir = argv[++i];
        } else if (!strcmp(a, "--timeout")) {
            timeout = atoi(argv[++i]);
        } else if (!strcmp(a, "--rshm")) {
            rshm_lib = argv[++i];
        } else if (!strcmp(a, "--dump-registration")) {
            dump_path = argv[++i];
        } else if (!strcmp(a, "--regex")) {
            regex_in = argv[++i];
        } else if (!strcmp(a, "--ppn")) {
            ppn_in = argv[++i];
        } else {
            usage();
        }
    }
    if (!jobfile && !regex_in && !ppn_in) {
        usage();
    }
    if (!tmpdir) {
        if (!mkdtemp(tmpl)) {
            die("mkdtemp: %s", strerror(errno));
        }
        tmpdir = tmpl;
        own_tmpdir = true;
    }

    /* ---------------- regex mode ---------------- */
    if (!jobfile) {
        char *out;
        server_init(tmpdir, NULL, 0);
        if (regex_in) {
            out = NULL;
            rc = PMIx_generate_regex(regex_in, &out);
            if (PMIX_SUCCESS != rc) {
                fprintf(stderr, "pmix-host: PMIx_generate_regex: %s\n", PMIx_Error_string(rc));
            }
            print_regex("regex", regex_in, out);
            free(out);
        }
        if (ppn_in) {
            out = NULL;
            rc = PMIx_generate_ppn(ppn_in, &out);
            if (PMIX_SUCCESS != rc) {
                fprintf(stderr, "pmix-host: PMIx_generate_ppn: %s\n", PMIx_Error_string(rc));
            }
            print_regex("ppn", ppn_in, out);
            free(out);
        }
        fflush(stdout);
        PMIx_server_finalize();
        if (own_tmpdir) {
            nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        }
        return 0;
    }

    /* ---------------- job mode ---------------- */
    load_job(jobfile);
    if (minimal) {
        job.minimal = true;
    }
    node_t *me = &job.nodes[job.local];
    if (nclients < 0) {
        nclients = me->nranks;
    }
    if (nclients > me->nranks) {
        die("--clients %d but only %d ranks on local node %s", nclients, me->nranks, me->name);
    }
    if (nclients > 0 && !client_cmd) {
        die("--client-cmd is required");
    }
    if (nclients < me->nranks) {
        fprintf(stderr, "pmix-host: warning: starting %d of %d local ranks; collectives will hang\n",
                nclients, me->nranks);
    }

    server_init(tmpdir, me->name, (uint32_t) job.local);

    /* register the namespace (timed, call to completion callback) */
    infolist_t reg = {0};
    build_registration(&reg, client_cmd);
    if (dump_path) {
        dump_registration(dump_path, &reg, (uint32_t) me->nranks);
    }
    /* rshm first: each store is timed on the array as build_registration left it, as libpmix's
     * is in a run without --rshm (after libpmix's registration the array's pages are cold and
     * libpmix's copies of the job hold much of the machine's memory). */
    if (rshm_lib) {
        rshm_load(rshm_lib, tmpdir, me->name);
        struct rusage u0, u1;
        getrusage(RUSAGE_SELF, &u0);
        long long r0 = now_us();
        rshm_check(rshm.reg(rshm.h, job.nspace, me->nranks, reg.v, reg.n), "register_nspace");
        long long us = now_us() - r0;
        getrusage(RUSAGE_SELF, &u1);
        fprintf(stderr, "pmix-host: rshm_register_nspace_us=%lld\n", us);
        /* page faults of the process during rshm's registration (its threads': the fresh pages
         * it wrote) and the CPU time of all its threads: on a VM a fresh page can cost more
         * than the work done in it */
        fprintf(stderr, "pmix-host: rshm_register_minflt=%ld cpu_us=%lld\n",
                u1.ru_minflt - u0.ru_minflt,
                (long long) (u1.ru_utime.tv_sec - u0.ru_utime.tv_sec + u1.ru_stime.tv_sec -
                             u0.ru_stime.tv_sec) * 1000000LL +
                    (u1.ru_utime.tv_usec - u0.ru_utime.tv_usec + u1.ru_stime.tv_usec -
                     u0.ru_stime.tv_usec));
    }
    waiter_t w = WAITER_INIT;
    long long t0 = now_us();
    rc = PMIx_server_register_nspace(job.nspace, me->nranks, reg.v, reg.n, op_cb, &w);
    if (PMIX_SUCCESS == rc) {
        rc = wait_op(&w);
    }
    long long t1 = now_us();
    if (PMIX_SUCCESS != rc && PMIX_OPERATION_SUCCEEDED != rc) {
        die("PMIx_server_register_nspace: %s", PMIx_Error_string(rc));
    }
    fprintf(stderr, "pmix-host: register_nspace_us=%lld\n", t1 - t0);

    /* register + fork the clients */
    int cargc = 0;
    char **cargv = client_cmd ? split_ws(client_cmd, &cargc) : NULL;
    if (client_cmd && 0 == cargc) {
        die("empty --client-cmd");
    }
    children = calloc(nclients + 1, sizeof(pid_t));
    for (int i = 0; i < nclients; i++) {
        pmix_proc_t proc;
        char **env = NULL, rankstr[16];
        PMIX_LOAD_PROCID(&proc, job.nspace, me->ranks[i]);

        rc = PMIx_server_register_client(&proc, getuid(), getgid(), NULL, op_cb, &w);
        if (PMIX_SUCCESS == rc) {
            rc = wait_op(&w);
        }
        if (PMIX_SUCCESS != rc && PMIX_OPERATION_SUCCEEDED != rc) {
            die("PMIx_server_register_client(%u): %s", proc.rank, PMIx_Error_string(rc));
        }
        /* our environment + what the library needs + our rank */
        for (char **e = environ; *e; e++) {
            char *eq = strchr(*e, '=');
            if (eq) {
                *eq = '\0';
                env_set(&env, *e, eq + 1);
                *eq = '=';
            }
        }
        if (PMIX_SUCCESS != (rc = PMIx_server_setup_fork(&proc, &env))) {
            die("PMIx_server_setup_fork(%u): %s", proc.rank, PMIx_Error_string(rc));
        }
        snprintf(rankstr, sizeof(rankstr), "%u", proc.rank);
        env_set(&env, "RSHM_HOST_RANK", rankstr);
        if (rshm.h) {
            rshm_check(rshm.fork(rshm.h, &proc, &env), "setup_fork");
        }

        char **av = subst_rank(cargv, cargc, proc.rank);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            die("fork: %s", strerror(errno));
        }
        if (0 == pid) {
            environ = env;
            execvp(av[0], av);
            fprintf(stderr, "pmix-host: exec %s: %s\n", av[0], strerror(errno));
            _exit(127);
        }
        children[nchildren++] = pid;
        for (int k = 0; av[k]; k++) {
            free(av[k]);
        }
        free(av);
        for (int k = 0; env[k]; k++) {
            free(env[k]);
        }
        free(env);
    }

    /* wait for all clients, with a deadline */
    long long deadline = now_us() + (long long) timeout * 1000000LL;
    int alive = nchildren;
    while (alive > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (int i = 0; i < nchildren; i++) {
                if (children[i] == pid) {
                    pmix_rank_t r = me->ranks[i];
                    children[i] = 0;
                    alive--;
                    if (WIFEXITED(status) && 0 == WEXITSTATUS(status)) {
                        break;
                    }
                    failures++;
                    if (WIFEXITED(status)) {
                        fprintf(stderr, "pmix-host: rank %u exited with status %d\n", r, WEXITSTATUS(status));
                    } else {
                        fprintf(stderr, "pmix-host: rank %u killed by signal %d\n", r, WTERMSIG(status));
                    }
                }
            }
            continue;
        }
        if (pid < 0 && ECHILD == errno) {
            break;
        }
        if (now_us() > deadline) {
            fprintf(stderr, "pmix-host: timeout after %ds, killing %d client(s)\n", timeout, alive);
            for (int i = 0; i < nchildren; i++) {
                if (children[i] > 0) {
                    kill(children[i], SIGKILL);
                }
            }
            deadline = now_us() + 5 * 1000000LL; /* reap them */
            failures++;
            timeout = 0;
            continue;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }

    fprintf(stderr, "pmix-host: direct_modex_calls=%d\n", dmodex_calls);
    PMIx_server_deregister_nspace(job.nspace, op_cb, &w);
    wait_op(&w);
    if (rshm.h) {
        rshm_check(rshm.dereg(rshm.h, job.nspace), "deregister_nspace");
        rshm_check(rshm.close(rshm.h), "close");
    }
    PMIX_INFO_FREE(reg.v, reg.n);
    if (PMIX_SUCCESS != (rc = PMIx_server_finalize())) {
        fprintf(stderr, "pmix-host: PMIx_server_finalize: %s\n", PMIx_Error_string(rc));
        failures++;
    }
    if (own_tmpdir) {
        nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (aborted) {
        failures++;
    }
    return failures ? 1 : 0;
}
