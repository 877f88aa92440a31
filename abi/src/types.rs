//! `#[repr(C)]` mirrors of the standard's structs, as Debian's `pmix_common.h` (OpenPMIx 4.2.2,
//! x86_64 LP64) lays them out. The names are the C names so that the generated headers use the
//! header's own types (cbindgen excludes them and includes `pmix_common.h`). Sizes are asserted
//! below; every offset is checked against the real header by `tests/c_layout.rs`.

#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_void};
use core::mem::{offset_of, size_of};

/// `pmix_status_t`.
pub type pmix_status_t = c_int;
/// `pmix_rank_t`.
pub type pmix_rank_t = u32;
/// `pmix_data_type_t`.
pub type pmix_data_type_t = u16;

/// `PMIX_MAX_NSLEN + 1`: a namespace's buffer, NUL included.
pub const NSPACE_BUF: usize = 256;
/// `PMIX_MAX_KEYLEN + 1`: a key's buffer, NUL included.
pub const KEY_BUF: usize = 512;

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_proc_t {
    pub nspace: [c_char; NSPACE_BUF],
    pub rank: pmix_rank_t,
}

/// `pmix_byte_object_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_byte_object_t {
    pub bytes: *mut c_char,
    pub size: usize,
}

/// `pmix_regex2_t` (OpenPMIx 7.0's `pmix_common.h`; `PMIX_REGEX2`'s data): an encoded list
/// whose `type_` names the encoding ("raw", "pmix", "compress", ...) and whose `len` bytes
/// need not end in a NUL.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_regex2_t {
    pub type_: *mut c_char,
    pub bytes: *mut u8,
    pub len: usize,
}

/// `struct timeval` (LP64).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct timeval {
    pub tv_sec: i64,
    pub tv_usec: i64,
}

/// `pmix_envar_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_envar_t {
    pub envar: *mut c_char,
    pub value: *mut c_char,
    pub separator: c_char,
}

/// `pmix_data_array_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_data_array_t {
    pub type_: pmix_data_type_t,
    pub size: usize,
    pub array: *mut c_void,
}

/// `pmix_proc_info_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_proc_info_t {
    pub proc_: pmix_proc_t,
    pub hostname: *mut c_char,
    pub executable_name: *mut c_char,
    pub pid: i32,
    pub exit_code: c_int,
    pub state: u8,
}

/// `pmix_coord_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_coord_t {
    pub view: u8,
    pub coord: *mut u32,
    pub dims: usize,
}

/// `pmix_cpuset_t` (the bitmap is an hwloc object of the process that made it).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_cpuset_t {
    pub source: *mut c_char,
    pub bitmap: *mut c_void,
}

/// `pmix_geometry_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_geometry_t {
    pub fabric: usize,
    pub uuid: *mut c_char,
    pub osname: *mut c_char,
    pub coordinates: *mut pmix_coord_t,
    pub ncoords: usize,
}

/// `pmix_device_distance_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_device_distance_t {
    pub uuid: *mut c_char,
    pub osname: *mut c_char,
    pub type_: u64,
    pub mindist: u16,
    pub maxdist: u16,
}

/// `pmix_endpoint_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_endpoint_t {
    pub uuid: *mut c_char,
    pub osname: *mut c_char,
    pub endpt: pmix_byte_object_t,
}

/// `pmix_data_buffer_t`: packed bytes; the unread payload is `unpack_ptr..pack_ptr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_data_buffer_t {
    pub base_ptr: *mut c_char,
    pub pack_ptr: *mut c_char,
    pub unpack_ptr: *mut c_char,
    pub bytes_allocated: usize,
    pub bytes_used: usize,
}

/// `pmix_regattr_t`: `description` is a NULL-terminated array of strings (or NULL).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_regattr_t {
    pub name: *mut c_char,
    pub string: [c_char; KEY_BUF],
    pub type_: pmix_data_type_t,
    pub description: *mut *mut c_char,
}

/// `pmix_app_t`: `argv` and `env` are NULL-terminated arrays of strings (or NULL).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_app_t {
    pub cmd: *mut c_char,
    pub argv: *mut *mut c_char,
    pub env: *mut *mut c_char,
    pub cwd: *mut c_char,
    pub maxprocs: c_int,
    pub info: *mut pmix_info_t,
    pub ninfo: usize,
}

/// `pmix_pdata_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_pdata_t {
    pub proc_: pmix_proc_t,
    pub key: [c_char; KEY_BUF],
    pub value: pmix_value_t,
}

/// `pmix_query_t`: `keys` is a NULL-terminated array of strings (or NULL).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_query_t {
    pub keys: *mut *mut c_char,
    pub qualifiers: *mut pmix_info_t,
    pub nqual: usize,
}

