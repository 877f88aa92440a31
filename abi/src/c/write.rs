//! Writing `gds` values out as C structs. Every allocation is malloc/calloc, so libpmix's
//! destructors (`PMIX_VALUE_RELEASE`, `PMIx_Value_destruct`, which call `free`) release them.

use core::ffi::c_char;
use core::mem::size_of;
use core::ptr;

use rshm_gds::packed_array as packed;
use rshm_gds::value::{types as t, App, Coord, PData, Proc, Query, RegAttr};
use rshm_gds::{ArchivedValue, Info, Value, ValueRef};

use super::free::destruct_value;
use super::strings::has_nul;
use super::{boxed_in_value, cpuset, elem_size};
use crate::types::*;
use crate::AbiError;

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
        return Err(AbiError::Store(rshm_gds::Error::Corrupt(
            "string with a NUL",
        )));
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

/// A data array of `elem_type` holding `bytes` (a packed array's elements: their C layout on a
/// little-endian host, see `read_packed`), written into `*out` (zeroed).
fn c_packed(out: &mut pmix_data_array_t, elem_type: u16, bytes: &[u8]) -> Result<(), AbiError> {
    let w = packed::width(elem_type)
        .filter(|&w| Some(w) == elem_size(elem_type) && bytes.len().is_multiple_of(w))
        .ok_or(AbiError::Store(rshm_gds::Error::Corrupt("packed array")))?;
    out.type_ = elem_type;
    let arr = calloc_n::<u8>(bytes.len())?;
    // SAFETY: `arr` has bytes.len() bytes.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), arr, bytes.len()) };
    out.array = arr.cast();
    out.size = bytes.len() / w;
    Ok(())
}

/// A data buffer holding `payload` as its unread bytes, as `PMIX_DATA_BUFFER_LOAD` leaves one
/// (an empty payload: the all-NULL buffer `PMIX_DATA_BUFFER_CREATE` makes).
fn c_dbuf(out: &mut pmix_data_buffer_t, payload: &[u8]) -> Result<(), AbiError> {
    if payload.is_empty() {
        return Ok(());
    }
    let base = calloc_n::<u8>(payload.len())?;
    // SAFETY: `base` has payload.len() bytes; pack_ptr is one past its end.
    unsafe {
        ptr::copy_nonoverlapping(payload.as_ptr(), base, payload.len());
        out.pack_ptr = base.add(payload.len()).cast();
    }
    out.base_ptr = base.cast();
    out.unpack_ptr = base.cast();
    out.bytes_allocated = payload.len();
    out.bytes_used = payload.len();
    Ok(())
}

/// A NULL-terminated array of strings (NULL for none), each malloc'd. On error `*out` holds
/// what was made, for the destructor (the array is zeroed, so it ends at the first NULL).
fn c_argv(out: &mut *mut *mut c_char, strings: &[String]) -> Result<(), AbiError> {
    if strings.is_empty() {
        return Ok(());
    }
    let lines = calloc_n::<*mut c_char>(strings.len() + 1)?;
    *out = lines;
    for (i, s) in strings.iter().enumerate() {
        // SAFETY: `lines` has strings.len() + 1 slots.
        unsafe { lines.add(i).write(c_dup_str(s)?) };
    }
    Ok(())
}

/// An array of infos; `*n` counts each as it is started, so a failure leaves exactly those to
/// the destructor.
fn c_infos(out: &mut *mut pmix_info_t, n: &mut usize, infos: &[Info]) -> Result<(), AbiError> {
    if infos.is_empty() {
        return Ok(());
    }
    let arr = calloc_n::<pmix_info_t>(infos.len())?;
    *out = arr;
    for (i, info) in infos.iter().enumerate() {
        *n = i + 1;
        // SAFETY: `arr` has infos.len() zeroed infos.
        write_info(unsafe { &mut *arr.add(i) }, info)?;
    }
    Ok(())
}

