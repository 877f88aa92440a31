/* host-replay.c - --replay-registration FILE: read a registration dump (README.md,
 * "Registration dump") back into the info array it describes, and the job it implies for
 * pmix-host: the nspace, the local node and its ranks (the clients to start). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"
#include "host.h"

typedef struct {
    char **v; /* the info lines, comments and header taken out */
    size_t n;
    const char *path;
    size_t *lineno; /* file line of each */
} lines_t;

static char cwd[4096];

/* PMIx_Data_type_string() name -> type; PMIX_UNDEF if unknown. */
static pmix_data_type_t type_named(const char *name)
{
    for (int t = 1; t < 256; t++) {
        const char *s = PMIx_Data_type_string((pmix_data_type_t) t);
        if (s && 0 == strcmp(s, name)) {
            return (pmix_data_type_t) t;
        }
    }
    return PMIX_UNDEF;
}

/* A quoted string with the escapes fmt_bytes_quoted writes -> malloc'd bytes (NUL added, not
 * counted in *n). *end is set past the closing quote. NULL on a syntax error. */
static char *unquote(const char *s, size_t *n, const char **end)
{
    size_t len = strlen(s), k = 0;
    char *out;
    if ('"' != s[0]) {
        return NULL;
    }
    out = xrealloc(NULL, len + 1);
    for (const char *p = s + 1; *p; p++) {
        if ('"' == *p) {
            out[k] = '\0';
            *n = k;
            *end = p + 1;
            return out;
        }
        if ('\\' != *p) {
            out[k++] = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'n': out[k++] = '\n'; break;
        case 't': out[k++] = '\t'; break;
        case 'r': out[k++] = '\r'; break;
        case '0': out[k++] = '\0'; break;
        case '"': out[k++] = '"'; break;
        case '\\': out[k++] = '\\'; break;
        case 'x': {
            unsigned x;
            if (1 != sscanf(p + 1, "%2x", &x) || !p[1] || !p[2]) {
                free(out);
                return NULL;
            }
            out[k++] = (char) x;
            p += 2;
            break;
        }
        default: free(out); return NULL;
        }
    }
    free(out);
    return NULL;
}

/* "@CWD@" (what make check writes in place of the working directory) -> ours. */
static char *with_cwd(char *s)
{
    char *at = strstr(s, "@CWD@"), *out;
    if (!at) {
        return s;
    }
    if (0 > asprintf(&out, "%.*s%s%s", (int) (at - s), s, cwd, at + 5)) {
        die("out of memory");
    }
    free(s);
    return with_cwd(out);
}

static int parse_string(const char *text, char **out)
{
    size_t n;
    const char *end;
    if (0 == strcmp(text, "null")) {
        *out = NULL;
        return 0;
    }
    *out = unquote(text, &n, &end);
    if (!*out || *end || strlen(*out) != n) {
        free(*out);
        return -1;
    }
    *out = with_cwd(*out);
    return 0;
}

static int parse_rank(const char *text, pmix_rank_t *r)
{
    static const struct { const char *name; pmix_rank_t r; } named[] = {
        {"UNDEF", PMIX_RANK_UNDEF}, {"WILDCARD", PMIX_RANK_WILDCARD},
        {"LOCAL_NODE", PMIX_RANK_LOCAL_NODE}, {"INVALID", PMIX_RANK_INVALID},
        {"LOCAL_PEERS", PMIX_RANK_LOCAL_PEERS},
    };
    pmix_value_t v;
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        if (0 == strcmp(text, named[i].name)) {
            *r = named[i].r;
            return 0;
        }
    }
    if (0 != parse_value(PMIX_PROC_RANK, text, &v)) {
        return -1;
    }
    *r = v.data.rank;
    return 0;
}

static int parse_hex(const char *text, pmix_byte_object_t *bo)
{
    size_t len = strlen(text);
    if (len < 2 || strncmp(text, "0x", 2) || len % 2) {
        return -1;
    }
    bo->size = (len - 2) / 2;
    bo->bytes = bo->size ? xrealloc(NULL, bo->size) : NULL;
    for (size_t i = 0; i < bo->size; i++) {
        unsigned x;
        if (1 != sscanf(text + 2 + 2 * i, "%2x", &x)) {
            return -1;
        }
        bo->bytes[i] = (char) x;
    }
    return 0;
}

