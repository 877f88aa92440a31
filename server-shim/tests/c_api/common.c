/* Shared definitions of the C API tests (common.h). */
/* pmix_common.h uses strdup and strncasecmp: under -std=c11 they need _GNU_SOURCE (docs/ffi.md). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "common.h"

/* ---- the job ------------------------------------------------------------------------------ */

const char *ct_host(uint32_t node)
{
    return 0 == node ? CT_HOST0 : CT_HOST1;
}

uint32_t ct_app_size(uint32_t app)
{
    return 0 == app ? 6u : 2u;
}

pmix_rank_t ct_app_leader(uint32_t app)
{
    return 0 == app ? 0u : 6u;
}

const char *ct_app_str(uint32_t app)
{
    return 0 == app ? "app-0" : "app-1";
}

const char *ct_node_str(uint32_t node)
{
    return 0 == node ? "node-" CT_HOST0 : "node-" CT_HOST1;
}

size_t ct_card(uint32_t rank, char *buf)
{
    size_t n = 64u + rank;
    for (size_t i = 0; i < n; i++) {
        /* NULs, high bytes, and the rank in every byte */
        buf[i] = (char) (unsigned char) ((i * 37u + rank * 11u) & 0xffu);
    }
    buf[0] = 'c';
    buf[1] = (char) ('0' + rank);
    buf[2] = '\0';
    return n;
}

const char *ct_local_str(uint32_t rank)
{
    static const char *const s[CT_NRANKS] = {"local-of-0", "local-of-1", "local-of-2",
                                             "local-of-3", "local-of-4", "local-of-5",
                                             "local-of-6", "local-of-7"};
    return rank < CT_NRANKS ? s[rank] : "";
}

/* ---- the typed values ---------------------------------------------------------------------- */

/* The data the cases point to (PMIx_Value_load copies it). */
static bool d_bool = true;
static uint8_t d_byte = 0xa5;
static char d_string[] = "h\xc3\xa9llo, rshm: a string with UTF-8";
static size_t d_size = SIZE_MAX - 1;
static pid_t d_pid = 4242;
static int d_int = -123456;
static int8_t d_int8 = -8;
static int16_t d_int16 = -1600;
static int32_t d_int32 = INT32_MIN;
static int64_t d_int64 = INT64_MIN + 1;
static unsigned int d_uint = 4000000000u;
static uint8_t d_uint8 = 200;
static uint16_t d_uint16 = 65000;
static uint32_t d_uint32 = UINT32_MAX;
static uint64_t d_uint64 = UINT64_MAX;
static float d_float = 3.25f;
static double d_double = -2.5e300;
static struct timeval d_timeval = {1700000000, 999999};
static time_t d_time = 1700000001;
static pmix_status_t d_status = PMIX_ERR_EXISTS_OUTSIDE_SCOPE;
static pmix_proc_t d_proc;
static char d_bo_bytes[] = {'a', '\0', 'b', (char) 0xff, '\0', 'z'};
static pmix_byte_object_t d_bo = {d_bo_bytes, sizeof(d_bo_bytes)};
static pmix_persistence_t d_persist = PMIX_PERSIST_SESSION;
static pmix_scope_t d_scope = PMIX_REMOTE;
static pmix_data_range_t d_range = PMIX_RANGE_NAMESPACE;
static pmix_data_type_t d_data_type = PMIX_GEOMETRY;
static pmix_proc_state_t d_proc_state = PMIX_PROC_STATE_RUNNING;
static pmix_proc_info_t d_proc_info;
static pmix_rank_t d_proc_rank = 5;
static char d_cstr_bytes[] = {'x', (char) 0x9c, '\0', 'y', (char) 0x80};
static pmix_byte_object_t d_cstr = {d_cstr_bytes, sizeof(d_cstr_bytes)};
static pmix_alloc_directive_t d_adir = PMIX_ALLOC_EXTEND;
static pmix_iof_channel_t d_iof = PMIX_FWD_STDOUT_CHANNEL | PMIX_FWD_STDERR_CHANNEL;
static pmix_envar_t d_envar = {"CTEST_PATH", "/opt/ctest/bin", ':'};
static uint32_t d_coord_xyz[3] = {1, 22, 333};
static pmix_coord_t d_coord = {PMIX_COORD_PHYSICAL_VIEW, d_coord_xyz, 3};
static pmix_job_state_t d_job_state = PMIX_JOB_STATE_RUNNING;
static pmix_link_state_t d_link_state = PMIX_LINK_UP;
static uint32_t d_geo_c1[2] = {7, 8};
static uint32_t d_geo_c2[3] = {9, 10, 11};
static pmix_coord_t d_geo_coords[2] = {{PMIX_COORD_LOGICAL_VIEW, d_geo_c1, 2},
                                       {PMIX_COORD_PHYSICAL_VIEW, d_geo_c2, 3}};
