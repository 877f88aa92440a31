//! The only `unsafe` code of the C-facing crates' value handling: reading the caller's
//! `pmix_info_t` / `pmix_value_t` graphs into `gds` values, and writing values out as C
//! structs whose memory comes from `malloc`, so that libpmix's `PMIX_VALUE_RELEASE` /
//! `PMIx_Value_destruct` (which call `free`) release them.
//!
//! Reading trusts nothing it can check: NULL pointers, missing NUL terminators, non-UTF-8
//! strings, unknown type codes, element types that disagree, and nesting deeper than
//! [`MAX_DEPTH`] (a cyclic array) are all `BadParam`. What it cannot check (that a non-NULL
//! pointer points to memory of the stated size) is the caller's promise, as in every C API.

use core::ffi::{c_char, c_void};
use core::mem::size_of;
use core::ptr;

use gds::value::{
    types as t, Coord, Cpuset, DeviceDistance, Endpoint, Envar, Geometry, Proc, ProcInfo,
};
use gds::{ArchivedValue, DataArray, Info, Value, ValueRef};

use crate::types::*;
use crate::AbiError;

pub mod cpuset;

/// Deepest nesting of data arrays / info arrays accepted from C (a cycle ends here).
pub const MAX_DEPTH: usize = 64;

/// The size of one element of a C array of `ty` (`pmix_data_array_t.array`).
pub fn elem_size(ty: u16) -> Option<usize> {
    Some(match ty {
        t::BOOL | t::BYTE | t::INT8 | t::UINT8 | t::PERSIST | t::SCOPE | t::DATA_RANGE => 1,
        t::PROC_STATE | t::ALLOC_DIRECTIVE | t::JOB_STATE | t::LINK_STATE => 1,
        t::INT16 | t::UINT16 | t::DATA_TYPE | t::IOF_CHANNEL | t::LOCTYPE => 2,
        // pmix_storage_access_type_t is a uint16_t (pmix_common.h), unlike the other three.
        t::STOR_ACCESS_TYPE => 2,
        t::PID | t::INT | t::INT32 | t::UINT | t::UINT32 | t::FLOAT | t::STATUS => 4,
        t::PROC_RANK => 4,
        t::STRING | t::SIZE | t::INT64 | t::UINT64 | t::DOUBLE | t::TIME | t::DEVTYPE => 8,
        t::STOR_MEDIUM | t::STOR_ACCESS | t::STOR_PERSIST => 8,
        t::TIMEVAL => size_of::<timeval>(),
        t::VALUE => size_of::<pmix_value_t>(),
        t::PROC => size_of::<pmix_proc_t>(),
        t::INFO => size_of::<pmix_info_t>(),
        t::BYTE_OBJECT | t::COMPRESSED_STRING | t::REGEX | t::COMPRESSED_BYTE_OBJECT => {
            size_of::<pmix_byte_object_t>()
        }
        t::PROC_INFO => size_of::<pmix_proc_info_t>(),
        t::DATA_ARRAY => size_of::<pmix_data_array_t>(),
        t::ENVAR => size_of::<pmix_envar_t>(),
        t::COORD => size_of::<pmix_coord_t>(),
        t::PROC_CPUSET => size_of::<pmix_cpuset_t>(),
        t::GEOMETRY => size_of::<pmix_geometry_t>(),
        t::DEVICE_DIST => size_of::<pmix_device_distance_t>(),
        t::ENDPOINT => size_of::<pmix_endpoint_t>(),
        t::PROC_NSPACE => NSPACE_BUF,
        _ => return None,
    })
}

/// Whether the `pmix_value_t` union holds `ty` through a pointer (`data.proc`, `data.pinfo`,
/// ...) rather than inline.
fn boxed_in_value(ty: u16) -> bool {
    matches!(
        ty,
        t::PROC
            | t::PROC_INFO
            | t::DATA_ARRAY
            | t::COORD
            | t::PROC_CPUSET
            | t::GEOMETRY
            | t::DEVICE_DIST
            | t::ENDPOINT
            | t::PROC_NSPACE
    )
}

fn bad(what: impl Into<String>) -> AbiError {
    AbiError::BadParam(what.into())
}

/// A fixed-size C character buffer (key, nspace) as a string: it must hold a NUL.
#[inline]
pub fn fixed_str(buf: &[c_char]) -> Result<&str, AbiError> {
    // c_char is i8 here; view it as bytes. Keys and namespaces are short and almost always
    // ASCII: one pass, eight bytes a step, finds the NUL and checks for ASCII, with no call
    // (every Get reads a namespace this way, and a registration a key per info).
    let bytes = bytemuck_i8(buf);
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut high = 0u64; // the OR of every byte before the NUL
    let mut words = bytes.chunks_exact(8);
    for (i, w) in words.by_ref().enumerate() {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        // The lowest byte flagged here is the first zero byte (flags above it may be false).
        let zero = w.wrapping_sub(LOW) & !w & HIGH;
        if zero != 0 {
            let at = (zero.trailing_zeros() / 8) as usize;
            high |= w & ((1u64 << (at * 8)) - 1);
            return utf8(&bytes[..i * 8 + at], high & HIGH == 0);
        }
        high |= w;
    }
    let done = bytes.len() - words.remainder().len();
    for (j, &c) in words.remainder().iter().enumerate() {
        if c == 0 {
            return utf8(&bytes[..done + j], high & HIGH == 0);
        }
        high |= u64::from(c);
    }
    Err(bad("unterminated fixed-size string"))
}

/// `bytes` as a `str`; `ascii` says the caller already found every byte below 0x80.
#[inline]
fn utf8(bytes: &[u8], ascii: bool) -> Result<&str, AbiError> {
    if ascii {
        debug_assert!(bytes.is_ascii());
        // SAFETY: every byte is below 0x80 (the caller checked), and ASCII is valid UTF-8.
        return Ok(unsafe { core::str::from_utf8_unchecked(bytes) });
    }
    core::str::from_utf8(bytes).map_err(|_| bad("string is not UTF-8"))
}

fn bytemuck_i8(s: &[c_char]) -> &[u8] {
    // SAFETY: c_char and u8 have the same size and alignment and every bit pattern is valid for
    // both; the length and lifetime are those of `s`.
    unsafe { core::slice::from_raw_parts(s.as_ptr().cast::<u8>(), s.len()) }
}

/// A NUL-terminated C string argument of at most `max` bytes before the NUL.
///
/// # Safety
/// `p` is NULL or points to readable memory up to its NUL or `max + 1` bytes.
#[inline]
pub unsafe fn c_str<'a>(p: *const c_char, max: usize) -> Result<&'a str, AbiError> {
    if p.is_null() {
        return Err(bad("NULL string"));
    }
    // glibc's strnlen finds the NUL a vector at a time (its aligned loads may reach past the
    // NUL, which Rust code may not do); then the bytes, now known to be in bounds, are checked
    // for ASCII a word at a time, and for UTF-8 only if that fails.
    // SAFETY: the caller promises `p` is readable up to its NUL or max + 1 bytes; strnlen reads
    // no further.
    let len = unsafe { libc::strnlen(p, max.saturating_add(1)) };
    if len > max {
        return Err(bad(format!("string longer than {max} bytes")));
    }
    // SAFETY: `len` bytes from `p` were just found readable and NUL-free.
    let bytes = unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len) };
    utf8(bytes, is_ascii(bytes))
}