/* One scalar value of the dump (everything but data arrays) into *v. */
static int parse_scalar(pmix_data_type_t t, const char *text, pmix_value_t *v)
{
    PMIX_VALUE_CONSTRUCT(v);
    v->type = t;
    switch (t) {
    case PMIX_STRING:
        return parse_string(text, &v->data.string);
    case PMIX_REGEX: {
        const char *end;
        v->data.bo.bytes = unquote(text, &v->data.bo.size, &end);
        return v->data.bo.bytes && !*end ? 0 : -1;
    }
    case PMIX_BYTE_OBJECT:
    case PMIX_COMPRESSED_STRING:
    case PMIX_COMPRESSED_BYTE_OBJECT:
        return parse_hex(text, &v->data.bo);
    case PMIX_PROC_RANK:
        return parse_rank(text, &v->data.rank);
    case PMIX_PROC: {
        const char *colon = strrchr(text, ':');
        if (!colon || colon == text || (size_t) (colon - text) > PMIX_MAX_NSLEN) {
            return -1;
        }
        PMIX_PROC_CREATE(v->data.proc, 1);
        memcpy(v->data.proc->nspace, text, (size_t) (colon - text));
        return parse_rank(colon + 1, &v->data.proc->rank);
    }
    case PMIX_BYTE: {
        int rc = parse_value(PMIX_UINT8, text, v);
        v->type = PMIX_BYTE;
        return rc;
    }
    default:
        return parse_value(t, text, v);
    }
}

static void bad_line(const lines_t *l, size_t i, const char *why)
{
    die("%s:%zu: %s: %s", l->path, l->lineno[i], why, l->v[i]);
}

/* A data array of scalars: "<ELEM_TYPE> <n> [a,b,...]" (strings quoted; no nesting). */
static pmix_data_array_t *parse_scalar_array(const lines_t *l, size_t i, const char *text)
{
    char elem[64];
    size_t n;
    int used = 0;
    pmix_data_array_t *d;
    if (2 != sscanf(text, "%63s %zu %n", elem, &n, &used) || 0 == used) {
        bad_line(l, i, "bad data array");
    }
    pmix_data_type_t et = type_named(elem);
    const char *p = text + used;
    if (PMIX_UNDEF == et || '[' != *p++ || n > strlen(p)) {
        bad_line(l, i, "bad data array");
    }
    PMIX_DATA_ARRAY_CREATE(d, n, et);
    for (size_t k = 0; k < n; k++) {
        pmix_value_t v;
        char *tok;
        const char *end = p;
        if (PMIX_STRING == et && '"' == *p) {
            size_t len;
            free(unquote(p, &len, &end));
        } else {
            end = p + strcspn(p, ",]");
        }
        tok = strndup(p, (size_t) (end - p));
        if (0 != parse_scalar(et, tok, &v)) {
            bad_line(l, i, "bad data array element");
        }
        free(tok);
        switch (et) {
        case PMIX_STRING: ((char **) d->array)[k] = v.data.string; break;
        case PMIX_UINT32: ((uint32_t *) d->array)[k] = v.data.uint32; break;
        case PMIX_UINT16: ((uint16_t *) d->array)[k] = v.data.uint16; break;
        case PMIX_PROC_RANK: ((pmix_rank_t *) d->array)[k] = v.data.rank; break;
        case PMIX_INT: ((int *) d->array)[k] = v.data.integer; break;
        case PMIX_UINT64: ((uint64_t *) d->array)[k] = v.data.uint64; break;
        case PMIX_BOOL: ((bool *) d->array)[k] = v.data.flag; break;
        default: bad_line(l, i, "unsupported data array element type");
        }
        p = end;
        if (',' == *p) {
            p++;
        }
    }
    if (']' != *p || p[1]) {
        bad_line(l, i, "bad data array end");
    }
    return d;
}

