/*
 * host_calls: an unmodified PMIx server host over the real libpmix, making the calls the server
 * preload wraps, and printing what a client would be handed:
 *   init <status>
 *   register <nspace> <status>          (after the callback)
 *   register big <status> <map forms>   (3000 nodes: libpmix's compressed "blob:" maps when
 *                                        it is built with zlib, else "pmix[...]")
 *   env <nspace> <rank> <NAME=value>... (setup_fork's environment: RSHM_* and A, sorted)
 *   deregister <nspace>
 *   finalize <status> store-dir-entries <n>
 * Arguments: the store base directory ($RSHM_DIR, listed after finalize), the uid and gid to
 * pass as PMIX_USERID / PMIX_GRPID.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>
#include <pmix_server.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done;
static pmix_status_t cb_status;

static void op_cb(pmix_status_t status, void *cbdata)
{
    (void) cbdata;
    pthread_mutex_lock(&mu);
    cb_status = status;
    done = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

/* Wait for op_cb unless the call completed (or failed) at once. */
static pmix_status_t finish(pmix_status_t rc)
{
    if (PMIX_SUCCESS != rc) {
        return PMIX_OPERATION_SUCCEEDED == rc ? PMIX_SUCCESS : rc;
    }
    pthread_mutex_lock(&mu);
    while (!done) {
        pthread_cond_wait(&cv, &mu);
    }
    done = 0;
    pthread_mutex_unlock(&mu);
    return cb_status;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *) a, *(char *const *) b);
}

static void print_env(const char *ns, pmix_rank_t rank)
{
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, ns, rank);
    char **env = calloc(3, sizeof(char *));
    env[0] = strdup("A=1");
    env[1] = strdup("RSHM_STORE=stale");
    pmix_status_t rc = PMIx_server_setup_fork(&proc, &env);
    size_t n = 0;
    while (env[n]) {
        n++;
    }
    qsort(env, n, sizeof(char *), cmp);
    printf("env %s %u %s", ns, rank, PMIx_Error_string(rc));
    for (size_t i = 0; i < n; i++) {
        if (0 == strncmp(env[i], "RSHM_", 5) || 0 == strncmp(env[i], "A=", 2)) {
            printf(" %s", env[i]);
        }
        free(env[i]);
    }
    printf("\n");
    free(env);
}

static void reg(const char *name, int refused)
{
    pmix_nspace_t ns;
    PMIX_LOAD_NSPACE(ns, name);
    char *regex = NULL, *ppn = NULL;
    PMIx_generate_regex("node0", &regex);
    PMIx_generate_ppn("0,1", &ppn);
    uint32_t size = 2;
    pmix_info_t info[4];
    PMIX_INFO_LOAD(&info[0], PMIX_JOB_SIZE, &size, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[1], PMIX_NODE_MAP, regex, PMIX_REGEX);
    PMIX_INFO_LOAD(&info[2], PMIX_PROC_MAP, ppn, PMIX_REGEX);
    /* A job-level PMIX_POINTER (meaningful in this process only): libpmix takes it, the store
     * does not. */
    static int here;
    size_t n = 3;
    if (refused) {
        PMIX_INFO_LOAD(&info[3], "test.ptr", &here, PMIX_POINTER);
        n = 4;
    }
    pmix_status_t rc = finish(PMIx_server_register_nspace(ns, 2, info, n, op_cb, NULL));
    printf("register %s %s\n", name, PMIx_Error_string(rc));
    for (size_t i = 0; i < n; i++) {
        PMIX_INFO_DESTRUCT(&info[i]);
    }
    free(regex);
    free(ppn);
}

/* A job of 3000 nodes, one rank each, its maps made by libpmix. */
static void reg_big(void)
{
    enum { NODES = 3000 };
    char *nodes = calloc(NODES, 16), *ppn = calloc(NODES, 8);
    size_t a = 0, b = 0;
    for (int i = 0; i < NODES; i++) {
        a += (size_t) sprintf(nodes + a, "%snode%d", i ? "," : "", i);
        b += (size_t) sprintf(ppn + b, "%s%d", i ? ";" : "", i);
    }
    char *nregex = NULL, *pregex = NULL;
    PMIx_generate_regex(nodes, &nregex);
    PMIx_generate_ppn(ppn, &pregex);
    uint32_t size = NODES;
    pmix_info_t info[3];
    PMIX_INFO_LOAD(&info[0], PMIX_JOB_SIZE, &size, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[1], PMIX_NODE_MAP, nregex, PMIX_REGEX);
    PMIX_INFO_LOAD(&info[2], PMIX_PROC_MAP, pregex, PMIX_REGEX);
    pmix_nspace_t ns;
    PMIX_LOAD_NSPACE(ns, "big");
    pmix_status_t rc = finish(PMIx_server_register_nspace(ns, 1, info, 3, op_cb, NULL));
    printf("register big %s %.5s %.5s\n", PMIx_Error_string(rc), nregex, pregex);
    for (size_t i = 0; i < 3; i++) {
        PMIX_INFO_DESTRUCT(&info[i]);
    }
    free(nregex);
    free(pregex);
    free(nodes);
    free(ppn);
}

static size_t entries(const char *dir)
{
    size_t n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        n += e->d_name[0] != '.';
    }
    if (d) {
        closedir(d);
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: host_calls STORE_BASE UID GID\n");
        return 2;
    }
    static pmix_server_module_t module;
    uint32_t uid = (uint32_t) strtoul(argv[2], NULL, 10), gid = (uint32_t) strtoul(argv[3], NULL, 10);
    pmix_info_t info[3];
    PMIX_INFO_LOAD(&info[0], PMIX_USERID, &uid, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[1], PMIX_GRPID, &gid, PMIX_UINT32);
    PMIX_INFO_LOAD(&info[2], PMIX_HOSTNAME, "node0", PMIX_STRING);
    pmix_status_t rc = PMIx_server_init(&module, info, 3);
    printf("init %s\n", PMIx_Error_string(rc));
    if (PMIX_SUCCESS != rc) {
        return 1;
    }
    reg("good", 0);
    reg("refused", 1);
    print_env("good", 1);
    print_env("refused", 0);
    print_env("unknown", 0);
    /* Registered again, now with what the store refuses: the namespace leaves the store. */
    reg("good", 1);
    print_env("good", 0);
    reg("again", 0);
    pmix_nspace_t again;
    PMIX_LOAD_NSPACE(again, "again");
    PMIx_server_deregister_nspace(again, op_cb, NULL);
    finish(PMIX_SUCCESS);
    printf("deregister again\n");
    print_env("again", 0);
    reg_big();
    print_env("big", 0);
    rc = PMIx_server_finalize();
    printf("finalize %s store-dir-entries %zu\n", PMIx_Error_string(rc), entries(argv[1]));
    return 0;
}
