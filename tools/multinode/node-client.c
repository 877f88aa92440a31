/*
 * node-client - a PMIx client of a multi-node Open MPI job (mpirun, one orted per node): what
 * every rank sees of the job's data and of its peers' posted cards.
 *
 * Usage: node-client --nodes HOST[,HOST...] --nodeids N [--out DIR] [--hold DIR]
 *   --out      write the lines to DIR/<rank> instead of stdout (mpirun's forwarding of the
 *              ranks' output may cut a line: every rank's lines stay whole in a file of its own)
 *   --nodes    the compute nodes' hostnames: node-qualified Gets ask each (PMIX_HOSTNAME)
 *   --nodeids  node-qualified Gets ask node ids 0..N-1 (PMIX_NODEID)
 *   --hold     after the Gets, create DIR/hold-<rank> and wait (at most 300 s, or until the
 *              parent orted is gone) for DIR/release: a running job whose stores can be looked
 *              at from outside
 *
 * PMIx_Init; PMIx_Put of cards in each scope (PMIX_GLOBAL: "card" = "card-of-<rank>@<host>",
 * a uint64 and a byte object; PMIX_REMOTE: "card.remote"; PMIX_LOCAL: "card.local");
 * PMIx_Commit; PMIx_Fence with PMIX_COLLECT_DATA; then PMIx_Get of the reserved keys of every
 * realm (job, session, app; proc: for every rank; node: for every node by hostname and by id)
 * and of the cards each peer's scope lets us see: GLOBAL of everyone, REMOTE of peers on other
 * nodes, LOCAL of peers on ours (the peer's node is read from its GLOBAL card, not from the
 * job data under test). A peer's LOCAL card is never asked from another node: libpmix 4.2.2
 * may block forever on it. Then the mapped files named rshm-* (a store's segments).
 *
 * Output lines (one write(2) each; sort them):
 *   get <myrank> <rank|*> <realm> <KEY> <status> <type> <value>   an answer, the value in the
 *       canonical text of tools/pmix-host/README.md (past 512 characters: its length and
 *       FNV-1a); the job's nspace in a value is printed as "<ns>"
 *   map <myrank> <perms> <tmpfs|not-tmpfs> <path>   a mapped rshm- file (none: "map R none - -")
 *   env <myrank> RSHM_STORE <path|unset>
 *   done <myrank> <status of PMIx_Finalize>
 * Exit status 1 when PMIx_Init, Put, Commit or Fence failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>

#include "common.h"

static pmix_proc_t me;
static char host[256];
static int out_fd = STDOUT_FILENO;

/* A printf-formatted line in one write(2): the ranks' lines share mpirun's output. */
static void line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void line(const char *fmt, ...)
{
    char *buf = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&buf, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    char *out = realloc(buf, (size_t) n + 1);
    if (NULL == out) {
        free(buf);
        return;
    }
    out[n++] = '\n';
    for (ssize_t off = 0, w; off < n; off += w) {
        w = write(out_fd, out + off, (size_t) (n - off));
        if (w <= 0) {
            break;
        }
    }
    free(out);
}

#define K(x) {#x, x}
struct key {
    const char *name;
    const char *key;
};

/* Asked with rank PMIX_RANK_WILDCARD and no realm qualifier. */
static const struct key JOB_KEYS[] = {
    K(PMIX_UNIV_SIZE),  K(PMIX_JOB_SIZE),     K(PMIX_MAX_PROCS),    K(PMIX_NUM_NODES),
    K(PMIX_JOBID),      K(PMIX_NSPACE),       K(PMIX_JOB_NUM_APPS), K(PMIX_NODE_MAP),
    K(PMIX_PROC_MAP),   K(PMIX_NODE_LIST),    K(PMIX_LOCAL_PEERS),  K(PMIX_LOCAL_SIZE),
    K(PMIX_LOCALLDR),   K(PMIX_NPROC_OFFSET), K(PMIX_APP_SIZE),     K(PMIX_APPLDR),
    K(PMIX_NODE_SIZE),  K(PMIX_HOSTNAME),     K(PMIX_NODEID),       K(PMIX_APPNUM),
    K(PMIX_SPAWNED),    K(PMIX_ANL_MAP),      K(PMIX_LOCAL_PROCS),  K(PMIX_NUM_ALLOCATED_NODES),
    K(PMIX_TDIR_RMCLEAN), K(PMIX_SESSION_ID),
};

