/*
 * job-client - a PMIx client for a Slurm step (srun --mpi=pmix): what a job sees of its data,
 * and what it can do to the rshm store it maps.
 *
 * Usage: job-client [--hold SECONDS]
 *   --hold   after the checks, print "hold <myrank> <nspace>" and sleep SECONDS before the last
 *            fence and PMIx_Finalize: a running job whose store can be removed under it
 *
 * PMIx_Init; PMIx_Put of four cards (PMIX_GLOBAL string, uint64 and byte object, PMIX_LOCAL
 * string); PMIx_Commit; PMIx_Fence with PMIX_COLLECT_DATA; then PMIx_Get of the reserved keys of
 * every realm (session, job, app, node, proc: for every rank) and of every peer's cards. Then,
 * from /proc/self/maps, every mapped file whose path contains "/rshm-": its permissions, whether
 * it is on a tmpfs, and - for a process that is not root - whether it can be written, truncated,
 * renamed, unlinked or chmod'ed, and whether its directory takes a new file (each must be refused).
 * As root those attempts are skipped (they would succeed and damage the job's store).
 *
 * Output lines (each one write(2), so that the tasks' lines do not interleave; sort them):
 *   get <myrank> <rank|*> <realm> <KEY> <status> <type> <value>   an answer (the value in the
 *       canonical text of tools/pmix-host/README.md; past 512 characters "len=N fnv1a=HEX" of it)
 *   map <myrank> <perms> <tmpfs|not-tmpfs> <path>          a mapped rshm- file
 *   try <myrank> <op> <refused|ALLOWED> <errno> <path>     a write attempt on a store file/dir
 *   env <myrank> RSHM_STORE <path|unset>
 *   store <myrank> mode=<octal> uid=<owner> <ok|errno of access(R_OK|X_OK)> <path>   of
 *                                                          RSHM_STORE, when set
 *   done <myrank> <status of PMIx_Finalize>
 * A value's text has the job's step id ("<J>.<S>" of the nspace "slurm.pmix.<J>.<S>") replaced
 * by "<step>" where it names the step (normalize()), so that the answers of two jobs compare
 * equal.
 * Exit status 1 when PMIx_Init, Put, Commit or Fence failed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmix.h>

#include "client-util.h"

static pmix_proc_t me;
static const char *step_id = ""; /* "<J>.<S>" from the nspace */

/* ---- answers ----------------------------------------------------------------------------- */

/* Reserved keys asked with rank PMIX_RANK_WILDCARD and no qualifier (job realm). */
static const struct key JOB_KEYS[] = {
    K(PMIX_UNIV_SIZE),   K(PMIX_JOB_SIZE),     K(PMIX_MAX_PROCS),      K(PMIX_NUM_NODES),
    K(PMIX_JOBID),       K(PMIX_NSPACE),       K(PMIX_JOB_NUM_APPS),   K(PMIX_NODE_MAP),
    K(PMIX_PROC_MAP),    K(PMIX_NODE_LIST),    K(PMIX_LOCAL_PEERS),    K(PMIX_LOCAL_SIZE),
    K(PMIX_LOCALLDR),    K(PMIX_NPROC_OFFSET), K(PMIX_TMPDIR),         K(PMIX_NSDIR),
    K(PMIX_TDIR_RMCLEAN), K(PMIX_APP_SIZE),    K(PMIX_APPLDR),         K(PMIX_NODE_SIZE),
    K(PMIX_LOCAL_CPUSETS), K(PMIX_SESSION_ID), K(PMIX_HOSTNAME),       K(PMIX_NODEID),
    K(PMIX_NUM_ALLOCATED_NODES), K(PMIX_LOCAL_PROCS), K(PMIX_APPNUM), K(PMIX_SPAWNED),
    K(PMIX_ANL_MAP),     {"PMIX_LOCAL_TOPO", "pmix.ltopo"}, /* deprecated in 4.2; Slurm sets it */
};

