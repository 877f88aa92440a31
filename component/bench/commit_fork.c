/*
 * commit_fork.c - the server shim's commit path (rshm_server_commit, what the gds component
 * calls once per client commit) timed in one process, with and without a fork before each
 * commit. A PMIx server forks its clients while earlier ones commit; after a fork, the first
 * store to each private page of the server is a page fault and a copy (copy-on-write), so
 * what a commit costs there depends on how many private pages it writes. Prints the thread's
 * CPU time and minor page faults per commit.
 *
 *   commit_fork N K FORK      N commits (ranks 0..N-1) of K byte objects of 200 B each;
 *                             FORK 1: fork (the child exits at once) before each commit
 */
#define _GNU_SOURCE
#include <pmix_common.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rshm_server.h"

#define MAX_KEYS 64

static unsigned long long cpu_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (unsigned long long) t.tv_sec * 1000000000ULL + (unsigned long long) t.tv_nsec;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 512, k = argc > 2 ? atoi(argv[2]) : 16;
    int forks = argc > 3 ? atoi(argv[3]) : 0;
    static pmix_value_t vals[MAX_KEYS];
    static char keys[MAX_KEYS][32], bytes[MAX_KEYS][200];
    static rshm_kv_t kvs[MAX_KEYS];
    unsigned long long total = 0;
    long faults = 0;
    rshm_server_t *s;
    rshm_server_stats_t st;
    if (n < 1 || k < 1 || k > MAX_KEYS || PMIX_SUCCESS != rshm_server_open(NULL, 0, &s)) {
        fprintf(stderr, "usage: commit_fork N K(1..%d) FORK(0|1), with a store to open\n",
                MAX_KEYS);
        return 1;
    }
    for (int i = 0; i < k; i++) {
        snprintf(keys[i], sizeof(keys[i]), "storm.key.%d", i);
        vals[i].type = PMIX_BYTE_OBJECT;
        vals[i].data.bo.bytes = bytes[i];
        vals[i].data.bo.size = sizeof(bytes[i]);
        kvs[i] = (rshm_kv_t){.scope = PMIX_GLOBAL, .key = keys[i], .value = &vals[i]};
    }
    for (int r = 0; r < n; r++) {
        pmix_proc_t proc;
        struct rusage a, b;
        rshm_flushed_t f;
        unsigned long long t0;
        if (forks) {
            pid_t p = fork();
            if (0 == p) {
                _exit(0);
            }
            waitpid(p, NULL, 0);
        }
        memset(bytes, r, sizeof(bytes));
        PMIX_LOAD_PROCID(&proc, "storm", (pmix_rank_t) r);
        getrusage(RUSAGE_THREAD, &a);
        t0 = cpu_ns();
        if (PMIX_SUCCESS != rshm_server_commit(s, &proc, kvs, (size_t) k, &f)) {
            fprintf(stderr, "commit of rank %d failed\n", r);
            return 1;
        }
        total += cpu_ns() - t0;
        getrusage(RUSAGE_THREAD, &b);
        faults += b.ru_minflt - a.ru_minflt;
    }
    rshm_server_stats(s, &st);
    printf("commit_fork N=%d K=%d fork=%d: %.1f ms, %.1f us/commit, %.1f minor faults/commit, "
           "%llu generations\n", n, k, forks, total / 1e6, total / 1e3 / n, (double) faults / n,
           (unsigned long long) st.publications);
    rshm_server_close(s);
    return 0;
}
