/* The C Get path alone: server-shim writes a 1,000-rank job, client-shim attaches in the same
 * process, and one Get is repeated. What docs/performance.md's "C driver" figures come from.
 *
 *   get_c [N [MODE]]   N Gets per repetition (default 200000), best of $REPS (default 20)
 *   MODE 0  rshm_client_get(WILDCARD, PMIX_JOB_SIZE) + PMIX_VALUE_RELEASE   (copy mode)
 *        1  rshm_client_get_into(WILDCARD, PMIX_JOB_SIZE)                     (no allocation)
 *        2  rshm_client_get(rank i % 1000, PMIX_HOSTNAME) + PMIX_VALUE_RELEASE
 *
 * Every answer is checked; a wrong one exits 1. Instructions per Get: run it under
 * `valgrind --tool=callgrind` with REPS=1 at two N and divide the difference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pmix_common.h>
#include "rshm_server.h"
#include "rshm_client.h"

#define RANKS 1000

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void fail(const char *what)
{
    fprintf(stderr, "get_c: %s\n", what);
    exit(1);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int mode = argc > 2 ? atoi(argv[2]) : 0;
    int reps = getenv("REPS") ? atoi(getenv("REPS")) : 20;
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/dev/shm";
    if (n < 1 || mode < 0 || mode > 2 || reps < 1) {
        fail("usage: get_c [N [MODE 0|1|2]]");
    }

    struct rshm_server_t *s;
    pmix_info_t oi[2];
    PMIX_INFO_LOAD(&oi[0], PMIX_HOSTNAME, "node00000", PMIX_STRING);
    PMIX_INFO_LOAD(&oi[1], PMIX_SERVER_TMPDIR, tmp, PMIX_STRING);
    if (rshm_server_open(oi, 2, &s) != PMIX_SUCCESS) {
        fail("rshm_server_open");
    }
    /* 1,000 ranks, 100 per node: nodes node00000..node00009, by their maps. */
    pmix_info_t ri[3];
    uint32_t size = RANKS;
    char pmap[256] = "";
    for (int node = 0; node < RANKS / 100; node++) {
        char one[32];
        snprintf(one, sizeof one, "%s%d-%d", node ? ";" : "", node * 100, node * 100 + 99);
        strcat(pmap, one);
    }
    PMIX_INFO_LOAD(&ri[0], PMIX_JOB_SIZE, &size, PMIX_UINT32);
    PMIX_INFO_LOAD(&ri[1], PMIX_NODE_MAP, "node00000,node00001,node00002,node00003,node00004,"
                   "node00005,node00006,node00007,node00008,node00009", PMIX_STRING);
    PMIX_INFO_LOAD(&ri[2], PMIX_PROC_MAP, pmap, PMIX_STRING);
    if (rshm_server_register_nspace(s, "getc", RANKS, ri, 3) != PMIX_SUCCESS) {
        fail("rshm_server_register_nspace");
    }
    pmix_proc_t me, wild;
    PMIX_LOAD_PROCID(&me, "getc", 0);
    PMIX_LOAD_PROCID(&wild, "getc", PMIX_RANK_WILDCARD);
    if (rshm_client_attach(rshm_server_path(s), &me) != PMIX_SUCCESS) {
        fail("rshm_client_attach");
    }
    pmix_proc_t peers[RANKS];
    for (int r = 0; r < RANKS; r++) {
        PMIX_LOAD_PROCID(&peers[r], "getc", (pmix_rank_t) r);
    }

    double best = 1e30;
    for (int rep = 0; rep < reps; rep++) {
        double t0 = now_ns();
        for (long i = 0; i < n; i++) {
            pmix_value_t *v = NULL, into;
            switch (mode) {
            case 0:
                if (rshm_client_get(&wild, PMIX_JOB_SIZE, NULL, 0, &v) != PMIX_SUCCESS
                    || v->type != PMIX_UINT32 || v->data.uint32 != RANKS) {
                    fail("wrong PMIX_JOB_SIZE");
                }
                PMIX_VALUE_RELEASE(v);
                break;
            case 1:
                if (rshm_client_get_into(&wild, PMIX_JOB_SIZE, NULL, 0, &into) != PMIX_SUCCESS
                    || into.type != PMIX_UINT32 || into.data.uint32 != RANKS) {
                    fail("wrong PMIX_JOB_SIZE (get_into)");
                }
                break;
            default: {
                int r = (int) (i % RANKS);
                if (rshm_client_get(&peers[r], PMIX_HOSTNAME, NULL, 0, &v) != PMIX_SUCCESS
                    || v->type != PMIX_STRING || v->data.string[8] != '0' + r / 100) {
                    fail("wrong PMIX_HOSTNAME");
                }
                PMIX_VALUE_RELEASE(v);
            }
            }
        }
        double ns = (now_ns() - t0) / n;
        if (ns < best) {
            best = ns;
        }
    }
    static const char *names[] = {"rshm_client_get copy", "rshm_client_get_into", "hostname copy"};
    printf("%s: best of %d x %ld: %.1f ns per Get\n", names[mode], reps, n, best);
    rshm_client_detach();
    rshm_server_close(s);
    return 0;
}