/* Reserved keys asked of every rank (proc realm). */
static const struct key PROC_KEYS[] = {
    K(PMIX_RANK),          K(PMIX_LOCAL_RANK),  K(PMIX_NODE_RANK),   K(PMIX_NODEID),
    K(PMIX_HOSTNAME),      K(PMIX_APPNUM),      K(PMIX_APP_RANK),    K(PMIX_GLOBAL_RANK),
    K(PMIX_SPAWNED),       K(PMIX_REINCARNATION), K(PMIX_LOCALITY_STRING), K(PMIX_PROCDIR),
    K(PMIX_CPUSET),        K(PMIX_JOB_SIZE),    K(PMIX_LOCAL_SIZE),  K(PMIX_APP_SIZE),
    K(PMIX_APPLDR),
};

/* Realm queries: a key with one realm qualifier (and PMIX_APPNUM / PMIX_HOSTNAME naming it). */
static const struct key SESSION_KEYS[] = {K(PMIX_UNIV_SIZE), K(PMIX_MAX_PROCS), K(PMIX_SESSION_ID),
                                          K(PMIX_TMPDIR), K(PMIX_TDIR_RMCLEAN)};
static const struct key APP_KEYS[] = {K(PMIX_APP_SIZE), K(PMIX_APPLDR), K(PMIX_MAX_PROCS),
                                      K(PMIX_APP_ARGV), K(PMIX_WDIR)};
static const struct key NODE_KEYS[] = {K(PMIX_LOCAL_SIZE), K(PMIX_LOCAL_PEERS), K(PMIX_NODE_SIZE),
                                       K(PMIX_LOCALLDR),   K(PMIX_HOSTNAME),    K(PMIX_NODEID),
                                       K(PMIX_LOCAL_CPUSETS)};

/* The card every rank posts besides the global ones (client-util.h). */
#define CARD_LOCAL "rshm.card.local"

/* `text` with the step id replaced by "<step>" where a value names it: the whole value
 * ("\"<J>.<S>\"", PMIX_JOBID), and after "_", "[", "." or "/" (directories, the nspace, the
 * topology's process name) when no digit or '.' follows. Elsewhere "2.0" may be a version.
 * malloc'ed. */
static char *normalize(const char *text)
{
    size_t n = strlen(step_id), len = strlen(text);
    char *out = malloc(len * 2 + 16), *o = out;
    if (NULL == out) {
        return NULL;
    }
    const char *value = strchr(text, ' '); /* "<TYPE> <value>" */
    if (n > 0 && NULL != value && strlen(value) == n + 3 && '"' == value[1]
        && 0 == strncmp(value + 2, step_id, n) && '"' == value[n + 2]) {
        sprintf(out, "%.*s \"<step>\"", (int) (value - text), text);
        return out;
    }
    for (size_t i = 0; i < len;) {
        bool after = i > 0 && NULL != strchr("_[./", text[i - 1]);
        char next = i + n < len ? text[i + n] : '\0';
        if (n > 0 && after && 0 == strncmp(text + i, step_id, n) && !isdigit((unsigned char) next)
            && '.' != next) {
            o += sprintf(o, "<step>");
            i += n;
        } else {
            *o++ = text[i++];
        }
    }
    *o = '\0';
    return out;
}

static void get(pmix_rank_t rank, const char *realm, const struct key *k, pmix_info_t *info,
                size_t ninfo)
{
    pmix_proc_t p;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&p, me.nspace, rank);
    pmix_status_t rc = PMIx_Get(&p, k->key, info, ninfo, &val);
    char *text = answer_text(rc, val);
    if (NULL != val) {
        PMIX_VALUE_RELEASE(val);
    }
    char *norm = NULL == text ? NULL : normalize(text);
    get_line(me.rank, rank, realm, k->name, rc, norm);
    free(norm);
    free(text);
}

static pmix_status_t put_cards(void)
{
    char card[64];
    snprintf(card, sizeof(card), "card-of-%u", me.rank);
    pmix_status_t rc = put_global_cards(me.rank, card);
    if (PMIX_SUCCESS != rc) {
        return rc;
    }
    return put_str(PMIX_LOCAL, CARD_LOCAL, "local-card-of-%u", me.rank);
}

