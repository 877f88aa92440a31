/*
 * settings.h - what the gds component is told (settings.c): its MCA parameters (gds_rshm_dir,
 * gds_rshm_verbose) and what PMIx_server_init's info says of the store (the job's user and
 * group, the server's tmpdir), turned into rshm_server_open's info (docs/deploy.md).
 */
#ifndef RSHM_GDS_SETTINGS_H
#define RSHM_GDS_SETTINGS_H

#include <stddef.h>

#include "pmix_common.h"
#include "src/mca/mca.h"
#include "src/util/pmix_output.h"

/* gds_rshm_verbose (0 unless set). */
extern int rshm_verbose;

/* gds_rshm_verbose > 0: a line on stderr (pmix_output's stream 0). */
#define RSHM_VERBOSE(...)                                                                          \
    do {                                                                                           \
        if (0 < rshm_verbose) {                                                                    \
            pmix_output(0, __VA_ARGS__);                                                           \
        }                                                                                          \
    } while (0)

/* The component's pmix_mca_register_component_params: register gds_rshm_dir and
 * gds_rshm_verbose as `component`'s variables. */
int rshm_register_params(const pmix_mca_base_component_t *component);

/* The module's init: keep PMIX_USERID / PMIX_GRPID (uint32) and PMIX_SERVER_TMPDIR of `info`. */
void rshm_keep_init_info(const pmix_info_t info[], size_t ninfo);
/* The module's finalize: forget them. */
void rshm_forget_init_info(void);

/* rshm_server_open's info, at most RSHM_OPEN_INFO entries: PMIX_HOSTNAME (when `hostname` is
 * not NULL), PMIX_USERID / PMIX_GRPID and PMIX_SERVER_TMPDIR as init gave them, and
 * RSHM_SERVER_INFO_DIR = gds_rshm_dir when set, rshm.topology (and rshm.numa) when
 * gds_rshm_topology (and gds_rshm_numa) are. Returns how many were loaded; the caller
 * destructs each after the call. */
#define RSHM_OPEN_INFO 7
size_t rshm_open_info(pmix_info_t info[RSHM_OPEN_INFO], const char *hostname);

#endif
