/*
 * pmix-client - run a query corpus against the PMIx server that
 * launched us and print one canonical line per query.
 *
 * Usage: pmix-client [-t] [-i] [-d LIBRSHM_CLIENT.so] CORPUS
 *   -t   also print the wall time of every PMIx_Get to stderr as
 *        "pmix-client: rank=R id=ID get_us=N"
 *   -i   add PMIX_IMMEDIATE=true to every query that has none of
 *        PMIX_IMMEDIATE / PMIX_OPTIONAL / PMIX_TIMEOUT. Without it the
 *        qualifiers are exactly those on the line - and OpenPMIx 4.2.2
 *        then waits ~2 s (answering TIMEOUT) for a missing non-reserved
 *        key of a local process.
 *   -d   direct: no PMIx_Init; rshm_client_attach(NULL, NULL) from LIB (dlopen) and every
 *        Get is rshm_client_get (rshm_client.h); with RSHM_BENCH_INTO=1 in the environment,
 *        bench lines time rshm_client_get_into into a stack pmix_value_t instead. Only Get and
 *        digest lines, bench, stats, firstget, du, rm and maps work then (put/commit/fence need
 *        a PMIx server: bad corpus line).
 *
 * Corpus lines (blank lines and lines starting with '#' are ignored):
 *   <id> <rank> <key> [QUAL[:TYPE]=VALUE ...]   PMIx_Get on our own nspace
 *       rank: a number, '*' (PMIX_RANK_WILDCARD), 'undef' (PMIX_RANK_UNDEF)
 *             or 'me' (our own rank)
 *       key / QUAL: a macro name from pmix_common.h (PMIX_JOB_SIZE) or a
 *             literal key string ("pmix.job.size", "my.card")
 *       TYPE: the qualifier's value type; defaults to the type documented
 *             for the attribute in pmix_common.h
 *   put <local|remote|global> <key> <value...>   PMIx_Put of a string
 *       value ("%r" in the value is replaced by our rank)
 *   putbuf <local|remote|global> <key> <value...>  the same as a PMIX_DATA_BUFFER holding
 *       the value's bytes
 *   putstats <local|remote|global> <key> <value...>  the same as a PMIX_PROC_STATS whose cmd
 *       is the value (a type rshm does not store)
 *   commit                                       PMIx_Commit
 *   fence [nocollect]                            PMIx_Fence over the
 *       whole nspace, with PMIX_COLLECT_DATA=true unless 'nocollect'
 *   bench <n> <rank> <key>                       n PMIx_Get + PMIX_VALUE_RELEASE
 *       of one key, timed in batches of 32 calls; prints
 *       "bench <myrank> <key> <status> p50_ns=<x> p99_ns=<y> calls=<n>"
 *       (per-call time of the median / 99th-percentile batch)
 *       <rank> may also be "rand:K": every call asks another rank, drawn uniformly
 *       from 0..K-1 (pre-drawn, xorshift, seeded with our rank); status is the first failure
 *   stats                                        "stats <myrank> init_us=.. first_get_us=..
 *       fence_us=.. rss_anon_kb=.. rss_shmem_kb=.. rss_file_kb=.. pss_kb=.. pss_anon_kb=..
 *       pss_shmem_kb=.. vmhwm_kb=.. attach_us=..": PMIx_Init (or, with -d, dlopen of LIB and
 *       rshm_client_attach) time, the first Get after it (corpus line "firstget"), the last
 *       fence's time (-1: none), memory from /proc/self/status and /proc/self/smaps_rollup,
 *       and with -d rshm_client_attach alone (-1 otherwise), then fence_enter_ns=.. fence_exit_ns=..:
 *       the last fence's entry and return on CLOCK_MONOTONIC (-1: none)
 *   firstget                                     one timed PMIx_Get of PMIX_JOB_SIZE (rank *)
 *   du PATH...                                   "du <myrank> <PATH> bytes=<allocated>
 *       size=<apparent> files=<n> path=<resolved PATH>" over the regular files under PATH ("$NAME": the path in
 *       that environment variable; "du <myrank> <PATH> none" when unset or missing)
 *   digest <id> <rank> <key> [QUAL...]           a Get line whose value is printed as
 *       "len=<bytes of its canonical text> fnv1a=<64-bit FNV-1a of that text, hex>"
 *   rm PATH...                                   remove PATH and everything under it ("$NAME":
 *       the path in that environment variable): "rm <myrank> <PATH> removed" or "... none"
 *   maps [SUBSTRING]                             the lines of /proc/self/maps whose path
 *       contains SUBSTRING (default "rshm-"): "maps <myrank> <perms> <path>" each, or
 *       "maps <myrank> none" (shows which shared-memory segments the process mapped, and how)
 *
 * Output, one line per corpus line (written with a single write(2) so
 * that lines from several clients sharing a pipe do not interleave):
 *   <id> <myrank> <status> <type> <value>   for a query ('-' '-' when
 *                                           the Get failed)
 *   put:<key> <myrank> <status>
 *   commit <myrank> <status>
 *   fence <myrank> <status>
 * See README.md for the canonical value text.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pmix.h>

#include "common.h"

#define MAX_TOKENS 64

static pmix_proc_t myproc;
static bool timing = false;
static bool immediate = false;

/* Timings and the Get entry point (PMIx_Get, or rshm_client_get with -d). */
typedef pmix_status_t (*get_fn_t)(const pmix_proc_t *, const char *, const pmix_info_t *, size_t,
                                  pmix_value_t **);
