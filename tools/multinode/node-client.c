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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>

#include "client-util.h"

static pmix_proc_t me;
static char host[256];

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

/* PMIx_Get and its line; the value is returned (caller releases) when `keep` is set. */
static pmix_value_t *get(pmix_rank_t rank, const char *realm, const struct key *k,
                         pmix_info_t *info, size_t ninfo, bool keep)
{
    pmix_proc_t p;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&p, me.nspace, rank);
    pmix_status_t rc = PMIx_Get(&p, k->key, info, ninfo, &val);
    char *text = answer_text(rc, val);
    char *norm = NULL == text ? NULL : normalize(text);
    get_line(me.rank, rank, realm, k->name, rc, norm);
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

static pmix_status_t put_cards(void)
{
    char card[512];
    snprintf(card, sizeof(card), "card-of-%u@%s", me.rank, host);
    pmix_status_t rc = put_global_cards(me.rank, card);
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
    for (size_t i = 0; i < NKEYS(JOB_KEYS); i++) {
        get(PMIX_RANK_WILDCARD, "job", &JOB_KEYS[i], imm, 1, false);
    }
    for (pmix_rank_t r = 0; r < size; r++) {
        for (size_t i = 0; i < NKEYS(PROC_KEYS); i++) {
            get(r, "proc", &PROC_KEYS[i], imm, 1, false);
        }
    }
    PMIX_INFO_LOAD(&q[0], PMIX_SESSION_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[1], PMIX_IMMEDIATE, &t, PMIX_BOOL);
    for (size_t i = 0; i < NKEYS(SESSION_KEYS); i++) {
        get(PMIX_RANK_WILDCARD, "session", &SESSION_KEYS[i], q, 2, false);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_LOAD(&q[0], PMIX_APP_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[2], PMIX_APPNUM, &appnum, PMIX_UINT32);
    for (size_t i = 0; i < NKEYS(APP_KEYS); i++) {
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
        for (size_t i = 0; i < NKEYS(NODE_KEYS); i++) {
            get(PMIX_RANK_WILDCARD, realm, &NODE_KEYS[i], q, 3, false);
        }
        PMIX_INFO_DESTRUCT(&q[2]);
    }
    for (uint32_t id = 0; id < nodeids; id++) {
        char realm[32];
        snprintf(realm, sizeof(realm), "nodeid@%u", id);
        PMIX_INFO_LOAD(&q[2], PMIX_NODEID, &id, PMIX_UINT32);
        for (size_t i = 0; i < NKEYS(NODE_KEYS); i++) {
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

/* A store's segment files are named rshm-*; other paths may hold it. */
static bool segment_file(const char *path)
{
    const char *base = strrchr(path, '/');
    return NULL != base && 0 == strncmp(base + 1, "rshm-", 5);
}

/* Every mapped file named rshm-*: its permissions and filesystem. */
static void maps(void)
{
    const char *store = getenv("RSHM_STORE");
    line("env %u RSHM_STORE %s", me.rank, NULL == store ? "unset" : store);
    map_lines(me.rank, segment_file, NULL, NULL);
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
    uint32_t size = 0;

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
    short_hostname(host, sizeof(host));
    rc = PMIx_Init(&me, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "node-client: PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    if (NULL != out_dir) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%u", out_dir, me.rank);
        line_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
        if (line_fd < 0) {
            fprintf(stderr, "node-client: %s: %s\n", path, strerror(errno));
            PMIx_Finalize(NULL, 0);
            return 1;
        }
    }
    if (0 != job_size("node-client", &me, &size)
        || 0 != post_and_fence("node-client", &me, put_cards())) {
        return 1;
    }
    answers(size, nodes, nnodes, nodeids);
    maps();
    if (NULL != hold_dir) {
        hold(hold_dir);
    }
    return finish("node-client", &me);
}
