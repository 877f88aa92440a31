/* One client of the commit storm (component/bench/commit-storm.sh): PMIx_Init, K PMIx_Put of a
 * byte object (default 200 B) in one scope, one PMIx_Commit, optionally a PMIx_Fence over the
 * namespace, then PMIx_Get of every key of PEERS other ranks (the next ones, wrapping; each
 * value checked) in the ranks below READERS (all when 0), PMIx_Finalize. Prints one line:
 *   storm <rank> init_us <t> put_us <t> commit_us <t> fence_us <t> get_us <t> get_cpu_us <t>
 *         finalize_us <t>
 * (fence_us -1 without a fence; get_us, and get_cpu_us the process's CPU time meanwhile, its
 * libpmix progress thread's included, -1 without peers). Exit 1 when a call fails or a value
 * read is not the one its peer put.
 *
 *   commit_storm K [BYTES] [nofence|fence|collect] [global|local] [PEERS] [READERS]
 *
 * fence: PMIx_Fence without PMIX_COLLECT_DATA (the default); collect: with it. PEERS (default
 * 0) is capped at the job's size less one. */
#define _GNU_SOURCE
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The byte every value of `rank`'s key `i` is filled with. */
static unsigned char fill(pmix_rank_t rank, int i)
{
    return (unsigned char) (rank ^ (unsigned) i);
}

/* This process's CPU time (all its threads), in µs. */
static double cpu_us(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

/* Key `i` of every rank. */
static void key_of(char key[PMIX_MAX_KEYLEN + 1], int i)
{
    snprintf(key, PMIX_MAX_KEYLEN + 1, "storm.key.%d", i);
}

static int fail(const pmix_proc_t *me, const char *what, pmix_status_t rc)
{
    fprintf(stderr, "commit_storm: rank %u: %s: %s\n", me->rank, what, PMIx_Error_string(rc));
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr,
                "usage: commit_storm K [BYTES] [nofence|fence|collect] [global|local] [PEERS] "
                "[READERS]\n");
        return 2;
    }
    int k = atoi(argv[1]);
    size_t bytes = argc > 2 ? (size_t) atol(argv[2]) : 200;
    const char *fence = argc > 3 ? argv[3] : "fence";
    pmix_scope_t scope = argc > 4 && 0 == strcmp(argv[4], "local") ? PMIX_LOCAL : PMIX_GLOBAL;
    long peers = argc > 5 ? atol(argv[5]) : 0;
    long readers = argc > 6 ? atol(argv[6]) : 0;
    pmix_proc_t me;
    pmix_status_t rc;

    double t0 = now_us();
    if (PMIX_SUCCESS != (rc = PMIx_Init(&me, NULL, 0))) {
        fprintf(stderr, "commit_storm: PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    double t1 = now_us();
    unsigned char *buf = malloc(bytes ? bytes : 1);
    for (int i = 0; i < k; i++) {
        char key[PMIX_MAX_KEYLEN + 1];
        pmix_value_t v;
        key_of(key, i);
        memset(buf, fill(me.rank, i), bytes);
        /* PMIx_Put copies the value: the buffer is ours to reuse */
        v.type = PMIX_BYTE_OBJECT;
        v.data.bo.bytes = (char *) buf;
        v.data.bo.size = bytes;
        if (PMIX_SUCCESS != (rc = PMIx_Put(scope, key, &v))) {
            return fail(&me, "PMIx_Put", rc);
        }
    }
    free(buf);
    double t2 = now_us();
    if (PMIX_SUCCESS != (rc = PMIx_Commit())) {
        return fail(&me, "PMIx_Commit", rc);
    }
    double t3 = now_us(), t4 = t3;
    if (0 != strcmp(fence, "nofence")) {
        pmix_proc_t all;
        pmix_info_t info;
        bool collect = 0 == strcmp(fence, "collect");
        PMIX_PROC_LOAD(&all, me.nspace, PMIX_RANK_WILDCARD);
        PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
        rc = PMIx_Fence(&all, 1, &info, 1);
        PMIX_INFO_DESTRUCT(&info);
        if (PMIX_SUCCESS != rc) {
            return fail(&me, "PMIx_Fence", rc);
        }
        t4 = now_us();
    }
    double t5 = t4, c4 = cpu_us(), c5 = c4;
    if (0 < readers && me.rank >= (pmix_rank_t) readers) {
        peers = 0;
    }
    if (0 < peers) {
        pmix_proc_t job;
        pmix_value_t *sz = NULL;
        PMIX_PROC_LOAD(&job, me.nspace, PMIX_RANK_WILDCARD);
        if (PMIX_SUCCESS != (rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &sz))) {
            return fail(&me, "PMIx_Get(PMIX_JOB_SIZE)", rc);
        }
        if (PMIX_UINT32 != sz->type) {
            fprintf(stderr, "commit_storm: rank %u: PMIX_JOB_SIZE is of type %s\n", me.rank,
                    PMIx_Data_type_string(sz->type));
            return 1;
        }
        uint32_t size = sz->data.uint32;
        PMIX_VALUE_RELEASE(sz);
        if (peers > (long) size - 1) {
            peers = (long) size - 1;
        }
        for (long j = 1; j <= peers; j++) {
            pmix_proc_t peer;
            PMIX_PROC_LOAD(&peer, me.nspace, (pmix_rank_t) ((me.rank + j) % size));
            for (int i = 0; i < k; i++) {
                char key[PMIX_MAX_KEYLEN + 1];
                pmix_value_t *v = NULL;
                key_of(key, i);
                if (PMIX_SUCCESS != (rc = PMIx_Get(&peer, key, NULL, 0, &v))) {
                    return fail(&me, "PMIx_Get", rc);
                }
                const unsigned char *b = (const unsigned char *) v->data.bo.bytes;
                unsigned char want = fill(peer.rank, i);
                bool same = PMIX_BYTE_OBJECT == v->type && bytes == v->data.bo.size
                            && (0 == bytes || (want == b[0] && want == b[bytes - 1]));
                PMIX_VALUE_RELEASE(v);
                if (!same) {
                    fprintf(stderr, "commit_storm: rank %u: %s of rank %u is not what it put\n",
                            me.rank, key, peer.rank);
                    return 1;
                }
            }
        }
        t5 = now_us();
        c5 = cpu_us();
    }
    if (PMIX_SUCCESS != (rc = PMIx_Finalize(NULL, 0))) {
        return fail(&me, "PMIx_Finalize", rc);
    }
    double t6 = now_us();
    printf("storm %u init_us %.0f put_us %.0f commit_us %.0f fence_us %.0f get_us %.0f "
           "get_cpu_us %.0f finalize_us %.0f\n",
           me.rank, t1 - t0, t2 - t1, t3 - t2, t4 > t3 ? t4 - t3 : -1.0,
           0 < peers ? t5 - t4 : -1.0, 0 < peers ? c5 - c4 : -1.0, t6 - t5);
    return 0;
}