/* Asked of every rank. */
static const struct key PROC_KEYS[] = {
    K(PMIX_RANK),        K(PMIX_LOCAL_RANK),   K(PMIX_NODE_RANK),    K(PMIX_NODEID),
    K(PMIX_HOSTNAME),    K(PMIX_APPNUM),       K(PMIX_APP_RANK),     K(PMIX_GLOBAL_RANK),
    K(PMIX_SPAWNED),     K(PMIX_REINCARNATION), K(PMIX_LOCALITY_STRING), K(PMIX_JOB_SIZE),
    K(PMIX_UNIV_SIZE),   K(PMIX_LOCAL_SIZE),   K(PMIX_APP_SIZE),     K(PMIX_APPLDR),
    K(PMIX_LOCAL_PEERS), K(PMIX_LOCALLDR),     K(PMIX_NODE_SIZE),
};

static const struct key SESSION_KEYS[] = {K(PMIX_UNIV_SIZE), K(PMIX_MAX_PROCS),
                                          K(PMIX_SESSION_ID), K(PMIX_TDIR_RMCLEAN)};
static const struct key APP_KEYS[] = {K(PMIX_APP_SIZE), K(PMIX_APPLDR), K(PMIX_MAX_PROCS),
                                      K(PMIX_APPNUM)};
static const struct key NODE_KEYS[] = {K(PMIX_LOCAL_SIZE), K(PMIX_LOCAL_PEERS), K(PMIX_NODE_SIZE),
                                       K(PMIX_LOCALLDR),   K(PMIX_HOSTNAME),    K(PMIX_NODEID),
                                       K(PMIX_LOCAL_PROCS)};

#define CARD "rshm.card"
#define CARD_NUM "rshm.card.num"
#define CARD_BLOB "rshm.card.blob"
#define CARD_REMOTE "rshm.card.remote"
#define CARD_LOCAL "rshm.card.local"

/* `text` with every occurrence of the nspace replaced by "<ns>" (malloc'ed). */
static char *normalize(const char *text)
{
    size_t n = strlen(me.nspace), len = strlen(text);
    char *out = malloc(len * 2 + 16), *o = out;
    if (NULL == out) {
        return NULL;
    }
    for (size_t i = 0; i < len;) {
        if (n > 0 && 0 == strncmp(text + i, me.nspace, n)) {
            o += sprintf(o, "<ns>");
            i += n;
        } else {
            *o++ = text[i++];
        }
    }
    *o = '\0';
    return out;
}

static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char) p[i]) * 0x100000001b3ULL;
    }
    return h;
}

#define LONG_VALUE 512

/* PMIx_Get and its line; the value is returned (caller releases) when `keep` is set. */
static pmix_value_t *get(pmix_rank_t rank, const char *realm, const struct key *k,
                         pmix_info_t *info, size_t ninfo, bool keep)
{
    pmix_proc_t p;
    pmix_value_t *val = NULL;
    char *text = NULL;
    size_t len = 0;
    PMIX_LOAD_PROCID(&p, me.nspace, rank);
    pmix_status_t rc = PMIx_Get(&p, k->key, info, ninfo, &val);
    FILE *out = open_memstream(&text, &len);
    if (NULL == out) {
        return NULL;
    }
    if (PMIX_SUCCESS == rc && NULL != val) {
        fprintf(out, "%s ", PMIx_Data_type_string(val->type));
        fmt_value(out, val);
    } else {
        fputs("- -", out);
    }
    fclose(out);
    char who[16];
    if (PMIX_RANK_WILDCARD == rank) {
        snprintf(who, sizeof(who), "*");
    } else {
        snprintf(who, sizeof(who), "%u", rank);
    }
    char *norm = NULL == text ? NULL : normalize(text);
    if (NULL != norm && strlen(norm) > LONG_VALUE) {
        size_t nlen = strlen(norm);
        unsigned long long h = (unsigned long long) fnv1a(norm, nlen);
        char *type_end = strchr(norm, ' ');
        if (NULL != type_end) {
            *type_end = '\0';
        }
        line("get %u %s %s %s %s %s len=%zu fnv1a=%016llx", me.rank, who, realm, k->name,
             PMIx_Error_string(rc), norm, nlen, h);
    } else {
        line("get %u %s %s %s %s %s", me.rank, who, realm, k->name, PMIx_Error_string(rc),
             NULL == norm ? "" : norm);
    }
    free(norm);
    free(text);
    if (keep && PMIX_SUCCESS == rc) {
        return val;
    }
    if (NULL != val) {
        PMIX_VALUE_RELEASE(val);
    }
    return NULL;
}

