//! The crate's only unsafe code: an hwloc topology handed to C callers as the raw
//! `hwloc_topology_t` a `pmix_topology_t` carries (`PMIx_Load_topology`), loaded from XML as
//! libpmix 4.2.2's `load_xml` loads one (this system's, important I/O objects kept).

use std::ffi::c_void;
use std::ptr;

use hwlocality_sys as sys;

/// Load a topology from hwloc XML and give up ownership: the caller (C) keeps it for the
/// process's life, as libpmix keeps its own. Null on failure, with nothing leaked.
pub fn hwloc_topology_from_xml(xml: &str) -> *mut c_void {
    let Ok(len) = std::ffi::c_int::try_from(xml.len() + 1) else {
        return ptr::null_mut();
    };
    let Ok(buf) = std::ffi::CString::new(xml) else {
        return ptr::null_mut();
    };
    let mut t: sys::hwloc_topology_t = ptr::null_mut();
    // SAFETY: `t` is a valid out-pointer; on success hwloc owns an initialized topology.
    if unsafe { sys::hwloc_topology_init(&mut t) } != 0 || t.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `t` is an initialized, not yet loaded topology; `buf` is NUL-terminated, `len`
    // bytes long including the NUL, and outlives the load (hwloc parses it during load).
    let ok = unsafe {
        sys::hwloc_topology_set_xmlbuffer(t, buf.as_ptr(), len) == 0
            && sys::hwloc_topology_set_io_types_filter(t, sys::HWLOC_TYPE_FILTER_KEEP_IMPORTANT)
                == 0
            && sys::hwloc_topology_set_flags(t, sys::HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) == 0
            && sys::hwloc_topology_load(t) == 0
    };
    if !ok {
        // SAFETY: `t` came from hwloc_topology_init and is destroyed once.
        unsafe { sys::hwloc_topology_destroy(t) };
        return ptr::null_mut();
    }
    t.cast()
}
