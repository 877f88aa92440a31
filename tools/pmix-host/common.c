/*
 * common.c - see common.h.
 */
#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "pmix-attrs.h" /* generated: static const struct attr_def ATTRS[] */

const struct attr_def *attr_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof(ATTRS) / sizeof(ATTRS[0]); i++) {
        if (0 == strcmp(ATTRS[i].name, name)) {
            return &ATTRS[i];
        }
    }
    return NULL;
}

const char *resolve_key(const char *name)
{
    const struct attr_def *a = attr_by_name(name);
    return a ? a->key : name;
}

static const struct {
    const char *name;
    pmix_data_type_t type;
} TYPE_NAMES[] = {
    {"string", PMIX_STRING},  {"char*", PMIX_STRING},
    {"bool", PMIX_BOOL},
    {"int", PMIX_INT},        {"uint", PMIX_UINT},
    {"int8", PMIX_INT8},      {"int8_t", PMIX_INT8},
    {"int16", PMIX_INT16},    {"int16_t", PMIX_INT16},
    {"int32", PMIX_INT32},    {"int32_t", PMIX_INT32},
    {"int64", PMIX_INT64},    {"int64_t", PMIX_INT64},
    {"uint8", PMIX_UINT8},    {"uint8_t", PMIX_UINT8},
    {"uint16", PMIX_UINT16},  {"uint16_t", PMIX_UINT16},
    {"uint32", PMIX_UINT32},  {"uint32_t", PMIX_UINT32},
    {"uint64", PMIX_UINT64},  {"uint64_t", PMIX_UINT64},
    {"size", PMIX_SIZE},      {"size_t", PMIX_SIZE},
    {"rank", PMIX_PROC_RANK}, {"pmix_rank_t", PMIX_PROC_RANK},
    {"pid", PMIX_PID},        {"pid_t", PMIX_PID},
    {"float", PMIX_FLOAT},    {"double", PMIX_DOUBLE},
    {"status", PMIX_STATUS},  {"pmix_status_t", PMIX_STATUS},
};

pmix_data_type_t type_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof(TYPE_NAMES) / sizeof(TYPE_NAMES[0]); i++) {
        if (0 == strcmp(TYPE_NAMES[i].name, name)) {
            return TYPE_NAMES[i].type;
        }
    }
    return PMIX_UNDEF;
}

/* strtoll/strtoull with full-string and range checking. */
static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 0);
    if (errno || end == s || *end || x < lo || x > hi) {
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_u64(const char *s, uint64_t hi, uint64_t *out)
{
    char *end;
    if ('-' == s[0]) {
        return -1;
    }
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || x > hi) {
        return -1;
    }
    *out = x;
    return 0;
}