static get_fn_t get_fn = PMIx_Get;
static bool direct = false;
/* -d with RSHM_BENCH_INTO=1 in the environment: bench lines time rshm_client_get_into (the
 * value written into a stack pmix_value_t, PMIX_VALUE_DESTRUCT after) instead of
 * rshm_client_get + PMIX_VALUE_RELEASE. */
typedef pmix_status_t (*get_into_fn_t)(const pmix_proc_t *, const char *, const pmix_info_t *,
                                       size_t, pmix_value_t *);
static get_into_fn_t get_into_fn = NULL;
static long long init_us = -1, first_get_us = -1, fence_us = -1, attach_us = -1;
/* The last fence's entry and return on CLOCK_MONOTONIC (ns), one clock for every process of the
 * machine: the collective's own time is the last client's entry to the first client's return. */
static long long fence_enter_ns = -1, fence_exit_ns = -1;

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* Write the memstream contents as one line with a single write(2). */
static void emit(char *buf, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(STDOUT_FILENO, buf + off, len - off);
        if (n <= 0) {
            break;
        }
        off += (size_t) n;
    }
    free(buf);
}

static int parse_rank(const char *s, pmix_rank_t *r)
{
    pmix_value_t v;
    if (!strcmp(s, "me")) {
        *r = myproc.rank;
        return 0;
    }
    if (parse_value(PMIX_PROC_RANK, s, &v)) {
        return -1;
    }
    *r = v.data.rank;
    return 0;
}

/* Parse "NAME[:TYPE]=VALUE" into an info struct. */
static int parse_qualifier(const char *tok, pmix_info_t *info)
{
    char *s = strdup(tok), *eq = strchr(s, '='), *colon;
    pmix_data_type_t type = PMIX_UNDEF;
    pmix_value_t v;
    int rc = -1;

    if (!eq) {
        fprintf(stderr, "pmix-client: qualifier '%s' is not NAME=VALUE\n", tok);
        goto out;
    }
    *eq = '\0';
    colon = strchr(s, ':');
    if (colon) {
        *colon = '\0';
        type = type_by_name(colon + 1);
    } else {
        const struct attr_def *a = attr_by_name(s);
        if (a) {
            type = type_by_name(a->ctype);
        }
    }
    if (PMIX_UNDEF == type) {
        fprintf(stderr, "pmix-client: no usable type for qualifier '%s'; use NAME:TYPE=VALUE\n", tok);
        goto out;
    }
    if (parse_value(type, eq + 1, &v)) {
        goto out;
    }
    PMIX_INFO_CONSTRUCT(info);
    PMIX_LOAD_KEY(info->key, resolve_key(s));
    PMIx_Value_xfer(&info->value, &v);
    PMIX_VALUE_DESTRUCT(&v);
    rc = 0;
out:
    free(s);
    return rc;
}

