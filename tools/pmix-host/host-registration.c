/* host-registration.c - the PMIx_server_register_nspace info array built from the job
 * description, and its --dump-registration text. */
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

static void il_add_extra(infolist_t *l, const kvlist_t *x)
{
    for (size_t i = 0; i < x->n; i++) {
        il_add_value(l, x->v[i].key, &x->v[i].val);
    }
}

/* With PMIX_HOST_GEN_LOCALITY set, a proc given a PMIX_CPUSET string also gets the
 * PMIX_LOCALITY_STRING libpmix makes of it (PMIx_server_generate_locality_string), as a host
 * such as PRRTE registers both: the reference the store's own derivation is compared with. */
static void add_locality(infolist_t *l, const kvlist_t *x)
{
    if (NULL == getenv("PMIX_HOST_GEN_LOCALITY")) {
        return;
    }
    for (size_t i = 0; i < x->n; i++) {
        if (strcmp(x->v[i].key, PMIX_CPUSET) || PMIX_STRING != x->v[i].val.type) {
            continue;
        }
        pmix_cpuset_t cs;
        PMIX_CPUSET_CONSTRUCT(&cs);
        if (PMIX_SUCCESS != PMIx_Parse_cpuset_string(x->v[i].val.data.string, &cs)) {
            continue;
        }
        char *loc = NULL;
        if (PMIX_SUCCESS == PMIx_server_generate_locality_string(&cs, &loc) && NULL != loc) {
            il_add_str(l, PMIX_LOCALITY_STRING, loc);
        }
        free(loc);
        PMIx_Cpuset_destruct(&cs);
    }
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
void build_registration(infolist_t *top, const char *client_cmd)
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
        add_locality(&pl, &p->extra);
        il_add_array(top, PMIX_PROC_INFO_ARRAY, &pl);
    }
}

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
void dump_registration(const char *path, const infolist_t *reg, uint32_t nlocalprocs)
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
