/*
 * record.c - RSHM_RECORD_REGISTRATIONS=<dir>: every namespace registration the server's add_nspace
 * receives, written as the host passed it to <dir>/<nspace>.<pid>.reg in tools/pmix-host's
 * "registration dump v1" format, so `pmix-host --replay-registration` registers the same array
 * again (docs/openpmix.md, "Recording registrations").
 *
 * Value text is the pmix-host canonical form (tools/pmix-host/README.md), written here again
 * because the component does not link the tool's sources.
 */

#include "line.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/include/pmix_globals.h"
#include "src/util/pmix_output.h"

#include "registration.h"

#define RECORD_ENV "RSHM_RECORD_REGISTRATIONS"

static void quoted(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\t': fputs("\\t", f); break;
        case '\r': fputs("\\r", f); break;
        case '\0': fputs("\\0", f); break;
        default:
            if (isprint(c)) {
                fputc(c, f);
            } else {
                fprintf(f, "\\x%02x", c);
            }
        }
    }
    fputc('"', f);
}

static void rank_text(FILE *f, pmix_rank_t r)
{
    switch (r) {
    case PMIX_RANK_UNDEF: fputs("UNDEF", f); break;
    case PMIX_RANK_WILDCARD: fputs("WILDCARD", f); break;
    case PMIX_RANK_LOCAL_NODE: fputs("LOCAL_NODE", f); break;
    case PMIX_RANK_INVALID: fputs("INVALID", f); break;
    case PMIX_RANK_LOCAL_PEERS: fputs("LOCAL_PEERS", f); break;
    default: fprintf(f, "%" PRIu32, r); break;
    }
}

static void hex(FILE *f, const char *p, size_t n)
{
    fputs("0x", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%02x", (unsigned char) p[i]);
    }
}

/* Size of one element of a data array of type t; 0 for types not written element-wise. */
static size_t elem_size(pmix_data_type_t t)
{
    switch (t) {
    case PMIX_BOOL: return sizeof(bool);
    case PMIX_BYTE: case PMIX_INT8: case PMIX_UINT8: return 1;
    case PMIX_INT16: case PMIX_UINT16: return 2;
    case PMIX_INT32: case PMIX_UINT32: return 4;
    case PMIX_INT64: case PMIX_UINT64: return 8;
    case PMIX_STRING: return sizeof(char *);
    case PMIX_SIZE: return sizeof(size_t);
    case PMIX_PID: return sizeof(pid_t);
    case PMIX_INT: return sizeof(int);
    case PMIX_UINT: return sizeof(unsigned);
    case PMIX_FLOAT: return sizeof(float);
    case PMIX_DOUBLE: return sizeof(double);
    case PMIX_STATUS: return sizeof(pmix_status_t);
    case PMIX_PROC_RANK: return sizeof(pmix_rank_t);
    case PMIX_PROC: return sizeof(pmix_proc_t);
    default: return 0;
    }
}

/* Canonical text of one scalar stored at p in array-element layout. */
static void elem_text(FILE *f, pmix_data_type_t t, const void *p)
{
    switch (t) {
    case PMIX_BOOL: fputs(*(const bool *) p ? "true" : "false", f); break;
    case PMIX_BYTE:
    case PMIX_UINT8: fprintf(f, "%u", (unsigned) *(const uint8_t *) p); break;
    case PMIX_STRING: {
        const char *s = *(char *const *) p;
        if (NULL == s) {
            fputs("null", f);
        } else {
            quoted(f, s, strlen(s));
        }
        break;
    }
    case PMIX_SIZE: fprintf(f, "%zu", *(const size_t *) p); break;
    case PMIX_PID: fprintf(f, "%ld", (long) *(const pid_t *) p); break;
    case PMIX_INT: fprintf(f, "%d", *(const int *) p); break;
    case PMIX_INT8: fprintf(f, "%d", (int) *(const int8_t *) p); break;
    case PMIX_INT16: fprintf(f, "%d", (int) *(const int16_t *) p); break;
    case PMIX_INT32: fprintf(f, "%" PRId32, *(const int32_t *) p); break;
    case PMIX_INT64: fprintf(f, "%" PRId64, *(const int64_t *) p); break;
    case PMIX_UINT: fprintf(f, "%u", *(const unsigned *) p); break;
    case PMIX_UINT16: fprintf(f, "%u", (unsigned) *(const uint16_t *) p); break;
    case PMIX_UINT32: fprintf(f, "%" PRIu32, *(const uint32_t *) p); break;
    case PMIX_UINT64: fprintf(f, "%" PRIu64, *(const uint64_t *) p); break;
    case PMIX_FLOAT: fprintf(f, "%.9g", (double) *(const float *) p); break;
    case PMIX_DOUBLE: fprintf(f, "%.17g", *(const double *) p); break;
    case PMIX_STATUS: fprintf(f, "%d", (int) *(const pmix_status_t *) p); break;
    case PMIX_PROC_RANK: rank_text(f, *(const pmix_rank_t *) p); break;
    case PMIX_PROC: {
        const pmix_proc_t *pr = p;
        fprintf(f, "%s:", pr->nspace);
        rank_text(f, pr->rank);
        break;
    }
    default: fprintf(f, "<%s>", PMIx_Data_type_string(t)); break;
    }
}

