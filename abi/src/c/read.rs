//! Reading the caller's `pmix_value_t` / `pmix_info_t` graphs into `gds` values: every pointer
//! is checked for NULL, every length against `isize`, every nesting against [`MAX_DEPTH`].

use core::ffi::c_char;
use core::ptr;

use rshm_gds::packed_array::{self as packed, PackedArray};
use rshm_gds::value::{
    types as t, App, Coord, Cpuset, DeviceDistance, Endpoint, Envar, Geometry, PData, Proc,
    ProcInfo, Query, RegAttr,
};
use rshm_gds::{DataArray, Info, Value};

use super::strings::{c_string, fixed_str, opt_string};
use super::{bad, boxed_in_value, c_slice, cpuset, elem_size, MAX_DEPTH};
use crate::types::*;
use crate::AbiError;

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

/// The unread payload of a data buffer (`unpack_ptr..pack_ptr`), which is what OpenPMIx's own
/// store keeps of one (`PMIx_Data_copy_payload`): nothing when either pointer is NULL.
///
/// # Safety
/// Unless NULL, `unpack_ptr..pack_ptr` is readable.
unsafe fn dbuf_payload(db: &pmix_data_buffer_t) -> Result<Vec<u8>, AbiError> {
    if db.bytes_used == 0 || db.unpack_ptr.is_null() || db.pack_ptr.is_null() {
        return Ok(Vec::new());
    }
    let n = (db.pack_ptr as usize)
        .checked_sub(db.unpack_ptr as usize)
        .ok_or_else(|| bad("data buffer whose pack pointer is before its unpack pointer"))?;
    // SAFETY: the caller promises the payload between the two pointers is readable.
    Ok(unsafe { c_slice(db.unpack_ptr.cast::<u8>().cast_const(), n) }?.to_vec())
}

/// A data array of fixed-width elements as its bytes (one copy, no value per element).
///
/// # Safety
/// `da.array` is readable for `da.size` elements of `da.type_`, `width` bytes each.
unsafe fn read_packed(da: &pmix_data_array_t, width: usize) -> Result<Value, AbiError> {
    const _: () = assert!(
        cfg!(target_endian = "little"),
        "packed arrays are little-endian: a C array's bytes are only copied as they are on a \
         little-endian host"
    );
    let n = da
        .size
        .checked_mul(width)
        .ok_or_else(|| bad("data array too large"))?;
    // SAFETY: forwarded caller promise (n bytes are the array's elements).
    let mut bytes = unsafe { c_slice(da.array.cast::<u8>().cast_const(), n) }?.to_vec();
    if da.type_ == t::BOOL {
        // A C bool is 0 or 1; anything else is stored as true, as the element reader does.
        for b in &mut bytes {
            *b = (*b != 0) as u8;
        }
    }
    Ok(Value::PackedArray(PackedArray {
        elem_type: da.type_,
        bytes,
    }))
}

/// A NULL-terminated array of strings (`char **argv`); NULL is empty.
///
/// # Safety
/// `p` is NULL or points to readable string pointers up to a NULL one.
unsafe fn read_argv(p: *const *mut c_char) -> Result<Vec<String>, AbiError> {
    let mut out = Vec::new();
    if p.is_null() {
        return Ok(out);
    }
    loop {
        if out.len() >= 1 << 20 {
            return Err(bad("string array without its NULL end"));
        }
        // SAFETY: every slot up to the NULL one is readable (caller).
        let s = unsafe { ptr::read(p.add(out.len())) };
        if s.is_null() {
            return Ok(out);
        }
        // SAFETY: a NUL-terminated string (caller).
        out.push(unsafe { c_string(s) }?);
    }
}