static pmix_geometry_t d_geometry = {3, "geo-uuid-1", "mlx5_0", d_geo_coords, 2};
static pmix_device_distance_t d_devdist = {"dev-uuid-2", "gpu0", PMIX_DEVTYPE_GPU, 11, 42};
static char d_endpt_bytes[] = {1, 2, 3, 0, 4};
static pmix_endpoint_t d_endpoint = {"ep-uuid-3", "hfi1_0", {d_endpt_bytes, sizeof(d_endpt_bytes)}};
static pmix_device_type_t d_devtype = PMIX_DEVTYPE_GPU | PMIX_DEVTYPE_NETWORK;
static pmix_locality_t d_locality = PMIX_LOCALITY_SHARE_NUMA | PMIX_LOCALITY_SHARE_PACKAGE;
static char d_cbo_bytes[] = {(char) 0x78, (char) 0xda, 0, 1, 2};
static pmix_byte_object_t d_cbo = {d_cbo_bytes, sizeof(d_cbo_bytes)};
static char d_nspace[] = "ctest.other.nspace";
static pmix_storage_medium_t d_stor_medium = PMIX_STORAGE_MEDIUM_SSD;
static pmix_storage_accessibility_t d_stor_access = PMIX_STORAGE_ACCESSIBILITY_NODE;
static pmix_storage_persistence_t d_stor_persist = PMIX_STORAGE_PERSISTENCE_JOB;
static pmix_storage_access_type_t d_stor_access_type = PMIX_STORAGE_ACCESS_RD;
/* a data buffer's readable payload (unpack_ptr..pack_ptr), as PMIX_DATA_BUFFER_LOAD leaves one */
static char d_dbuf_bytes[] = {1, 2, 0, 'x', (char) 0xfe};
static pmix_data_buffer_t d_dbuf = {d_dbuf_bytes, d_dbuf_bytes + sizeof(d_dbuf_bytes), d_dbuf_bytes,
                                    sizeof(d_dbuf_bytes), sizeof(d_dbuf_bytes)};
/* the regex: bytes with their NUL, as PMIx_generate_regex returns them */
static char d_regex[] = "pmix[ctest[2:1-3]]";

/* data arrays */
static uint32_t da_u32[4] = {1, 2, 3, UINT32_MAX};
static pmix_data_array_t d_da_u32 = {PMIX_UINT32, 4, da_u32};
static char *da_str[3] = {"alpha", "", "gamma with spaces"};
static pmix_data_array_t d_da_str = {PMIX_STRING, 3, da_str};
static pmix_info_t da_info[4];
static pmix_data_array_t d_da_info = {PMIX_INFO, 4, da_info};
static pmix_value_t da_value[6];
static pmix_data_array_t d_da_value = {PMIX_VALUE, 6, da_value};
static pmix_proc_t da_proc[3];
static pmix_data_array_t d_da_proc = {PMIX_PROC, 3, da_proc};
static pmix_byte_object_t da_bo[2] = {{d_bo_bytes, sizeof(d_bo_bytes)}, {d_cbo_bytes, 2}};
static pmix_data_array_t d_da_bo = {PMIX_BYTE_OBJECT, 2, da_bo};
static bool da_bool[3] = {true, false, true};
static pmix_data_array_t d_da_bool = {PMIX_BOOL, 3, da_bool};
static double da_double[3] = {0.5, -1.0, 1e300};
static pmix_data_array_t d_da_double = {PMIX_DOUBLE, 3, da_double};
static struct timeval da_tv[2] = {{1, 2}, {1700000000, 999999}};
static pmix_data_array_t d_da_timeval = {PMIX_TIMEVAL, 2, da_tv};
static pmix_storage_access_type_t da_sat[3] = {PMIX_STORAGE_ACCESS_RD, PMIX_STORAGE_ACCESS_WR,
                                               PMIX_STORAGE_ACCESS_RDWR};
static pmix_data_array_t d_da_sat = {PMIX_STOR_ACCESS_TYPE, 3, da_sat};
static pmix_data_array_t d_da_empty = {PMIX_UINT32, 0, NULL};
/* nested: an info array's element holding a data array of uint16 */
static uint16_t da_nested_u16[3] = {0, 1, 65535};
static pmix_data_array_t d_da_nested = {PMIX_UINT16, 3, da_nested_u16};

