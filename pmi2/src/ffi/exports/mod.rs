//! The C ABI of `include/pmi2.h`. Every function's body runs inside `abi`'s panic boundary
//! (`ffi_or`: a panic is PMI2_FAIL, never an unwind into C), checks its pointers and lengths,
//! and writes its outputs only on success.
//!
//! This module holds what the exports share (the opaque types, the return code, the string and
//! int copies); the exports are in the modules named for what they hold:
//!
//! - `init`: PMI2_Init (both ABIs), Finalize, Initialized, Abort, the job's rank and size;
//! - `kvs`: KVS_Put, KVS_Fence, KVS_Get and Slurm's PMIX_Ring;
//! - `job`: Job_GetId, Job_Spawn (both ABIs), Job_Connect, Job_Disconnect;
//! - `info`: the node and job attributes (Info_Get*/Info_PutNodeAttr, Slurm's int-array form);
//! - `nameserv`: Nameserv_publish, Nameserv_lookup, Nameserv_unpublish.

mod info;
mod init;
mod job;
mod kvs;
mod nameserv;

use core::ffi::{c_char, c_int};

use crate::codes::*;

/// Opaque: never dereferenced (pmi2.h's `MPID_Info`).
#[repr(C)]
pub struct MPID_Info {
    _private: [u8; 0],
}

/// pmi2.h's `PMI2_Connect_comm_t`: not used by this library (PMIx connects the jobs).
#[repr(C)]
pub struct PMI2_Connect_comm_t {
    _private: [u8; 0],
}

/// Run an export's body and return its outcome as the return code (and a message on stderr
/// when `RSHM_MCA_pmi2_verbose` > 0, or the deprecated `RSHM_PMI2_VERBOSE` is set). Each export calls it inside `ffi_or(PMI2_FAIL, ..)`: a
/// panic is PMI2_FAIL.
fn code(name: &str, body: impl FnOnce() -> Result<()>) -> c_int {
    match body() {
        Ok(()) => PMI2_SUCCESS,
        Err(e) => {
            if rshm_abi::verbose::level("RSHM_MCA_pmi2_verbose", "RSHM_PMI2_VERBOSE") > 0 {
                eprintln!("{name}: {e}");
            }
            e.code
        }
    }
}

fn null(what: &str) -> Pmi2Error {
    Pmi2Error::new(PMI2_ERR_INVALID_ARG, format!("NULL {what}"))
}

/// The bytes of a NUL-terminated string, looked at up to `max` bytes (a longer one is
/// returned as `max` bytes, which the checks then refuse as too long).
///
/// # Safety
/// `p` is NULL or readable up to its NUL or `max` bytes.
unsafe fn bytes<'a>(p: *const c_char, max: usize, what: &str) -> Result<&'a [u8]> {
    if p.is_null() {
        return Err(null(what));
    }
    // SAFETY: readable up to the NUL or `max` bytes (caller contract); strnlen reads no further.
    let n = unsafe { libc::strnlen(p, max) };
    // SAFETY: `n` readable bytes at `p`.
    Ok(unsafe { core::slice::from_raw_parts(p.cast::<u8>(), n) })
}

/// Copy `s` and its NUL into `buf` of `len` bytes, or fail with PMI2_ERR_INVALID_LENGTH.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
unsafe fn copy_out(buf: *mut c_char, len: c_int, s: &str, what: &str) -> Result<()> {
    if buf.is_null() {
        return Err(null(what));
    }
    if len < 0 || s.len() >= len as usize {
        return Err(Pmi2Error::new(
            PMI2_ERR_INVALID_LENGTH,
            format!("{what}: {} bytes and a NUL in a buffer of {len}", s.len()),
        ));
    }
    // SAFETY: `buf` holds `len` > s.len() bytes (checked above; caller contract).
    unsafe {
        core::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), s.len());
        *buf.add(s.len()) = 0;
    }
    Ok(())
}

/// Write `v` into a caller's int, when it gave one.
///
/// # Safety
/// `p` is NULL or a writable int.
unsafe fn set(p: *mut c_int, v: c_int) {
    if !p.is_null() {
        // SAFETY: a writable int (caller contract).
        unsafe { *p = v };
    }
}

/// Copy ints into `array` of `len` entries, and their count into `out_len`.
///
/// # Safety
/// `array` writable for `len` ints, `out_len` a writable int (or NULL).
unsafe fn copy_ints(array: *mut c_int, len: c_int, out_len: *mut c_int, v: &[i64]) -> Result<()> {
    if array.is_null() && !v.is_empty() {
        return Err(null("array"));
    }
    if len < 0 || v.len() > len as usize {
        return Err(Pmi2Error::new(
            PMI2_ERR_INVALID_LENGTH,
            format!("{} integers in an array of {len}", v.len()),
        ));
    }
    let v: Vec<c_int> = v
        .iter()
        .map(|&x| c_int::try_from(x))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| Pmi2Error::new(PMI2_ERR_INVALID_VAL, "an integer out of int's range"))?;
    // SAFETY: `array` holds `len` >= v.len() ints (checked; caller contract).
    unsafe { core::ptr::copy_nonoverlapping(v.as_ptr(), array, v.len()) };
    // SAFETY: caller contract.
    unsafe { set(out_len, v.len() as c_int) };
    Ok(())
}