/// Whether a byte is 0: strings of 4 to 16 bytes (hostnames, most values a Get copies) in two
/// overlapping loads, instead of a call to memchr.
#[inline]
fn has_nul(b: &[u8]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |w: u64| w.wrapping_sub(LOW) & !w & HIGH != 0;
    let n = b.len();
    let word = |at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    match n {
        8..=16 => zero(word(0)) || zero(word(n - 8)),
        4..=7 => {
            zero(half(0) as u64 | 0xFFFF_FFFF_0000_0000)
                || zero(half(n - 4) as u64 | 0xFFFF_FFFF_0000_0000)
        }
        _ => b.contains(&0),
    }
}

/// Whether every byte is below 0x80: keys of 4 to 16 bytes in two overlapping loads.
#[inline]
fn is_ascii(b: &[u8]) -> bool {
    let n = b.len();
    let word = |at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    match n {
        8..=16 => (word(0) | word(n - 8)) & 0x8080_8080_8080_8080 == 0,
        4..=7 => (half(0) | half(n - 4)) & 0x8080_8080 == 0,
        _ => b.is_ascii(),
    }
}

/// An unbounded NUL-terminated string inside a value (hostnames, names, envars).
///
/// # Safety
/// As [`c_str`].
unsafe fn c_string(p: *const c_char) -> Result<String, AbiError> {
    // SAFETY: forwarded caller promise; values' strings are bounded by 1 GiB here.
    unsafe { c_str(p, 1 << 30) }.map(str::to_owned)
}

/// # Safety
/// `bo.bytes` is readable for `bo.size` bytes unless `bo.size` is 0.
unsafe fn c_bytes(bo: &pmix_byte_object_t) -> Result<Vec<u8>, AbiError> {
    if bo.size == 0 {
        return Ok(Vec::new());
    }
    if bo.bytes.is_null() {
        return Err(bad("byte object with a size and no bytes"));
    }
    // SAFETY: the caller promises `size` readable bytes at `bytes`.
    Ok(unsafe { core::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size) }.to_vec())
}

/// # Safety
/// `p` is NULL or points to `n` readable `T`s.
unsafe fn c_slice<'a, T>(p: *const T, n: usize) -> Result<&'a [T], AbiError> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() || n > (isize::MAX as usize) / size_of::<T>().max(1) {
        return Err(bad("NULL or oversized array"));
    }
    // SAFETY: the caller promises `n` readable elements at `p`; the size fits an isize.
    Ok(unsafe { core::slice::from_raw_parts(p, n) })
}

/// # Safety
/// `p` is non-NULL and readable for `pmix_coord_t`; its `coord` for `dims` u32s.
unsafe fn read_coord(c: &pmix_coord_t) -> Result<Coord, AbiError> {
    // SAFETY: forwarded caller promise.
    let coords = unsafe { c_slice(c.coord, c.dims) }?.to_vec();
    Ok(Coord {
        view: c.view,
        coords,
    })
}

