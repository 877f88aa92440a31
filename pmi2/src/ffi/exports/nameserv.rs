//! The name service: PMI2_Nameserv_publish, PMI2_Nameserv_lookup, PMI2_Nameserv_unpublish.

use core::ffi::{c_char, c_int};

use rshm_abi::ffi_or;

use super::{bytes, code, copy_out, MPID_Info};
use crate::check;
use crate::codes::*;
use crate::state;

/// # Safety
/// `service_name` and `port` NUL-terminated; `info_ptr` is not read.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Nameserv_publish(
    service_name: *const c_char,
    _info_ptr: *const MPID_Info,
    port: *const c_char,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Nameserv_publish", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(service_name, MAX_KEYLEN, "service_name") }?)?;
            // SAFETY: NUL-terminated (caller contract).
            let p = check::value(unsafe { bytes(port, MAX_VALLEN, "port") }?, MAX_VALLEN)?;
            s.publish(n, p)
        })
    })
}

/// # Safety
/// `service_name` NUL-terminated; `port` writable for `portLen` bytes.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Nameserv_lookup(
    service_name: *const c_char,
    _info_ptr: *const MPID_Info,
    port: *mut c_char,
    port_len: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Nameserv_lookup", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(service_name, MAX_KEYLEN, "service_name") }?)?;
            match s.lookup(n)? {
                // SAFETY: caller contract.
                Some(p) => unsafe { copy_out(port, port_len, &p, "port") },
                None => Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_KEY,
                    format!("no service {n:?} published"),
                )),
            }
        })
    })
}

/// # Safety
/// `service_name` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Nameserv_unpublish(
    service_name: *const c_char,
    _info_ptr: *const MPID_Info,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Nameserv_unpublish", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(service_name, MAX_KEYLEN, "service_name") }?)?;
            s.unpublish(n)
        })
    })
}
