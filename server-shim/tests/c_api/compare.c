/* Field-by-field comparison of two pmix_value_t, and a short text of one (compare.h). */
/* pmix_common.h uses strdup and strncasecmp: under -std=c11 they need _GNU_SOURCE (docs/ffi.md). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <hwloc.h>

#include "compare.h"

bool ct_pmix_compare_supported(const pmix_value_t *v)
{
    switch (v->type) {
    case PMIX_DATA_TYPE:   /* "COMPARISON NOT AVAILABLE" */
    case PMIX_IOF_CHANNEL: /* likewise */
    case PMIX_PROC_CPUSET: /* crashes outside PMIx_Init (hwloc component not loaded) */
        return false;
    case PMIX_DATA_ARRAY:
        /* an array of values: "COMPARISON NOT AVAILABLE"; of strings: equal arrays compare
         * unequal (the pointers are compared); empty arrays: unequal when one has a NULL
         * element pointer */
        return NULL != v->data.darray && v->data.darray->size > 0
               && PMIX_VALUE != v->data.darray->type && PMIX_STRING != v->data.darray->type;
    default:
        return true;
    }
}

static size_t elem_size(pmix_data_type_t t)
{
    switch (t) {
    case PMIX_BOOL:
        return sizeof(bool);
    case PMIX_BYTE: case PMIX_INT8: case PMIX_UINT8: case PMIX_PERSIST: case PMIX_SCOPE:
    case PMIX_DATA_RANGE: case PMIX_PROC_STATE: case PMIX_ALLOC_DIRECTIVE: case PMIX_JOB_STATE:
    case PMIX_LINK_STATE:
        return 1;
    case PMIX_INT16: case PMIX_UINT16: case PMIX_DATA_TYPE: case PMIX_IOF_CHANNEL:
    case PMIX_LOCTYPE:
        return 2;
    case PMIX_STOR_ACCESS_TYPE:
        return sizeof(pmix_storage_access_type_t);
    case PMIX_PID:
        return sizeof(pid_t);
    case PMIX_INT: case PMIX_UINT:
        return sizeof(int);
    case PMIX_INT32: case PMIX_UINT32: case PMIX_FLOAT: case PMIX_STATUS: case PMIX_PROC_RANK:
        return 4;
    case PMIX_STRING:
        return sizeof(char *);
    case PMIX_SIZE:
        return sizeof(size_t);
    case PMIX_TIME:
        return sizeof(time_t);
    case PMIX_INT64: case PMIX_UINT64: case PMIX_DOUBLE: case PMIX_DEVTYPE: case PMIX_STOR_MEDIUM:
    case PMIX_STOR_ACCESS: case PMIX_STOR_PERSIST:
        return 8;
    case PMIX_TIMEVAL:
        return sizeof(struct timeval);
    case PMIX_VALUE:
        return sizeof(pmix_value_t);
    case PMIX_PROC:
        return sizeof(pmix_proc_t);
    case PMIX_INFO:
        return sizeof(pmix_info_t);
    case PMIX_BYTE_OBJECT: case PMIX_COMPRESSED_STRING: case PMIX_REGEX:
    case PMIX_COMPRESSED_BYTE_OBJECT:
        return sizeof(pmix_byte_object_t);
    case PMIX_PROC_INFO:
        return sizeof(pmix_proc_info_t);
    case PMIX_DATA_ARRAY:
        return sizeof(pmix_data_array_t);
    case PMIX_ENVAR:
        return sizeof(pmix_envar_t);
    case PMIX_COORD:
        return sizeof(pmix_coord_t);
    case PMIX_PROC_CPUSET:
        return sizeof(pmix_cpuset_t);
    case PMIX_GEOMETRY:
        return sizeof(pmix_geometry_t);
    case PMIX_DEVICE_DIST:
        return sizeof(pmix_device_distance_t);
    case PMIX_ENDPOINT:
        return sizeof(pmix_endpoint_t);
    case PMIX_PROC_NSPACE:
        return sizeof(pmix_nspace_t);
    case PMIX_DATA_BUFFER:
        return sizeof(pmix_data_buffer_t);
    default:
        return 0;
    }
}