fn c_app(out: &mut pmix_app_t, a: &App) -> Result<(), AbiError> {
    out.maxprocs = a.maxprocs;
    out.cmd = c_dup_str(&a.cmd)?;
    out.cwd = c_dup_str(&a.cwd)?;
    c_argv(&mut out.argv, &a.argv)?;
    c_argv(&mut out.env, &a.env)?;
    c_infos(&mut out.info, &mut out.ninfo, &a.info)
}

fn c_pdata(out: &mut pmix_pdata_t, d: &PData) -> Result<(), AbiError> {
    if d.key.len() >= KEY_BUF || has_nul(d.key.as_bytes()) {
        return Err(AbiError::Store(rshm_gds::Error::Corrupt("pdata key")));
    }
    out.proc_ = c_proc(&d.proc)?;
    for (o, &b) in out.key.iter_mut().zip(d.key.as_bytes()) {
        *o = b as c_char;
    }
    write_value(&mut out.value, &d.value)
}

fn c_query(out: &mut pmix_query_t, q: &Query) -> Result<(), AbiError> {
    c_argv(&mut out.keys, &q.keys)?;
    c_infos(&mut out.qualifiers, &mut out.nqual, &q.qualifiers)
}

fn c_regattr(out: &mut pmix_regattr_t, r: &RegAttr) -> Result<(), AbiError> {
    if r.key.len() >= KEY_BUF || has_nul(r.key.as_bytes()) {
        return Err(AbiError::Store(rshm_gds::Error::Corrupt("regattr key")));
    }
    for (d, &b) in out.string.iter_mut().zip(r.key.as_bytes()) {
        *d = b as c_char;
    }
    out.type_ = r.value_type;
    out.name = c_dup_str(&r.name)?;
    c_argv(&mut out.description, &r.description)
}

