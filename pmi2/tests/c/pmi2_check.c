/* pmi2_check: every PMI-2 call of pmi2.h, in a job of several ranks. Each line it prints is
 * "rank <r> <what> <answer>", the same for any correct PMI-2 library over the same job, so
 * that the sorted output of two runs can be compared (pmi2/tests/pmi2_mpirun.rs). Job ids are
 * printed only as whether they agree. Exit status 0 unless a call crashed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pmi2.h>

/* Built against Slurm's (or MPICH's) pmi2.h too, for the Slurm differential
 * (pmi2/tests/slurm-diff.sh): PMI2_Init has no version arguments there, PMI2_Job_Spawn an argcs,
 * PMI2_Info_GetNodeAttrIntArray no waitFor. */
#ifdef RSHM_PMI2_H
#define INIT(s, n, r, a, v, sv) PMI2_Init(s, n, r, a, v, sv)
#define NODE_INTS(name, a, len, n, f, w) PMI2_Info_GetNodeAttrIntArray(name, a, len, n, f, w)
#define SPAWN_NOTHING(id, len) PMI2_Job_Spawn(0, NULL, NULL, NULL, NULL, NULL, 0, NULL, id, len, NULL)
#else
#define INIT(s, n, r, a, v, sv) PMI2_Init(s, n, r, a)
#define NODE_INTS(name, a, len, n, f, w) PMI2_Info_GetNodeAttrIntArray(name, a, len, n, f)
#define SPAWN_NOTHING(id, len) \
    PMI2_Job_Spawn(0, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, id, len, NULL)
#endif

static int rank = -1;

/* Seconds on a monotonic clock: "fast" answers come back well under a second. */
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

#define SAY(...) do { printf("rank %d ", rank); printf(__VA_ARGS__); printf("\n"); } while (0)

/* A value of `len` bytes for `src`: letters and a two-byte UTF-8 character at the end. */
static void value_of(int src, int len, char *out) {
    for (int i = 0; i < len; i++) out[i] = 'a' + (src + i) % 26;
    if (len >= 2) { out[len - 2] = (char)0xc3; out[len - 1] = (char)0xa9; } /* é */
    out[len] = 0;
}

