/*
 * settings.c - what the gds component is told: its MCA parameters, registered the OpenPMIx way
 * (the component's pmix_mca_register_component_params, so `pmix_info --param gds rshm --level 9`
 * lists them and PMIX_MCA_gds_rshm_* / pmix-mca-params.conf set them), and what
 * PMIx_server_init's info (handed to every gds module's init) says of the store. A server opens
 * its store later (the first add_nspace or setup_fork), with rshm_open_info.
 */

#include "line.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmix.h"
#include "src/mca/base/pmix_mca_base_var.h"

#include "rshm_server.h"
#include "settings.h"

/* gds_rshm_dir: the store's base directory, used as given (rshm.dir of rshm_server_open; it
 * overrides $RSHM_DIR). Its storage is the MCA variable system's. */
static char *param_dir = NULL;
int rshm_verbose = 0;
/* gds_rshm_topology: publish the node's topology and complete locality (rshm.topology);
 * gds_rshm_numa: with it, NUMA replicas of the job tables (rshm.numa). */
static bool param_topology = false;
static bool param_numa = false;

/* From init's info: the job's user and group, who may read the store (Slurm's slurmstepd runs
 * as root for a user's tasks), and the server's tmpdir. Written by init and finalize, read when
 * the store is opened: all in the server's framework open/close and progress thread order. */
static bool have_uid = false, have_gid = false;
static uint32_t job_uid = 0, job_gid = 0;
static char *server_tmpdir = NULL;

int rshm_register_params(const pmix_mca_base_component_t *component)
{
    param_dir = NULL;
    (void) pmix_mca_base_component_var_register(
        component, "dir",
        "Base directory of rshm's stores (overrides $RSHM_DIR; default: the server's tmpdir if "
        "it is a tmpfs, else /dev/shm, else /tmp)",
        PMIX_MCA_BASE_VAR_TYPE_STRING, &param_dir);
    rshm_verbose = 0;
    (void) pmix_mca_base_component_var_register(
        component, "verbose",
        "Verbosity of the rshm gds component: 1 logs to stderr where the store was created and "
        "why a client declined it; 2 adds each process's counters at finalize (Gets answered "
        "from the store / left to libpmix; a server's publications, bytes written and CPU time "
        "storing) and times the store path (default: 0)",
        PMIX_MCA_BASE_VAR_TYPE_INT, &rshm_verbose);
    param_topology = false;
    (void) pmix_mca_base_component_var_register(
        component, "topology",
        "Publish the node's hwloc topology in the store and complete registrations' locality "
        "(locality strings from cpusets, the relative-locality table; docs/topology.md). Clients "
        "then answer a PMIX_LOCALITY_STRING hash would not hold where a host registers a cpuset "
        "without its string (default: false)",
        PMIX_MCA_BASE_VAR_TYPE_BOOL, &param_topology);
    param_numa = false;
    (void) pmix_mca_base_component_var_register(
        component, "numa",
        "With gds_rshm_topology: on a node of several NUMA domains, a replica of each job table "
        "per domain, read by the clients bound within it (none on a node of one domain; "
        "docs/topology.md) (default: false)",
        PMIX_MCA_BASE_VAR_TYPE_BOOL, &param_numa);
    return PMIX_SUCCESS;
}

/* A uint32 directive's value (PMIX_USERID, PMIX_GRPID); false for another type. */
static bool info_uint32(const pmix_info_t *info, uint32_t *out)
{
    if (PMIX_UINT32 != info->value.type) {
        RSHM_VERBOSE("rshm: %s is not a uint32 (type %s): ignored", info->key,
                     PMIx_Data_type_string(info->value.type));
        return false;
    }
    *out = info->value.data.uint32;
    return true;
}

void rshm_keep_init_info(const pmix_info_t info[], size_t ninfo)
{
    const char *tmpdir = NULL;
    for (size_t n = 0; NULL != info && n < ninfo; n++) {
        if (PMIX_CHECK_KEY(&info[n], PMIX_USERID)) {
            have_uid = info_uint32(&info[n], &job_uid);
        } else if (PMIX_CHECK_KEY(&info[n], PMIX_GRPID)) {
            have_gid = info_uint32(&info[n], &job_gid);
        } else if (PMIX_CHECK_KEY(&info[n], PMIX_SERVER_TMPDIR)
                   && PMIX_STRING == info[n].value.type) {
            tmpdir = info[n].value.data.string;
        }
    }
    free(server_tmpdir);
    /* without it the shim reads $PMIX_SERVER_TMPDIR, as libpmix does */
    server_tmpdir = (NULL != tmpdir && '\0' != tmpdir[0]) ? strdup(tmpdir) : NULL;
    /* Without PMIX_USERID, the owner of the tmpdir init named, when that is another user than
     * the server's: Slurm's PMIx plugin built against OpenPMIx >= 5 passes no PMIX_USERID to
     * PMIx_server_init (only each task's uid to PMIx_server_register_client, after the store
     * is opened), and creates the step's PMIX_SERVER_TMPDIR (SlurmdSpoolDir/pmix.J.S) owned by
     * the job's user, for the tasks to reach the server's socket in it (pmixp_mkdir). That
     * user already shares the server's rendezvous directory; it gets read access to the store
     * too. A server owning its tmpdir (mpirun, prted) names no reader, as before. */
    if (!have_uid && NULL != server_tmpdir) {
        struct stat st;
        if (0 == stat(server_tmpdir, &st) && S_ISDIR(st.st_mode) && st.st_uid != geteuid()) {
            job_uid = (uint32_t) st.st_uid;
            have_uid = true;
            RSHM_VERBOSE("rshm: no PMIX_USERID; the reader is uid %u, owner of the tmpdir %s",
                         (unsigned) job_uid, server_tmpdir);
        }
    }
}

void rshm_forget_init_info(void)
{
    free(server_tmpdir);
    server_tmpdir = NULL;
    have_uid = have_gid = false;
}

size_t rshm_open_info(pmix_info_t info[RSHM_OPEN_INFO], const char *hostname)
{
    size_t n = 0;
    if (NULL != hostname) {
        PMIX_INFO_LOAD(&info[n], PMIX_HOSTNAME, hostname, PMIX_STRING);
        n++;
    }
    if (have_uid) {
        PMIX_INFO_LOAD(&info[n], PMIX_USERID, &job_uid, PMIX_UINT32);
        n++;
    }
    if (have_gid) {
        PMIX_INFO_LOAD(&info[n], PMIX_GRPID, &job_gid, PMIX_UINT32);
        n++;
    }
    if (NULL != server_tmpdir) {
        PMIX_INFO_LOAD(&info[n], PMIX_SERVER_TMPDIR, server_tmpdir, PMIX_STRING);
        n++;
    }
    if (NULL != param_dir && '\0' != param_dir[0]) {
        PMIX_INFO_LOAD(&info[n], RSHM_SERVER_INFO_DIR, param_dir, PMIX_STRING);
        n++;
    }
    if (param_topology) {
        PMIX_INFO_LOAD(&info[n], "rshm.topology", &param_topology, PMIX_BOOL);
        n++;
        if (param_numa) {
            PMIX_INFO_LOAD(&info[n], "rshm.numa", &param_numa, PMIX_BOOL);
            n++;
        }
    }
    return n;
}
