/*
 * line.h - the OpenPMIx line a build of the component is for. component/Makefile compiles every
 * C file once per line (PMIX_LINE=4.2, 5.0 or 7.0, passed as RSHM_PMIX_LINE=42, 50 or 70) against that
 * line's installed internal headers; this header, included first by each file, refuses headers
 * of another line and names the line's version for the run-time check (gds_rshm.c,
 * rshm_check_running_version). docs/openpmix.md.
 *
 *  4.2: OpenPMIx 4.2.x, x >= 2 (Debian 12's 4.2.2)
 *  5.0: OpenPMIx 5.0.x, x >= 7 (Debian 13's 5.0.7: fetch's peer argument arrived in 5.0.7)
 *  7.0: OpenPMIx 7.0.x (Debian unstable's 7.0.0rc1: gds framework 2.0.0)
 */
#ifndef RSHM_GDS_LINE_H
#define RSHM_GDS_LINE_H

#include "src/include/pmix_config.h"
#include "pmix_common.h"
#include "pmix_version.h"

#if !defined(RSHM_PMIX_LINE)
#    error "RSHM_PMIX_LINE is not set: build with component/Makefile (PMIX_LINE=4.2, 5.0 or 7.0)"
#elif 42 == RSHM_PMIX_LINE
#    define RSHM_LINE_MAJOR 4
#    define RSHM_LINE_MINOR 2
#    define RSHM_LINE_MIN_RELEASE 2
#elif 50 == RSHM_PMIX_LINE
#    define RSHM_LINE_MAJOR 5
#    define RSHM_LINE_MINOR 0
#    define RSHM_LINE_MIN_RELEASE 7
/* 5.0's pmix_output_verbose reads pmix_output_info, a data symbol 4.2 lacks. A data symbol is
 * bound when libpmix dlopens the component, so a strong reference would fail the dlopen under a
 * 4.2 libpmix before the component could decline with its reason; a weak one loads, and is never
 * read unless the version check passed. */
#    pragma weak pmix_output_info
#elif 70 == RSHM_PMIX_LINE
#    define RSHM_LINE_MAJOR 7
#    define RSHM_LINE_MINOR 0
#    define RSHM_LINE_MIN_RELEASE 0
/* As for 5.0: data symbols a 4.2 libpmix lacks, weak so that the dlopen succeeds and the
 * component can decline there. */
#    pragma weak pmix_output_info
#else
#    error "RSHM_PMIX_LINE must be 42 (OpenPMIx 4.2), 50 (OpenPMIx 5.0) or 70 (OpenPMIx 7.0)"
#endif

#if !defined(PMIX_VERSION_MAJOR) || RSHM_LINE_MAJOR != PMIX_VERSION_MAJOR                        \
    || RSHM_LINE_MINOR != PMIX_VERSION_MINOR
#    error "the OpenPMIx headers found are not of the line being built (PMIX_LINE, see docs/openpmix.md)"
#endif
#if PMIX_VERSION_RELEASE < RSHM_LINE_MIN_RELEASE
#    error "the OpenPMIx headers found are of a release of the line older than the component supports"
#endif

#endif