/* Lines *i.. at `depth`: `count` infos (their children follow each data array of infos). */
static pmix_info_t *parse_infos(const lines_t *l, size_t *i, int depth, size_t count)
{
    pmix_info_t *v = NULL;
    if (count > l->n - *i) {
        die("%s: %zu infos announced at depth %d, only %zu lines left", l->path, count, depth,
            l->n - *i);
    }
    PMIX_INFO_CREATE(v, count ? count : 1);
    for (size_t k = 0; k < count; k++, (*i)++) {
        char key[PMIX_MAX_KEYLEN + 2], tname[64];
        int d, used = 0;
        if (*i >= l->n) {
            die("%s: ends inside an info array (%zu of %zu infos at depth %d)", l->path, k, count,
                depth);
        }
        const char *s = l->v[*i];
        if (3 != sscanf(s, " %d %" PMIX_HOST_STR(PMIX_MAX_KEYLEN) "s %63s %n", &d, key, tname,
                        &used) || 0 == used) {
            bad_line(l, *i, "not <depth> <key> <TYPE> <value>");
        }
        if (d != depth) {
            bad_line(l, *i, "unexpected depth");
        }
        pmix_data_type_t t = type_named(tname);
        const char *text = s + used;
        PMIX_LOAD_KEY(v[k].key, key);
        if (PMIX_DATA_ARRAY == t) {
            size_t n;
            pmix_data_array_t *da;
            if (0 == strncmp(text, "PMIX_INFO ", 10)) {
                if (1 != sscanf(text + 10, "%zu", &n)) {
                    bad_line(l, *i, "bad info array size");
                }
                (*i)++;
                da = xrealloc(NULL, sizeof(*da));
                da->type = PMIX_INFO;
                da->size = n;
                da->array = parse_infos(l, i, depth + 1, n);
                (*i)--;
            } else {
                da = parse_scalar_array(l, *i, text);
            }
            v[k].value.type = PMIX_DATA_ARRAY;
            v[k].value.data.darray = da;
        } else if (PMIX_UNDEF == t || 0 != parse_scalar(t, text, &v[k].value)) {
            bad_line(l, *i, "unsupported type or bad value");
        }
    }
    return v;
}

/* The string value of key in v[0..n), or NULL. */
static const char *str_of(const pmix_info_t *v, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (PMIX_CHECK_KEY(&v[i], key) && PMIX_STRING == v[i].value.type) {
            return v[i].value.data.string;
        }
    }
    return NULL;
}

static const pmix_info_t *find(const pmix_info_t *v, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (PMIX_CHECK_KEY(&v[i], key)) {
            return &v[i];
        }
    }
    return NULL;
}

static void add_rank(node_t *nd, pmix_rank_t r)
{
    nd->ranks = xrealloc(nd->ranks, (size_t) (nd->nranks + 1) * sizeof(pmix_rank_t));
    nd->ranks[nd->nranks++] = r;
}

/* The local node's ranks: its node array's PMIX_LOCAL_PEERS, else the top-level
 * PMIX_LOCAL_PEERS (the local node's, as Open MPI and Slurm register it), else the proc
 * arrays whose PMIX_HOSTNAME is the local node. Also its node id (node array or top level). */
static void local_ranks(const infolist_t *reg, node_t *nd, uint32_t *nodeid)
{
    const char *peers = NULL;
    const pmix_info_t *id = NULL;
    for (size_t i = 0; i < reg->n; i++) {
        const pmix_info_t *in = &reg->v[i];
        if (!PMIX_CHECK_KEY(in, PMIX_NODE_INFO_ARRAY) || PMIX_DATA_ARRAY != in->value.type) {
            continue;
        }
        const pmix_info_t *a = in->value.data.darray->array;
        size_t n = in->value.data.darray->size;
        const char *h = str_of(a, n, PMIX_HOSTNAME);
        if (h && 0 == strcmp(h, nd->name)) {
            peers = str_of(a, n, PMIX_LOCAL_PEERS);
            id = find(a, n, PMIX_NODEID);
        }
    }
    if (!peers) {
        peers = str_of(reg->v, reg->n, PMIX_LOCAL_PEERS);
    }
    if (!id) {
        id = find(reg->v, reg->n, PMIX_NODEID);
    }
    *nodeid = (id && PMIX_UINT32 == id->value.type) ? id->value.data.uint32 : 0;
    if (peers) {
        pmix_rank_t *r;
        int n = parse_ranklist(peers, &r);
        if (n < 0) {
            die("bad PMIX_LOCAL_PEERS \"%s\"", peers);
        }
        for (int k = 0; k < n; k++) {
            add_rank(nd, r[k]);
        }
        free(r);
        return;
    }
    for (size_t i = 0; i < reg->n; i++) {
        const pmix_info_t *in = &reg->v[i];
        if (!PMIX_CHECK_KEY(in, PMIX_PROC_INFO_ARRAY) || PMIX_DATA_ARRAY != in->value.type) {
            continue;
        }
        const pmix_info_t *a = in->value.data.darray->array;
        size_t n = in->value.data.darray->size;
        const char *h = str_of(a, n, PMIX_HOSTNAME);
        const pmix_info_t *r = find(a, n, PMIX_RANK);
        if (h && r && PMIX_PROC_RANK == r->value.type && 0 == strcmp(h, nd->name)) {
            add_rank(nd, r->value.data.rank);
        }
    }
}