/* FNV-1a (64 bit) of n bytes: a short, stable stand-in for a large value's text. */
static uint64_t fnv1a(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ (unsigned char) p[i]) * 0x100000001b3ULL;
    }
    return h;
}

/* A Get line (tok[0] the id). With `digest`, the value's canonical text is replaced by its
 * length and FNV-1a hash: a multi-MiB answer is one short line (a long write(2) to the shared
 * pipe could interleave with other clients' lines). */
static int do_get(char **tok, int ntok, bool digest)
{
    pmix_proc_t proc;
    pmix_info_t *info = NULL;
    size_t ninfo = (size_t) (ntok - 3);
    pmix_value_t *val = NULL;
    pmix_status_t rc;
    char *buf;
    size_t len;
    FILE *out;
    long long t0, t1;

    PMIX_LOAD_NSPACE(proc.nspace, myproc.nspace);
    if (parse_rank(tok[1], &proc.rank)) {
        return -1;
    }
    if (ninfo > 0 || immediate) {
        bool add_immediate = immediate;
        PMIX_INFO_CREATE(info, ninfo + 1);
        for (size_t i = 0; i < ninfo; i++) {
            if (parse_qualifier(tok[3 + i], &info[i])) {
                PMIX_INFO_FREE(info, ninfo + 1);
                return -1;
            }
            if (PMIX_CHECK_KEY(&info[i], PMIX_IMMEDIATE) || PMIX_CHECK_KEY(&info[i], PMIX_OPTIONAL) ||
                PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT)) {
                add_immediate = false;
            }
        }
        if (add_immediate) {
            bool t = true;
            PMIX_INFO_LOAD(&info[ninfo], PMIX_IMMEDIATE, &t, PMIX_BOOL);
            ninfo++;
        }
    }

    t0 = now_us();
    rc = get_fn(&proc, resolve_key(tok[2]), info, ninfo, &val);
    t1 = now_us();

    out = open_memstream(&buf, &len);
    fprintf(out, "%s %u %s ", tok[0], myproc.rank, PMIx_Error_string(rc));
    if (PMIX_SUCCESS == rc && NULL != val) {
        fprintf(out, "%s ", PMIx_Data_type_string(val->type));
        if (digest) {
            char *text;
            size_t tlen;
            FILE *t = open_memstream(&text, &tlen);
            fmt_value(t, val);
            fclose(t);
            fprintf(out, "len=%zu fnv1a=%016llx", tlen, (unsigned long long) fnv1a(text, tlen));
            free(text);
        } else {
            fmt_value(out, val);
        }
        PMIX_VALUE_RELEASE(val);
    } else {
        fputs("- -", out);
    }
    fputc('\n', out);
    fclose(out);
    emit(buf, len);
    if (timing) {
        fprintf(stderr, "pmix-client: rank=%u id=%s get_us=%lld\n", myproc.rank, tok[0], t1 - t0);
    }
    if (info) {
        PMIX_INFO_FREE(info, (size_t) (ntok - 3) + 1);
    }
    return 0;
}


static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *) a, y = *(const long long *) b;
    return (x > y) - (x < y);
}

