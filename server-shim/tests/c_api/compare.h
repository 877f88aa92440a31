/* A field-by-field comparison of two pmix_value_t, for the C API tests: PMIx_Value_compare of
 * libpmix 4.2.2 does not handle every type (see ct_pmix_compare_supported). */
#ifndef RSHM_CTEST_COMPARE_H
#define RSHM_CTEST_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include <pmix.h>

/* Whether PMIx_Value_compare of libpmix 4.2.2 compares values like v correctly (outside
 * PMIx_Init); where it does not, ct_value_equal alone decides. */
bool ct_pmix_compare_supported(const pmix_value_t *v);
/* Field-by-field equality of two values of any type the abi converts (recursive for data arrays,
 * info and value elements). On a difference, writes why into why[len]. */
bool ct_value_equal(const pmix_value_t *a, const pmix_value_t *b, char *why, size_t len);
/* A short text of a value (type and scalar), for messages. */
void ct_value_str(const pmix_value_t *v, char *buf, size_t len);

#endif