/// Read one element of type `ty` laid out as in a C array of that type.
///
/// # Safety
/// `p` points to a readable, aligned element of `ty`, whose own pointers obey the same rules.
unsafe fn read_elem(ty: u16, p: *const u8, depth: usize) -> Result<Value, AbiError> {
    if depth > MAX_DEPTH {
        return Err(bad("values nested too deeply (a cycle?)"));
    }
    // SAFETY: (every read below) the caller promises `p` points to an aligned element of
    // `ty`, and `elem_size` / the mirrors give its layout.
    unsafe {
        macro_rules! rd {
            ($ty:ty) => {
                ptr::read(p.cast::<$ty>())
            };
        }
        Ok(match ty {
            t::UNDEF => Value::Undef,
            t::BOOL => Value::Bool(rd!(u8) != 0),
            t::BYTE => Value::Byte(rd!(u8)),
            t::STRING => Value::String(c_string(rd!(*const c_char))?),
            t::SIZE => Value::Size(rd!(usize) as u64),
            t::PID => Value::Pid(rd!(i32)),
            t::INT => Value::Int(rd!(i32)),
            t::INT8 => Value::Int8(rd!(i8)),
            t::INT16 => Value::Int16(rd!(i16)),
            t::INT32 => Value::Int32(rd!(i32)),
            t::INT64 => Value::Int64(rd!(i64)),
            t::UINT => Value::Uint(rd!(u32)),
            t::UINT8 => Value::Uint8(rd!(u8)),
            t::UINT16 => Value::Uint16(rd!(u16)),
            t::UINT32 => Value::Uint32(rd!(u32)),
            t::UINT64 => Value::Uint64(rd!(u64)),
            t::FLOAT => Value::Float(rd!(f32)),
            t::DOUBLE => Value::Double(rd!(f64)),
            t::TIMEVAL => {
                let tv = rd!(timeval);
                Value::Timeval {
                    sec: tv.tv_sec,
                    usec: tv.tv_usec,
                }
            }
            t::TIME => Value::Time(rd!(i64)),
            t::STATUS => Value::Status(rd!(i32)),
            t::VALUE => read_value(p.cast::<pmix_value_t>(), depth + 1)?,
            t::PROC => {
                let pr = &*p.cast::<pmix_proc_t>();
                Value::Proc(Proc {
                    nspace: fixed_str(&pr.nspace)?.to_owned(),
                    rank: pr.rank,
                })
            }
            t::INFO => {
                let info = &*p.cast::<pmix_info_t>();
                Value::Info(Box::new(Info {
                    key: fixed_str(&info.key)?.to_owned(),
                    flags: info.flags,
                    value: read_value(&info.value, depth + 1)?,
                }))
            }
            t::BYTE_OBJECT => Value::ByteObject(c_bytes(&rd!(pmix_byte_object_t))?),
            t::COMPRESSED_STRING => Value::CompressedString(c_bytes(&rd!(pmix_byte_object_t))?),
            t::REGEX => Value::Regex(c_bytes(&rd!(pmix_byte_object_t))?),
            t::COMPRESSED_BYTE_OBJECT => Value::CompressedBytes(c_bytes(&rd!(pmix_byte_object_t))?),
            t::PERSIST => Value::Persistence(rd!(u8)),
            t::SCOPE => Value::Scope(rd!(u8)),
            t::DATA_RANGE => Value::DataRange(rd!(u8)),
            t::DATA_TYPE => Value::DataType(rd!(u16)),
            t::PROC_STATE => Value::ProcState(rd!(u8)),
            t::PROC_INFO => {
                let pi = &*p.cast::<pmix_proc_info_t>();
                Value::ProcInfo(ProcInfo {
                    proc: Proc {
                        nspace: fixed_str(&pi.proc_.nspace)?.to_owned(),
                        rank: pi.proc_.rank,
                    },
                    hostname: opt_string(pi.hostname)?,
                    executable: opt_string(pi.executable_name)?,
                    pid: pi.pid,
                    exit_code: pi.exit_code,
                    state: pi.state,
                })
            }
            t::DATA_ARRAY => {
                let da = &*p.cast::<pmix_data_array_t>();
                let size = elem_size(da.type_)
                    .ok_or_else(|| bad(format!("data array of unknown type {}", da.type_)))?;
                if da.size > 0 && da.array.is_null() {
                    return Err(bad("data array with a size and no elements"));
                }
                let mut items = Vec::with_capacity(da.size.min(1 << 20));
                for i in 0..da.size {
                    let e = da.array.cast::<u8>().cast_const().add(i * size);
                    items.push(read_elem(da.type_, e, depth + 1)?);
                }
                let v = Value::DataArray(Box::new(DataArray {
                    elem_type: da.type_,
                    items,
                }));
                v.check().map_err(|e| bad(e.to_string()))?;
                v
            }
            t::PROC_RANK => Value::ProcRank(rd!(u32)),
            t::ALLOC_DIRECTIVE => Value::AllocDirective(rd!(u8)),
            t::IOF_CHANNEL => Value::IofChannel(rd!(u16)),
            t::ENVAR => {
                let e = rd!(pmix_envar_t);
                Value::Envar(Envar {
                    name: c_string(e.envar)?,
                    value: opt_string(e.value)?,
                    separator: e.separator as u8,
                })
            }
            t::COORD => Value::Coord(read_coord(&*p.cast::<pmix_coord_t>())?),
            t::JOB_STATE => Value::JobState(rd!(u8)),
            t::LINK_STATE => Value::LinkState(rd!(u8)),
            t::PROC_CPUSET => {
                let c = &*p.cast::<pmix_cpuset_t>();
                Value::ProcCpuset(Cpuset {
                    source: opt_string(c.source)?,
                    bitmap: cpuset::print(c.bitmap)?,
                })
            }
            t::GEOMETRY => {
                let g = &*p.cast::<pmix_geometry_t>();
                let mut coordinates = Vec::new();
                for c in c_slice(g.coordinates, g.ncoords)? {
                    coordinates.push(read_coord(c)?);
                }
                Value::Geometry(Geometry {
                    fabric: g.fabric as u64,
                    uuid: opt_string(g.uuid)?,
                    osname: opt_string(g.osname)?,
                    coordinates,
                })
            }
            t::DEVICE_DIST => {
                let d = &*p.cast::<pmix_device_distance_t>();
                Value::DeviceDistance(DeviceDistance {
                    uuid: opt_string(d.uuid)?,
                    osname: opt_string(d.osname)?,
                    device_type: d.type_,
                    mindist: d.mindist,
                    maxdist: d.maxdist,
                })
            }
            t::ENDPOINT => {
                let e = &*p.cast::<pmix_endpoint_t>();
                Value::Endpoint(Endpoint {
                    uuid: opt_string(e.uuid)?,
                    osname: opt_string(e.osname)?,
                    endpt: c_bytes(&e.endpt)?,
                })
            }
            t::DEVTYPE => Value::DeviceType(rd!(u64)),
            t::LOCTYPE => Value::Locality(rd!(u16)),
            t::PROC_NSPACE => {
                let ns = &*p.cast::<[c_char; NSPACE_BUF]>();
                Value::ProcNspace(fixed_str(ns)?.to_owned())
            }
            t::STOR_MEDIUM => Value::StorMedium(rd!(u64)),
            t::STOR_ACCESS => Value::StorAccess(rd!(u64)),
            t::STOR_PERSIST => Value::StorPersist(rd!(u64)),
            t::STOR_ACCESS_TYPE => Value::StorAccessType(rd!(u16) as u64),
            other => return Err(AbiError::NotSupported(format!("value type {other}"))),
        })
    }
}

/// A string member that C leaves NULL when unset: stored as "".
///
/// # Safety
/// As [`c_str`].
unsafe fn opt_string(p: *const c_char) -> Result<String, AbiError> {
    if p.is_null() {
        Ok(String::new())
    } else {
        // SAFETY: forwarded caller promise.
        unsafe { c_string(p) }
    }
}

/// Read a `pmix_value_t`.
///
/// # Safety
/// `v` is NULL or points to a readable `pmix_value_t` whose pointers obey its type's layout.
pub unsafe fn read_value(v: *const pmix_value_t, depth: usize) -> Result<Value, AbiError> {
    if v.is_null() {
        return Err(bad("NULL value"));
    }
    // SAFETY: `v` is non-NULL and readable (caller).
    let v = unsafe { &*v };
    if matches!(v.type_, t::INFO | t::VALUE) {
        return Err(bad("a value of type PMIX_INFO/PMIX_VALUE outside an array"));
    }
    // SAFETY: the union member read is the one `type_` names: inline members at `&data`,
    // boxed members through their (non-NULL) pointer.
    unsafe {
        let data = ptr::addr_of!(v.data).cast::<u8>();
        if boxed_in_value(v.type_) {
            let inner = ptr::read(data.cast::<*const u8>());
            if inner.is_null() {
                return Err(bad(format!("NULL pointer in a value of type {}", v.type_)));
            }
            read_elem(v.type_, inner, depth)
        } else {
            read_elem(v.type_, data, depth)
        }
    }
}

/// Read a `pmix_info_t` array (registration arrays, resources, qualifiers).
///
/// # Safety
/// `p` is NULL (with `n` 0) or points to `n` readable `pmix_info_t`.
pub unsafe fn read_infos(p: *const pmix_info_t, n: usize) -> Result<Vec<Info>, AbiError> {
    // SAFETY: forwarded caller promise.
    let infos = unsafe { c_slice(p, n) }?;
    let mut out = Vec::with_capacity(n);
    for info in infos {
        out.push(Info {
            key: fixed_str(&info.key)?.to_owned(),
            flags: info.flags,
            // SAFETY: the element is readable (caller).
            value: unsafe { read_value(&info.value, 0) }?,
        });
    }
    Ok(out)
}

/// A `pmix_info_t` of a caller's registration array, read in place by the registration
/// ([`gds::jobdata::RegInfo`]): keys, strings and array elements are borrowed and scalars read
/// as they are stored, so a million proc arrays cost no conversion into [`Info`] trees. Every
/// accessor checks what it follows (NULL, sizes, NUL, UTF-8, nesting) whether or not the
/// element was validated; [`RegInfo::check`](gds::jobdata::RegInfo::check) validates one element
/// as [`read_infos`] would. Only [`reg_infos`] makes one (the field is private).
#[repr(transparent)]
pub struct CInfo(pmix_info_t);

