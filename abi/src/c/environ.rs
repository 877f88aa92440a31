//! A NULL-terminated, malloc'ed "NAME=value" array (the `char ***env` of
//! `PMIx_server_setup_fork`): set one entry, the way the array's owner frees it.

use core::ffi::c_char;
use std::ffi::CString;

use crate::AbiError;

/// Set NAME=value in `*env`: an entry of that name is replaced (its string freed), else one is
/// appended (the array grown with `realloc`). New memory comes from `malloc`, so the array's
/// owner (the host, or libpmix) frees it like its own entries. A name or value with a NUL, or
/// an allocation that fails, is an error and leaves the array as it was.
///
/// # Safety
/// `env` is valid and `*env` is NULL or a malloc'ed NULL-terminated array of malloc'ed strings.
pub unsafe fn setenv_array(
    env: *mut *mut *mut c_char,
    name: &str,
    value: &str,
) -> Result<(), AbiError> {
    if env.is_null() {
        return Err(AbiError::BadParam("NULL env".into()));
    }
    if name.is_empty() || name.contains('=') {
        return Err(AbiError::BadParam(format!("bad environment name {name:?}")));
    }
    let entry = CString::new(format!("{name}={value}"))
        .map_err(|_| AbiError::BadParam("environment value with a NUL".into()))?;
    let prefix = format!("{name}=");
    // SAFETY: every pointer below follows the function's contract; new memory is malloc'ed so
    // the caller (or PMIx) frees it like its own entries.
    unsafe {
        let dup = libc::strdup(entry.as_ptr());
        if dup.is_null() {
            return Err(AbiError::NoMem);
        }
        let mut n = 0usize;
        let arr = *env;
        if !arr.is_null() {
            while !(*arr.add(n)).is_null() {
                let cur = *arr.add(n);
                if libc::strncmp(cur, prefix.as_ptr().cast(), prefix.len()) == 0 {
                    libc::free(cur.cast());
                    *arr.add(n) = dup;
                    return Ok(());
                }
                n += 1;
            }
        }
        let grown = libc::realloc(arr.cast(), (n + 2) * core::mem::size_of::<*mut c_char>())
            .cast::<*mut c_char>();
        if grown.is_null() {
            libc::free(dup.cast());
            return Err(AbiError::NoMem);
        }
        *grown.add(n) = dup;
        *grown.add(n + 1) = core::ptr::null_mut();
        *env = grown;
    }
    Ok(())
}
