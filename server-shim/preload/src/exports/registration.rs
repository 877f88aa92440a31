//! A registration array as the store reads it. Two forms libpmix takes and the store does not
//! are rewritten, in a shallow copy of the caller's array (which stays as it was, for the real
//! call):
//!
//! - NULL strings in process data arrays (`PMIX_PROC_DATA`): PRRTE registers a NULL
//!   `PMIX_LOCALITY_STRING` for an unbound process. They are left out: the store then holds no
//!   such value for the process, and its readers pass a Get of it on to libpmix, which answers
//!   as it always did. A NULL string anywhere else still fails the registration (the namespace
//!   stays libpmix's).
//! - zlib-compressed maps (`PMIX_NODE_MAP` / `PMIX_PROC_MAP` made by OpenPMIx's `preg/compress`
//!   when libpmix is built with zlib, as PMIx_generate_regex does for long lists):
//!   `"blob:\0component=zlib:\0size=N:\0"` then N bytes. They are decompressed by libpmix's own
//!   public `PMIx_Data_decompress` (the next definition, as for the wrapped calls) into the
//!   plain list, handed to the store as `"raw:LIST"`.
//! - encoded maps (`PMIX_REGEX2`, a `pmix_regex2_t`, as PRRTE 5 on OpenPMIx 7.0 registers
//!   them, in whatever encoding: "raw", "pmix", "compress"): expanded by libpmix's own public
//!   `PMIx_parse_regex2` into the plain list, handed to the store as `"raw:LIST"` too.

use core::ffi::{c_char, c_void};
use std::ffi::CString;
use std::sync::OnceLock;

use rshm_abi::c::{fixed_str, info_slice};
use rshm_abi::types::{pmix_data_array_t, pmix_info_t, pmix_regex2_t, pmix_status_t};
use rshm_gds::value::types as t;

/// `PMIx_Data_decompress` (pmix.h).
type DecompressFn = unsafe extern "C" fn(*const u8, usize, *mut *mut u8, *mut usize) -> bool;

/// `PMIx_parse_regex2` (pmix_server.h, OpenPMIx 7.0 and later).
type ParseRegex2Fn = unsafe extern "C" fn(
    *const pmix_regex2_t,
    *const pmix_info_t,
    usize,
    *mut *mut c_char,
) -> pmix_status_t;

/// What `preg/compress` writes before the compressed bytes' length.
const BLOB: &[u8] = b"blob:\0component=zlib:\0size=";

/// Compressed maps longer than this are refused (the store's limit on a map is far below).
const MAX_BLOB: usize = 1 << 30;

pub(super) struct Registration {
    pub(super) top: Vec<pmix_info_t>,
    /// The copied process data arrays `top` points to (boxed: their addresses stay put).
    _arrays: Vec<(Box<pmix_data_array_t>, Vec<pmix_info_t>)>,
    /// The decompressed maps `top` points to.
    _maps: Vec<CString>,
}

/// # Safety
/// `i.value` obeys its type's layout.
unsafe fn null_string(i: &pmix_info_t) -> bool {
    // SAFETY: a PMIX_STRING's data is `string` (caller contract).
    i.value.type_ == t::STRING && unsafe { i.value.data.string }.is_null()
}

/// The elements of a `PMIX_PROC_DATA` info's info array, if it is one.
///
/// # Safety
/// `i.value` obeys its type's layout.
unsafe fn proc_data(i: &pmix_info_t) -> Option<&[pmix_info_t]> {
    if fixed_str(&i.key).ok()? != "pmix.pdata" || i.value.type_ != t::DATA_ARRAY {
        return None;
    }
    // SAFETY: a PMIX_DATA_ARRAY's data is `darray`, NULL or a valid array (caller contract).
    let d = unsafe { i.value.data.darray.as_ref() }?;
    if d.type_ != t::INFO {
        return None;
    }
    // SAFETY: an info array of `size` elements (caller contract).
    unsafe { info_slice(d.array.cast(), d.size) }.ok()
}

/// # Safety
/// `i.value` obeys its type's layout.
unsafe fn has_null(i: &pmix_info_t) -> bool {
    // SAFETY: caller contract, for the elements too.
    let items = unsafe { proc_data(i) };
    // SAFETY: as above.
    items.is_some_and(|items| items.iter().any(|e| unsafe { null_string(e) }))
}

/// The compressed bytes of a `blob:` map (`PMIX_REGEX`), if it is one.
///
/// # Safety
/// `i.value` obeys its type's layout.
unsafe fn blob(i: &pmix_info_t) -> Option<&[u8]> {
    let key = fixed_str(&i.key).ok()?;
    if (key != "pmix.nmap" && key != "pmix.pmap") || i.value.type_ != t::REGEX {
        return None;
    }
    // SAFETY: a PMIX_REGEX's data is a byte object (caller contract).
    let bo = unsafe { i.value.data.bo };
    if bo.bytes.is_null() || bo.size < BLOB.len() {
        return None;
    }
    // SAFETY: `size` readable bytes at `bytes` (caller contract).
    let bytes = unsafe { core::slice::from_raw_parts(bo.bytes.cast::<u8>(), bo.size) };
    let rest = bytes.strip_prefix(BLOB)?;
    let colon = rest.iter().position(|&b| b == b':')?;
    let n: usize = std::str::from_utf8(&rest[..colon]).ok()?.parse().ok()?;
    if n > MAX_BLOB || rest.get(colon + 1) != Some(&0) {
        return None;
    }
    rest.get(colon + 2..)?.get(..n)
}

