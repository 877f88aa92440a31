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
 *   --psets FILE defines process sets before the clients start and deletes
 *   some during their first fence (host-psets.c; README.md, "Process sets").
 *   --replay-registration DUMPFILE instead of --job: register exactly the
 *   infos of a dump (e.g. one the gds component recorded from a real host)
 *   and start the local node's ranks (its PMIX_LOCAL_PEERS) as clients.
 *
 * Regex mode:
 *   pmix-host [--regex "node001,node002"] [--ppn "0,1;2,3"] [--tmpdir DIR]
 *   Prints what PMIx_generate_regex / PMIx_generate_ppn return, as
 *     regex <input> => <output>
 *     ppn <input> => <output>
 *   with both sides as C-escaped quoted strings (the library must be
 *   initialised first: before PMIx_server_init they return nothing).
 *
 * This file holds main; host.h lists the other files of pmix-host.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <ftw.h>
#include <signal.h>
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
#include "host.h"

extern char **environ;

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
                    "                 [--psets FILE]\n"
                    "       pmix-host --replay-registration DUMPFILE --client-cmd \"prog args\" [...]\n"
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

/* How many of the local ranks to start (default all), and whether that can be done. */
static void check_clients(int *nclients, const node_t *me, const char *client_cmd)
{
    if (*nclients < 0) {
        *nclients = me->nranks;
    }
    if (*nclients > me->nranks) {
        die("--clients %d but only %d ranks on local node %s", *nclients, me->nranks, me->name);
    }
    if (*nclients > 0 && !client_cmd) {
        die("--client-cmd is required");
    }
    if (*nclients < me->nranks) {
        fprintf(stderr, "pmix-host: warning: starting %d of %d local ranks; collectives will hang\n",
                *nclients, me->nranks);
    }
}

int main(int argc, char **argv)
{
    const char *jobfile = NULL, *client_cmd = NULL, *tmpdir = NULL, *regex_in = NULL, *ppn_in = NULL;
    const char *dump_path = NULL, *rshm_lib = NULL, *replay = NULL, *psets_path = NULL;
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
        } else if (!strcmp(a, "--psets")) {
            psets_path = argv[++i];
        } else if (!strcmp(a, "--rshm")) {
            rshm_lib = argv[++i];
        } else if (!strcmp(a, "--replay-registration")) {
            replay = argv[++i];
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
    if ((!jobfile && !replay && !regex_in && !ppn_in) || (jobfile && replay)) {
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
    if (!jobfile && !replay) {
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
    infolist_t reg = {0};
    uint32_t nodeid = 0;
    if (replay) {
        load_replay(replay, &reg, &nodeid);
    } else {
        load_job(jobfile);
        nodeid = (uint32_t) job.local;
    }
    if (minimal) {
        job.minimal = true;
    }
    node_t *me = &job.nodes[job.local];
    /* nlocalprocs: the job file's local ranks, or the dump's header (its ranks may be known
     * only once libpmix has the registration's maps: replay_local_ranks below) */
    int nlocal = replay ? (int) job.size : me->nranks;
    if (!replay) {
        check_clients(&nclients, me, client_cmd);
    }

    server_init(tmpdir, me->name, nodeid);

    /* register the namespace (timed, call to completion callback) */
    if (!replay) {
        build_registration(&reg, client_cmd);
    }
    if (dump_path) {
        dump_registration(dump_path, &reg, (uint32_t) nlocal);
    }
    /* rshm first: each store is timed on the array as build_registration left it, as libpmix's
     * is in a run without --rshm (after libpmix's registration the array's pages are cold and
     * libpmix's copies of the job hold much of the machine's memory). */
    if (rshm_lib) {
        rshm_load(rshm_lib, tmpdir, me->name);
        struct rusage u0, u1;
        getrusage(RUSAGE_SELF, &u0);
        long long r0 = now_us();
        rshm_check(rshm.reg(rshm.h, job.nspace, nlocal, reg.v, reg.n), "register_nspace");
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
    rc = PMIx_server_register_nspace(job.nspace, nlocal, reg.v, reg.n, op_cb, &w);
    if (PMIX_SUCCESS == rc) {
        rc = wait_op(&w);
    }
    long long t1 = now_us();
    if (PMIX_SUCCESS != rc && PMIX_OPERATION_SUCCEEDED != rc) {
        die("PMIx_server_register_nspace: %s", PMIx_Error_string(rc));
    }
    fprintf(stderr, "pmix-host: register_nspace_us=%lld\n", t1 - t0);
    if (replay) {
        replay_local_ranks(me, nlocal);
        check_clients(&nclients, me, client_cmd);
    }
    if (psets_path) {
        psets_load(psets_path, job.nspace);
        psets_define_all();
    }

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

        rc = PMIx_server_register_client(&proc, job_uid(), job_gid(), NULL, op_cb, &w);
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
