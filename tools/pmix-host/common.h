/*
 * common.h - helpers shared by pmix-host and pmix-client.
 *
 *  - attribute name lookup: "PMIX_JOB_SIZE" -> "pmix.job.size" + its
 *    documented C type, from the table generated out of the installed
 *    pmix_common.h (see gen-attrs.sh);
 *  - parsing "TYPE VALUE" text into a pmix_value_t;
 *  - printing a pmix_value_t in the canonical text form used by the
 *    conformance tests (see README.md, "Canonical value text").
 */
#ifndef PMIX_HOST_COMMON_H
#define PMIX_HOST_COMMON_H

#include <stdio.h>
#include <pmix_common.h>

/* One attribute definition from pmix_common.h. */
struct attr_def {
    const char *name;  /* macro name, e.g. "PMIX_JOB_SIZE" */
    const char *key;   /* key string, e.g. "pmix.job.size" */
    const char *ctype; /* documented type, e.g. "uint32_t"; "" if none */
};

/* Look up a macro name ("PMIX_JOB_SIZE"). NULL if unknown. */
const struct attr_def *attr_by_name(const char *name);

/* Resolve a key as written in a job/corpus file: a known macro name
 * gives its key string; anything else is used literally. */
const char *resolve_key(const char *name);

/* Map a type name to a PMIx data type. Accepts the short names used in
 * the file formats (string, bool, int, int8..int64, uint8..uint64, size,
 * rank, pid, float, double, status) and the C spellings used in the
 * header comments (char*, uint32_t, pmix_rank_t, ...). Returns
 * PMIX_UNDEF if the name is not supported. */
pmix_data_type_t type_by_name(const char *name);

/* Parse VALUE text as TYPE into *v (which is initialised first).
 * Integers accept decimal or 0x-hex; bool accepts true/false/1/0/yes/no;
 * rank also accepts "*"/"wildcard" and "undef". Returns 0 on success,
 * -1 (with a message on stderr) on error. */
int parse_value(pmix_data_type_t type, const char *text, pmix_value_t *v);

/* Canonical text of a value (see README.md). */
void fmt_value(FILE *out, const pmix_value_t *v);

/* N bytes as a double-quoted string with C escapes (\n, \", \\, \0,
 * \xNN for other non-printable bytes). */
void fmt_bytes_quoted(FILE *out, const char *s, size_t n);

/* Canonical text of a rank: decimal, or WILDCARD/UNDEF/... */
void fmt_rank(FILE *out, pmix_rank_t r);

/* Parse a rank list "0,2-5,7" into a malloc'd array; returns count or
 * -1 on syntax error. */
int parse_ranklist(const char *text, pmix_rank_t **out);

#endif
