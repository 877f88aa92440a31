//! `pmix_cpuset_t.bitmap` is an hwloc bitmap of the calling process. The store keeps its list
//! form ("0-3,8"); converting needs hwloc, which the shims do not link: its functions are looked
//! up in the process (libpmix links hwloc, so every PMIx process has them). Without hwloc a
//! cpuset is `PMIX_ERR_NOT_SUPPORTED`, never a crash.

use core::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

use crate::AbiError;

type Alloc = unsafe extern "C" fn() -> *mut c_void;
type Free = unsafe extern "C" fn(*mut c_void);
type Print = unsafe extern "C" fn(*mut *mut c_char, *const c_void) -> c_int;
type Scan = unsafe extern "C" fn(*mut c_void, *const c_char) -> c_int;

struct Hwloc {
    alloc: Alloc,
    free: Free,
    print: Print,
    scan: Scan,
}

fn hwloc() -> Result<&'static Hwloc, AbiError> {
    static HWLOC: OnceLock<Option<Hwloc>> = OnceLock::new();
    HWLOC
        .get_or_init(|| {
            let sym = |name: &CStr| {
                // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a symbol
                // up.
                let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
                (!p.is_null()).then_some(p)
            };
            let (a, f, p, s) = (
                sym(c"hwloc_bitmap_alloc")?,
                sym(c"hwloc_bitmap_free")?,
                sym(c"hwloc_bitmap_list_asprintf")?,
                sym(c"hwloc_bitmap_list_sscanf")?,
            );
            // SAFETY: these hwloc 2.x functions have exactly these C signatures (hwloc/bitmap.h).
            unsafe {
                Some(Hwloc {
                    alloc: core::mem::transmute::<*mut c_void, Alloc>(a),
                    free: core::mem::transmute::<*mut c_void, Free>(f),
                    print: core::mem::transmute::<*mut c_void, Print>(p),
                    scan: core::mem::transmute::<*mut c_void, Scan>(s),
                })
            }
        })
        .as_ref()
        .ok_or_else(|| AbiError::NotSupported("cpuset: hwloc is not loaded in this process".into()))
}

/// The list form of an hwloc bitmap ("" for NULL).
///
/// # Safety
/// `bitmap` is NULL or an hwloc bitmap of this process.
pub unsafe fn print(bitmap: *mut c_void) -> Result<String, AbiError> {
    if bitmap.is_null() {
        return Ok(String::new());
    }
    let h = hwloc()?;
    let mut s: *mut c_char = core::ptr::null_mut();
    // SAFETY: `bitmap` is the caller's hwloc bitmap (pmix_cpuset_t contract); asprintf mallocs
    // `s`, freed below.
    let rc = unsafe { (h.print)(&mut s, bitmap) };
    if rc < 0 || s.is_null() {
        return Err(AbiError::BadParam(
            "cpuset bitmap could not be printed".into(),
        ));
    }
    // SAFETY: `s` is the NUL-terminated string hwloc just allocated.
    let out = unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned();
    // SAFETY: `s` came from malloc inside hwloc.
    unsafe { libc::free(s.cast()) };
    Ok(out)
}

/// A new hwloc bitmap from its list form (NULL for "").
pub fn parse(list: &str) -> Result<*mut c_void, AbiError> {
    if list.is_empty() {
        return Ok(core::ptr::null_mut());
    }
    let h = hwloc()?;
    let c = std::ffi::CString::new(list)
        .map_err(|_| AbiError::Store(rshm_gds::Error::Corrupt("cpuset with a NUL")))?;
    // SAFETY: alloc returns a new bitmap or NULL; sscanf reads the NUL-terminated `c`.
    unsafe {
        let b = (h.alloc)();
        if b.is_null() {
            return Err(AbiError::NoMem);
        }
        if (h.scan)(b, c.as_ptr()) < 0 {
            (h.free)(b);
            return Err(AbiError::Store(rshm_gds::Error::Corrupt("cpuset list")));
        }
        Ok(b)
    }
}

/// Free a bitmap from [`parse`].
///
/// # Safety
/// `bitmap` is NULL or came from [`parse`] and is not used again.
pub unsafe fn free(bitmap: *mut c_void) {
    if bitmap.is_null() {
        return;
    }
    if let Ok(h) = hwloc() {
        // SAFETY: `bitmap` came from `parse` (hwloc_bitmap_alloc).
        unsafe { (h.free)(bitmap) };
    }
}