// SAFETY: a CInfo is only ever reached through the `&[CInfo]` of `reg_infos`, whose caller
// promises the array and everything it points to stay unchanged while the view lives; every
// accessor only reads. Shared reads of memory nobody writes are sound from any thread, which is
// what the registration's read-ahead threads do.
unsafe impl Sync for CInfo {}

/// A registration array (`PMIx_server_register_nspace`) as a view the registration walks in
/// place. Only the array itself is checked here (NULL with a length): each element is checked
/// by the walk that reads it ([`CInfo`]'s accessors check what they follow, and the
/// registration reads every element or [`RegInfo::check`](gds::jobdata::RegInfo::check)s it),
/// so a million top-level infos are read once, not twice. Nothing is allocated. On a failed
/// registration, [`check_infos`] gives the status [`read_infos`] would have.
///
/// # Safety
/// As [`read_infos`], and the array (with everything it points to) outlives `'a` unchanged.
pub unsafe fn reg_infos<'a>(p: *const pmix_info_t, n: usize) -> Result<&'a [CInfo], AbiError> {
    // SAFETY: forwarded caller promise.
    let infos = unsafe { c_slice(p, n) }?;
    // SAFETY: CInfo is a transparent wrapper of pmix_info_t (same size, alignment and layout);
    // the lifetime is the caller's promise.
    Ok(unsafe { core::slice::from_raw_parts(infos.as_ptr().cast::<CInfo>(), infos.len()) })
}

/// Validate an info array as [`read_infos`] does (same checks, same errors), converting
/// nothing.
///
/// # Safety
/// As [`read_infos`].
pub unsafe fn check_infos(p: *const pmix_info_t, n: usize) -> Result<(), AbiError> {
    // SAFETY: forwarded caller promise.
    for info in unsafe { c_slice(p, n) }? {
        // SAFETY: the element is readable (caller).
        unsafe { check_info(info, 0, false) }?;
    }
    Ok(())
}

/// Validate an info (its key; its value at `depth`, as [`read_value`] counts it).
///
/// # Safety
/// `info`'s value obeys its type's layout (caller's promise, as for [`read_value`]).
unsafe fn check_info(info: &pmix_info_t, depth: usize, in_array: bool) -> Result<(), AbiError> {
    let key = fixed_str(&info.key)?;
    if in_array && (key.is_empty() || key.len() > gds::layout::MAX_KEY_LEN) {
        return Err(bad(format!("info key of {} bytes (1..=511)", key.len())));
    }
    let v = &info.value;
    // SAFETY: the union member read is the one `type_` names (caller's promise).
    unsafe {
        let data = ptr::addr_of!(v.data).cast::<u8>();
        match v.type_ {
            t::DATA_ARRAY => {
                let da = ptr::read(data.cast::<*const pmix_data_array_t>());
                if da.is_null() {
                    return Err(bad(format!("NULL pointer in a value of type {}", v.type_)));
                }
                if (*da).type_ != t::INFO {
                    return read_value(v, depth).map(drop);
                }
                if depth > MAX_DEPTH {
                    return Err(bad("values nested too deeply (a cycle?)"));
                }
                let da = &*da;
                if da.size > 0 && da.array.is_null() {
                    return Err(bad("data array with a size and no elements"));
                }
                for item in c_slice(da.array.cast::<pmix_info_t>().cast_const(), da.size)? {
                    if depth + 1 > MAX_DEPTH {
                        return Err(bad("values nested too deeply (a cycle?)"));
                    }
                    check_info(item, depth + 2, true)?;
                }
                Ok(())
            }
            // Strings are checked where they lie (no copy).
            t::STRING => c_str(ptr::read(data.cast::<*const c_char>()), 1 << 30).map(drop),
            _ => read_value(v, depth).map(drop),
        }
    }
}

fn store_error(e: AbiError) -> gds::Error {
    match e {
        AbiError::Store(e) => e,
        other => gds::Error::InvalidArgument(other.to_string()),
    }
}

impl CInfo {
    /// The value's inline union bytes.
    fn data(&self) -> *const u8 {
        ptr::addr_of!(self.0.value.data).cast::<u8>()
    }

    /// The byte object of a byte-object-like value.
    fn bytes(&self) -> Option<&[u8]> {
        if !matches!(self.0.value.type_, t::REGEX | t::BYTE_OBJECT) {
            return None;
        }
        // SAFETY: the value is a byte object (its type says so): its bytes are readable for its
        // size (caller's promise), unless it is empty; NULL with a size is refused.
        unsafe {
            let bo = ptr::read(self.data().cast::<pmix_byte_object_t>());
            if bo.size == 0 {
                return Some(&[]);
            }
            if bo.bytes.is_null() || bo.size > isize::MAX as usize {
                return None;
            }
            Some(core::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size))
        }
    }
}

/// Ask for what a walk reads of `info`: its key's first line and its value's (which may
/// straddle two lines).
fn prefetch_info(info: *const pmix_info_t) {
    let e = info.cast::<u8>();
    gds::prefetch(e);
    gds::prefetch(e.wrapping_add(core::mem::offset_of!(pmix_info_t, value)));
    gds::prefetch(e.wrapping_add(size_of::<pmix_info_t>() - 1));
}

impl gds::jobdata::RegInfo for CInfo {
    fn prefetch(&self, ahead: gds::jobdata::Ahead) {
        use gds::jobdata::Ahead;
        if ahead == Ahead::Key {
            gds::prefetch(&self.0);
            return;
        }
        if ahead == Ahead::Info {
            prefetch_info(&self.0);
            return;
        }
        if self.0.value.type_ != t::DATA_ARRAY {
            return;
        }
        // SAFETY: a data array value (its type says so): its pointer is NULL or points to a
        // readable pmix_data_array_t (caller's promise). Only the addresses of the elements are
        // computed (with wrapping arithmetic), never dereferenced.
        unsafe {
            let da = ptr::read(self.data().cast::<*const pmix_data_array_t>());
            if da.is_null() {
                return;
            }
            if ahead == Ahead::Array {
                gds::prefetch(da);
                return;
            }
            if (*da).type_ != t::INFO {
                return;
            }
            let base = (*da).array.cast::<pmix_info_t>().cast_const();
            for i in 0..(*da).size.min(16) {
                prefetch_info(base.wrapping_add(i));
            }
        }
    }

    type Elems<'a> = core::slice::Iter<'a, CInfo>;

    fn key(&self) -> &str {
        // A malformed key reads as "" (which no key matches and the store refuses); `check`
        // says why.
        fixed_str(&self.0.key).unwrap_or("")
    }

    fn column(&self, kind: gds::layout::ColumnKind) -> Option<u32> {
        use gds::layout::ColumnKind as K;
        let data = self.data();
        // SAFETY: the value's type says which union member it is; an inline scalar of that
        // type is read from the union's first bytes (as `read_value` reads it).
        let v = unsafe {
            match (kind, self.0.value.type_) {
                (K::Uint16, t::UINT16) => match ptr::read(data.cast::<u16>()) {
                    u16::MAX => return None,
                    v => v as u32,
                },
                (K::Uint32, t::UINT32) | (K::ProcRank, t::PROC_RANK) => {
                    ptr::read(data.cast::<u32>())
                }
                _ => return None,
            }
        };
        (v != u32::MAX).then_some(v)
    }

