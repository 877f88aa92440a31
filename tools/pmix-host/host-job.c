/* host-job.c - the job description: the job file (README.md, "Job file") parsed, checked
 * and completed (default app, node-local ranks, app ranks). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "host.h"

job_t job;

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

void load_job(const char *path)
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
