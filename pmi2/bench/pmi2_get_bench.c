/* PMI2_KVS_Get of a peer's value after the fence, and PMI2_Info_GetJobAttr of
 * PMI_process_mapping and universeSize: p50 over N calls each, per rank, in ns.
 * pmi2/bench/pmi2-bench.sh runs it under hash and rshm, pmi2/tests/slurm-diff.sh under Slurm. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <pmi2.h>

/* Also built against Slurm's pmi2.h (pmi2/tests/slurm-diff.sh), whose PMI2_Init has no version
 * arguments. */
#ifdef RSHM_PMI2_H
#define INIT(s, n, r, a, v, sv) PMI2_Init(s, n, r, a, v, sv)
#else
#define INIT(s, n, r, a, v, sv) PMI2_Init(s, n, r, a)
#endif

static long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}
static int cmp(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}
static long p50(long *v, int n) { qsort(v, n, sizeof *v, cmp); return v[n / 2]; }

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4096, spawned, size, rank, appnum, ver, sub, len, flag;
    char key[64], val[PMI2_MAX_VALLEN];
    long *t = malloc(sizeof(long) * n);
    if (INIT(&spawned, &size, &rank, &appnum, &ver, &sub)) return 1;
    (void)ver; (void)sub;
    snprintf(key, sizeof key, "card-%d", rank);
    snprintf(val, sizeof val, "%064d", rank);
    PMI2_KVS_Put(key, val);
    PMI2_KVS_Fence();
    int peer = (rank + 1) % size;
    snprintf(key, sizeof key, "card-%d", peer);
    for (int i = 0; i < n; i++) {
        long a = now();
        if (PMI2_KVS_Get(NULL, peer, key, val, sizeof val, &len)) return 2;
        t[i] = now() - a;
    }
    long kvs = p50(t, n);
    for (int i = 0; i < n; i++) {
        long a = now();
        if (PMI2_Info_GetJobAttr("PMI_process_mapping", val, sizeof val, &flag) || !flag) return 3;
        t[i] = now() - a;
    }
    long map = p50(t, n);
    for (int i = 0; i < n; i++) {
        long a = now();
        if (PMI2_Info_GetJobAttr("universeSize", val, sizeof val, &flag) || !flag) return 4;
        t[i] = now() - a;
    }
    long univ = p50(t, n);
    printf("rank %d kvs_get_p50_ns %ld mapping_p50_ns %ld universe_p50_ns %ld\n", rank, kvs, map, univ);
    PMI2_Finalize();
    return 0;
}