#define CASE(n, t, d) {n, "", "", t, d}
ct_case_t ct_cases[] = {
    CASE("bool", PMIX_BOOL, &d_bool),
    CASE("byte", PMIX_BYTE, &d_byte),
    CASE("string", PMIX_STRING, d_string),
    CASE("size", PMIX_SIZE, &d_size),
    CASE("pid", PMIX_PID, &d_pid),
    CASE("int", PMIX_INT, &d_int),
    CASE("int8", PMIX_INT8, &d_int8),
    CASE("int16", PMIX_INT16, &d_int16),
    CASE("int32", PMIX_INT32, &d_int32),
    CASE("int64", PMIX_INT64, &d_int64),
    CASE("uint", PMIX_UINT, &d_uint),
    CASE("uint8", PMIX_UINT8, &d_uint8),
    CASE("uint16", PMIX_UINT16, &d_uint16),
    CASE("uint32", PMIX_UINT32, &d_uint32),
    CASE("uint64", PMIX_UINT64, &d_uint64),
    CASE("float", PMIX_FLOAT, &d_float),
    CASE("double", PMIX_DOUBLE, &d_double),
    CASE("timeval", PMIX_TIMEVAL, &d_timeval),
    CASE("time", PMIX_TIME, &d_time),
    CASE("status", PMIX_STATUS, &d_status),
    CASE("proc", PMIX_PROC, &d_proc),
    CASE("byte_object", PMIX_BYTE_OBJECT, &d_bo),
    CASE("persist", PMIX_PERSIST, &d_persist),
    CASE("scope", PMIX_SCOPE, &d_scope),
    CASE("data_range", PMIX_DATA_RANGE, &d_range),
    /* by hand: libpmix 4.2.2's PMIx_Value_load leaves a PMIX_DATA_TYPE value's data zero */
    CASE("data_type", PMIX_DATA_TYPE, NULL),
    CASE("proc_state", PMIX_PROC_STATE, &d_proc_state),
    CASE("proc_info", PMIX_PROC_INFO, &d_proc_info),
    CASE("darray_uint32", PMIX_DATA_ARRAY, &d_da_u32),
    CASE("darray_string", PMIX_DATA_ARRAY, &d_da_str),
    CASE("darray_info", PMIX_DATA_ARRAY, &d_da_info),
    CASE("darray_value", PMIX_DATA_ARRAY, &d_da_value),
    CASE("darray_proc", PMIX_DATA_ARRAY, &d_da_proc),
    CASE("darray_byte_object", PMIX_DATA_ARRAY, &d_da_bo),
    CASE("darray_bool", PMIX_DATA_ARRAY, &d_da_bool),
    CASE("darray_double", PMIX_DATA_ARRAY, &d_da_double),
    CASE("darray_timeval", PMIX_DATA_ARRAY, &d_da_timeval),
    /* by hand: libpmix 4.2.2 cannot copy a data array of storage access types */
    CASE("darray_stor_access_type", PMIX_DATA_ARRAY, NULL),
    CASE("darray_empty", PMIX_DATA_ARRAY, &d_da_empty),
    CASE("proc_rank", PMIX_PROC_RANK, &d_proc_rank),
    CASE("compressed_string", PMIX_COMPRESSED_STRING, &d_cstr),
    CASE("alloc_directive", PMIX_ALLOC_DIRECTIVE, &d_adir),
    /* by hand: as PMIX_DATA_TYPE, PMIx_Value_load leaves the data zero */
    CASE("iof_channel", PMIX_IOF_CHANNEL, NULL),
    CASE("envar", PMIX_ENVAR, &d_envar),
    CASE("coord", PMIX_COORD, &d_coord),
    /* by hand: PMIx_Value_load of a PMIX_REGEX calls the preg framework, which only exists after
     * PMIx_Init (it crashes before) */
    CASE("regex", PMIX_REGEX, NULL),
    CASE("job_state", PMIX_JOB_STATE, &d_job_state),
    CASE("link_state", PMIX_LINK_STATE, &d_link_state),
    /* by hand: PMIx_Parse_cpuset_string is PMIX_ERR_INIT and PMIx_Value_load of a cpuset crashes
     * outside PMIx_Init; the bitmap is made with hwloc directly, as libpmix would */
    CASE("cpuset", PMIX_PROC_CPUSET, NULL),
    CASE("geometry", PMIX_GEOMETRY, &d_geometry),
    CASE("device_dist", PMIX_DEVICE_DIST, &d_devdist),
    CASE("endpoint", PMIX_ENDPOINT, &d_endpoint),
    CASE("devtype", PMIX_DEVTYPE, &d_devtype),
    CASE("locality", PMIX_LOCTYPE, &d_locality),
    CASE("compressed_bytes", PMIX_COMPRESSED_BYTE_OBJECT, &d_cbo),
    CASE("proc_nspace", PMIX_PROC_NSPACE, d_nspace),
    CASE("stor_medium", PMIX_STOR_MEDIUM, &d_stor_medium),
    CASE("stor_access", PMIX_STOR_ACCESS, &d_stor_access),
    CASE("stor_persist", PMIX_STOR_PERSIST, &d_stor_persist),
    CASE("stor_access_type", PMIX_STOR_ACCESS_TYPE, &d_stor_access_type),
    /* by hand: PMIx_Value_load of a data buffer copies it with PMIx_Data_copy_payload, which
     * crashes outside PMIx_Init */
    CASE("data_buffer", PMIX_DATA_BUFFER, NULL),
};
size_t ct_ncases = sizeof(ct_cases) / sizeof(ct_cases[0]);

