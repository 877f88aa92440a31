/* libpmix's own locality answers, for topo/tests/libpmix_locality.rs: a PMIx server (Debian's
 * libpmix 4.2.2) initialized on this machine's topology (or the one HWLOC_SYNTHETIC /
 * HWLOC_XMLFILE names), answering one query per stdin line:
 *   L <hwloc cpuset list>   ->  "<status> <PMIx_server_generate_locality_string or (null)>"
 *   R <string>|<string>     ->  "<status> <PMIx_Get_relative_locality, hex>" (unset: "-")
 *   S <string>              ->  nothing: the string is kept for A
 *   A                       ->  "<ns>": PMIx_Get_relative_locality of every ordered pair of
 *                               the kept strings, timed, per pair (benches/benches/topology.rs)
 * Statuses are printed as numbers. */
#include <pmix.h>
#include <pmix_server.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *kept[4096];
static int nkept = 0;

int main(void)
{
    pmix_server_module_t module;
    memset(&module, 0, sizeof(module));
    pmix_status_t rc = PMIx_server_init(&module, NULL, 0);
    if (PMIX_SUCCESS != rc) {
        fprintf(stderr, "PMIx_server_init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    char line[65536];
    while (fgets(line, sizeof(line), stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if ('L' == line[0] && ' ' == line[1]) {
            char cs[65600];
            snprintf(cs, sizeof(cs), "hwloc:%s", line + 2);
            pmix_cpuset_t cpuset;
            PMIX_CPUSET_CONSTRUCT(&cpuset);
            rc = PMIx_Parse_cpuset_string(cs, &cpuset);
            if (PMIX_SUCCESS != rc) {
                printf("%d (null)\n", rc);
                continue;
            }
            char *loc = NULL;
            rc = PMIx_server_generate_locality_string(&cpuset, &loc);
            printf("%d %s\n", rc, NULL == loc ? "(null)" : loc);
            free(loc);
            PMIx_Cpuset_destruct(&cpuset);
        } else if ('R' == line[0] && ' ' == line[1]) {
            char *sep = strchr(line + 2, '|');
            if (NULL == sep) {
                printf("bad\n");
                continue;
            }
            *sep = '\0';
            pmix_locality_t loc = 0xdead;
            rc = PMIx_Get_relative_locality(line + 2, sep + 1, &loc);
            if (0xdead == loc) {
                printf("%d -\n", rc);
            } else {
                printf("%d %x\n", rc, (unsigned) loc);
            }
        } else if ('S' == line[0] && ' ' == line[1] && nkept < 4096) {
            kept[nkept++] = strdup(line + 2);
            continue;
        } else if ('A' == line[0]) {
            struct timespec t0, t1;
            unsigned sum = 0;
            clock_gettime(CLOCK_MONOTONIC, &t0);
            for (int i = 0; i < nkept; i++) {
                for (int j = 0; j < nkept; j++) {
                    pmix_locality_t loc = 0;
                    (void) PMIx_Get_relative_locality(kept[i], kept[j], &loc);
                    sum += loc;
                }
            }
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
            printf("%.1f %u\n", nkept ? ns / ((double) nkept * nkept) : 0.0, sum);
        } else {
            printf("bad\n");
        }
        fflush(stdout);
    }
    PMIx_server_finalize();
    return 0;
}