static pmix_status_t put_str(pmix_scope_t scope, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pmix_status_t put_str(pmix_scope_t scope, const char *key, const char *fmt, ...)
{
    char s[512];
    pmix_value_t v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, sizeof(s), fmt, ap);
    va_end(ap);
    PMIX_VALUE_LOAD(&v, s, PMIX_STRING);
    pmix_status_t rc = PMIx_Put(scope, key, &v);
    PMIX_VALUE_DESTRUCT(&v);
    return rc;
}

static pmix_status_t put_cards(void)
{
    unsigned char blob[100];
    pmix_value_t v;
    pmix_status_t rc;

    rc = put_str(PMIX_GLOBAL, CARD, "card-of-%u@%s", me.rank, host);
    if (PMIX_SUCCESS != rc) {
        return rc;
    }
    uint64_t num = 1000003ULL * me.rank + 7;
    PMIX_VALUE_LOAD(&v, &num, PMIX_UINT64);
    rc = PMIx_Put(PMIX_GLOBAL, CARD_NUM, &v);
    PMIX_VALUE_DESTRUCT(&v);
    if (PMIX_SUCCESS != rc) {
        return rc;
    }
    for (size_t i = 0; i < sizeof(blob); i++) {
        blob[i] = (unsigned char) (i * 7 + me.rank);
    }
    pmix_byte_object_t bo = {.bytes = (char *) blob, .size = sizeof(blob)};
    PMIX_VALUE_LOAD(&v, &bo, PMIX_BYTE_OBJECT);
    rc = PMIx_Put(PMIX_GLOBAL, CARD_BLOB, &v);
    PMIX_VALUE_DESTRUCT(&v);
    if (PMIX_SUCCESS != rc) {
        return rc;
    }
    rc = put_str(PMIX_REMOTE, CARD_REMOTE, "remote-card-of-%u", me.rank);
    if (PMIX_SUCCESS != rc) {
        return rc;
    }
    return put_str(PMIX_LOCAL, CARD_LOCAL, "local-card-of-%u", me.rank);
}

