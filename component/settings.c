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
        "Verbosity of the rshm gds component: > 0 logs to stderr where the store was created "
        "and why a client declined it (default: 0)",
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