int parse_value(pmix_data_type_t type, const char *text, pmix_value_t *v)
{
    int64_t i = 0;
    uint64_t u = 0;
    int bad = 0;

    PMIX_VALUE_CONSTRUCT(v);
    v->type = type;
    switch (type) {
    case PMIX_STRING:
        v->data.string = strdup(text);
        break;
    case PMIX_BOOL:
        if (!strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes")) {
            v->data.flag = true;
        } else if (!strcmp(text, "false") || !strcmp(text, "0") || !strcmp(text, "no")) {
            v->data.flag = false;
        } else {
            bad = 1;
        }
        break;
    case PMIX_INT:   bad = parse_i64(text, INT32_MIN, INT32_MAX, &i); v->data.integer = (int) i; break;
    case PMIX_INT8:  bad = parse_i64(text, INT8_MIN, INT8_MAX, &i);   v->data.int8 = (int8_t) i; break;
    case PMIX_INT16: bad = parse_i64(text, INT16_MIN, INT16_MAX, &i); v->data.int16 = (int16_t) i; break;
    case PMIX_INT32: bad = parse_i64(text, INT32_MIN, INT32_MAX, &i); v->data.int32 = (int32_t) i; break;
    case PMIX_INT64: bad = parse_i64(text, INT64_MIN, INT64_MAX, &i); v->data.int64 = i; break;
    case PMIX_STATUS: bad = parse_i64(text, INT32_MIN, INT32_MAX, &i); v->data.status = (pmix_status_t) i; break;
    case PMIX_PID:   bad = parse_i64(text, 0, INT32_MAX, &i);         v->data.pid = (pid_t) i; break;
    case PMIX_UINT:  bad = parse_u64(text, UINT32_MAX, &u); v->data.uint = (unsigned) u; break;
    case PMIX_UINT8: bad = parse_u64(text, UINT8_MAX, &u);  v->data.uint8 = (uint8_t) u; break;
    case PMIX_UINT16: bad = parse_u64(text, UINT16_MAX, &u); v->data.uint16 = (uint16_t) u; break;
    case PMIX_UINT32: bad = parse_u64(text, UINT32_MAX, &u); v->data.uint32 = (uint32_t) u; break;
    case PMIX_UINT64: bad = parse_u64(text, UINT64_MAX, &u); v->data.uint64 = u; break;
    case PMIX_SIZE:  bad = parse_u64(text, SIZE_MAX, &u);   v->data.size = (size_t) u; break;
    case PMIX_PROC_RANK:
        if (!strcmp(text, "*") || !strcmp(text, "wildcard")) {
            v->data.rank = PMIX_RANK_WILDCARD;
        } else if (!strcmp(text, "undef")) {
            v->data.rank = PMIX_RANK_UNDEF;
        } else {
            bad = parse_u64(text, UINT32_MAX, &u);
            v->data.rank = (pmix_rank_t) u;
        }
        break;
    case PMIX_FLOAT:
    case PMIX_DOUBLE: {
        char *end;
        double d = strtod(text, &end);
        bad = (end == text || *end);
        if (PMIX_FLOAT == type) {
            v->data.fval = (float) d;
        } else {
            v->data.dval = d;
        }
        break;
    }
    default:
        fprintf(stderr, "unsupported value type %s\n", PMIx_Data_type_string(type));
        return -1;
    }
    if (bad) {
        fprintf(stderr, "bad %s value '%s'\n", PMIx_Data_type_string(type), text);
        return -1;
    }
    return 0;
}

void fmt_rank(FILE *out, pmix_rank_t r)
{
    switch (r) {
    case PMIX_RANK_UNDEF:       fputs("UNDEF", out); break;
    case PMIX_RANK_WILDCARD:    fputs("WILDCARD", out); break;
    case PMIX_RANK_LOCAL_NODE:  fputs("LOCAL_NODE", out); break;
    case PMIX_RANK_INVALID:     fputs("INVALID", out); break;
    case PMIX_RANK_LOCAL_PEERS: fputs("LOCAL_PEERS", out); break;
    default:                    fprintf(out, "%" PRIu32, r); break;
    }
}

/* Quoted string with C escapes; non-printable bytes as \xNN. */
void fmt_bytes_quoted(FILE *out, const char *s, size_t n)
{
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char) s[i];
        switch (c) {
        case '"':  fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        case '\0': fputs("\\0", out); break;
        default:
            if (isprint(c)) {
                fputc(c, out);
            } else {
                fprintf(out, "\\x%02x", c);
            }
        }
    }
    fputc('"', out);
}

static void fmt_hex(FILE *out, const char *p, size_t n)
{
    fputs("0x", out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%02x", (unsigned char) p[i]);
    }
}

/* Size of one element of a pmix_data_array_t of the given type; 0 if
 * unsupported. */