/* Types the pmix_value_t union holds through a pointer. */
static bool boxed(pmix_data_type_t t)
{
    switch (t) {
    case PMIX_PROC: case PMIX_PROC_INFO: case PMIX_DATA_ARRAY: case PMIX_COORD:
    case PMIX_PROC_CPUSET: case PMIX_GEOMETRY: case PMIX_DEVICE_DIST: case PMIX_ENDPOINT:
    case PMIX_PROC_NSPACE: case PMIX_DATA_BUFFER:
        return true;
    default:
        return false;
    }
}

static bool differ(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
    return false;
}

static bool str_eq(const char *a, const char *b)
{
    if (NULL == a || NULL == b) {
        return a == b;
    }
    return 0 == strcmp(a, b);
}

static bool bo_eq(const pmix_byte_object_t *a, const pmix_byte_object_t *b)
{
    if (a->size != b->size) {
        return false;
    }
    return 0 == a->size || (NULL != a->bytes && NULL != b->bytes
                            && 0 == memcmp(a->bytes, b->bytes, a->size));
}

static bool coord_eq(const pmix_coord_t *a, const pmix_coord_t *b)
{
    return a->view == b->view && a->dims == b->dims
           && (0 == a->dims || (NULL != a->coord && NULL != b->coord
                                && 0 == memcmp(a->coord, b->coord, a->dims * sizeof(uint32_t))));
}

static bool proc_eq(const pmix_proc_t *a, const pmix_proc_t *b)
{
    return 0 == strncmp(a->nspace, b->nspace, PMIX_MAX_NSLEN + 1) && a->rank == b->rank;
}

static bool elem_equal(pmix_data_type_t t, const void *pa, const void *pb, char *why, size_t len,
                       int depth);

static bool value_equal(const pmix_value_t *a, const pmix_value_t *b, char *why, size_t len,
                        int depth)
{
    if (a->type != b->type) {
        return differ(why, len, "type %s != %s", PMIx_Data_type_string(a->type),
                      PMIx_Data_type_string(b->type));
    }
    if (boxed(a->type)) {
        if (NULL == a->data.ptr || NULL == b->data.ptr) {
            return differ(why, len, "NULL pointer in a %s value", PMIx_Data_type_string(a->type));
        }
        return elem_equal(a->type, a->data.ptr, b->data.ptr, why, len, depth);
    }
    return elem_equal(a->type, &a->data, &b->data, why, len, depth);
}