fn nspace_buf(s: &str) -> Result<[c_char; NSPACE_BUF], AbiError> {
    let mut buf = [0 as c_char; NSPACE_BUF];
    if s.len() >= NSPACE_BUF {
        return Err(AbiError::Store(rshm_gds::Error::Corrupt("nspace too long")));
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
            Value::Byte(b) | Value::Uint8(b) | Value::Command(b) => wr!(u8, *b),
            Value::String(s) => wr!(*mut c_char, c_dup_str(s)?),
            Value::NullString => wr!(*mut c_char, ptr::null_mut()),
            Value::Size(s) => wr!(usize, *s as usize),
            Value::Pid(i) | Value::Int(i) | Value::Int32(i) | Value::Status(i) => wr!(i32, *i),
            Value::Int8(i) => wr!(i8, *i),
            Value::Int16(i) => wr!(i16, *i),
            Value::Int64(i) | Value::Time(i) => wr!(i64, *i),
            Value::Uint(u) | Value::Uint32(u) | Value::ProcRank(u) | Value::InfoDirectives(u) => {
                wr!(u32, *u)
            }
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
                u16::try_from(*u).map_err(|_| AbiError::Store(rshm_gds::Error::Corrupt(
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
                    .ok_or(AbiError::Store(rshm_gds::Error::Corrupt("data array type")))?;
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
            Value::DataBuffer(b) => c_dbuf(&mut *p.cast::<pmix_data_buffer_t>(), b)?,
            Value::RegAttr(r) => c_regattr(&mut *p.cast::<pmix_regattr_t>(), r)?,
            Value::PackedArray(a) => {
                c_packed(&mut *p.cast::<pmix_data_array_t>(), a.elem_type, &a.bytes)?
            }
            Value::App(a) => c_app(&mut *p.cast::<pmix_app_t>(), a)?,
            Value::PData(d) => c_pdata(&mut *p.cast::<pmix_pdata_t>(), d)?,
            Value::Query(q) => c_query(&mut *p.cast::<pmix_query_t>(), q)?,
        }
    }
    Ok(())
}

/// Write `info` into `*out` (key, flags and value; `*out` must not own anything). The key
/// buffer's bytes after the key are left as they were (zero in a fresh info).
pub fn write_info(out: &mut pmix_info_t, info: &Info) -> Result<(), AbiError> {
    if info.key.len() >= KEY_BUF {
        return Err(AbiError::Store(rshm_gds::Error::Corrupt("key too long")));
    }
    for (d, &b) in out.key.iter_mut().zip(info.key.as_bytes()) {
        *d = b as c_char;
    }
    out.flags = info.flags;
    write_value(&mut out.value, &info.value)
}

/// A calloc'd array holding `infos` (a `PMIx_Query_info` result: the caller releases it with
/// `PMIX_INFO_FREE`, which destructs each info and frees the array); NULL for none. On error
/// nothing is left allocated.
pub fn alloc_infos(infos: &[Info]) -> Result<*mut pmix_info_t, AbiError> {
    if infos.is_empty() {
        return Ok(ptr::null_mut());
    }
    let arr = calloc_n::<pmix_info_t>(infos.len())?;
    for (i, info) in infos.iter().enumerate() {
        // SAFETY: `i` is below the array's length; the element is zeroed (owns nothing).
        if let Err(e) = write_info(unsafe { &mut *arr.add(i) }, info) {
            for j in 0..i {
                // SAFETY: element `j` was written by `write_info` and owns what it holds.
                unsafe { destruct_value(&mut (*arr.add(j)).value) };
            }
            // SAFETY: `arr` came from calloc; the failed element was destructed by write_value.
            unsafe { libc::free(arr.cast()) };
            return Err(e);
        }
    }
    Ok(arr)
}

/// Write a `PMIX_DATA_ARRAY` of `PMIX_PROC` holding `procs` into `*out` (overwritten: it must
/// own nothing), straight into the C array: no `Value` per process (a set's 10 000 members).
/// On error `*out` is left `PMIX_UNDEF` and nothing stays allocated.
pub fn write_proc_array(out: &mut pmix_value_t, procs: &[(&str, u32)]) -> Result<(), AbiError> {
    *out = zeroed_value();
    let arr = calloc_n::<pmix_proc_t>(procs.len())?;
    for (i, &(ns, rank)) in procs.iter().enumerate() {
        match nspace_buf(ns) {
            // SAFETY: `i` is below the array's length.
            Ok(nspace) => unsafe { arr.add(i).write(pmix_proc_t { nspace, rank }) },
            Err(e) => {
                // SAFETY: `arr` came from calloc; procs own nothing.
                unsafe { libc::free(arr.cast()) };
                return Err(e);
            }
        }
    }
    let da = match calloc_n::<pmix_data_array_t>(1) {
        Ok(da) => da,
        Err(e) => {
            // SAFETY: `arr` came from calloc and is not referenced anywhere.
            unsafe { libc::free(arr.cast()) };
            return Err(e);
        }
    };
    // SAFETY: `da` is a fresh zeroed pmix_data_array_t.
    unsafe {
        (*da).type_ = t::PROC;
        (*da).size = procs.len();
        (*da).array = arr.cast();
    }
    out.type_ = t::DATA_ARRAY;
    out.data.darray = da;
    Ok(())
}

/// A `malloc`ed `pmix_value_t` holding `v` (the caller releases it with `PMIX_VALUE_RELEASE`).
pub fn alloc_value(v: &Value) -> Result<*mut pmix_value_t, AbiError> {
    let p = calloc_n::<pmix_value_t>(1)?;
    // SAFETY: `p` is a fresh zeroed pmix_value_t.
    if let Err(e) = write_value(unsafe { &mut *p }, v) {
        // SAFETY: `p` came from calloc and owns nothing after the failed write.
        unsafe { libc::free(p.cast()) };
        return Err(e);
    }
    Ok(p)
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
/// destructed and left `PMIX_UNDEF`, all zero.
pub fn write_value(out: &mut pmix_value_t, v: &Value) -> Result<(), AbiError> {
    // Every byte, not the first word: a failed write destructs what it reached, and a member
    // it had not written yet (an envar's second string) must be NULL, not the stale bytes of
    // whatever `*out` held before.
    *out = zeroed_value();
    let ty = v.type_code();
    if matches!(
        v,
        Value::Info(_) | Value::App(_) | Value::PData(_) | Value::Query(_)
    ) {
        return Err(AbiError::Store(rshm_gds::Error::Corrupt(
            "an info, app, pdata or query outside an array",
        )));
    }
    out.type_ = ty;
    let res = if boxed_in_value(ty) {
        let size = elem_size(ty).ok_or(AbiError::Store(rshm_gds::Error::Corrupt("value type")))?;
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
        // SAFETY: `*out` was zeroed above and then written only by `write_elem` (whose partial
        // writes start from calloc'd zeros), so it owns exactly what was allocated here.
        unsafe { destruct_value(out) };
    }
    res
}

/// Write a stored value: scalars, strings and byte objects straight from the mapping (no
/// intermediate `Value`); anything else through [`Value`]. `*out` is overwritten (it must not
/// own anything); on error it is left `PMIX_UNDEF`, all zero.
#[inline]
pub fn write_stored(out: &mut pmix_value_t, v: &ValueRef<'_>) -> Result<(), AbiError> {
    let res = write_stored_fields(out, v);
    if res.is_err() {
        // A failed copy (a string holding a NUL, malloc) may have set the type already; it
        // allocated nothing that is still held.
        *out = zeroed_value();
    }
    res
}

#[inline(always)]
fn write_stored_fields(out: &mut pmix_value_t, v: &ValueRef<'_>) -> Result<(), AbiError> {
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
        ArchivedValue::NullString => out.data.string = ptr::null_mut(),
        ArchivedValue::Uint32(u) | ArchivedValue::ProcRank(u) | ArchivedValue::Uint(u) => {
            out.data.uint32 = u.to_native()
        }
        ArchivedValue::Uint16(u) | ArchivedValue::Locality(u) => out.data.uint16 = u.to_native(),
        ArchivedValue::Bool(b) => out.data.flag = *b,
        ArchivedValue::ByteObject(b) => out.data.bo = c_dup_bytes(b.as_slice())?,
        // Straight from the mapping: a large array or buffer is copied once, not twice.
        ArchivedValue::PackedArray(pa) => {
            let da = calloc_n::<pmix_data_array_t>(1)?;
            out.data.darray = da;
            // SAFETY: `da` is a fresh zeroed pmix_data_array_t.
            if let Err(e) = c_packed(unsafe { &mut *da }, pa.elem_type(), pa.bytes()) {
                // SAFETY: `da` came from calloc and owns nothing after the failed write.
                unsafe { libc::free(da.cast()) };
                return Err(e);
            }
        }
        ArchivedValue::DataBuffer(b) => {
            let db = calloc_n::<pmix_data_buffer_t>(1)?;
            out.data.dbuf = db;
            // SAFETY: `db` is a fresh zeroed pmix_data_buffer_t.
            if let Err(e) = c_dbuf(unsafe { &mut *db }, b.as_slice()) {
                // SAFETY: `db` came from calloc and owns nothing after the failed write.
                unsafe { libc::free(db.cast()) };
                return Err(e);
            }
        }
        _ => return write_value(out, &a.to_value()),
    }
    Ok(())
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

/// A zeroed (`PMIX_UNDEF`) `pmix_value_t`: every byte of the union is 0, not only its first
/// member's (a byte object or envar read from it is then NULL and empty, not stack garbage).
#[inline]
pub fn zeroed_value() -> pmix_value_t {
    const _: () = assert!(t::UNDEF == 0);
    // SAFETY: all-zero is a valid pmix_value_t: integers, floats and raw pointers (NULL) of
    // every member, and `false` for the bool one.
    unsafe { core::mem::zeroed() }
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
            // SAFETY: `value` was written by `write_stored` in `new` (the field is private, so
            // nothing else wrote it) and owns its data (`owns_data`).
            unsafe { destruct_value(&mut self.value) };
        }
    }
}