static void answers(uint32_t size, char **nodes, size_t nnodes, uint32_t nodeids)
{
    pmix_info_t imm[1], q[3];
    bool t = true;
    uint32_t appnum = 0;

    /* PMIX_IMMEDIATE: a reserved key the job lacks is NOT_FOUND at once, not after a wait. */
    PMIX_INFO_LOAD(&imm[0], PMIX_IMMEDIATE, &t, PMIX_BOOL);
    for (size_t i = 0; i < sizeof(JOB_KEYS) / sizeof(JOB_KEYS[0]); i++) {
        get(PMIX_RANK_WILDCARD, "job", &JOB_KEYS[i], imm, 1, false);
    }
    for (pmix_rank_t r = 0; r < size; r++) {
        for (size_t i = 0; i < sizeof(PROC_KEYS) / sizeof(PROC_KEYS[0]); i++) {
            get(r, "proc", &PROC_KEYS[i], imm, 1, false);
        }
    }
    PMIX_INFO_LOAD(&q[0], PMIX_SESSION_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[1], PMIX_IMMEDIATE, &t, PMIX_BOOL);
    for (size_t i = 0; i < sizeof(SESSION_KEYS) / sizeof(SESSION_KEYS[0]); i++) {
        get(PMIX_RANK_WILDCARD, "session", &SESSION_KEYS[i], q, 2, false);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_LOAD(&q[0], PMIX_APP_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[2], PMIX_APPNUM, &appnum, PMIX_UINT32);
    for (size_t i = 0; i < sizeof(APP_KEYS) / sizeof(APP_KEYS[0]); i++) {
        get(PMIX_RANK_WILDCARD, "app", &APP_KEYS[i], q, 3, false);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_DESTRUCT(&q[2]);
    /* Every node's realm, named by hostname, then by id. */
    PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &t, PMIX_BOOL);
    for (size_t n = 0; n < nnodes; n++) {
        char realm[300];
        snprintf(realm, sizeof(realm), "node@%s", nodes[n]);
        PMIX_INFO_LOAD(&q[2], PMIX_HOSTNAME, nodes[n], PMIX_STRING);
        for (size_t i = 0; i < sizeof(NODE_KEYS) / sizeof(NODE_KEYS[0]); i++) {
            get(PMIX_RANK_WILDCARD, realm, &NODE_KEYS[i], q, 3, false);
        }
        PMIX_INFO_DESTRUCT(&q[2]);
    }
    for (uint32_t id = 0; id < nodeids; id++) {
        char realm[32];
        snprintf(realm, sizeof(realm), "nodeid@%u", id);
        PMIX_INFO_LOAD(&q[2], PMIX_NODEID, &id, PMIX_UINT32);
        for (size_t i = 0; i < sizeof(NODE_KEYS) / sizeof(NODE_KEYS[0]); i++) {
            get(PMIX_RANK_WILDCARD, realm, &NODE_KEYS[i], q, 3, false);
        }
        PMIX_INFO_DESTRUCT(&q[2]);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_DESTRUCT(&q[1]);

    /* Cards: the GLOBAL ones of everyone (the first names the peer's node), then what the
     * peer's node allows: REMOTE from another node, LOCAL from ours. Then a key nobody posted. */
    static const struct key CARD_K = {"card", CARD}, NUM_K = {"card.num", CARD_NUM},
                            BLOB_K = {"card.blob", CARD_BLOB},
                            REMOTE_K = {"card.remote", CARD_REMOTE},
                            LOCAL_K = {"card.local", CARD_LOCAL};
    for (pmix_rank_t r = 0; r < size; r++) {
        pmix_value_t *card = get(r, "posted", &CARD_K, NULL, 0, true);
        get(r, "posted", &NUM_K, NULL, 0, false);
        get(r, "posted", &BLOB_K, NULL, 0, false);
        const char *at = NULL;
        if (NULL != card && PMIX_STRING == card->type && NULL != card->data.string) {
            at = strchr(card->data.string, '@');
        }
        if (NULL == at) {
            line("get %u %u posted peer-node UNKNOWN - -", me.rank, r);
        } else if (0 == strcmp(at + 1, host)) {
            get(r, "posted-local-peer", &LOCAL_K, NULL, 0, false);
        } else {
            get(r, "posted-remote-peer", &REMOTE_K, NULL, 0, false);
        }
        if (NULL != card) {
            PMIX_VALUE_RELEASE(card);
        }
    }
    static const struct key ABSENT = {"absent", "rshm.absent"};
    get(0, "posted", &ABSENT, imm, 1, false);
    PMIX_INFO_DESTRUCT(&imm[0]);
}

/* Every mapped file named rshm-*: its permissions and filesystem. */
static void maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char buf[8192];
    size_t nmaps = 0;
    const char *store = getenv("RSHM_STORE");

    line("env %u RSHM_STORE %s", me.rank, NULL == store ? "unset" : store);
    if (NULL == f) {
        line("map %u none cannot-read-maps -", me.rank);
        return;
    }
    while (fgets(buf, sizeof(buf), f)) {
        char perms[8], path[4096], dcopy[4096];
        buf[strcspn(buf, "\n")] = '\0';
        if (2 != sscanf(buf, "%*s %7s %*s %*s %*s %4095[^\n]", perms, path)) {
            continue;
        }
        const char *base = strrchr(path, '/');
        if (NULL == base || 0 != strncmp(base + 1, "rshm-", 5)) {
            continue; /* a store's segment files are named rshm-*; other paths may hold it */
        }
        char *del = strstr(path, " (deleted)");
        if (NULL != del) {
            *del = '\0';
        }
        snprintf(dcopy, sizeof(dcopy), "%s", path);
        struct statfs fs;
        bool tmpfs = 0 == statfs(dirname(dcopy), &fs) && TMPFS_MAGIC == (unsigned long) fs.f_type;
        line("map %u %s %s %s%s", me.rank, perms, tmpfs ? "tmpfs" : "not-tmpfs", path,
             NULL != del ? " (deleted)" : "");
        nmaps++;
    }
    fclose(f);
    if (0 == nmaps) {
        line("map %u none - -", me.rank);
    }
}

/* DIR/hold-<rank>, then wait for DIR/release (or the orted's end, or 300 s). */
static void hold(const char *dir)
{
    char path[4096];
    pid_t parent = getppid();
    snprintf(path, sizeof(path), "%s/hold-%u", dir, me.rank);
    FILE *f = fopen(path, "w");
    if (NULL != f) {
        fprintf(f, "%d\n", (int) getpid());
        fclose(f);
    }
    snprintf(path, sizeof(path), "%s/release", dir);
    struct timespec ts = {0, 50 * 1000 * 1000};
    for (int i = 0; i < 6000 && 0 != access(path, F_OK) && getppid() == parent; i++) {
        nanosleep(&ts, NULL);
    }
}

static size_t split_nodes(char *list, char **out, size_t max)
{
    size_t n = 0;
    for (char *s = strtok(list, ","); NULL != s && n < max; s = strtok(NULL, ",")) {
        out[n++] = s;
    }
    return n;
}

int main(int argc, char **argv)
{
    char *nodes[64];
    size_t nnodes = 0;
    uint32_t nodeids = 0;
    const char *hold_dir = NULL, *out_dir = NULL;
    pmix_status_t rc;
    pmix_value_t *val = NULL;
    pmix_proc_t wild;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (0 == strcmp(argv[i], "--nodes")) {
            nnodes = split_nodes(argv[i + 1], nodes, 64);
        } else if (0 == strcmp(argv[i], "--nodeids")) {
            nodeids = (uint32_t) strtoul(argv[i + 1], NULL, 10);
        } else if (0 == strcmp(argv[i], "--out")) {
            out_dir = argv[i + 1];
        } else if (0 == strcmp(argv[i], "--hold")) {
            hold_dir = argv[i + 1];
        } else {
            break;
        }
    }
    if (0 == nnodes || 0 == argc % 2) {
        fprintf(stderr, "usage: node-client --nodes HOST[,HOST...] --nodeids N [--out DIR] [--hold DIR]\n");
        return 2;
    }
    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, ".")] = '\0';
    rc = PMIx_Init(&me, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "node-client: PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    if (NULL != out_dir) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%u", out_dir, me.rank);
        out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
        if (out_fd < 0) {
            fprintf(stderr, "node-client: %s: %s\n", path, strerror(errno));
            PMIx_Finalize(NULL, 0);
            return 1;
        }
    }
    PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &val);
    if (PMIX_SUCCESS != rc || NULL == val || PMIX_UINT32 != val->type) {
        fprintf(stderr, "node-client: PMIX_JOB_SIZE: %s\n", PMIx_Error_string(rc));
        PMIx_Finalize(NULL, 0);
        return 1;
    }
    uint32_t size = val->data.uint32;
    PMIX_VALUE_RELEASE(val);

    rc = put_cards();
    if (PMIX_SUCCESS == rc) {
        rc = PMIx_Commit();
    }
    if (PMIX_SUCCESS == rc) {
        pmix_info_t collect;
        bool t = true;
        PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &t, PMIX_BOOL);
        rc = PMIx_Fence(&wild, 1, &collect, 1);
        PMIX_INFO_DESTRUCT(&collect);
    }
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "node-client: rank %u: put/commit/fence: %s\n", me.rank,
                PMIx_Error_string(rc));
        PMIx_Finalize(NULL, 0);
        return 1;
    }
    answers(size, nodes, nnodes, nodeids);
    maps();
    if (NULL != hold_dir) {
        hold(hold_dir);
    }
    /* Nobody finalizes (and so unmaps) before every rank has looked at the store. */
    rc = PMIx_Fence(&wild, 1, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "node-client: rank %u: last fence: %s\n", me.rank, PMIx_Error_string(rc));
    }
    rc = PMIx_Finalize(NULL, 0);
    line("done %u %s", me.rank, PMIx_Error_string(rc));
    return PMIX_SUCCESS == rc ? 0 : 1;
}