static void infos(FILE *f, const pmix_info_t *v, size_t n, int depth)
{
    for (size_t i = 0; i < n; i++) {
        const pmix_value_t *val = &v[i].value;
        fprintf(f, "%*s%d %s %s ", 2 * depth, "", depth, v[i].key, PMIx_Data_type_string(val->type));
        switch (val->type) {
        case PMIX_REGEX:
            quoted(f, val->data.bo.bytes, NULL == val->data.bo.bytes ? 0 : val->data.bo.size);
            break;
        case PMIX_BYTE_OBJECT:
        case PMIX_COMPRESSED_STRING:
        case PMIX_COMPRESSED_BYTE_OBJECT:
            hex(f, val->data.bo.bytes, NULL == val->data.bo.bytes ? 0 : val->data.bo.size);
            break;
        case PMIX_PROC:
            if (NULL == val->data.proc) {
                fputs("null", f);
            } else {
                elem_text(f, PMIX_PROC, val->data.proc);
            }
            break;
        case PMIX_DATA_ARRAY: {
            const pmix_data_array_t *d = val->data.darray;
            size_t es = NULL == d ? 0 : elem_size(d->type);
            if (NULL == d || (NULL == d->array && 0 < d->size)) {
                fputs("PMIX_UNDEF 0", f);
            } else if (PMIX_INFO == d->type) {
                fprintf(f, "PMIX_INFO %zu\n", d->size);
                infos(f, (const pmix_info_t *) d->array, d->size, depth + 1);
                continue;
            } else {
                fprintf(f, "%s %zu [", PMIx_Data_type_string(d->type), d->size);
                for (size_t k = 0; 0 < es && k < d->size; k++) {
                    if (0 < k) {
                        fputc(',', f);
                    }
                    elem_text(f, d->type, (const char *) d->array + k * es);
                }
                if (0 == es) {
                    fprintf(f, "<%s x%zu>", PMIx_Data_type_string(d->type), d->size);
                }
                fputc(']', f);
            }
            break;
        }
        case PMIX_UNDEF: fputc('-', f); break;
        default: elem_text(f, val->type, &val->data); break;
        }
        fputc('\n', f);
    }
}

void rshm_record_registration(const char *nspace, uint32_t nlocalprocs, const pmix_info_t *info,
                              size_t ninfo)
{
    static bool warned = false;
    const char *dir = getenv(RECORD_ENV);
    char path[4096], tmp[4200];
    FILE *f;
    int bad;
    if (NULL == dir || '\0' == dir[0] || NULL == nspace) {
        return;
    }
    /* a namespace names a file: no directories in it */
    snprintf(path, sizeof(path), "%s/%s.%ld.reg", dir, nspace, (long) getpid());
    for (char *c = path + strlen(dir) + 1; '\0' != *c; c++) {
        if ('/' == *c) {
            *c = '_';
        }
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    bad = NULL == f;
    if (!bad) {
        fprintf(f, "# pmix-host registration dump v1\n");
        fprintf(f, "# recorded by pmix_mca_gds_rshm.so (" RECORD_ENV ")\n");
        fprintf(f, "nspace %s\n", nspace);
        fprintf(f, "local %s\n", NULL == pmix_globals.hostname ? "-" : pmix_globals.hostname);
        fprintf(f, "nlocalprocs %" PRIu32 "\n", nlocalprocs);
        fprintf(f, "ninfo %zu\n", NULL == info ? (size_t) 0 : ninfo);
        if (NULL != info) {
            infos(f, info, ninfo, 0);
        }
        bad = 0 != ferror(f);
        bad |= 0 != fclose(f);
        bad = bad || 0 != rename(tmp, path);
        if (bad) {
            unlink(tmp);
        }
    }
    if (bad && !warned) {
        warned = true;
        pmix_output(0, "rshm: cannot record the registration of %s in %s: %s (registration "
                       "goes on; later failures are not reported)",
                    nspace, path, strerror(errno));
    }
}