static size_t elem_size(pmix_data_type_t t)
{
    switch (t) {
    case PMIX_BOOL:   return sizeof(bool);
    case PMIX_BYTE:   return 1;
    case PMIX_STRING: return sizeof(char *);
    case PMIX_SIZE:   return sizeof(size_t);
    case PMIX_PID:    return sizeof(pid_t);
    case PMIX_INT:    return sizeof(int);
    case PMIX_INT8:   return 1;
    case PMIX_INT16:  return 2;
    case PMIX_INT32:  return 4;
    case PMIX_INT64:  return 8;
    case PMIX_UINT:   return sizeof(unsigned);
    case PMIX_UINT8:  return 1;
    case PMIX_UINT16: return 2;
    case PMIX_UINT32: return 4;
    case PMIX_UINT64: return 8;
    case PMIX_FLOAT:  return sizeof(float);
    case PMIX_DOUBLE: return sizeof(double);
    case PMIX_STATUS: return sizeof(pmix_status_t);
    case PMIX_PROC_RANK: return sizeof(pmix_rank_t);
    case PMIX_PROC:   return sizeof(pmix_proc_t);
    case PMIX_BYTE_OBJECT:
    case PMIX_COMPRESSED_STRING:
    case PMIX_COMPRESSED_BYTE_OBJECT:
    case PMIX_REGEX:  return sizeof(pmix_byte_object_t);
    case PMIX_VALUE:  return sizeof(pmix_value_t);
    case PMIX_INFO:   return sizeof(pmix_info_t);
    case PMIX_DATA_ARRAY: return sizeof(pmix_data_array_t);
    default:          return 0;
    }
}

static void fmt_elem(FILE *out, pmix_data_type_t t, const void *p);

static void fmt_darray(FILE *out, const pmix_data_array_t *d)
{
    if (NULL == d) {
        fputs("null", out);
        return;
    }
    size_t es = elem_size(d->type);
    int info = (PMIX_INFO == d->type);

    if (0 == es) {
        fprintf(out, "[<%s x%zu>]", PMIx_Data_type_string(d->type), d->size);
        return;
    }
    fputc(info ? '{' : '[', out);
    for (size_t i = 0; i < d->size; i++) {
        if (i) {
            fputc(',', out);
        }
        fmt_elem(out, d->type, (const char *) d->array + i * es);
    }
    fputc(info ? '}' : ']', out);
}