void load_replay(const char *path, infolist_t *reg, uint32_t *nodeid)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0, lineno = 0, ninfo = 0, idx = 0;
    long nlocal = -1;
    bool have_ninfo = false;
    lines_t l = {NULL, 0, path, NULL};
    if (!f) {
        die("cannot read %s: %s", path, strerror(errno));
    }
    if (NULL == getcwd(cwd, sizeof(cwd))) {
        strcpy(cwd, "/");
    }
    memset(&job, 0, sizeof(job));
    job.nodes = xrealloc(NULL, sizeof(node_t));
    memset(job.nodes, 0, sizeof(node_t));
    job.nnodes = 1;
    while (0 < getline(&line, &cap, f)) {
        char word[32], rest[4096];
        lineno++;
        line[strcspn(line, "\n")] = '\0';
        const char *s = line + strspn(line, " \t");
        if ('\0' == *s || '#' == *s) {
            continue;
        }
        if (!have_ninfo) {
            if (2 != sscanf(s, "%31s %4095s", word, rest)) {
                die("%s:%zu: bad header line: %s", path, lineno, line);
            }
            if (0 == strcmp(word, "nspace")) {
                job.nspace = strdup(rest);
            } else if (0 == strcmp(word, "local")) {
                job.nodes[0].name = strdup(rest);
            } else if (0 == strcmp(word, "nlocalprocs")) {
                nlocal = strtol(rest, NULL, 10);
            } else if (0 == strcmp(word, "ninfo")) {
                ninfo = strtoul(rest, NULL, 10);
                have_ninfo = true;
            } else {
                die("%s:%zu: unknown header line: %s", path, lineno, line);
            }
            continue;
        }
        l.v = xrealloc(l.v, (l.n + 1) * sizeof(char *));
        l.lineno = xrealloc(l.lineno, (l.n + 1) * sizeof(size_t));
        l.v[l.n] = strdup(line);
        l.lineno[l.n++] = lineno;
    }
    free(line);
    fclose(f);
    if (!job.nspace || !job.nodes[0].name || nlocal < 0 || !have_ninfo) {
        die("%s: needs the nspace, local, nlocalprocs and ninfo lines", path);
    }
    reg->v = parse_infos(&l, &idx, 0, ninfo);
    reg->n = reg->cap = ninfo;
    if (idx != l.n) {
        die("%s:%zu: more infos than ninfo %zu", path, l.lineno[idx], ninfo);
    }
    for (size_t i = 0; i < l.n; i++) {
        free(l.v[i]);
    }
    free(l.v);
    free(l.lineno);
    local_ranks(reg, &job.nodes[0], nodeid);
    job.size = (uint32_t) nlocal;
}

void replay_local_ranks(node_t *me, int nlocal)
{
    if (0 == me->nranks && nlocal > 0) {
        /* only the maps name the local ranks (e.g. a minimal registration): ask libpmix,
         * which has parsed them */
        pmix_proc_t *procs = NULL;
        size_t n = 0;
        pmix_status_t rc = PMIx_Resolve_peers(me->name, job.nspace, &procs, &n);
        if (PMIX_SUCCESS != rc) {
            die("PMIx_Resolve_peers(%s): %s", me->name, PMIx_Error_string(rc));
        }
        for (size_t i = 0; i < n; i++) {
            add_rank(me, procs[i].rank);
        }
        PMIX_PROC_FREE(procs, n);
    }
    if (me->nranks != nlocal) {
        die("nlocalprocs %d but %d local ranks found for node %s (PMIX_LOCAL_PEERS, the proc "
            "arrays' PMIX_HOSTNAME, the maps)", nlocal, me->nranks, me->name);
    }
}