/// `n` infos at `p` (an app's info, a query's qualifiers).
///
/// # Safety
/// As [`read_infos`].
unsafe fn read_info_array(
    p: *const pmix_info_t,
    n: usize,
    depth: usize,
) -> Result<Vec<Info>, AbiError> {
    // SAFETY: forwarded caller promise.
    let infos = unsafe { c_slice(p, n) }?;
    infos
        .iter()
        .map(|info| {
            Ok(Info {
                key: fixed_str(&info.key)?.to_owned(),
                flags: info.flags,
                // SAFETY: the element is readable (caller).
                value: unsafe { read_value(&info.value, depth + 1) }?,
            })
        })
        .collect()
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
            t::STRING => match rd!(*const c_char) {
                s if s.is_null() => Value::NullString,
                s => Value::String(c_string(s)?),
            },
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
                if let Some(w) = packed::width(da.type_) {
                    debug_assert_eq!(w, size);
                    return read_packed(da, w);
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
            t::COMMAND => Value::Command(rd!(u8)),
            t::INFO_DIRECTIVES => Value::InfoDirectives(rd!(u32)),
            t::DATA_BUFFER => Value::DataBuffer(dbuf_payload(&*p.cast::<pmix_data_buffer_t>())?),
            t::REGATTR => {
                let r = &*p.cast::<pmix_regattr_t>();
                Value::RegAttr(Box::new(RegAttr {
                    name: opt_string(r.name)?,
                    key: fixed_str(&r.string)?.to_owned(),
                    value_type: r.type_,
                    description: read_argv(r.description)?,
                }))
            }
            t::APP => {
                let a = &*p.cast::<pmix_app_t>();
                Value::App(Box::new(App {
                    cmd: opt_string(a.cmd)?,
                    argv: read_argv(a.argv)?,
                    env: read_argv(a.env)?,
                    cwd: opt_string(a.cwd)?,
                    maxprocs: a.maxprocs,
                    info: read_info_array(a.info, a.ninfo, depth)?,
                }))
            }
            t::PDATA => {
                let d = &*p.cast::<pmix_pdata_t>();
                Value::PData(Box::new(PData {
                    proc: Proc {
                        nspace: fixed_str(&d.proc_.nspace)?.to_owned(),
                        rank: d.proc_.rank,
                    },
                    key: fixed_str(&d.key)?.to_owned(),
                    value: read_value(&d.value, depth + 1)?,
                }))
            }
            t::QUERY => {
                let q = &*p.cast::<pmix_query_t>();
                Value::Query(Box::new(Query {
                    keys: read_argv(q.keys)?,
                    qualifiers: read_info_array(q.qualifiers, q.nqual, depth)?,
                }))
            }
            other => return Err(AbiError::NotSupported(format!("value type {other}"))),
        })
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
    if matches!(v.type_, t::APP | t::PDATA | t::QUERY) {
        // No member of the union holds them: only a data array does.
        return Err(AbiError::NotSupported(format!("value type {}", v.type_)));
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

/// The bytes of a `PMIX_BYTE_OBJECT` value, in place; `None` for a value of any other type.
/// For a caller that stores them as they are: a large object is then copied once, into the
/// store, not first into a [`Value`].
///
/// # Safety
/// As [`read_value`], and the bytes outlive `'a` unchanged.
pub unsafe fn byte_object_ref<'a>(v: *const pmix_value_t) -> Result<Option<&'a [u8]>, AbiError> {
    if v.is_null() {
        return Err(bad("NULL value"));
    }
    // SAFETY: `v` is non-NULL and readable (caller).
    let v = unsafe { &*v };
    if v.type_ != t::BYTE_OBJECT {
        return Ok(None);
    }
    // SAFETY: the byte object member is the live one (the type says so).
    let bo = unsafe { v.data.bo };
    if bo.size == 0 {
        return Ok(Some(&[]));
    }
    if bo.bytes.is_null() {
        return Err(bad("byte object with a size and no bytes"));
    }
    // SAFETY: the caller promises `size` readable bytes that outlive 'a.
    Ok(Some(unsafe {
        c_slice(bo.bytes.cast::<u8>().cast_const(), bo.size)
    }?))
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

/// A qualifier's value (bool, u32, scope, string...).
///
/// # Safety
/// `info.value` obeys its type's layout, as for [`read_value`]: a reference proves only that
/// the `pmix_info_t` itself is readable, not that the pointers in its value are (the mirror's
/// fields are public, so safe code can put any address there).
pub unsafe fn info_value(info: &pmix_info_t) -> Result<Value, AbiError> {
    // SAFETY: forwarded caller promise.
    unsafe { read_value(&info.value, 0) }
}

/// PMIx_Get's directives ([`crate::get::GetRequest`]) read from its `info` array.
///
/// Safe code cannot call it: a `&[pmix_info_t]` says nothing about the pointers in its values.
/// ```compile_fail,E0133
/// let info = rshm_abi::c::c_info(&rshm_gds::Info::new("pmix.optional", rshm_gds::Value::Bool(true))).unwrap();
/// let _ = rshm_abi::get::parse(&[info]);
/// ```
///
/// # Safety
/// Every element's value obeys its type's layout, as for [`read_value`] (PMIx_Get's contract
/// for `info`).
pub unsafe fn parse_get(infos: &[pmix_info_t]) -> Result<crate::get::GetRequest, AbiError> {
    crate::get::parse_with(infos, |info| {
        // SAFETY: the element's value obeys its layout (this function's caller promise).
        unsafe { read_value(&info.value, 0) }
    })
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