/// The union of `pmix_value_t`. Members that OpenPMIx reaches through a pointer (proc, proc info,
/// data array, coord, cpuset, geometry, device distance, endpoint, nspace) are pointers here too.
#[repr(C)]
#[derive(Clone, Copy)]
pub union pmix_value_data {
    pub flag: bool,
    pub byte: u8,
    pub string: *mut c_char,
    pub size: usize,
    pub pid: i32,
    pub integer: c_int,
    pub int8: i8,
    pub int16: i16,
    pub int32: i32,
    pub int64: i64,
    pub uint: u32,
    pub uint8: u8,
    pub uint16: u16,
    pub uint32: u32,
    pub uint64: u64,
    pub fval: f32,
    pub dval: f64,
    pub tv: timeval,
    pub time: i64,
    pub status: pmix_status_t,
    pub rank: pmix_rank_t,
    pub nspace: *mut [c_char; NSPACE_BUF],
    pub proc_: *mut pmix_proc_t,
    pub bo: pmix_byte_object_t,
    pub pinfo: *mut pmix_proc_info_t,
    pub darray: *mut pmix_data_array_t,
    pub ptr: *mut c_void,
    pub envar: pmix_envar_t,
    pub coord: *mut pmix_coord_t,
    pub cpuset: *mut pmix_cpuset_t,
    pub geometry: *mut pmix_geometry_t,
    pub devdist: *mut pmix_device_distance_t,
    pub endpoint: *mut pmix_endpoint_t,
    pub dbuf: *mut pmix_data_buffer_t,
    pub regex2: *mut pmix_regex2_t,
}

/// `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_value_t {
    pub type_: pmix_data_type_t,
    pub data: pmix_value_data,
}

/// `pmix_info_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmix_info_t {
    pub key: [c_char; KEY_BUF],
    pub flags: u32,
    pub value: pmix_value_t,
}

// The ABI of Debian's build (OpenPMIx 4.2.2, x86_64 LP64); tests/c_layout.rs checks every field offset.
const _: () = assert!(size_of::<pmix_value_t>() == 32);
const _: () = assert!(size_of::<pmix_info_t>() == 552);
const _: () = assert!(offset_of!(pmix_info_t, flags) == 512);
const _: () = assert!(offset_of!(pmix_info_t, value) == 520);
const _: () = assert!(size_of::<pmix_proc_t>() == 260);
const _: () = assert!(size_of::<pmix_data_array_t>() == 24);
const _: () = assert!(size_of::<pmix_byte_object_t>() == 16);
const _: () = assert!(offset_of!(pmix_value_t, data) == 8);

/// Status codes (`pmix_status_t`) the shims return.
pub mod status {
    use super::pmix_status_t;
    pub const PMIX_SUCCESS: pmix_status_t = 0;
    pub const PMIX_ERROR: pmix_status_t = -1;
    pub const PMIX_ERR_EXISTS: pmix_status_t = -11;
    pub const PMIX_ERR_UNKNOWN_DATA_TYPE: pmix_status_t = -16;
    pub const PMIX_ERR_TYPE_MISMATCH: pmix_status_t = -18;
    pub const PMIX_ERR_NO_PERMISSIONS: pmix_status_t = -23;
    pub const PMIX_ERR_UNREACH: pmix_status_t = -25;
    pub const PMIX_ERR_BAD_PARAM: pmix_status_t = -27;
    pub const PMIX_ERR_OUT_OF_RESOURCE: pmix_status_t = -29;
    pub const PMIX_ERR_INIT: pmix_status_t = -31;
    pub const PMIX_ERR_NOMEM: pmix_status_t = -32;
    pub const PMIX_ERR_NOT_FOUND: pmix_status_t = -46;
    pub const PMIX_ERR_NOT_SUPPORTED: pmix_status_t = -47;
    pub const PMIX_ERR_EXISTS_OUTSIDE_SCOPE: pmix_status_t = -62;
    /// Done at once: the callback will not be called.
    pub const PMIX_OPERATION_SUCCEEDED: pmix_status_t = -157;
}

/// `PMIX_RANK_WILDCARD`, `PMIX_RANK_UNDEF` and `PMIX_RANK_VALID` (`pmix_rank_t`): gds's, whose
/// Get rules read them.
pub use rshm_gds::jobdata::query::{RANK_UNDEF, RANK_VALID, RANK_WILDCARD};

/// Attribute keys the shims read (pmix_common.h spelling; checked against it by the C test).
pub mod keys {
    pub const PMIX_OPTIONAL: &str = "pmix.optional";
    pub const PMIX_IMMEDIATE: &str = "pmix.immediate";
    pub const PMIX_DATA_SCOPE: &str = "pmix.scope";
    pub const PMIX_GET_STATIC_VALUES: &str = "pmix.get.static";
    pub const PMIX_GET_POINTER_VALUES: &str = "pmix.get.pntrs";
    pub const PMIX_GET_REFRESH_CACHE: &str = "pmix.get.refresh";
    pub const PMIX_TIMEOUT: &str = "pmix.timeout";
    pub const PMIX_SESSION_INFO: &str = "pmix.ssn.info";
    pub const PMIX_JOB_INFO: &str = "pmix.job.info";
    pub const PMIX_APP_INFO: &str = "pmix.app.info";
    pub const PMIX_NODE_INFO: &str = "pmix.node.info";
    pub const PMIX_PROC_INFO: &str = "pmix.proc.info";
    pub const PMIX_SESSION_ID: &str = "pmix.session.id";
    pub const PMIX_APPNUM: &str = "pmix.appnum";
    pub const PMIX_HOSTNAME: &str = "pmix.hname";
    pub const PMIX_NODEID: &str = "pmix.nodeid";
    pub const PMIX_USERID: &str = "pmix.euid";
    pub const PMIX_GRPID: &str = "pmix.egid";
}

/// `PMIX_INFO_REQD`: the directive must be honoured or the call fail.
pub const PMIX_INFO_REQD: u32 = 0x1;
