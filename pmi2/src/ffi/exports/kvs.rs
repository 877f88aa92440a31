//! The key-value exchange: PMI2_KVS_Put, PMI2_KVS_Fence, PMI2_KVS_Get, and Slurm's PMIX_Ring.

use core::ffi::{c_char, c_int};

use rshm_abi::ffi_or;

use super::{bytes, code, copy_out, null, set};
use crate::check;
use crate::codes::*;
use crate::state;

/// PMIX_Ring (Slurm's and MPICH's pmi2.h): collective; `value` (shorter than `maxvalue`) in,
/// the left and right neighbours' values out (each buffer `maxvalue` bytes).
///
/// # Safety
/// `value` NUL-terminated; `left`, `right` writable for `maxvalue` bytes; `rank`, `ranks`
/// writable ints.
#[no_mangle]
pub unsafe extern "C" fn PMIX_Ring(
    value: *const c_char,
    rank: *mut c_int,
    ranks: *mut c_int,
    left: *mut c_char,
    right: *mut c_char,
    maxvalue: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMIX_Ring", || {
            let s = state::current()?;
            if rank.is_null() || ranks.is_null() || left.is_null() || right.is_null() {
                return Err(null("output"));
            }
            let max = usize::try_from(maxvalue).unwrap_or(0).min(MAX_VALLEN);
            if max == 0 {
                return Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_LENGTH,
                    format!("maxvalue {maxvalue}"),
                ));
            }
            // SAFETY: NUL-terminated (caller contract).
            let v = check::value(unsafe { bytes(value, max, "value") }?, max)?;
            let (l, r) = s.ring(v)?;
            if l.len() >= max || r.len() >= max {
                return Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_LENGTH,
                    format!("a neighbour's value does not fit {maxvalue} bytes"),
                ));
            }
            // SAFETY: caller contract; both fit (checked).
            unsafe {
                copy_out(left, maxvalue, &l, "left")?;
                copy_out(right, maxvalue, &r, "right")?;
                set(rank, s.rank as c_int);
                set(ranks, s.size as c_int);
            }
            Ok(())
        })
    })
}

/// # Safety
/// `key` and `value` NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn PMI2_KVS_Put(key: *const c_char, value: *const c_char) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_KVS_Put", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let k = check::key(unsafe { bytes(key, MAX_KEYLEN, "key") }?)?;
            // SAFETY: NUL-terminated (caller contract).
            let v = check::value(unsafe { bytes(value, MAX_VALLEN, "value") }?, MAX_VALLEN)?;
            s.kvs_put(k, v)
        })
    })
}

#[no_mangle]
pub extern "C" fn PMI2_KVS_Fence() -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_KVS_Fence", || {
            state::current().and_then(|s| s.kvs_fence())
        })
    })
}

/// The value written by PMI2_KVS_Get: its length, or the negative of the buffer it needs.
fn kvs_copy(value: *mut c_char, max: c_int, v: &str) -> c_int {
    let need = v.len() + 1;
    if max <= 0 || value.is_null() || need > max as usize {
        return -(need.min(c_int::MAX as usize) as c_int);
    }
    // SAFETY: `value` holds `max` >= need bytes (PMI2_KVS_Get's contract).
    unsafe {
        core::ptr::copy_nonoverlapping(v.as_ptr(), value.cast::<u8>(), v.len());
        *value.add(v.len()) = 0;
    }
    v.len() as c_int
}

/// `maxValue` too small (or <= 0, a size probe): `*valLen` is the negative of the buffer
/// needed (the value's length plus its NUL) and `value` is left untouched.
///
/// # Safety
/// `jobId` NULL or NUL-terminated; `key` NUL-terminated; `value` writable for `maxValue`
/// bytes (or NULL for a probe); `valLen` a writable int.
#[no_mangle]
pub unsafe extern "C" fn PMI2_KVS_Get(
    job_id: *const c_char,
    src_pmi_id: c_int,
    key: *const c_char,
    value: *mut c_char,
    max_value: c_int,
    val_len: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_KVS_Get", || {
            let s = state::current()?;
            if val_len.is_null() {
                return Err(null("valLen"));
            }
            let job = if job_id.is_null() {
                None
            } else {
                // SAFETY: NUL-terminated (caller contract).
                let j = unsafe { bytes(job_id, 256, "jobId") }?;
                match j.is_empty() {
                    true => None,
                    false => Some(check::job_id(j)?),
                }
            };
            // SAFETY: NUL-terminated (caller contract).
            let k = check::key(unsafe { bytes(key, MAX_KEYLEN, "key") }?)?;
            match s.kvs_get(job, src_pmi_id, k, |v| kvs_copy(value, max_value, v))? {
                Some(n) => {
                    // SAFETY: checked non-NULL; caller contract.
                    unsafe { *val_len = n };
                    Ok(())
                }
                None => Err(Pmi2Error::new(
                    PMI2_ERR_INVALID_KEY,
                    format!("no value for key {k:?}"),
                )),
            }
        })
    })
}