static void ints(const char *what, int rc, const int *a, int n, int flag) {
    char buf[4096] = "";
    for (int i = 0; i < n && flag && rc == 0; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d", i ? "," : "", a[i]);
    SAY("%s rc %d flag %d n %d [%s]", what, rc, flag, flag ? n : 0, buf);
}

int main(int argc, char **argv) {
    (void)argc; (void)argv;
    char big[2048], got[2048];
    int spawned = -1, size = -1, appnum = -2, version = -1, subversion = -1, vlen, flag, rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    /* Calls out of order, with NULL arguments, and connecting to its own job:
     * PMI2_CHECK_NO_HOSTILE=1 leaves them out (Slurm's libpmi2 loses its connection to
     * slurmstepd on some of them, and its Job_Connect/Disconnect hang). */
    int hostile = getenv("PMI2_CHECK_NO_HOSTILE") == NULL;
    /* Before PMI2_Init. */
    int pre_init = PMI2_Initialized();
    int pre_put = hostile ? PMI2_KVS_Put("k", "v") : -99;
    /* NULL outputs: refused, nothing initialized. */
    int null_init = hostile ? INIT(NULL, NULL, NULL, NULL, NULL, NULL) : -99;
    int null_initialized = PMI2_Initialized();
    rc = INIT(&spawned, &size, &rank, &appnum, &version, &subversion);
    SAY("before-init initialized %d put %d", pre_init, pre_put);
    SAY("init-null rc %d initialized %d", null_init, null_initialized);
    SAY("init rc %d spawned %d size %d appnum %d version %d.%d initialized %d", rc, spawned, size,
        appnum, version, subversion, PMI2_Initialized());
    if (hostile)
        SAY("init-again rc %d", INIT(&spawned, &size, &rank, &appnum, &version, &subversion));

    char jobid[256], small[2];
    rc = PMI2_Job_GetId(jobid, sizeof jobid);
    SAY("jobid rc %d nonempty %d small-buffer rc %d", rc, jobid[0] != 0,
        PMI2_Job_GetId(small, sizeof small));
    if (hostile)
        SAY("connect-self rc %d disconnect-self rc %d", PMI2_Job_Connect(jobid, NULL),
            PMI2_Job_Disconnect(jobid));

    /* KVS: each rank a value of 1023 - rank bytes (the longest is PMI2_MAX_VALLEN - 1) under a
     * key of 63 bytes (PMI2_MAX_KEYLEN - 1), and a short one. */
    char key[128];
    snprintf(key, sizeof key, "key-%d-", rank);
    memset(key + strlen(key), 'x', 63 - strlen(key));
    key[63] = 0;
    value_of(rank, 1023 - rank, big);
    SAY("put-max rc %d", PMI2_KVS_Put(key, big));
    snprintf(got, sizeof got, "short-%d", rank);
    char skey[32];
    snprintf(skey, sizeof skey, "s%d", rank);
    SAY("put-short rc %d", PMI2_KVS_Put(skey, got));
    /* Past the limits: nothing is put. */
    char longkey[80];
    memset(longkey, 'k', 64); longkey[64] = 0;
    value_of(rank, 1024, big);
    SAY("put-limits key64 %d val1024 %d emptykey %d badutf8 %d nullval %d",
        PMI2_KVS_Put(longkey, "v"), PMI2_KVS_Put("toolong", big), PMI2_KVS_Put("", "v"),
        PMI2_KVS_Put("bad", "\xff\xfe"), PMI2_KVS_Put("k", NULL));
    /* Reserved key spaces (PMIx's keys, the library's node attributes): refused. */
    SAY("put-reserved job.size %d hname %d node %d", PMI2_KVS_Put("pmix.job.size", "99"),
        PMI2_KVS_Put("pmix.hname", "nohost"), PMI2_KVS_Put("pmi2.node.kvs-as-node", "kvs"));
    SAY("fence rc %d", PMI2_KVS_Fence());
    rc = PMI2_KVS_Get(NULL, 0, "pmix.job.size", got, sizeof got, &vlen);
    int rc_h = PMI2_KVS_Get(NULL, rank, "pmix.hname", got, sizeof got, &vlen);
    SAY("get-reserved job.size rc %d hname rc %d", rc, rc_h);
    flag = -1;
    rc = PMI2_Info_GetNodeAttr("kvs-as-node", got, sizeof got, &flag, 0);
    SAY("kvs-as-node rc %d flag %d", rc, flag);

    for (int src = 0; src < size; src++) {
        snprintf(key, sizeof key, "key-%d-", src);
        memset(key + strlen(key), 'x', 63 - strlen(key));
        key[63] = 0;
        char want[2048];
        value_of(src, 1023 - src, want);
        vlen = 0;
        rc = PMI2_KVS_Get(NULL, src, key, got, sizeof got, &vlen);
        SAY("get src %d rc %d len %d same %d", src, rc, vlen, rc == 0 && !strcmp(got, want));
        vlen = 0;
        rc = PMI2_KVS_Get(jobid, PMI2_ID_NULL, key, got, PMI2_MAX_VALLEN, &vlen);
        SAY("get-any src %d rc %d len %d same %d", src, rc, vlen, rc == 0 && !strcmp(got, want));
        /* The size probe: a buffer too small, then one of the size it asks for. */
        int probe = 0, probe0 = 0;
        strcpy(got, "untouched");
        rc = PMI2_KVS_Get(NULL, src, key, got, 10, &probe);
        int rc0 = PMI2_KVS_Get(NULL, src, key, NULL, 0, &probe0);
        SAY("probe src %d rc %d valLen %d untouched %d rc0 %d valLen0 %d", src, rc, probe,
            !strcmp(got, "untouched"), rc0, probe0);
        if (probe < 0) {
            char *v2 = malloc(-probe);
            int v2len = 0;
            rc = PMI2_KVS_Get(NULL, src, key, v2, -probe, &v2len);
            SAY("probe-get src %d rc %d len %d same %d", src, rc, v2len, !strcmp(v2, want));
            free(v2);
        }
        snprintf(skey, sizeof skey, "s%d", src);
        snprintf(want, sizeof want, "short-%d", src);
        rc = PMI2_KVS_Get(NULL, PMI2_ID_NULL, skey, got, sizeof got, &vlen);
        SAY("get-short src %d rc %d %s", src, rc, rc == 0 ? got : "-");
    }
    SAY("get-missing rc %d", PMI2_KVS_Get(NULL, PMI2_ID_NULL, "nokey", got, sizeof got, &vlen));
    double t0 = now();
    rc = PMI2_KVS_Get(NULL, 0, "nokey", got, sizeof got, &vlen);
    SAY("get-missing-src rc %d fast %d", rc, now() - t0 < 1.0);
    SAY("get-badsrc rc %d", PMI2_KVS_Get(NULL, -7, "s0", got, sizeof got, &vlen));
    if (hostile) {
        /* A rank outside the job, a job this process does not know: answered at once. */
        t0 = now();
        rc = PMI2_KVS_Get(NULL, size, "s0", got, sizeof got, &vlen);
        int rc2 = PMI2_KVS_Get(jobid, size + 5, "s0", got, sizeof got, &vlen);
        SAY("get-outside rc %d %d fast %d", rc, rc2, now() - t0 < 1.0);
        t0 = now();
        rc = PMI2_KVS_Get("no-such-job", 0, "s0", got, sizeof got, &vlen);
        SAY("get-otherjob rc %d fast %d", rc, now() - t0 < 1.0);
    }

#ifndef RSHM_PMI2_H
    /* The calls only Slurm's (and MPICH's) pmi2.h has. */
    int grank = -1, gsize = -1;
    rc = PMI2_Job_GetRank(&grank);
    int rc_size = PMI2_Info_GetSize(&gsize);
    SAY("slurm-abi getrank rc %d same %d getsize rc %d %d", rc, grank == rank, rc_size, gsize);
    char mine[64], left[64] = "-", right[64] = "-";
    int ring_rank = -1, ring_size = -1;
    snprintf(mine, sizeof mine, "ring-%d", rank);
    rc = PMIX_Ring(mine, &ring_rank, &ring_size, left, right, sizeof left);
    SAY("slurm-abi ring rc %d rank-same %d ranks %d left %s right %s", rc, ring_rank == rank,
        ring_size, left, right);
#endif
    /* Node attributes: the node's local ranks; one put by the node's highest rank, awaited by
     * the others (waitFor), no barrier. */
    int lr[1024], lcount[1], n = 0;
    rc = NODE_INTS("localRanksCount", lcount, 1, &n, &flag, 0);
    ints("node localRanksCount", rc, lcount, n, flag);
    rc = NODE_INTS("localRanks", lr, 1024, &n, &flag, 0);
    ints("node localRanks", rc, lr, n, flag);
    int nlocal = n;
    int putter = nlocal > 0 ? lr[nlocal - 1] : rank;
    if (rank == putter) {
        /* seg-ids first: whoever sees shared-seg sees seg-ids (the Slurm form of
         * PMI2_Info_GetNodeAttrIntArray has no waitFor). */
        printf("rank X putnode ints rc %d\n", PMI2_Info_PutNodeAttr("seg-ids", "3,1,-2"));
        value_of(7, 1023, big);
        printf("rank X putnode rc %d\n", PMI2_Info_PutNodeAttr("shared-seg", big));
        value_of(1, 1024, got);
        printf("rank X putnode-limits val1024 %d key64 %d\n", PMI2_Info_PutNodeAttr("x", got),
               PMI2_Info_PutNodeAttr(longkey, "v"));
    }
    char want[2048];
    value_of(7, 1023, want);
    flag = -1;
    rc = PMI2_Info_GetNodeAttr("shared-seg", got, PMI2_MAX_ATTRVALUE, &flag, 1);
    SAY("getnode wait rc %d flag %d same %d", rc, flag, flag == 1 && !strcmp(got, want));
    int arr[8];
    rc = NODE_INTS("seg-ids", arr, 8, &n, &flag, 1);
    ints("node seg-ids", rc, arr, n, flag);
    rc = PMI2_Info_GetNodeAttr("never-put", got, sizeof got, &flag, 0);
    SAY("getnode absent rc %d flag %d", rc, flag);
    rc = PMI2_Info_GetNodeAttr("memPoolType", got, sizeof got, &flag, 0);
    SAY("getnode memPoolType rc %d flag %d", rc, flag);
    rc = NODE_INTS("cartCoords", arr, 8, &n, &flag, 0);
    ints("node cartCoords", rc, arr, n, flag);
    rc = PMI2_Info_GetNodeAttr("shared-seg", small, sizeof small, &flag, 1);
    SAY("getnode small-buffer rc %d", rc);

    /* Job attributes. */
    const char *attrs[] = {"universeSize", "PMI_process_mapping", "hasNameServ", "physTopology",
                           "physTopologyLevels", "cartDims", "isHeterogeneous", "noSuchAttr"};
    for (unsigned i = 0; i < sizeof attrs / sizeof *attrs; i++) {
        flag = -1;
        rc = PMI2_Info_GetJobAttr(attrs[i], got, PMI2_MAX_ATTRVALUE, &flag);
        SAY("job %s rc %d flag %d %s", attrs[i], rc, flag, rc == 0 && flag ? got : "-");
    }
    rc = PMI2_Info_GetJobAttr("PMI_process_mapping", small, sizeof small, &flag);
    SAY("job small-buffer rc %d", rc);
    rc = PMI2_Info_GetJobAttrIntArray("localRanks", lr, 1024, &n, &flag);
    ints("jobints localRanks", rc, lr, n, flag);
    rc = PMI2_Info_GetJobAttrIntArray("universeSize", lr, 1024, &n, &flag);
    ints("jobints universeSize", rc, lr, n, flag);

    /* Name publishing: rank 0 publishes, the last rank looks up, rank 0 unpublishes. */
    int last = size - 1;
    if (rank == 0)
        SAY("publish rc %d", PMI2_Nameserv_publish("pmi2-check-svc", NULL, "port-of-rank-0"));
    else
        SAY("publish rc 0");
    PMI2_KVS_Fence();
    if (rank == last) {
        rc = PMI2_Nameserv_lookup("pmi2-check-svc", NULL, got, sizeof got);
        printf("rank X lookup rc %d %s\n", rc, rc == 0 ? got : "-");
        rc = PMI2_Nameserv_lookup("pmi2-check-svc", NULL, small, sizeof small);
        printf("rank X lookup small-buffer rc %d\n", rc);
    }
    PMI2_KVS_Fence();
    if (rank == 0)
        printf("rank X unpublish rc %d\n", PMI2_Nameserv_unpublish("pmi2-check-svc", NULL));
    PMI2_KVS_Fence();
    if (rank == last) {
        rc = PMI2_Nameserv_lookup("pmi2-check-svc", NULL, got, sizeof got);
        printf("rank X lookup-after-unpublish failed %d\n", rc != 0);
    }

    /* Bad arguments: nothing changes, a code comes back. */
    if (hostile) {
        SAY("null-args get-key %d get-vallen %d getnode-flag %d getjob-name %d",
            PMI2_KVS_Get(NULL, 0, NULL, got, 10, &vlen), PMI2_KVS_Get(NULL, 0, "s0", got, 10, NULL),
            PMI2_Info_GetNodeAttr("x", got, 10, NULL, 0), PMI2_Info_GetJobAttr(NULL, got, 10, &flag));
        SAY("spawn-nothing rc %d", SPAWN_NOTHING(small, 2));
    }

    PMI2_KVS_Fence();
    rc = PMI2_Finalize();
    SAY("finalize rc %d initialized %d again %d", rc, PMI2_Initialized(),
        hostile ? PMI2_Finalize() : -99);
    if (hostile) {
        /* PMIx cannot be initialized again: refused, and the library stays finalized. */
        rc = INIT(&spawned, &size, &rank, &appnum, &version, &subversion);
        int init_after = PMI2_Initialized();
        int fence_after = PMI2_KVS_Fence();
        SAY("reinit rc %d initialized %d fence %d", rc, init_after, fence_after);
        if (rc == 0) PMI2_Finalize();
    }
    return 0;
}