/* Print one element of type t stored at p (array-element layout). */
static void fmt_elem(FILE *out, pmix_data_type_t t, const void *p)
{
    switch (t) {
    case PMIX_BOOL:   fputs(*(const bool *) p ? "true" : "false", out); break;
    case PMIX_BYTE:
    case PMIX_UINT8:  fprintf(out, "%u", (unsigned) *(const uint8_t *) p); break;
    case PMIX_STRING: {
        const char *s = *(char *const *) p;
        if (s) {
            fmt_bytes_quoted(out, s, strlen(s));
        } else {
            fputs("null", out);
        }
        break;
    }
    case PMIX_SIZE:   fprintf(out, "%zu", *(const size_t *) p); break;
    case PMIX_PID:    fprintf(out, "%ld", (long) *(const pid_t *) p); break;
    case PMIX_INT:    fprintf(out, "%d", *(const int *) p); break;
    case PMIX_INT8:   fprintf(out, "%d", (int) *(const int8_t *) p); break;
    case PMIX_INT16:  fprintf(out, "%d", (int) *(const int16_t *) p); break;
    case PMIX_INT32:  fprintf(out, "%" PRId32, *(const int32_t *) p); break;
    case PMIX_INT64:  fprintf(out, "%" PRId64, *(const int64_t *) p); break;
    case PMIX_UINT:   fprintf(out, "%u", *(const unsigned *) p); break;
    case PMIX_UINT16: fprintf(out, "%u", (unsigned) *(const uint16_t *) p); break;
    case PMIX_UINT32: fprintf(out, "%" PRIu32, *(const uint32_t *) p); break;
    case PMIX_UINT64: fprintf(out, "%" PRIu64, *(const uint64_t *) p); break;
    case PMIX_FLOAT:  fprintf(out, "%.9g", (double) *(const float *) p); break;
    case PMIX_DOUBLE: fprintf(out, "%.17g", *(const double *) p); break;
    case PMIX_STATUS: fputs(PMIx_Error_string(*(const pmix_status_t *) p), out); break;
    case PMIX_PROC_RANK: fmt_rank(out, *(const pmix_rank_t *) p); break;
    case PMIX_PROC: {
        const pmix_proc_t *pr = p;
        fprintf(out, "%s:", pr->nspace);
        fmt_rank(out, pr->rank);
        break;
    }
    case PMIX_REGEX: {
        /* a regex is a byte object holding a (possibly binary) string */
        const pmix_byte_object_t *bo = p;
        size_t n = bo->size;
        if (n > 0 && NULL != bo->bytes && '\0' == bo->bytes[n - 1]) {
            n--; /* drop the terminating NUL of a plain string regex */
        }
        fmt_bytes_quoted(out, bo->bytes, n);
        break;
    }
    case PMIX_BYTE_OBJECT:
    case PMIX_COMPRESSED_STRING:
    case PMIX_COMPRESSED_BYTE_OBJECT: {
        const pmix_byte_object_t *bo = p;
        fmt_hex(out, bo->bytes, bo->size);
        break;
    }
    case PMIX_DATA_BUFFER: {
        /* what PMIx_Data_unpack would read: the bytes between unpack_ptr and pack_ptr */
        const pmix_data_buffer_t *db = *(pmix_data_buffer_t *const *) p;
        if (NULL == db) {
            fputs("null", out);
        } else if (NULL == db->unpack_ptr || db->pack_ptr < db->unpack_ptr) {
            fprintf(out, "unreadable/%zu", db->bytes_used);
        } else {
            fmt_hex(out, db->unpack_ptr, (size_t) (db->pack_ptr - db->unpack_ptr));
        }
        break;
    }
    case PMIX_VALUE:
        fmt_value(out, p);
        break;
    case PMIX_INFO: {
        const pmix_info_t *in = p;
        fprintf(out, "%s=", in->key);
        fmt_value(out, &in->value);
        break;
    }
    case PMIX_DATA_ARRAY:
        fmt_darray(out, p);
        break;
    default:
        fprintf(out, "<%s>", PMIx_Data_type_string(t));
        break;
    }
}

void fmt_value(FILE *out, const pmix_value_t *v)
{
    switch (v->type) {
    /* types held by pointer in pmix_value_t but inline in arrays */
    case PMIX_PROC:
        if (v->data.proc) {
            fmt_elem(out, PMIX_PROC, v->data.proc);
        } else {
            fputs("null", out);
        }
        break;
    case PMIX_DATA_ARRAY:
        if (v->data.darray) {
            fmt_darray(out, v->data.darray);
        } else {
            fputs("null", out);
        }
        break;
    case PMIX_UNDEF:
        fputs("-", out);
        break;
    default:
        fmt_elem(out, v->type, &v->data);
        break;
    }
}

int parse_ranklist(const char *text, pmix_rank_t **out)
{
    int n = 0, cap = 16;
    pmix_rank_t *r = malloc(cap * sizeof(*r));
    const char *p = text;

    while (*p) {
        char *end;
        unsigned long lo = strtoul(p, &end, 10), hi;
        if (end == p) {
            goto bad;
        }
        hi = lo;
        p = end;
        if ('-' == *p) {
            hi = strtoul(p + 1, &end, 10);
            if (end == p + 1 || hi < lo) {
                goto bad;
            }
            p = end;
        }
        for (unsigned long x = lo; x <= hi; x++) {
            if (n == cap) {
                cap *= 2;
                r = realloc(r, cap * sizeof(*r));
            }
            r[n++] = (pmix_rank_t) x;
        }
        if (',' == *p) {
            p++;
        } else if (*p) {
            goto bad;
        }
    }
    *out = r;
    return n;
bad:
    free(r);
    return -1;
}