    fn check(&self) -> gds::Result<()> {
        // SAFETY: the element is readable (the promise `reg_infos` was given); depth 2 is that
        // of a top-level array's elements, the ones the registration checks this way.
        unsafe { check_info(&self.0, 2, true) }.map_err(store_error)
    }

    fn infos(&self) -> Option<Self::Elems<'_>> {
        if self.0.value.type_ != t::DATA_ARRAY {
            return None;
        }
        // SAFETY: a data array value (its type says so) whose pointer, when non-NULL, points to a
        // pmix_data_array_t, and whose elements, when PMIX_INFO, are `size` readable infos
        // (caller's promise); NULL pointers and oversized arrays are refused.
        unsafe {
            let da = ptr::read(self.data().cast::<*const pmix_data_array_t>());
            if da.is_null() || (*da).type_ != t::INFO {
                return None;
            }
            let infos = c_slice((*da).array.cast::<pmix_info_t>().cast_const(), (*da).size).ok()?;
            // CInfo is a transparent wrapper of pmix_info_t.
            Some(core::slice::from_raw_parts(infos.as_ptr().cast::<CInfo>(), infos.len()).iter())
        }
    }

    fn string(&self) -> Option<&str> {
        if self.0.value.type_ != t::STRING {
            return None;
        }
        // SAFETY: a PMIX_STRING value: NULL or a NUL-terminated string (caller's promise);
        // `c_str` refuses NULL and non-UTF-8.
        unsafe { c_str(ptr::read(self.data().cast::<*const c_char>()), 1 << 30) }.ok()
    }

    fn text(&self) -> Option<&str> {
        match self.bytes() {
            Some(b) => gds::jobdata::register::text_of_bytes(b),
            None => self.string(),
        }
    }

    fn number(&self) -> Option<u32> {
        match self.0.value.type_ {
            t::UINT32
            | t::UINT
            | t::PROC_RANK
            | t::UINT16
            | t::UINT8
            | t::UINT64
            | t::SIZE
            | t::INT
            | t::INT32
            | t::INT64
            | t::INT16 => {
                // SAFETY: an inline scalar (no pointer is followed).
                let v = unsafe { read_value(&self.0.value, 0) }.ok()?;
                gds::jobdata::register::number(&v)
            }
            _ => None,
        }
    }

    fn value(&self) -> gds::Result<std::borrow::Cow<'_, Value>> {
        // SAFETY: the element is readable (the promise `reg_infos` was given); `read_value`
        // checks what it follows and bounds nesting.
        unsafe { read_value(&self.0.value, 0) }
            .map(std::borrow::Cow::Owned)
            .map_err(store_error)
    }
}

/// The info array as a slice, for callers that scan keys without converting (qualifiers).
///
/// # Safety
/// As [`read_infos`], and the array outlives `'a`.
pub unsafe fn info_slice<'a>(
    p: *const pmix_info_t,
    n: usize,
) -> Result<&'a [pmix_info_t], AbiError> {
    // SAFETY: forwarded caller promise.
    unsafe { c_slice(p, n) }
}

/// A qualifier's value read as the small scalar it must be (bool, u32, scope, string).
pub fn info_value(info: &pmix_info_t) -> Result<Value, AbiError> {
    // SAFETY: `info` is a reference to a valid pmix_info_t (the caller built it from a slice
    // it was promised).
    unsafe { read_value(&info.value, 0) }
}

// ---- writing: every allocation is malloc/calloc, so libpmix's destructors free it ----

fn calloc_n<T>(n: usize) -> Result<*mut T, AbiError> {
    // SAFETY: calloc is sound for any count/size; a zero-filled block is a valid "empty" state
    // for every mirror (NULL pointers, zero sizes), so partial writes destruct cleanly.
    let p = unsafe { libc::calloc(n.max(1), size_of::<T>()) }.cast::<T>();
    if p.is_null() {
        Err(AbiError::NoMem)
    } else {
        Ok(p)
    }
}

fn c_dup_str(s: &str) -> Result<*mut c_char, AbiError> {
    if has_nul(s.as_bytes()) {
        return Err(AbiError::Store(gds::Error::Corrupt("string with a NUL")));
    }
    // malloc, not calloc (see `alloc_stored`): every byte is written below.
    // SAFETY: malloc is sound for any size; the result is checked for NULL before use.
    let p = unsafe { libc::malloc(s.len() + 1) }.cast::<u8>();
    if p.is_null() {
        return Err(AbiError::NoMem);
    }
    // SAFETY: `p` has s.len() + 1 bytes: the string's, then its NUL.
    unsafe {
        ptr::copy_nonoverlapping(s.as_ptr(), p, s.len());
        p.add(s.len()).write(0);
    }
    Ok(p.cast())
}

fn c_dup_bytes(b: &[u8]) -> Result<pmix_byte_object_t, AbiError> {
    if b.is_empty() {
        return Ok(pmix_byte_object_t {
            bytes: ptr::null_mut(),
            size: 0,
        });
    }
    let p = calloc_n::<u8>(b.len())?;
    // SAFETY: `p` has b.len() bytes.
    unsafe { ptr::copy_nonoverlapping(b.as_ptr(), p, b.len()) };
    Ok(pmix_byte_object_t {
        bytes: p.cast(),
        size: b.len(),
    })
}

fn nspace_buf(s: &str) -> Result<[c_char; NSPACE_BUF], AbiError> {
    let mut buf = [0 as c_char; NSPACE_BUF];
    if s.len() >= NSPACE_BUF {
        return Err(AbiError::Store(gds::Error::Corrupt("nspace too long")));
    }
    for (d, &b) in buf.iter_mut().zip(s.as_bytes()) {
        *d = b as c_char;
    }
    Ok(buf)
}

fn c_proc(p: &Proc) -> Result<pmix_proc_t, AbiError> {
    Ok(pmix_proc_t {
        nspace: nspace_buf(&p.nspace)?,
        rank: p.rank,
    })
}

fn c_coord(c: &Coord, out: &mut pmix_coord_t) -> Result<(), AbiError> {
    out.view = c.view;
    out.dims = c.coords.len();
    let p = calloc_n::<u32>(c.coords.len())?;
    // SAFETY: `p` has room for coords.len() u32s.
    unsafe { ptr::copy_nonoverlapping(c.coords.as_ptr(), p, c.coords.len()) };
    out.coord = p;
    Ok(())
}

