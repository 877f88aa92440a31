//! Node and job attributes: PMI2_Info_GetNodeAttr*, PMI2_Info_PutNodeAttr, PMI2_Info_GetJobAttr*
//! (and Slurm's int-array form).

use core::ffi::{c_char, c_int};

use rshm_abi::ffi_or;

use super::{bytes, code, copy_ints, copy_out, null, set};
use crate::check;
use crate::codes::*;
use crate::state;

/// An attribute's value into the caller's buffer and flag; `flag` false when it has none.
///
/// # Safety
/// `value` writable for `len` bytes; `flag` a writable int.
unsafe fn attr_out(
    found: Option<String>,
    value: *mut c_char,
    len: c_int,
    flag: *mut c_int,
) -> Result<()> {
    if flag.is_null() {
        return Err(null("flag"));
    }
    if let Some(v) = &found {
        // SAFETY: caller contract.
        unsafe { copy_out(value, len, v, "value") }?;
    }
    // SAFETY: checked non-NULL.
    unsafe { *flag = found.is_some().into() };
    Ok(())
}

/// # Safety
/// `name` NUL-terminated; `value` writable for `valueLen` bytes; `flag` a writable int.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_GetNodeAttr(
    name: *const c_char,
    value: *mut c_char,
    value_len: c_int,
    flag: *mut c_int,
    wait_for: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_GetNodeAttr", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            let found = s.get_node_attr(n, wait_for != 0)?;
            // SAFETY: caller contract.
            unsafe { attr_out(found, value, value_len, flag) }
        })
    })
}

/// # Safety
/// `name` NUL-terminated; `array` writable for `arrayLen` ints; `outLen`, `flag` writable.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_GetNodeAttrIntArray(
    name: *const c_char,
    array: *mut c_int,
    array_len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
    wait_for: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        // SAFETY: caller contract.
        unsafe { node_attr_ints(name, array, array_len, out_len, flag, wait_for) }
    })
}

/// PMI2_Info_GetNodeAttrIntArray of either form. Not exported, and called by both: the exported
/// names may be interposed (`libpmi2.so.0` defines the other form under the same name).
///
/// # Safety
/// As [`PMI2_Info_GetNodeAttrIntArray`].
unsafe fn node_attr_ints(
    name: *const c_char,
    array: *mut c_int,
    array_len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
    wait_for: c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_GetNodeAttrIntArray", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            let found = s.get_node_attr_ints(n, wait_for != 0)?;
            // SAFETY: caller contract.
            unsafe { ints_out(found, array, array_len, out_len, flag) }
        })
    })
}

/// PMI2_Info_GetNodeAttrIntArray of Slurm's and MPICH's pmi2.h (no `waitFor`: does not wait,
/// as theirs): `libpmi2.so.0`'s.
///
/// # Safety
/// As [`PMI2_Info_GetNodeAttrIntArray`].
#[no_mangle]
pub unsafe extern "C" fn rshm_pmi2_slurm_node_attr_int_array(
    name: *const c_char,
    array: *mut c_int,
    array_len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        // SAFETY: caller contract.
        unsafe { node_attr_ints(name, array, array_len, out_len, flag, 0) }
    })
}

/// # Safety
/// As [`copy_ints`]; `flag` a writable int.
unsafe fn ints_out(
    found: Option<Vec<i64>>,
    array: *mut c_int,
    len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
) -> Result<()> {
    if flag.is_null() {
        return Err(null("flag"));
    }
    if let Some(v) = &found {
        // SAFETY: caller contract.
        unsafe { copy_ints(array, len, out_len, v) }?;
    } else {
        // SAFETY: caller contract.
        unsafe { set(out_len, 0) };
    }
    // SAFETY: checked non-NULL.
    unsafe { *flag = found.is_some().into() };
    Ok(())
}

/// # Safety
/// `name` and `value` NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_PutNodeAttr(name: *const c_char, value: *const c_char) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_PutNodeAttr", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            // SAFETY: NUL-terminated (caller contract).
            let v = check::value(
                unsafe { bytes(value, MAX_ATTRVALUE, "value") }?,
                MAX_ATTRVALUE,
            )?;
            s.put_node_attr(n, v)
        })
    })
}

/// # Safety
/// `name` NUL-terminated; `value` writable for `valueLen` bytes; `flag` a writable int.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_GetJobAttr(
    name: *const c_char,
    value: *mut c_char,
    value_len: c_int,
    flag: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_GetJobAttr", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            let found = s.get_job_attr(n)?;
            // SAFETY: caller contract.
            unsafe { attr_out(found, value, value_len, flag) }
        })
    })
}

/// # Safety
/// `name` NUL-terminated; `array` writable for `arrayLen` ints; `outLen`, `flag` writable.
#[no_mangle]
pub unsafe extern "C" fn PMI2_Info_GetJobAttrIntArray(
    name: *const c_char,
    array: *mut c_int,
    array_len: c_int,
    out_len: *mut c_int,
    flag: *mut c_int,
) -> c_int {
    ffi_or(PMI2_FAIL, || {
        code("PMI2_Info_GetJobAttrIntArray", || {
            let s = state::current()?;
            // SAFETY: NUL-terminated (caller contract).
            let n = check::key(unsafe { bytes(name, MAX_KEYLEN, "name") }?)?;
            let found = s.get_job_attr_ints(n)?;
            // SAFETY: caller contract.
            unsafe { ints_out(found, array, array_len, out_len, flag) }
        })
    })
}