/* bench <n> <rank> <key>: per-call latency of PMIx_Get (+ release), batch medians. */
static int do_bench(char **tok, int ntok)
{
    enum { BATCH = 32 };
    pmix_proc_t proc;
    pmix_status_t rc = PMIX_SUCCESS;
    if (ntok != 4) {
        return -1;
    }
    long n = atol(tok[1]);
    if (n < BATCH) {
        n = BATCH;
    }
    PMIX_LOAD_NSPACE(proc.nspace, myproc.nspace);
    pmix_rank_t *ranks = NULL; /* rand:K - one pre-drawn rank per call */
    if (!strncmp(tok[2], "rand:", 5)) {
        unsigned long k = strtoul(tok[2] + 5, NULL, 10);
        uint64_t x = 0x9e3779b97f4a7c15ULL ^ ((uint64_t) myproc.rank + 1);
        if (0 == k) {
            return -1;
        }
        ranks = malloc((size_t) n * sizeof(pmix_rank_t));
        for (long i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ranks[i] = (pmix_rank_t) (x % k);
        }
        proc.rank = ranks[0];
    } else if (parse_rank(tok[2], &proc.rank)) {
        return -1;
    }
    const char *key = resolve_key(tok[3]);
    size_t nb = (size_t) (n / BATCH);
    long long *per = calloc(nb, sizeof(long long));
    for (size_t b = 0; b < nb; b++) {
        long long t0 = now_ns();
        for (int i = 0; i < BATCH; i++) {
            pmix_value_t *val = NULL;
            pmix_status_t r;
            if (ranks) {
                proc.rank = ranks[b * BATCH + (size_t) i];
            }
            if (get_into_fn) {
                pmix_value_t v;
                r = get_into_fn(&proc, key, NULL, 0, &v);
                PMIX_VALUE_DESTRUCT(&v);
            } else {
                r = get_fn(&proc, key, NULL, 0, &val);
            }
            if (PMIX_SUCCESS == rc || !ranks) {
                rc = r;
            }
            if (val) {
                PMIX_VALUE_RELEASE(val);
            }
        }
        per[b] = (now_ns() - t0) / BATCH;
    }
    qsort(per, nb, sizeof(long long), cmp_ll);
    char *buf;
    size_t len;
    FILE *out = open_memstream(&buf, &len);
    fprintf(out, "bench %u %s %s p50_ns=%lld p99_ns=%lld calls=%ld%s\n", myproc.rank, tok[3],
            PMIx_Error_string(rc), per[nb / 2], per[(nb * 99) / 100], (long) (nb * BATCH),
            get_into_fn ? " via=get_into" : "");
    fclose(out);
    emit(buf, len);
    free(per);
    free(ranks);
    return 0;
}

/* firstget: one timed Get of PMIX_JOB_SIZE (rank WILDCARD), the first after init. */
static int do_firstget(void)
{
    pmix_proc_t proc;
    pmix_value_t *val = NULL;
    PMIX_LOAD_PROCID(&proc, myproc.nspace, PMIX_RANK_WILDCARD);
    long long t0 = now_ns();
    pmix_status_t rc = get_fn(&proc, PMIX_JOB_SIZE, NULL, 0, &val);
    first_get_us = (now_ns() - t0) / 1000;
    if (val) {
        PMIX_VALUE_RELEASE(val);
    }
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "pmix-client: firstget: %s\n", PMIx_Error_string(rc));
    }
    return 0;
}

/* "Name:   123 kB" lines of a /proc file: the number, or -1. */
static long long proc_kb(const char *path, const char *name)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0, nl = strlen(name);
    long long v = -1;
    if (!f) {
        return -1;
    }
    while (getline(&line, &cap, f) > 0) {
        if (!strncmp(line, name, nl) && ':' == line[nl]) {
            v = atoll(line + nl + 1);
            break;
        }
    }
    free(line);
    fclose(f);
    return v;
}

/* stats: init/first-get/fence times and memory. */
static int do_stats(void)
{
    const char *st = "/proc/self/status", *sm = "/proc/self/smaps_rollup";
    char *buf;
    size_t len;
    FILE *out = open_memstream(&buf, &len);
    fprintf(out,
            "stats %u init_us=%lld first_get_us=%lld fence_us=%lld rss_anon_kb=%lld "
            "rss_shmem_kb=%lld rss_file_kb=%lld pss_kb=%lld pss_anon_kb=%lld pss_shmem_kb=%lld "
            "vmhwm_kb=%lld attach_us=%lld fence_enter_ns=%lld fence_exit_ns=%lld\n",
            myproc.rank, init_us, first_get_us, fence_us, proc_kb(st, "RssAnon"),
            proc_kb(st, "RssShmem"), proc_kb(st, "RssFile"), proc_kb(sm, "Pss"),
            proc_kb(sm, "Pss_Anon"), proc_kb(sm, "Pss_Shmem"), proc_kb(st, "VmHWM"), attach_us,
            fence_enter_ns, fence_exit_ns);
    fclose(out);
    emit(buf, len);
    return 0;
}

static long long du_bytes, du_size, du_files;

