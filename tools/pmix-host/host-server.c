/* host-server.c - the server module pmix-host gives OpenPMIx (a single node: fences complete
 * at once, direct modex is refused) and PMIx_server_init. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "host.h"

pid_t *children;
int nchildren;
volatile sig_atomic_t aborted;

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
 * library may release its buffer when we return. With PMIX_HOST_FENCE_TIMES set, each call
 * prints "pmix-host: fence_nb_ns=<CLOCK_MONOTONIC ns>": the moment the server library has every
 * local client's contribution (the scale harness places it within the clients' fence). */
static pmix_status_t fence_nb(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                              size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc,
                              void *cbdata)
{
    (void) procs;
    (void) nprocs;
    (void) info;
    (void) ninfo;
    if (getenv("PMIX_HOST_FENCE_TIMES")) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        fprintf(stderr, "pmix-host: fence_nb_ns=%lld\n",
                (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec);
    }
    if (psets_fence(data, ndata, cbfunc, cbdata)) {
        return PMIX_SUCCESS;
    }
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
volatile int dmodex_calls;
bool verbose;

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
    .query = host_query,
    .group = host_group,
};

/* $name as a uid/gid, or `dflt` when unset; dies on anything but a decimal number. */
static uint32_t env_id(const char *name, uint32_t dflt)
{
    const char *v = getenv(name);
    char *end = NULL;
    unsigned long id;
    if (NULL == v) {
        return dflt;
    }
    id = strtoul(v, &end, 10);
    if ('\0' == *v || '\0' != *end || id > UINT32_MAX - 1) {
        die("%s=%s: not a uid/gid", name, v);
    }
    return (uint32_t) id;
}

uint32_t job_uid(void)
{
    return env_id("PMIX_HOST_JOB_UID", (uint32_t) getuid());
}

uint32_t job_gid(void)
{
    return env_id("PMIX_HOST_JOB_GID", (uint32_t) getgid());
}

void server_init(const char *tmpdir, const char *hostname, uint32_t nodeid)
{
    pmix_info_t info[6];
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
    /* a server running for another user's job (as slurmstepd does, as root) names it; with
     * PMIX_HOST_INIT_NO_USERID=1 it does not (Slurm's PMIx plugin built against OpenPMIx >= 5
     * passes the job's ids only to PMIx_server_register_client) */
    const char *no_ids = getenv("PMIX_HOST_INIT_NO_USERID");
    if ((getenv("PMIX_HOST_JOB_UID") || getenv("PMIX_HOST_JOB_GID"))
        && !(no_ids && 0 == strcmp(no_ids, "1"))) {
        uint32_t uid = job_uid(), gid = job_gid();
        PMIX_INFO_LOAD(&info[n], PMIX_USERID, &uid, PMIX_UINT32);
        n++;
        PMIX_INFO_LOAD(&info[n], PMIX_GRPID, &gid, PMIX_UINT32);
        n++;
    }
    if (PMIX_SUCCESS != (rc = PMIx_server_init(&module, info, n))) {
        die("PMIx_server_init failed: %s", PMIx_Error_string(rc));
    }
    for (size_t i = 0; i < n; i++) {
        PMIX_INFO_DESTRUCT(&info[i]);
    }
}