static bool elem_equal(pmix_data_type_t t, const void *pa, const void *pb, char *why, size_t len,
                       int depth)
{
    if (depth > 8) {
        return differ(why, len, "nested too deeply");
    }
    switch (t) {
    case PMIX_UNDEF:
        return true;
    case PMIX_BOOL:
        if (*(const bool *) pa != *(const bool *) pb) {
            return differ(why, len, "bool %d != %d", *(const bool *) pa, *(const bool *) pb);
        }
        return true;
    case PMIX_FLOAT:
        if (*(const float *) pa != *(const float *) pb) {
            return differ(why, len, "float %g != %g", (double) *(const float *) pa,
                          (double) *(const float *) pb);
        }
        return true;
    case PMIX_DOUBLE:
        if (*(const double *) pa != *(const double *) pb) {
            return differ(why, len, "double %g != %g", *(const double *) pa,
                          *(const double *) pb);
        }
        return true;
    case PMIX_TIMEVAL: {
        const struct timeval *a = pa, *b = pb;
        if (a->tv_sec != b->tv_sec || a->tv_usec != b->tv_usec) {
            return differ(why, len, "timeval differs");
        }
        return true;
    }
    case PMIX_STRING:
        if (!str_eq(*(char *const *) pa, *(char *const *) pb)) {
            return differ(why, len, "string \"%s\" != \"%s\"",
                          *(char *const *) pa ? *(char *const *) pa : "(null)",
                          *(char *const *) pb ? *(char *const *) pb : "(null)");
        }
        return true;
    case PMIX_PROC:
        if (!proc_eq(pa, pb)) {
            return differ(why, len, "proc differs");
        }
        return true;
    case PMIX_PROC_NSPACE:
        if (0 != strncmp(pa, pb, PMIX_MAX_NSLEN + 1)) {
            return differ(why, len, "nspace \"%s\" != \"%s\"", (const char *) pa,
                          (const char *) pb);
        }
        return true;
    case PMIX_BYTE_OBJECT: case PMIX_COMPRESSED_STRING: case PMIX_REGEX:
    case PMIX_COMPRESSED_BYTE_OBJECT:
        if (!bo_eq(pa, pb)) {
            return differ(why, len, "bytes differ (sizes %zu, %zu)",
                          ((const pmix_byte_object_t *) pa)->size,
                          ((const pmix_byte_object_t *) pb)->size);
        }
        return true;
    case PMIX_PROC_INFO: {
        const pmix_proc_info_t *a = pa, *b = pb;
        if (!proc_eq(&a->proc, &b->proc) || !str_eq(a->hostname, b->hostname)
            || !str_eq(a->executable_name, b->executable_name) || a->pid != b->pid
            || a->exit_code != b->exit_code || a->state != b->state) {
            return differ(why, len, "proc info differs");
        }
        return true;
    }
    case PMIX_DATA_ARRAY: {
        const pmix_data_array_t *a = pa, *b = pb;
        size_t es = elem_size(a->type);
        if (a->type != b->type || a->size != b->size) {
            return differ(why, len, "data array %s[%zu] != %s[%zu]",
                          PMIx_Data_type_string(a->type), a->size,
                          PMIx_Data_type_string(b->type), b->size);
        }
        if (0 == es) {
            return differ(why, len, "data array of unknown type %u", (unsigned) a->type);
        }
        if (a->size > 0 && (NULL == a->array || NULL == b->array)) {
            return differ(why, len, "data array without elements");
        }
        for (size_t i = 0; i < a->size; i++) {
            const char *ea = (const char *) a->array + i * es;
            const char *eb = (const char *) b->array + i * es;
            if (!elem_equal(a->type, ea, eb, why, len, depth + 1)) {
                size_t n = strlen(why);
                snprintf(why + n, len - n, " (element %zu)", i);
                return false;
            }
        }
        return true;
    }
    case PMIX_VALUE:
        return value_equal(pa, pb, why, len, depth + 1);
    case PMIX_INFO: {
        const pmix_info_t *a = pa, *b = pb;
        if (0 != strncmp(a->key, b->key, PMIX_MAX_KEYLEN + 1) || a->flags != b->flags) {
            return differ(why, len, "info key/flags \"%s\"/%u != \"%s\"/%u", a->key,
                          (unsigned) a->flags, b->key, (unsigned) b->flags);
        }
        return value_equal(&a->value, &b->value, why, len, depth + 1);
    }
    case PMIX_ENVAR: {
        const pmix_envar_t *a = pa, *b = pb;
        if (!str_eq(a->envar, b->envar) || !str_eq(a->value, b->value)
            || a->separator != b->separator) {
            return differ(why, len, "envar differs");
        }
        return true;
    }
    case PMIX_COORD:
        if (!coord_eq(pa, pb)) {
            return differ(why, len, "coord differs");
        }
        return true;
    case PMIX_PROC_CPUSET: {
        const pmix_cpuset_t *a = pa, *b = pb;
        if (!str_eq(a->source, b->source)) {
            return differ(why, len, "cpuset source differs");
        }
        if (NULL == a->bitmap || NULL == b->bitmap) {
            if (a->bitmap != b->bitmap) {
                return differ(why, len, "cpuset bitmap NULL on one side");
            }
            return true;
        }
        if (!hwloc_bitmap_isequal(a->bitmap, b->bitmap)) {
            return differ(why, len, "cpuset bitmaps differ");
        }
        return true;
    }
    case PMIX_GEOMETRY: {
        const pmix_geometry_t *a = pa, *b = pb;
        if (a->fabric != b->fabric || !str_eq(a->uuid, b->uuid) || !str_eq(a->osname, b->osname)
            || a->ncoords != b->ncoords) {
            return differ(why, len, "geometry differs");
        }
        for (size_t i = 0; i < a->ncoords; i++) {
            if (!coord_eq(&a->coordinates[i], &b->coordinates[i])) {
                return differ(why, len, "geometry coordinate %zu differs", i);
            }
        }
        return true;
    }
    case PMIX_DEVICE_DIST: {
        const pmix_device_distance_t *a = pa, *b = pb;
        if (!str_eq(a->uuid, b->uuid) || !str_eq(a->osname, b->osname) || a->type != b->type
            || a->mindist != b->mindist || a->maxdist != b->maxdist) {
            return differ(why, len, "device distance differs");
        }
        return true;
    }
    case PMIX_ENDPOINT: {
        const pmix_endpoint_t *a = pa, *b = pb;
        if (!str_eq(a->uuid, b->uuid) || !str_eq(a->osname, b->osname)
            || !bo_eq(&a->endpt, &b->endpt)) {
            return differ(why, len, "endpoint differs");
        }
        return true;
    }
    case PMIX_DATA_BUFFER: {
        /* what PMIx_Data_unpack reads: unpack_ptr..pack_ptr */
        const pmix_data_buffer_t *a = pa, *b = pb;
        size_t na = (NULL == a->unpack_ptr) ? 0 : (size_t) (a->pack_ptr - a->unpack_ptr);
        size_t nb = (NULL == b->unpack_ptr) ? 0 : (size_t) (b->pack_ptr - b->unpack_ptr);
        if (na != nb || a->bytes_used != b->bytes_used
            || (na > 0 && 0 != memcmp(a->unpack_ptr, b->unpack_ptr, na))) {
            return differ(why, len, "data buffer differs (%zu, %zu readable bytes)", na, nb);
        }
        return true;
    }
    default: {
        /* integers and enumerations: their bytes */
        size_t es = elem_size(t);
        if (0 == es) {
            return differ(why, len, "no comparison for type %u", (unsigned) t);
        }
        if (0 != memcmp(pa, pb, es)) {
            uint64_t x = 0, y = 0;
            memcpy(&x, pa, es);
            memcpy(&y, pb, es);
            return differ(why, len, "%s 0x%" PRIx64 " != 0x%" PRIx64, PMIx_Data_type_string(t),
                          x, y);
        }
        return true;
    }
    }
}

bool ct_value_equal(const pmix_value_t *a, const pmix_value_t *b, char *why, size_t len)
{
    why[0] = '\0';
    return value_equal(a, b, why, len, 0);
}

void ct_value_str(const pmix_value_t *v, char *buf, size_t len)
{
    const char *t = PMIx_Data_type_string(v->type);
    switch (v->type) {
    case PMIX_STRING:
        snprintf(buf, len, "%s \"%s\"", t, v->data.string ? v->data.string : "(null)");
        break;
    case PMIX_UINT32: case PMIX_PROC_RANK:
        snprintf(buf, len, "%s %" PRIu32, t, v->data.uint32);
        break;
    case PMIX_UINT16:
        snprintf(buf, len, "%s %u", t, (unsigned) v->data.uint16);
        break;
    case PMIX_UINT64:
        snprintf(buf, len, "%s %" PRIu64, t, v->data.uint64);
        break;
    case PMIX_BYTE_OBJECT:
        snprintf(buf, len, "%s [%zu bytes]", t, v->data.bo.size);
        break;
    default:
        snprintf(buf, len, "%s", t);
        break;
    }
}