/// Write `v` as one element of its type at `p` (as in a C array of that type). On error what
/// was written is left for [`destruct_elem`] (everything starts zeroed).
///
/// # Safety
/// `p` points to a zeroed, writable, aligned element of `v`'s type.
unsafe fn write_elem(v: &Value, p: *mut u8) -> Result<(), AbiError> {
    // SAFETY: (every write below) `p` is a writable element of `v.type_code()` (caller).
    unsafe {
        macro_rules! wr {
            ($ty:ty, $e:expr) => {
                ptr::write(p.cast::<$ty>(), $e)
            };
        }
        match v {
            Value::Undef => {}
            Value::Bool(b) => wr!(u8, *b as u8),
            Value::Byte(b) | Value::Uint8(b) => wr!(u8, *b),
            Value::String(s) => wr!(*mut c_char, c_dup_str(s)?),
            Value::Size(s) => wr!(usize, *s as usize),
            Value::Pid(i) | Value::Int(i) | Value::Int32(i) | Value::Status(i) => wr!(i32, *i),
            Value::Int8(i) => wr!(i8, *i),
            Value::Int16(i) => wr!(i16, *i),
            Value::Int64(i) | Value::Time(i) => wr!(i64, *i),
            Value::Uint(u) | Value::Uint32(u) | Value::ProcRank(u) => wr!(u32, *u),
            Value::Uint16(u) | Value::DataType(u) | Value::IofChannel(u) | Value::Locality(u) => {
                wr!(u16, *u)
            }
            Value::Uint64(u)
            | Value::DeviceType(u)
            | Value::StorMedium(u)
            | Value::StorAccess(u)
            | Value::StorPersist(u) => wr!(u64, *u),
            Value::StorAccessType(u) => wr!(
                u16,
                u16::try_from(*u).map_err(|_| AbiError::Store(gds::Error::Corrupt(
                    "storage access type wider than pmix_storage_access_type_t"
                )))?
            ),
            Value::Float(f) => wr!(f32, *f),
            Value::Double(f) => wr!(f64, *f),
            Value::Timeval { sec, usec } => wr!(
                timeval,
                timeval {
                    tv_sec: *sec,
                    tv_usec: *usec
                }
            ),
            Value::Proc(pr) => wr!(pmix_proc_t, c_proc(pr)?),
            Value::Info(info) => write_info(&mut *p.cast::<pmix_info_t>(), info)?,
            Value::ByteObject(b)
            | Value::CompressedString(b)
            | Value::Regex(b)
            | Value::CompressedBytes(b) => wr!(pmix_byte_object_t, c_dup_bytes(b)?),
            Value::Persistence(u)
            | Value::Scope(u)
            | Value::DataRange(u)
            | Value::ProcState(u)
            | Value::AllocDirective(u)
            | Value::JobState(u)
            | Value::LinkState(u) => wr!(u8, *u),
            Value::ProcInfo(pi) => {
                let out = &mut *p.cast::<pmix_proc_info_t>();
                out.proc_ = c_proc(&pi.proc)?;
                out.pid = pi.pid;
                out.exit_code = pi.exit_code;
                out.state = pi.state;
                out.hostname = c_dup_str(&pi.hostname)?;
                out.executable_name = c_dup_str(&pi.executable)?;
            }
            Value::DataArray(da) => {
                let out = &mut *p.cast::<pmix_data_array_t>();
                out.type_ = da.elem_type;
                let size = elem_size(da.elem_type)
                    .ok_or(AbiError::Store(gds::Error::Corrupt("data array type")))?;
                let arr = calloc_n::<u8>(size * da.items.len())?;
                out.array = arr.cast();
                for (i, item) in da.items.iter().enumerate() {
                    // Count each element as it is started, so destruct sees exactly those.
                    out.size = i + 1;
                    if da.elem_type == t::VALUE {
                        write_value(&mut *arr.add(i * size).cast::<pmix_value_t>(), item)?;
                    } else {
                        write_elem(item, arr.add(i * size))?;
                    }
                }
            }
            Value::Envar(e) => {
                let out = &mut *p.cast::<pmix_envar_t>();
                out.separator = e.separator as c_char;
                out.envar = c_dup_str(&e.name)?;
                out.value = c_dup_str(&e.value)?;
            }
            Value::Coord(c) => c_coord(c, &mut *p.cast::<pmix_coord_t>())?,
            Value::ProcCpuset(c) => {
                let out = &mut *p.cast::<pmix_cpuset_t>();
                out.source = c_dup_str(&c.source)?;
                out.bitmap = cpuset::parse(&c.bitmap)?;
            }
            Value::Geometry(g) => {
                let out = &mut *p.cast::<pmix_geometry_t>();
                out.fabric = g.fabric as usize;
                out.uuid = c_dup_str(&g.uuid)?;
                out.osname = c_dup_str(&g.osname)?;
                let arr = calloc_n::<pmix_coord_t>(g.coordinates.len())?;
                out.coordinates = arr;
                for (i, c) in g.coordinates.iter().enumerate() {
                    out.ncoords = i + 1;
                    c_coord(c, &mut *arr.add(i))?;
                }
            }
            Value::DeviceDistance(d) => {
                let out = &mut *p.cast::<pmix_device_distance_t>();
                out.type_ = d.device_type;
                out.mindist = d.mindist;
                out.maxdist = d.maxdist;
                out.uuid = c_dup_str(&d.uuid)?;
                out.osname = c_dup_str(&d.osname)?;
            }
            Value::Endpoint(e) => {
                let out = &mut *p.cast::<pmix_endpoint_t>();
                out.uuid = c_dup_str(&e.uuid)?;
                out.osname = c_dup_str(&e.osname)?;
                out.endpt = c_dup_bytes(&e.endpt)?;
            }
            Value::ProcNspace(s) => wr!([c_char; NSPACE_BUF], nspace_buf(s)?),
        }
    }
    Ok(())
}

/// Write `info` into `*out` (key, flags and value; `*out` must not own anything). The key
/// buffer's bytes after the key are left as they were (zero in a fresh info).
pub fn write_info(out: &mut pmix_info_t, info: &Info) -> Result<(), AbiError> {
    if info.key.len() >= KEY_BUF {
        return Err(AbiError::Store(gds::Error::Corrupt("key too long")));
    }
    for (d, &b) in out.key.iter_mut().zip(info.key.as_bytes()) {
        *d = b as c_char;
    }
    out.flags = info.flags;
    write_value(&mut out.value, &info.value)
}

/// `info` as a new C info (its value's data malloc'd, as [`write_value`] does).
pub fn c_info(info: &Info) -> Result<pmix_info_t, AbiError> {
    let mut out = pmix_info_t {
        key: [0; KEY_BUF],
        flags: 0,
        value: zeroed_value(),
    };
    write_info(&mut out, info)?;
    Ok(out)
}