/// A `blob:` map's list, decompressed by libpmix, as `"raw:LIST"`; `None` if libpmix has no
/// `PMIx_Data_decompress` or it fails.
fn unblob(compressed: &[u8]) -> Option<CString> {
    let decompress = next!(DecompressFn, c"PMIx_Data_decompress")?;
    let mut out: *mut u8 = core::ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: the real function, with readable input and two valid out locations.
    let ok = unsafe { decompress(compressed.as_ptr(), compressed.len(), &mut out, &mut len) };
    if !ok || out.is_null() {
        return None;
    }
    // SAFETY: libpmix returned `len` bytes at `out`, malloc'ed: copied, then freed.
    let list = unsafe {
        let list = core::slice::from_raw_parts(out, len).to_vec();
        libc::free(out.cast());
        list
    };
    // The compressed string carried its NUL terminator.
    let end = list.iter().position(|&b| b == 0).unwrap_or(list.len());
    CString::new([b"raw:", &list[..end]].concat()).ok()
}

/// The encoded map of a `PMIX_REGEX2` node or process map, if it is one.
///
/// # Safety
/// `i.value` obeys its type's layout.
unsafe fn regex2(i: &pmix_info_t) -> Option<*const pmix_regex2_t> {
    let key = fixed_str(&i.key).ok()?;
    if (key != "pmix.nmap" && key != "pmix.pmap") || i.value.type_ != t::REGEX2 {
        return None;
    }
    // SAFETY: a PMIX_REGEX2's data is a pointer to a pmix_regex2_t (caller contract).
    let r = unsafe { i.value.data.regex2 };
    (!r.is_null()).then_some(r.cast_const())
}

/// An encoded map's list, expanded by libpmix, as `"raw:LIST"`; `None` if libpmix has no
/// `PMIx_parse_regex2` or it fails (the registration then fails in the store, and the
/// namespace stays libpmix's).
///
/// # Safety
/// `r` points to a valid `pmix_regex2_t` (the caller's registration).
unsafe fn expand(r: *const pmix_regex2_t) -> Option<CString> {
    let parse = next!(ParseRegex2Fn, c"PMIx_parse_regex2")?;
    let mut out: *mut c_char = core::ptr::null_mut();
    // SAFETY: the real function, with the caller's map, no directives and a valid out location.
    let rc = unsafe { parse(r, core::ptr::null(), 0, &mut out) };
    if out.is_null() {
        return None;
    }
    // SAFETY: libpmix returned a malloc'ed NUL-terminated string: copied (bounded), then freed.
    let list = unsafe {
        let s = std::ffi::CStr::from_ptr(out);
        let list = (rc == 0 && s.count_bytes() <= MAX_BLOB).then(|| s.to_bytes().to_vec());
        libc::free(out.cast());
        list
    }?;
    CString::new([b"raw:", &list[..]].concat()).ok()
}

/// The copy the store reads; `None` when nothing needs rewriting (the caller's array is read
/// as it is).
///
/// # Safety
/// `info` NULL or `ninfo` valid `pmix_info_t` (their values obeying their layouts).
pub(super) unsafe fn registration(info: *const pmix_info_t, ninfo: usize) -> Option<Registration> {
    // SAFETY: caller contract.
    let top = unsafe { info_slice(info, ninfo) }.ok()?;
    let rewritten = |i: &pmix_info_t| {
        // SAFETY: each value obeys its layout (caller contract).
        unsafe { has_null(i) || blob(i).is_some() || regex2(i).is_some() }
    };
    if !top.iter().any(rewritten) {
        return None;
    }
    let mut reg = Registration {
        top: top.to_vec(),
        _arrays: Vec::new(),
        _maps: Vec::new(),
    };
    for i in reg.top.iter_mut() {
        // SAFETY: as above; the map is the caller's, valid for the call.
        let expanded = unsafe { regex2(i).and_then(|r| expand(r)) };
        // SAFETY: as above.
        if let Some(map) = expanded.or_else(|| unsafe { blob(i) }.and_then(unblob)) {
            i.value.type_ = t::STRING;
            i.value.data.string = map.as_ptr().cast_mut().cast::<c_char>();
            reg._maps.push(map);
            continue;
        }
        // SAFETY: as above.
        if !unsafe { has_null(i) } {
            continue;
        }
        // SAFETY: as above.
        let Some(items) = (unsafe { proc_data(i) }) else {
            continue;
        };
        let kept: Vec<pmix_info_t> = items
            .iter()
            // SAFETY: as above.
            .filter(|e| !unsafe { null_string(e) })
            .copied()
            .collect();
        let mut array = Box::new(pmix_data_array_t {
            type_: t::INFO,
            size: kept.len(),
            array: kept.as_ptr().cast_mut().cast(),
        });
        i.value.data.darray = &mut *array;
        reg._arrays.push((array, kept));
    }
    Some(reg)
}
