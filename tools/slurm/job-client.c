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
#include <stdarg.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <pmix.h>

#include "common.h"

static pmix_proc_t me;
static const char *step_id = ""; /* "<J>.<S>" from the nspace */

/* Print a printf-formatted line with one write(2) (a value may be kilobytes: the node's
 * topology). */
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
    ssize_t off = 0;
    while (off < n) {
        ssize_t w = write(STDOUT_FILENO, out + off, (size_t) (n - off));
        if (w <= 0) {
            break;
        }
        off += w;
    }
    free(out);
}

/* ---- answers ----------------------------------------------------------------------------- */

#define K(x) {#x, x}
struct key {
    const char *name;
    const char *key;
};

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

/* The cards every rank posts. */
#define CARD "rshm.card"
#define CARD_NUM "rshm.card.num"
#define CARD_BLOB "rshm.card.blob"
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

/* FNV-1a (64 bit): a long value's text (the node's topology, kilobytes) is printed as its
 * length and hash, so that every line stays one short write (lines of several tasks share
 * srun's output; a write past PIPE_BUF may interleave). */
static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char) p[i]) * 0x100000001b3ULL;
    }
    return h;
}

#define LONG_VALUE 512

static void get(pmix_rank_t rank, const char *realm, const struct key *k, pmix_info_t *info,
                size_t ninfo)
{
    pmix_proc_t p;
    pmix_value_t *val = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    PMIX_LOAD_PROCID(&p, me.nspace, rank);
    pmix_status_t rc = PMIx_Get(&p, k->key, info, ninfo, &val);
    if (NULL == out) {
        return;
    }
    if (PMIX_SUCCESS == rc && NULL != val) {
        fprintf(out, "%s ", PMIx_Data_type_string(val->type));
        fmt_value(out, val);
        PMIX_VALUE_RELEASE(val);
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
        char *type_end = strchr(norm, ' '); /* keep the type, digest the value */
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
}

static pmix_status_t put_cards(void)
{
    char s[64];
    unsigned char blob[100];
    pmix_value_t v;
    pmix_status_t rc;

    snprintf(s, sizeof(s), "card-of-%u", me.rank);
    PMIX_VALUE_LOAD(&v, s, PMIX_STRING);
    rc = PMIx_Put(PMIX_GLOBAL, CARD, &v);
    PMIX_VALUE_DESTRUCT(&v);
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
    snprintf(s, sizeof(s), "local-card-of-%u", me.rank);
    PMIX_VALUE_LOAD(&v, s, PMIX_STRING);
    rc = PMIx_Put(PMIX_LOCAL, CARD_LOCAL, &v);
    PMIX_VALUE_DESTRUCT(&v);
    return rc;
}

static void answers(uint32_t size, const char *host)
{
    pmix_info_t imm[1], q[3];
    bool t = true;
    uint32_t appnum = 0;

    /* PMIX_IMMEDIATE: a reserved key the job lacks is NOT_FOUND at once, not after a wait. */
    PMIX_INFO_LOAD(&imm[0], PMIX_IMMEDIATE, &t, PMIX_BOOL);
    for (size_t i = 0; i < sizeof(JOB_KEYS) / sizeof(JOB_KEYS[0]); i++) {
        get(PMIX_RANK_WILDCARD, "job", &JOB_KEYS[i], imm, 1);
    }
    for (pmix_rank_t r = 0; r < size; r++) {
        for (size_t i = 0; i < sizeof(PROC_KEYS) / sizeof(PROC_KEYS[0]); i++) {
            get(r, "proc", &PROC_KEYS[i], imm, 1);
        }
    }
    PMIX_INFO_LOAD(&q[0], PMIX_SESSION_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[1], PMIX_IMMEDIATE, &t, PMIX_BOOL);
    for (size_t i = 0; i < sizeof(SESSION_KEYS) / sizeof(SESSION_KEYS[0]); i++) {
        get(PMIX_RANK_WILDCARD, "session", &SESSION_KEYS[i], q, 2);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_LOAD(&q[0], PMIX_APP_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[2], PMIX_APPNUM, &appnum, PMIX_UINT32);
    for (size_t i = 0; i < sizeof(APP_KEYS) / sizeof(APP_KEYS[0]); i++) {
        get(PMIX_RANK_WILDCARD, "app", &APP_KEYS[i], q, 3);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_DESTRUCT(&q[2]);
    PMIX_INFO_LOAD(&q[0], PMIX_NODE_INFO, &t, PMIX_BOOL);
    PMIX_INFO_LOAD(&q[2], PMIX_HOSTNAME, host, PMIX_STRING);
    for (size_t i = 0; i < sizeof(NODE_KEYS) / sizeof(NODE_KEYS[0]); i++) {
        get(PMIX_RANK_WILDCARD, "node", &NODE_KEYS[i], q, 3);
    }
    PMIX_INFO_DESTRUCT(&q[0]);
    PMIX_INFO_DESTRUCT(&q[1]);
    PMIX_INFO_DESTRUCT(&q[2]);

    /* Every rank's cards (its own among them), then a key nobody posted. */
    static const struct key CARDS[] = {{"card", CARD}, {"card.num", CARD_NUM},
                                       {"card.blob", CARD_BLOB}, {"card.local", CARD_LOCAL}};
    for (pmix_rank_t r = 0; r < size; r++) {
        for (size_t i = 0; i < sizeof(CARDS) / sizeof(CARDS[0]); i++) {
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

static void store_checks(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char buf[8192];
    char *files[MAX_PATHS], *dirs[MAX_PATHS];
    size_t nfiles = 0, ndirs = 0, nmaps = 0;
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
    if (NULL == maps) {
        line("map %u none cannot-read-maps -", me.rank);
        return;
    }
    while (fgets(buf, sizeof(buf), maps)) {
        char perms[8], path[4096];
        buf[strcspn(buf, "\n")] = '\0';
        /* addr perms offset dev inode path */
        if (2 != sscanf(buf, "%*s %7s %*s %*s %*s %4095[^\n]", perms, path)) {
            continue;
        }
        if (NULL == strstr(path, "/rshm-")) {
            continue;
        }
        char *del = strstr(path, " (deleted)");
        if (NULL != del) {
            *del = '\0';
        }
        char dcopy[4096];
        snprintf(dcopy, sizeof(dcopy), "%s", path);
        const char *dir = dirname(dcopy);
        struct statfs fs;
        bool tmpfs = 0 == statfs(dir, &fs) && TMPFS_MAGIC == (unsigned long) fs.f_type;
        line("map %u %s %s %s%s", me.rank, perms, tmpfs ? "tmpfs" : "not-tmpfs", path,
             NULL != del ? " (deleted)" : "");
        nmaps++;
        if (NULL == del && nfiles < MAX_PATHS && !seen(files, nfiles, path)) {
            files[nfiles++] = strdup(path);
        }
        if (ndirs < MAX_PATHS && !seen(dirs, ndirs, dir)) {
            dirs[ndirs++] = strdup(dir);
        }
    }
    fclose(maps);
    if (0 == nmaps) {
        line("map %u none - -", me.rank);
    }
    if (0 == geteuid()) {
        if (nmaps > 0) {
            line("try %u all skipped-as-root - -", me.rank);
        }
    } else {
        for (size_t i = 0; i < nfiles; i++) {
            try_file(files[i]);
        }
        for (size_t i = 0; i < ndirs; i++) {
            try_dir(dirs[i]);
        }
    }
    for (size_t i = 0; i < nfiles; i++) {
        free(files[i]);
    }
    for (size_t i = 0; i < ndirs; i++) {
        free(dirs[i]);
    }
}

int main(int argc, char **argv)
{
    int hold = 0;
    pmix_status_t rc;
    pmix_value_t *val = NULL;
    pmix_proc_t wild;
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
    PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &val);
    if (PMIX_SUCCESS != rc || NULL == val || PMIX_UINT32 != val->type) {
        fprintf(stderr, "job-client: PMIX_JOB_SIZE: %s\n", PMIx_Error_string(rc));
        PMIx_Finalize(NULL, 0);
        return 1;
    }
    size = val->data.uint32;
    PMIX_VALUE_RELEASE(val);
    gethostname(host, sizeof(host) - 1);
    host[strcspn(host, ".")] = '\0';

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
        fprintf(stderr, "job-client: rank %u: put/commit/fence: %s\n", me.rank,
                PMIx_Error_string(rc));
        PMIx_Finalize(NULL, 0);
        return 1;
    }
    answers(size, host);
    store_checks();
    if (hold > 0) {
        line("hold %u %s", me.rank, me.nspace);
        sleep((unsigned) hold);
    }
    /* Nobody finalizes (and so unmaps) before every rank has looked at the store. */
    rc = PMIx_Fence(&wild, 1, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "job-client: rank %u: last fence: %s\n", me.rank, PMIx_Error_string(rc));
    }
    rc = PMIx_Finalize(NULL, 0);
    line("done %u %s", me.rank, PMIx_Error_string(rc));
    return PMIX_SUCCESS == rc ? 0 : 1;
}
