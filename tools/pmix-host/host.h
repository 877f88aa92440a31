/*
 * host.h - what pmix-host's files share:
 *   pmix-host.c          main: options, regex mode, job mode (fork and wait for the clients)
 *   host-util.c          dying, allocation, the clock, waiting for a PMIx op callback
 *   host-job.c           the job description and its file parser (README.md, "Job file")
 *   host-registration.c  the PMIx_server_register_nspace info array and its dump
 *   host-server.c        the server module (callbacks) and PMIx_server_init
 *   host-rshm.c          the rshm server-shim, loaded with --rshm
 *   host-replay.c        --replay-registration: a registration dump read back
 *   host-psets.c         --psets: process sets defined, deleted and queried
 *   host-groups.c        the group upcall (construct / destruct)
 */
#ifndef PMIX_HOST_HOST_H
#define PMIX_HOST_HOST_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <pmix.h>
#include <pmix_server.h>

/* ------------------------------------------------------------------ */
/* host-util.c                                                         */
/* ------------------------------------------------------------------ */

void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void *xrealloc(void *p, size_t n);
long long now_us(void);

/* Blocking wait for a PMIx op callback. */
typedef struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    bool done;
    pmix_status_t status;
} waiter_t;

#define WAITER_INIT {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, PMIX_SUCCESS}
void op_cb(pmix_status_t status, void *cbdata);
pmix_status_t wait_op(waiter_t *w);

/* ------------------------------------------------------------------ */
/* host-job.c: the job description                                    */
/* ------------------------------------------------------------------ */

typedef struct {
    char *key; /* resolved key string */
    pmix_value_t val;
} kv_t;

typedef struct {
    kv_t *v;
    size_t n;
} kvlist_t;

typedef struct {
    char *name;
    pmix_rank_t *ranks; /* as listed; we sort them */
    int nranks;
    kvlist_t extra;
} node_t;

typedef struct {
    uint32_t num;
    pmix_rank_t *ranks;
    int nranks;
    kvlist_t extra;
} app_t;

typedef struct {
    int node;      /* index into job.nodes */
    int app;       /* index into job.apps */
    uint16_t lrank; /* local rank == node rank (single job) */
    uint32_t apprank;
    kvlist_t extra;
} proc_t;

typedef struct {
    char *nspace;
    node_t *nodes;
    int nnodes;
    app_t *apps;
    int napps;
    proc_t *procs; /* indexed by rank */
    uint32_t size;
    int local;     /* index of the local node */
    char *local_name;
    bool minimal;
    uint32_t sessionid;
    kvlist_t job_extra, session_extra;
} job_t;

extern job_t job;

/* Read the job file (README.md, "Job file") into job; dies on any error. */
void load_job(const char *path);

/* ------------------------------------------------------------------ */
/* host-registration.c                                                 */
/* ------------------------------------------------------------------ */

typedef struct {
    pmix_info_t *v;
    size_t n, cap;
} infolist_t;

/* The PMIx_server_register_nspace info array of job. */
void build_registration(infolist_t *top, const char *client_cmd);
/* --dump-registration: write reg to path (README.md, "Registration dump"). */
void dump_registration(const char *path, const infolist_t *reg, uint32_t nlocalprocs);

/* ------------------------------------------------------------------ */
/* host-replay.c                                                       */
/* ------------------------------------------------------------------ */

#define PMIX_HOST_XSTR(x) #x
#define PMIX_HOST_STR(x) PMIX_HOST_XSTR(x)

/* --replay-registration: read the dump at path into reg (exactly the infos it lists) and job
 * (nspace; one node, the local one, with the ranks the infos name for it: the clients; size =
 * nlocalprocs); *nodeid = the local node's PMIX_NODEID in the registration (0 if none). Dies
 * on any error. */
void load_replay(const char *path, infolist_t *reg, uint32_t *nodeid);
/* After the registration: when the dump named no local ranks, those libpmix resolves from the
 * maps (PMIx_Resolve_peers); dies unless there are nlocal of them. */