/// Write `v` into `*out` (which is overwritten: it must not own anything). On error `*out` is
/// destructed and left `PMIX_UNDEF`.
pub fn write_value(out: &mut pmix_value_t, v: &Value) -> Result<(), AbiError> {
    out.type_ = t::UNDEF;
    out.data = pmix_value_data { uint64: 0 };
    let ty = v.type_code();
    if matches!(v, Value::Info(_)) {
        return Err(AbiError::Store(gds::Error::Corrupt(
            "info outside an array",
        )));
    }
    out.type_ = ty;
    let res = if boxed_in_value(ty) {
        let size = elem_size(ty).ok_or(AbiError::Store(gds::Error::Corrupt("value type")))?;
        calloc_n::<u8>(size).and_then(|inner| {
            out.data.ptr = inner.cast();
            // SAFETY: `inner` is a zeroed element of `ty`.
            unsafe { write_elem(v, inner) }
        })
    } else {
        // SAFETY: the inline union member of `ty` starts at `data` and fits in it.
        unsafe { write_elem(v, ptr::addr_of_mut!(out.data).cast::<u8>()) }
    };
    if res.is_err() {
        destruct_value(out);
    }
    res
}

/// Write a stored value: scalars, strings and byte objects straight from the mapping (no
/// intermediate `Value`); anything else through [`Value`].
#[inline]
pub fn write_stored(out: &mut pmix_value_t, v: &ValueRef<'_>) -> Result<(), AbiError> {
    let a = match v {
        ValueRef::Bytes(b) => {
            out.type_ = t::BYTE_OBJECT;
            out.data = pmix_value_data {
                bo: c_dup_bytes(b)?,
            };
            return Ok(());
        }
        ValueRef::Uint16(u) => {
            out.type_ = t::UINT16;
            out.data = pmix_value_data { uint16: *u };
            return Ok(());
        }
        ValueRef::Uint32(u) | ValueRef::ProcRank(u) => {
            out.type_ = v.type_code();
            out.data = pmix_value_data { uint32: *u };
            return Ok(());
        }
        ValueRef::Archived(a) => *a,
    };
    out.data = pmix_value_data { uint64: 0 };
    out.type_ = a.type_code();
    match a {
        ArchivedValue::String(s) => out.data.string = c_dup_str(s.as_str())?,
        ArchivedValue::Uint32(u) | ArchivedValue::ProcRank(u) | ArchivedValue::Uint(u) => {
            out.data.uint32 = u.to_native()
        }
        ArchivedValue::Uint16(u) | ArchivedValue::Locality(u) => out.data.uint16 = u.to_native(),
        ArchivedValue::Bool(b) => out.data.flag = *b,
        ArchivedValue::ByteObject(b) => out.data.bo = c_dup_bytes(b.as_slice())?,
        _ => return write_value(out, &a.to_value()),
    }
    Ok(())
}

/// Release what [`write_value`] allocated inside `*v` (not `v` itself); leaves it UNDEF.
/// The same frees `PMIx_Value_destruct` performs, for values the shims own.
pub fn destruct_value(v: &mut pmix_value_t) {
    let ty = v.type_;
    // SAFETY: `v` was written by `write_value`/`write_stored` (or is zeroed), so the union member
    // of `ty` is the live one and every pointer in it came from calloc or is NULL.
    unsafe {
        if boxed_in_value(ty) {
            let inner = v.data.ptr.cast::<u8>();
            if !inner.is_null() {
                destruct_elem(ty, inner);
                libc::free(inner.cast());
            }
        } else {
            destruct_elem(ty, ptr::addr_of_mut!(v.data).cast::<u8>());
        }
    }
    v.type_ = t::UNDEF;
    v.data = pmix_value_data { uint64: 0 };
}

/// # Safety
/// `p` is an element of `ty` written by `write_elem` (or zeroed).
unsafe fn destruct_elem(ty: u16, p: *mut u8) {
    // SAFETY: see the function's contract; free(NULL) is a no-op.
    unsafe {
        let free = |q: *mut c_void| libc::free(q);
        match ty {
            t::STRING => free(ptr::read(p.cast::<*mut c_char>()).cast()),
            t::BYTE_OBJECT | t::COMPRESSED_STRING | t::REGEX | t::COMPRESSED_BYTE_OBJECT => {
                free(ptr::read(p.cast::<pmix_byte_object_t>()).bytes.cast())
            }
            t::INFO => destruct_value(&mut (*p.cast::<pmix_info_t>()).value),
            t::VALUE => destruct_value(&mut *p.cast::<pmix_value_t>()),
            t::PROC_INFO => {
                let pi = &*p.cast::<pmix_proc_info_t>();
                free(pi.hostname.cast());
                free(pi.executable_name.cast());
            }
            t::DATA_ARRAY => {
                let da = &*p.cast::<pmix_data_array_t>();
                if let Some(size) = elem_size(da.type_) {
                    for i in 0..da.size {
                        destruct_elem(da.type_, da.array.cast::<u8>().add(i * size));
                    }
                }
                free(da.array);
            }
            t::ENVAR => {
                let e = &*p.cast::<pmix_envar_t>();
                free(e.envar.cast());
                free(e.value.cast());
            }
            t::COORD => free((*p.cast::<pmix_coord_t>()).coord.cast()),
            t::PROC_CPUSET => {
                let c = &*p.cast::<pmix_cpuset_t>();
                free(c.source.cast());
                cpuset::free(c.bitmap);
            }
            t::GEOMETRY => {
                let g = &*p.cast::<pmix_geometry_t>();
                free(g.uuid.cast());
                free(g.osname.cast());
                for i in 0..g.ncoords {
                    free((*g.coordinates.add(i)).coord.cast());
                }
                free(g.coordinates.cast());
            }
            t::DEVICE_DIST => {
                let d = &*p.cast::<pmix_device_distance_t>();
                free(d.uuid.cast());
                free(d.osname.cast());
            }
            t::ENDPOINT => {
                let e = &*p.cast::<pmix_endpoint_t>();
                free(e.uuid.cast());
                free(e.osname.cast());
                free(e.endpt.bytes.cast());
            }
            _ => {}
        }
    }
}

/// A `malloc`ed `pmix_value_t` holding `v` (PMIx_Get's default: the caller releases it with
/// `PMIX_VALUE_RELEASE`).
#[inline]
pub fn alloc_stored(v: &ValueRef<'_>) -> Result<*mut pmix_value_t, AbiError> {
    // malloc and a 32-byte zero store, not calloc: glibc's calloc skips the thread cache that
    // malloc takes first (~140 instructions instead of ~30, on every PMIx_Get in copy mode).
    // SAFETY: malloc is sound for any size; the result is checked for NULL before use.
    let p = unsafe { libc::malloc(size_of::<pmix_value_t>()) }.cast::<pmix_value_t>();
    if p.is_null() {
        return Err(AbiError::NoMem);
    }
    // SAFETY: `p` is a fresh allocation of one pmix_value_t (malloc aligns for any type);
    // all-zero is its empty state (PMIX_UNDEF, NULL pointers), as calloc would leave it. The
    // store is volatile because the compiler turns malloc + a plain zero fill back into calloc.
    unsafe { ptr::write_volatile(p.cast::<[u64; 4]>(), [0; 4]) };
    // SAFETY: `p` is a fresh zeroed pmix_value_t.
    let res = write_stored(unsafe { &mut *p }, v);
    if let Err(e) = res {
        // SAFETY: `p` came from malloc and owns nothing after the failed write.
        unsafe { libc::free(p.cast()) };
        return Err(e);
    }
    Ok(p)
}

