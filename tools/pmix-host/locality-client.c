/* A PMIx client printing what locality it is given (for the locality differential test):
 *   loc <rank> <status> <PMIX_LOCALITY_STRING of each local peer, or ->
 *   cpu <rank> <status> <PMIX_CPUSET>
 *   rel <a> <b> <form> <status> <PMIx_Get_relative_locality, hex, or -> for each pair of local
 *       peers, with the strings as stored (form "raw") and with the "hwloc:" prefix ("hwloc")
 *   topo <status> <source> <depth> <objects per depth, comma-separated>  (PMIx_Load_topology)
 * Lines start with the caller's rank; one run prints the same lines whichever store answers. */
#include <hwloc.h>
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pmix_proc_t me;

static char *get_str(pmix_rank_t r, const char *key, pmix_status_t *rc)
{
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, me.nspace, r);
    pmix_value_t *v = NULL;
    *rc = PMIx_Get(&p, key, NULL, 0, &v);
    char *s = NULL;
    if (PMIX_SUCCESS == *rc && NULL != v && PMIX_STRING == v->type && NULL != v->data.string) {
        s = strdup(v->data.string);
    }
    if (NULL != v) {
        PMIX_VALUE_RELEASE(v);
    }
    return s;
}

int main(void)
{
    if (PMIX_SUCCESS != PMIx_Init(&me, NULL, 0)) {
        return 1;
    }
    pmix_status_t rc;
    char *peers = get_str(PMIX_RANK_WILDCARD, PMIX_LOCAL_PEERS, &rc);
    pmix_rank_t ranks[256];
    char *locs[256];
    int n = 0;
    for (char *t = peers ? strtok(peers, ",") : NULL; t && n < 256; t = strtok(NULL, ",")) {
        ranks[n++] = (pmix_rank_t) strtoul(t, NULL, 10);
    }
    for (int i = 0; i < n; i++) {
        locs[i] = get_str(ranks[i], PMIX_LOCALITY_STRING, &rc);
        printf("%u loc %u %d %s\n", me.rank, ranks[i], rc, locs[i] ? locs[i] : "-");
        char *cpu = get_str(ranks[i], PMIX_CPUSET, &rc);
        printf("%u cpu %u %d %s\n", me.rank, ranks[i], rc, cpu ? cpu : "-");
        free(cpu);
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            if (NULL == locs[i] || NULL == locs[j]) {
                continue;
            }
            for (int form = 0; form < 2; form++) {
                char a[1024], b[1024];
                snprintf(a, sizeof(a), "%s%s", form ? "hwloc:" : "", locs[i]);
                snprintf(b, sizeof(b), "%s%s", form ? "hwloc:" : "", locs[j]);
                pmix_locality_t l = 0xdead;
                rc = PMIx_Get_relative_locality(a, b, &l);
                if (0xdead == l) {
                    printf("%u rel %u %u %s %d -\n", me.rank, ranks[i], ranks[j], form ? "hwloc" : "raw", rc);
                } else {
                    printf("%u rel %u %u %s %d %x\n", me.rank, ranks[i], ranks[j], form ? "hwloc" : "raw", rc, (unsigned) l);
                }
            }
        }
    }
    pmix_topology_t topo = {NULL, NULL};
    rc = PMIx_Load_topology(&topo);
    printf("%u topo %d %s", me.rank, rc, topo.source ? topo.source : "-");
    if (PMIX_SUCCESS == rc && NULL != topo.topology) {
        hwloc_topology_t t = (hwloc_topology_t) topo.topology;
        int depth = hwloc_topology_get_depth(t);
        printf(" %d ", depth);
        for (int d = 0; d < depth; d++) {
            printf("%s%s:%u", d ? "," : "", hwloc_obj_type_string(hwloc_get_depth_type(t, d)),
                   hwloc_get_nbobjs_by_depth(t, d));
        }
        printf(",NUMANode:%u", hwloc_get_nbobjs_by_depth(t, HWLOC_TYPE_DEPTH_NUMANODE));
    }
    printf("\n");
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return 0;
}