static int du_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void) p;
    (void) ftw;
    if (FTW_F == flag && S_ISREG(sb->st_mode)) {
        du_bytes += (long long) sb->st_blocks * 512;
        du_size += (long long) sb->st_size;
        du_files++;
    }
    return 0;
}

/* du PATH...: bytes of the regular files under each PATH ($NAME: from the environment). */
static int do_du(char **tok, int ntok)
{
    for (int i = 1; i < ntok; i++) {
        const char *path = '$' == tok[i][0] ? getenv(tok[i] + 1) : tok[i];
        char *buf;
        size_t len;
        FILE *out = open_memstream(&buf, &len);
        du_bytes = du_size = du_files = 0;
        if (path && *path && 0 == nftw(path, du_entry, 16, FTW_PHYS)) {
            fprintf(out, "du %u %s bytes=%lld size=%lld files=%lld path=%s\n", myproc.rank, tok[i],
                    du_bytes, du_size, du_files, path);
        } else {
            fprintf(out, "du %u %s none\n", myproc.rank, tok[i]);
        }
        fclose(out);
        emit(buf, len);
    }
    return 0;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void) sb;
    (void) flag;
    (void) ftw;
    return remove(p);
}

/* rm PATH...: remove each PATH and everything under it ($NAME: from the environment), e.g. a
 * store taken away under its clients. Prints "rm <myrank> <PATH> removed" or "... none". */
static int do_rm(char **tok, int ntok)
{
    for (int i = 1; i < ntok; i++) {
        const char *path = '$' == tok[i][0] ? getenv(tok[i] + 1) : tok[i];
        char *buf;
        size_t len;
        FILE *out = open_memstream(&buf, &len);
        bool removed = path && *path && 0 == access(path, F_OK)
                       && 0 == nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        fprintf(out, "rm %u %s %s\n", myproc.rank, tok[i], removed ? "removed" : "none");
        fclose(out);
        emit(buf, len);
    }
    return 0;
}

/* -d LIB: rshm's client library instead of PMIx_Init + PMIx_Get. */
static pmix_status_t (*rshm_attach)(const char *, const pmix_proc_t *);
static pmix_status_t (*rshm_detach)(void);

static void *direct_sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "pmix-client: -d: %s: %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

static pmix_status_t direct_init(const char *libpath)
{
    void *lib = dlopen(libpath, RTLD_NOW | RTLD_LOCAL), *p;
    const char *ns = getenv("RSHM_NSPACE"), *rk = getenv("RSHM_RANK");
    if (!lib) {
        fprintf(stderr, "pmix-client: -d %s: %s\n", libpath, dlerror());
        return PMIX_ERROR;
    }
    /* POSIX: a data pointer from dlsym converts to a function pointer through memcpy. */
    p = direct_sym(lib, "rshm_client_attach");
    memcpy(&rshm_attach, &p, sizeof(p));
    p = direct_sym(lib, "rshm_client_detach");
    memcpy(&rshm_detach, &p, sizeof(p));
    p = direct_sym(lib, "rshm_client_get");
    memcpy(&get_fn, &p, sizeof(p));
    if (getenv("RSHM_BENCH_INTO") && !strcmp(getenv("RSHM_BENCH_INTO"), "1")) {
        p = direct_sym(lib, "rshm_client_get_into");
        memcpy(&get_into_fn, &p, sizeof(p));
    }
    if (!ns || !rk) {
        ns = getenv("PMIX_NAMESPACE");
        rk = getenv("PMIX_RANK");
    }
    PMIX_LOAD_PROCID(&myproc, ns ? ns : "", rk ? (pmix_rank_t) strtoul(rk, NULL, 10) : 0);
    long long t = now_ns();
    pmix_status_t rc = rshm_attach(NULL, NULL);
    attach_us = (now_ns() - t) / 1000;
    return rc;
}