void replay_local_ranks(node_t *me, int nlocal);

/* ------------------------------------------------------------------ */
/* host-server.c                                                       */
/* ------------------------------------------------------------------ */

/* The forked clients (killed when one aborts). */
extern pid_t *children;
extern int nchildren;
/* Set when a client called PMIx_Abort. */
extern volatile sig_atomic_t aborted;
/* Direct-modex requests seen; with verbose each is logged. */
extern volatile int dmodex_calls;
extern bool verbose;

/* PMIx_server_init with our module; hostname NULL in regex mode. With $PMIX_HOST_JOB_UID or
 * $PMIX_HOST_JOB_GID set, also PMIX_USERID / PMIX_GRPID = job_uid() / job_gid(). */
void server_init(const char *tmpdir, const char *hostname, uint32_t nodeid);
/* The job's user and group: $PMIX_HOST_JOB_UID / $PMIX_HOST_JOB_GID, default ours. */
uint32_t job_uid(void);
uint32_t job_gid(void);

/* ------------------------------------------------------------------ */
/* host-rshm.c                                                         */
/* ------------------------------------------------------------------ */

/* ---------------- rshm server-shim, loaded with --rshm LIB ----------------
 * The host registers the same array with rshm beside OpenPMIx and adds what a client needs
 * to attach to its environment. Loaded with dlopen so this tool builds without Rust; the
 * signatures are those of server-shim/include/rshm_server.h. */
typedef struct rshm_server_t rshm_server_t;
struct rshm_api {
    rshm_server_t *h;
    pmix_status_t (*open)(const pmix_info_t *, size_t, rshm_server_t **);
    pmix_status_t (*close)(rshm_server_t *);
    pmix_status_t (*reg)(rshm_server_t *, const char *, int, const pmix_info_t *, size_t);
    pmix_status_t (*dereg)(rshm_server_t *, const char *);
    pmix_status_t (*fork)(rshm_server_t *, const pmix_proc_t *, char ***);
    size_t (*last_error)(char *, size_t);
    pmix_status_t (*define_pset)(rshm_server_t *, const char *, const pmix_proc_t *, size_t);
    pmix_status_t (*delete_pset)(rshm_server_t *, const char *);
    pmix_status_t (*define_psets)(rshm_server_t *, const void *, size_t);
    pmix_status_t (*group_construct)(rshm_server_t *, const char *, const pmix_proc_t *, size_t,
                                     const size_t *, const pmix_info_t *, size_t,
                                     const pmix_byte_object_t *, size_t);
    pmix_status_t (*group_destruct)(rshm_server_t *, const char *);
};
extern struct rshm_api rshm;

void rshm_check(pmix_status_t rc, const char *what);
void rshm_load(const char *path, const char *tmpdir, const char *hostname);

/* ------------------------------------------------------------------ */
/* host-psets.c                                                        */
/* ------------------------------------------------------------------ */

/* --psets FILE: read the sets ("@" names the job's namespace); dies on any error. */
void psets_load(const char *path, const char *job_nspace);
/* Define every set (rshm first when loaded, then libpmix); dies on a refusal. */
void psets_define_all(void);
/* The first fence while deletes are pending: true when it was taken (the deletes run on a
 * thread, which then completes the fence with the data). */
bool psets_fence(char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc, void *cbdata);
/* The server module's query upcall: the set keys, as PRRTE answers them. */
pmix_status_t host_query(pmix_proc_t *proct, pmix_query_t *queries, size_t nqueries,
                         pmix_info_cbfunc_t cbfunc, void *cbdata);

/* ------------------------------------------------------------------ */
/* host-groups.c                                                       */
/* ------------------------------------------------------------------ */

/* The server module's group upcall: completes at once (one node), context ids 1, 2, ... */
pmix_status_t host_group(pmix_group_operation_t op, char grp[], const pmix_proc_t procs[],
                         size_t nprocs, const pmix_info_t directives[], size_t ndirs,
                         pmix_info_cbfunc_t cbfunc, void *cbdata);

#endif