int ct_init(void)
{
    uint32_t u32 = 77;
    uint16_t u16 = 12345;
    double dbl = 0.125;

    PMIX_LOAD_PROCID(&d_proc, "ctest.proc.nspace", 17);
    PMIX_PROC_INFO_CONSTRUCT(&d_proc_info);
    PMIX_LOAD_PROCID(&d_proc_info.proc, CT_NSPACE, 3);
    d_proc_info.hostname = CT_HOST1;
    d_proc_info.executable_name = "/usr/bin/ctest-app";
    d_proc_info.pid = 31337;
    d_proc_info.exit_code = -2;
    d_proc_info.state = PMIX_PROC_STATE_RUNNING;

    PMIX_LOAD_PROCID(&da_proc[0], CT_NSPACE, 0);
    PMIX_LOAD_PROCID(&da_proc[1], CT_NSPACE, PMIX_RANK_WILDCARD);
    PMIX_LOAD_PROCID(&da_proc[2], "ctest.x", 99);

    /* an info array: scalars, a string, a proc, a nested data array */
    PMIX_INFO_LOAD(&da_info[0], "ctest.i.u32", &u32, PMIX_UINT32);
    PMIX_INFO_LOAD(&da_info[1], "ctest.i.str", "info string", PMIX_STRING);
    PMIX_INFO_LOAD(&da_info[2], "ctest.i.proc", &d_proc, PMIX_PROC);
    PMIX_INFO_LOAD(&da_info[3], "ctest.i.nested", &d_da_nested, PMIX_DATA_ARRAY);
    PMIX_INFO_REQUIRED(&da_info[1]); /* flags travel too */

    /* a value array of mixed types */
    PMIX_VALUE_LOAD(&da_value[0], &u16, PMIX_UINT16);
    PMIX_VALUE_LOAD(&da_value[1], "value string", PMIX_STRING);
    PMIX_VALUE_LOAD(&da_value[2], &d_proc, PMIX_PROC);
    PMIX_VALUE_LOAD(&da_value[3], &d_bo, PMIX_BYTE_OBJECT);
    PMIX_VALUE_LOAD(&da_value[4], &dbl, PMIX_DOUBLE);
    PMIX_VALUE_LOAD(&da_value[5], &d_da_str, PMIX_DATA_ARRAY);
    for (size_t i = 0; i < 6; i++) {
        if (PMIX_UNDEF == da_value[i].type) {
            fprintf(stderr, "ct_init: PMIX_VALUE_LOAD of value element %zu failed\n", i);
            return -1;
        }
    }
    for (size_t i = 0; i < 4; i++) {
        if (PMIX_UNDEF == da_info[i].value.type) {
            fprintf(stderr, "ct_init: PMIX_INFO_LOAD of info element %zu failed\n", i);
            return -1;
        }
    }
    for (size_t i = 0; i < ct_ncases; i++) {
        snprintf(ct_cases[i].key, sizeof(ct_cases[i].key), "ctest.t.%s", ct_cases[i].name);
        snprintf(ct_cases[i].posted_key, sizeof(ct_cases[i].posted_key), "ctest.p.%s",
                 ct_cases[i].name);
    }
    return 0;
}

