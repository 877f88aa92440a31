/*
 * registration.h - the gds component's record of namespace registrations (registration.c).
 */
#ifndef RSHM_GDS_REGISTRATION_H
#define RSHM_GDS_REGISTRATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pmix_common.h"

/* Whether the store refused `nspace`'s registration (its clients then run on gds/hash). */
bool rshm_nspace_failed(const char *nspace);
/* Record (`fail`) or forget that the store refused `nspace`'s registration. */
void rshm_set_nspace_failed(const char *nspace, bool fail);
/* With $RSHM_RECORD_REGISTRATIONS=<dir>: write the array as the host passed it to
 * <dir>/<nspace>.<pid>.reg (record.c); a failure is logged once and changes nothing else. */
void rshm_record_registration(const char *nspace, uint32_t nlocalprocs, const pmix_info_t *info,
                              size_t ninfo);

#endif