static void answers(uint32_t size, const char *host)
{
    pmix_info_t imm[1], q[3];
    bool t = true;
    uint32_t appnum = 0;

    /* PMIX_IMMEDIATE: a reserved key the job lacks is NOT_FOUND at once, not after a wait. */
    PMIX_INFO_LOAD(&imm[0], PMIX_IMMEDIATE, &t, PMIX_BOOL);
    for (size_t i = 0; i < NKEYS(JOB_KEYS); i++) {
        get(PMIX_RANK_WILDCARD, "job", &JOB_KEYS[i], imm, 1);
    }
    for (pmix_rank_t r = 0; r < size; r++) {
        for (size_t i = 0; i < NKEYS(PROC_KEYS); i++) {
            get(r, "proc", &PROC_KEYS[i], imm, 1);
        }
    }
    PMIX_INFO_LOAD(&q[0], PMIX_SESSION_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[1], PMIX_IMMEDIATE, &t, PMIX_BOOL);
    for (size_t i = 0; i < NKEYS(SESSION_KEYS); i++) {
        get(PMIX_RANK_WILDCARD, "session", &SESSION_KEYS[i], q, 2);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_LOAD(&q[0], PMIX_APP_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[2], PMIX_APPNUM, &appnum, PMIX_UINT32);
    for (size_t i = 0; i < NKEYS(APP_KEYS); i++) {
        get(PMIX_RANK_WILDCARD, "app", &APP_KEYS[i], q, 3);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_DESTRUCT(&q[2]);
    PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[2], PMIX_HOSTNAME, host, PMIX_STRING);
    for (size_t i = 0; i < NKEYS(NODE_KEYS); i++) {
        get(PMIX_RANK_WILDCARD, "node", &NODE_KEYS[i], q, 3);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_DESTRUCT(&q[1]);
    PMIX_INFO_DESTRUCT(&q[2]);

    /* Every rank's cards (its own among them), then a key nobody posted. */
    static const struct key CARDS[] = {{"card", CARD}, {"card.num", CARD_NUM},
                                       {"card.blob", CARD_BLOB}, {"card.local", CARD_LOCAL}};
    for (pmix_rank_t r = 0; r < size; r++) {
        for (size_t i = 0; i < NKEYS(CARDS); i++) {
            get(r, "posted", &CARDS[i], NULL, 0);
        }
    }
    static const struct key ABSENT = {"absent", "rshm.absent"};
    get(0, "posted", &ABSENT, imm, 1);
    PMIX_INFO_DESTRUCT(&imm[0]);
}

/* ---- the store as mapped ----------------------------------------------------------------- */

#define MAX_PATHS 256

static void try_op(const char *op, int rc, const char *path)
{
    int e = errno;
    if (rc < 0) {
        line("try %u %s refused %s %s", me.rank, op, strerrorname_np(e), path);
    } else {
        line("try %u %s ALLOWED - %s", me.rank, op, path);
    }
}

/* Each must be refused for a job's user; a success is reported (and undone where it can be). */
static void try_file(const char *path)
{
    struct stat st;
    char other[4200];
    int fd;
    if (stat(path, &st) < 0) {
        line("try %u stat gone %s %s", me.rank, strerrorname_np(errno), path);
        return;
    }
    fd = open(path, O_WRONLY);
    try_op("open-wronly", fd, path);
    if (fd >= 0) {
        close(fd);
    }
    fd = open(path, O_RDWR);
    try_op("open-rdwr", fd, path);
    if (fd >= 0) {
        close(fd);
    }
    try_op("truncate", truncate(path, st.st_size), path); /* same size: harmless if allowed */
    try_op("chmod", chmod(path, st.st_mode & 07777), path);
    snprintf(other, sizeof(other), "%s.moved", path);
    int rc = rename(path, other);
    try_op("rename", rc, path);
    if (0 == rc) {
        (void) rename(other, path);
    }
    try_op("unlink", unlink(path), path);
}

/* The store's own directory only (named rshm-*): a shared parent such as /dev/shm takes anyone's
 * files. */
static void try_dir(const char *dir)
{
    char p[4200], copy[4096];
    snprintf(copy, sizeof(copy), "%s", dir);
    if (0 != strncmp(basename(copy), "rshm-", 5)) {
        line("try %u dir skipped-not-rshm - %s", me.rank, dir);
        return;
    }
    snprintf(p, sizeof(p), "%s/job-client-%u", dir, me.rank);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
    try_op("create-in-dir", fd, dir);
    if (fd >= 0) {
        close(fd);
        unlink(p);
    }
    snprintf(p, sizeof(p), "%s/job-client-dir-%u", dir, me.rank);
    int rc = mkdir(p, 0700);
    try_op("mkdir-in-dir", rc, dir);
    if (0 == rc) {
        rmdir(p);
    }
    snprintf(p, sizeof(p), "%s.moved", dir);
    rc = rename(dir, p);
    try_op("rename-dir", rc, dir);
    if (0 == rc) {
        (void) rename(p, dir);
    }
    try_op("rmdir", rmdir(dir), dir);
}

static bool seen(char **list, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++) {
        if (0 == strcmp(list[i], s)) {
            return true;
        }
    }
    return false;
}

/* A store's files and directories (their paths contain "/rshm-"). */
static bool store_path(const char *path)
{
    return NULL != strstr(path, "/rshm-");
}

struct mapped {
    char *files[MAX_PATHS], *dirs[MAX_PATHS];
    size_t nfiles, ndirs;
};

/* A mapped file (unless deleted) and its directory, once each. */
static void collect(const char *path, const char *dir, bool deleted, void *arg)
{
    struct mapped *m = arg;
    if (!deleted && m->nfiles < MAX_PATHS && !seen(m->files, m->nfiles, path)) {
        m->files[m->nfiles++] = strdup(path);
    }
    if (m->ndirs < MAX_PATHS && !seen(m->dirs, m->ndirs, dir)) {
        m->dirs[m->ndirs++] = strdup(dir);
    }
}

static void store_checks(void)
{
    struct mapped m = {.nfiles = 0, .ndirs = 0};
    const char *store = getenv("RSHM_STORE");

    line("env %u RSHM_STORE %s", me.rank, NULL == store ? "unset" : store);
    if (NULL != store) {
        struct stat st;
        if (stat(store, &st) < 0) {
            line("store %u mode=- uid=- %s %s", me.rank, strerrorname_np(errno), store);
        } else {
            int rc = access(store, R_OK | X_OK);
            line("store %u mode=%04o uid=%u %s %s", me.rank, (unsigned) (st.st_mode & 07777),
                 (unsigned) st.st_uid, rc < 0 ? strerrorname_np(errno) : "ok", store);
        }
    }
    map_lines(me.rank, store_path, collect, &m);
    if (0 == geteuid()) {
        if (m.nfiles + m.ndirs > 0) {
            line("try %u all skipped-as-root - -", me.rank);
        }
    } else {
        for (size_t i = 0; i < m.nfiles; i++) {
            try_file(m.files[i]);
        }
        for (size_t i = 0; i < m.ndirs; i++) {
            try_dir(m.dirs[i]);
        }
    }
    for (size_t i = 0; i < m.nfiles; i++) {
        free(m.files[i]);
    }
    for (size_t i = 0; i < m.ndirs; i++) {
        free(m.dirs[i]);
    }
}

int main(int argc, char **argv)
{
    int hold = 0;
    pmix_status_t rc;
    uint32_t size = 0;
    char host[256] = "";

    if (3 == argc && 0 == strcmp(argv[1], "--hold")) {
        hold = atoi(argv[2]);
    } else if (1 != argc) {
        fprintf(stderr, "usage: job-client [--hold SECONDS]\n");
        return 2;
    }
    rc = PMIx_Init(&me, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "job-client: PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    if (0 == strncmp(me.nspace, "slurm.pmix.", 11)) {
        step_id = me.nspace + 11;
    }
    short_hostname(host, sizeof(host));
    if (0 != job_size("job-client", &me, &size)
        || 0 != post_and_fence("job-client", &me, put_cards())) {
        return 1;
    }
    answers(size, host);
    store_checks();
    if (hold > 0) {
        line("hold %u %s", me.rank, me.nspace);
        sleep((unsigned) hold);
    }
    return finish("job-client", &me);
}