pmix_status_t ct_load(const ct_case_t *c, pmix_value_t *v)
{
    if (NULL != c->data) {
        return PMIX_VALUE_LOAD(v, c->data, c->type);
    }
    switch (c->type) {
    case PMIX_DATA_TYPE:
        v->type = PMIX_DATA_TYPE;
        v->data.uint16 = d_data_type; /* pmix_value_t has no pmix_data_type_t member */
        return PMIX_SUCCESS;
    case PMIX_IOF_CHANNEL:
        v->type = PMIX_IOF_CHANNEL;
        v->data.uint16 = d_iof; /* no pmix_iof_channel_t member either */
        return PMIX_SUCCESS;
    case PMIX_REGEX:
        v->type = PMIX_REGEX;
        v->data.bo.size = sizeof(d_regex); /* with its NUL, as PMIx_generate_regex gives it */
        v->data.bo.bytes = malloc(sizeof(d_regex));
        if (NULL == v->data.bo.bytes) {
            return PMIX_ERR_NOMEM;
        }
        memcpy(v->data.bo.bytes, d_regex, sizeof(d_regex));
        return PMIX_SUCCESS;
    case PMIX_PROC_CPUSET:
        v->type = PMIX_PROC_CPUSET;
        v->data.cpuset = calloc(1, sizeof(pmix_cpuset_t));
        if (NULL == v->data.cpuset) {
            return PMIX_ERR_NOMEM;
        }
        v->data.cpuset->source = strdup("hwloc");
        v->data.cpuset->bitmap = hwloc_bitmap_alloc();
        if (NULL == v->data.cpuset->bitmap
            || 0 != hwloc_bitmap_list_sscanf(v->data.cpuset->bitmap, "0-3,8,63-64")) {
            return PMIX_ERROR;
        }
        return PMIX_SUCCESS;
    case PMIX_DATA_BUFFER: {
        /* as PMIX_DATA_BUFFER_LOAD leaves a buffer: the payload malloc'ed, all of it unread */
        pmix_data_buffer_t *db;
        PMIX_DATA_BUFFER_CREATE(db);
        if (NULL == db) {
            return PMIX_ERR_NOMEM;
        }
        db->base_ptr = malloc(d_dbuf.bytes_used);
        if (NULL == db->base_ptr) {
            free(db);
            return PMIX_ERR_NOMEM;
        }
        memcpy(db->base_ptr, d_dbuf.base_ptr, d_dbuf.bytes_used);
        db->unpack_ptr = db->base_ptr;
        db->pack_ptr = db->base_ptr + d_dbuf.bytes_used;
        db->bytes_allocated = db->bytes_used = d_dbuf.bytes_used;
        v->type = PMIX_DATA_BUFFER;
        v->data.dbuf = db;
        return PMIX_SUCCESS;
    }
    case PMIX_DATA_ARRAY: {
        /* darray_stor_access_type: PMIX_DATA_ARRAY_CREATE does not know the element type in
         * libpmix 4.2.2 (it allocates no elements), so the array is malloc'ed here */
        pmix_data_array_t *da = malloc(sizeof(*da));
        if (NULL == da) {
            return PMIX_ERR_NOMEM;
        }
        *da = d_da_sat;
        da->array = malloc(sizeof(da_sat));
        if (NULL == da->array) {
            free(da);
            return PMIX_ERR_NOMEM;
        }
        memcpy(da->array, da_sat, sizeof(da_sat));
        v->type = PMIX_DATA_ARRAY;
        v->data.darray = da;
        return PMIX_SUCCESS;
    }
    default:
        return PMIX_ERR_NOT_SUPPORTED;
    }
}

void ct_value_unleak(pmix_value_t *v)
{
    if (PMIX_PROC_NSPACE == v->type) {
        free(v->data.nspace);
        v->data.nspace = NULL;
    }
}

void ct_value_destruct(pmix_value_t *v)
{
    ct_value_unleak(v);
    if (PMIX_REGEX == v->type) {
        free(v->data.bo.bytes);
        PMIX_VALUE_CONSTRUCT(v);
        return;
    }
    PMIX_VALUE_DESTRUCT(v);
}

/* ---- reporting -------------------------------------------------------------------------- */

unsigned ct_npass, ct_nfail;

void ct_report(const char *who, size_t (*last_error)(char *, size_t), bool ok, const char *fmt,
               va_list ap)
{
    printf("%s %s ", who, ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    if (!ok) {
        char err[512];
        last_error(err, sizeof(err));
        printf("   (last error: %s)", err);
    }
    printf("\n");
    fflush(stdout);
    if (ok) {
        ct_npass++;
    } else {
        ct_nfail++;
    }
}