/* maps [SUBSTRING]: the mappings of this process whose path contains SUBSTRING. */
static int do_maps(char **tok, int ntok)
{
    const char *want = ntok > 1 ? tok[1] : "rshm-";
    FILE *f = fopen("/proc/self/maps", "r");
    char *line = NULL, *buf;
    size_t cap = 0, len;
    int found = 0;
    FILE *out;

    if (!f) {
        perror("/proc/self/maps");
        return -1;
    }
    out = open_memstream(&buf, &len);
    while (getline(&line, &cap, f) > 0) {
        /* address perms offset dev inode path */
        char perms[8], path[4096];
        path[0] = '\0';
        if (sscanf(line, "%*s %7s %*s %*s %*s %4095[^\n]", perms, path) < 1) {
            continue;
        }
        if (path[0] && strstr(path, want)) {
            fprintf(out, "maps %u %s %s\n", myproc.rank, perms, path);
            found++;
        }
    }
    if (!found) {
        fprintf(out, "maps %u none\n", myproc.rank);
    }
    fclose(out);
    emit(buf, len);
    free(line);
    fclose(f);
    return 0;
}

static void print_status(const char *what, pmix_status_t rc)
{
    char *buf;
    size_t len;
    FILE *out = open_memstream(&buf, &len);
    fprintf(out, "%s %u %s\n", what, myproc.rank, PMIx_Error_string(rc));
    fclose(out);
    emit(buf, len);
}

enum put_kind { PUT_STRING, PUT_BUFFER, PUT_STATS };

static int do_put(char **tok, int ntok, enum put_kind kind)
{
    pmix_scope_t scope;
    pmix_value_t v;
    char *buf, *label;
    size_t len;
    FILE *out;
    pmix_status_t rc;

    if (ntok < 4) {
        fprintf(stderr, "pmix-client: put needs SCOPE KEY VALUE\n");
        return -1;
    }
    if (!strcmp(tok[1], "local")) {
        scope = PMIX_LOCAL;
    } else if (!strcmp(tok[1], "remote")) {
        scope = PMIX_REMOTE;
    } else if (!strcmp(tok[1], "global")) {
        scope = PMIX_GLOBAL;
    } else {
        fprintf(stderr, "pmix-client: bad put scope '%s'\n", tok[1]);
        return -1;
    }
    /* value: remaining tokens joined by single spaces, %r -> my rank */
    out = open_memstream(&buf, &len);
    for (int i = 3; i < ntok; i++) {
        if (i > 3) {
            fputc(' ', out);
        }
        for (const char *p = tok[i]; *p; p++) {
            if ('%' == p[0] && 'r' == p[1]) {
                fprintf(out, "%u", myproc.rank);
                p++;
            } else {
                fputc(*p, out);
            }
        }
    }
    fclose(out);
    PMIX_VALUE_CONSTRUCT(&v);
    if (PUT_STATS == kind) {
        pmix_proc_stats_t st;
        memset(&st, 0, sizeof(st));
        st.node = "node";
        st.proc = myproc;
        st.cmd = buf;
        v.type = PMIX_PROC_STATS;
        v.data.pstats = &st;
        rc = PMIx_Put(scope, resolve_key(tok[2]), &v);
        free(buf);
    } else if (PUT_BUFFER == kind) {
        /* the buffer takes the string's bytes; PMIx_Put copies the value */
        pmix_data_buffer_t *db;
        PMIX_DATA_BUFFER_CREATE(db);
        if (NULL == db) {
            free(buf);
            return -1;
        }
        PMIX_DATA_BUFFER_LOAD(db, buf, len);
        v.type = PMIX_DATA_BUFFER;
        v.data.dbuf = db;
        rc = PMIx_Put(scope, resolve_key(tok[2]), &v);
        PMIX_DATA_BUFFER_RELEASE(db);
    } else {
        v.type = PMIX_STRING;
        v.data.string = buf;
        rc = PMIx_Put(scope, resolve_key(tok[2]), &v);
        PMIX_VALUE_DESTRUCT(&v);
    }
    if (0 > asprintf(&label, "put:%s", tok[2])) {
        return -1;
    }
    print_status(label, rc);
    free(label);
    return 0;
}