/// Free a `pmix_value_t` from [`alloc_stored`] and what it holds (the shims' own release).
///
/// # Safety
/// `p` is NULL or came from [`alloc_stored`] and is not used again.
pub unsafe fn free_value(p: *mut pmix_value_t) {
    if p.is_null() {
        return;
    }
    // SAFETY: caller contract.
    unsafe {
        destruct_value(&mut *p);
        libc::free(p.cast());
    }
}

/// Write a value whose byte object points into the mapping (PMIX_GET_POINTER_VALUES); any other
/// type is written as an owned copy (see docs/ffi.md). Returns whether `out` borrows.
pub fn write_borrowed(out: &mut pmix_value_t, v: &ValueRef<'_>) -> Result<bool, AbiError> {
    if let Some(b) = v.as_bytes() {
        out.type_ = v.type_code();
        out.data = pmix_value_data {
            bo: pmix_byte_object_t {
                bytes: b.as_ptr().cast_mut().cast(),
                size: b.len(),
            },
        };
        return Ok(true);
    }
    write_stored(out, v).map(|()| false)
}

/// Copy a C `pmix_proc_t` out of a raw pointer.
///
/// # Safety
/// `p` is NULL or points to a readable `pmix_proc_t`.
pub unsafe fn read_proc(p: *const pmix_proc_t) -> Result<(String, u32), AbiError> {
    if p.is_null() {
        return Err(bad("NULL proc"));
    }
    // SAFETY: non-NULL and readable (caller).
    let p = unsafe { &*p };
    Ok((fixed_str(&p.nspace)?.to_owned(), p.rank))
}

/// Borrow a C `pmix_proc_t`'s namespace without copying.
///
/// # Safety
/// `p` is NULL or points to a readable `pmix_proc_t` that outlives `'a`.
#[inline]
pub unsafe fn proc_ref<'a>(p: *const pmix_proc_t) -> Result<(&'a str, u32), AbiError> {
    if p.is_null() {
        return Err(bad("NULL proc"));
    }
    // SAFETY: non-NULL, readable, outlives 'a (caller).
    let p = unsafe { &*p };
    Ok((fixed_str(&p.nspace)?, p.rank))
}

/// A zeroed (`PMIX_UNDEF`) `pmix_value_t`.
#[inline]
pub fn zeroed_value() -> pmix_value_t {
    // The union's largest member, so that every byte a reader of any member may load is
    // written (`uint64` alone left a byte object's `size` uninitialised: valgrind saw it).
    const _: () = assert!(size_of::<pmix_envar_t>() == size_of::<pmix_value_data>());
    pmix_value_t {
        type_: t::UNDEF,
        data: pmix_value_data {
            envar: pmix_envar_t {
                envar: core::ptr::null_mut(),
                value: core::ptr::null_mut(),
                separator: 0,
            },
        },
    }
}

/// A `pmix_value_t` the client library keeps for a PMIX_GET_POINTER_VALUES caller: boxed so its
/// address is stable, destructed on drop when it owns its data (byte objects borrowed from a
/// mapping are not owned; the holder keeps that mapping alive).
pub struct HeldValue {
    value: Box<pmix_value_t>,
    owns_data: bool,
}

// SAFETY: the pointers inside are either to immutable mapped bytes (kept mapped by the holder)
// or to malloc'd memory this value alone owns; nothing is shared mutably between threads.
unsafe impl Send for HeldValue {}

impl HeldValue {
    /// Write `v`, borrowing byte objects from the mapping when `borrow` is true.
    pub fn new(v: &ValueRef<'_>, borrow: bool) -> Result<HeldValue, AbiError> {
        let mut value = Box::new(zeroed_value());
        let owns_data = if borrow {
            !write_borrowed(&mut value, v)?
        } else {
            write_stored(&mut value, v)?;
            true
        };
        Ok(HeldValue { value, owns_data })
    }

    /// The value handed to C (valid while `self` lives).
    pub fn as_mut_ptr(&mut self) -> *mut pmix_value_t {
        &mut *self.value
    }
}

impl Drop for HeldValue {
    fn drop(&mut self) {
        if self.owns_data {
            destruct_value(&mut self.value);
        }
    }
}

#[cfg(test)]
mod has_nul_tests {
    #[test]
    fn agrees_with_a_byte_search() {
        for n in 0..40 {
            let base: Vec<u8> = (0..n as u8).map(|i| 1 + i.wrapping_mul(37) % 255).collect();
            assert!(!super::has_nul(&base), "{n}");
            for at in 0..n {
                for v in [0u8, 1, 0x80, 0xff] {
                    let mut b = base.clone();
                    b[at] = v;
                    assert_eq!(
                        super::has_nul(&b),
                        b.contains(&0),
                        "length {n}, byte {at} = {v}"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod is_ascii_tests {
    #[test]
    fn agrees_with_the_standard_library() {
        for n in 0..40 {
            let base: Vec<u8> = (0..n as u8).map(|i| b'a' + i % 26).collect();
            assert!(super::is_ascii(&base), "{n}");
            for at in 0..n {
                let mut b = base.clone();
                b[at] |= 0x80;
                assert_eq!(super::is_ascii(&b), b.is_ascii(), "length {n}, byte {at}");
                assert!(!super::is_ascii(&b), "length {n}, byte {at}");
            }
        }
    }
}

#[cfg(test)]
mod fixed_str_tests {
    use super::fixed_str;
    use core::ffi::c_char;

    /// The plain byte-at-a-time definition fixed_str must agree with.
    fn reference(b: &[u8]) -> Option<&str> {
        let end = b.iter().position(|&c| c == 0)?;
        core::str::from_utf8(&b[..end]).ok()
    }

    #[test]
    fn agrees_with_the_bytewise_definition() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Every length up to 40 (word and remainder paths), NULs at every place or none,
        // ASCII, valid multi-byte UTF-8 and invalid bytes, before and after the NUL.
        let alphabet: [&[u8]; 5] = [b"a", b"pmix.", "\u{e9}".as_bytes(), &[0xff], &[0x80]];
        for len in 0..40usize {
            for case in 0..400 {
                let mut b = Vec::with_capacity(len + 4);
                while b.len() < len {
                    let piece = alphabet[(next() % 5) as usize];
                    b.extend_from_slice(piece);
                }
                b.truncate(len);
                if case % 4 != 0 && len > 0 {
                    let at = (next() % len as u64) as usize;
                    b[at] = 0;
                }
                let c: Vec<c_char> = b.iter().map(|&v| v as c_char).collect();
                assert_eq!(fixed_str(&c).ok(), reference(&b), "bytes {b:?}");
            }
        }
    }
}
