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
/* A shallow copy of a registration array without NULL PMIX_STRING values, nested info arrays
 * copied the same way; NULL (and *out_n 0) for an empty result, or for no memory (*nomem). */
pmix_info_t *rshm_filter_infos(const pmix_info_t *info, size_t ninfo, size_t *out_n, bool *nomem);
/* Free what rshm_filter_infos returned. */
void rshm_free_filtered(pmix_info_t *info, size_t ninfo);
/* With $RSHM_RECORD_REGISTRATIONS=<dir>: write the array as the host passed it to
 * <dir>/<nspace>.<pid>.reg (record.c); a failure is logged once and changes nothing else. */
void rshm_record_registration(const char *nspace, uint32_t nlocalprocs, const pmix_info_t *info,
                              size_t ninfo);

#endif