static int do_fence(char **tok, int ntok)
{
    pmix_proc_t all;
    pmix_info_t info;
    bool collect = !(ntok > 1 && !strcmp(tok[1], "nocollect"));
    pmix_status_t rc;

    PMIX_LOAD_PROCID(&all, myproc.nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    long long t0 = now_ns();
    rc = PMIx_Fence(&all, 1, &info, 1);
    long long t1 = now_ns();
    fence_us = (t1 - t0) / 1000;
    fence_enter_ns = t0;
    fence_exit_ns = t1;
    PMIX_INFO_DESTRUCT(&info);
    print_status("fence", rc);
    return 0;
}

int main(int argc, char **argv)
{
    const char *path, *direct_lib = NULL;
    FILE *f;
    char *line = NULL;
    size_t cap = 0;
    pmix_status_t rc;
    int ret = 0, lineno = 0;

    while (argc > 1 && '-' == argv[1][0]) {
        if (!strcmp(argv[1], "-t")) {
            timing = true;
        } else if (!strcmp(argv[1], "-i")) {
            immediate = true;
        } else if (!strcmp(argv[1], "-d") && argc > 2) {
            direct_lib = argv[2];
            direct = true;
            argv++;
            argc--;
        } else {
            argc = 0; /* usage */
            break;
        }
        argv++;
        argc--;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: pmix-client [-t] [-i] [-d LIBRSHM_CLIENT.so] CORPUS\n");
        return 2;
    }
    path = argv[1];
    f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 2;
    }
    long long t_init = now_ns();
    rc = direct ? direct_init(direct_lib) : PMIx_Init(&myproc, NULL, 0);
    init_us = (now_ns() - t_init) / 1000;
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "pmix-client: %s failed: %s\n", direct ? "rshm_client_attach" : "PMIx_Init",
                PMIx_Error_string(rc));
        fclose(f);
        return 1;
    }

    while (getline(&line, &cap, f) > 0) {
        char *tok[MAX_TOKENS], *save = NULL;
        int ntok = 0;

        lineno++;
        for (char *t = strtok_r(line, " \t\r\n", &save); t && ntok < MAX_TOKENS;
             t = strtok_r(NULL, " \t\r\n", &save)) {
            tok[ntok++] = t;
        }
        if (0 == ntok || '#' == tok[0][0]) {
            continue;
        }
        int bad;
        bool is_put = !strcmp(tok[0], "put") || !strcmp(tok[0], "putbuf") || !strcmp(tok[0], "putstats");
        if (direct && (is_put || !strcmp(tok[0], "commit") || !strcmp(tok[0], "fence"))) {
            bad = -1;
        } else if (!strcmp(tok[0], "stats")) {
            bad = do_stats();
        } else if (!strcmp(tok[0], "firstget")) {
            bad = do_firstget();
        } else if (!strcmp(tok[0], "du")) {
            bad = do_du(tok, ntok);
        } else if (!strcmp(tok[0], "rm")) {
            bad = do_rm(tok, ntok);
        } else if (!strcmp(tok[0], "digest") && ntok >= 4) {
            bad = do_get(tok + 1, ntok - 1, true);
        } else if (is_put) {
            bad = do_put(tok, ntok, !strcmp(tok[0], "putbuf") ? PUT_BUFFER
                                    : !strcmp(tok[0], "putstats") ? PUT_STATS : PUT_STRING);
        } else if (!strcmp(tok[0], "commit")) {
            print_status("commit", PMIx_Commit());
            bad = 0;
        } else if (!strcmp(tok[0], "fence")) {
            bad = do_fence(tok, ntok);
        } else if (!strcmp(tok[0], "bench")) {
            bad = do_bench(tok, ntok);
        } else if (!strcmp(tok[0], "maps")) {
            bad = do_maps(tok, ntok);
        } else if (ntok >= 3) {
            bad = do_get(tok, ntok, false);
        } else {
            bad = -1;
        }
        if (bad) {
            fprintf(stderr, "pmix-client: %s:%d: bad corpus line\n", path, lineno);
            ret = 2;
            break;
        }
    }
    free(line);
    fclose(f);

    if (direct) {
        rshm_detach();
    } else if (PMIX_SUCCESS != (rc = PMIx_Finalize(NULL, 0))) {
        fprintf(stderr, "pmix-client: PMIx_Finalize failed: %s\n", PMIx_Error_string(rc));
        ret = ret ? ret : 1;
    }
    return ret;
}
