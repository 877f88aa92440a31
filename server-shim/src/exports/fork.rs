//! `rshm_server_setup_fork`: the environment a server hands each client (`abi::env` names it).

use core::ffi::c_char;
use std::ffi::CString;

use abi::c::proc_ref;
use abi::types::{pmix_proc_t, pmix_status_t};
use abi::{ffi_status, AbiError};

use super::{handle, lock, rshm_server_t};

/// What a client needs to attach, added to its environment (`PMIx_server_setup_fork`):
/// `RSHM_STORE`, `RSHM_STORE_OWNER` (the owner's uid, which the client requires), `RSHM_NSPACE`,
/// `RSHM_RANK`. `*env` is a NULL-terminated, malloc'ed array of "NAME=value" strings (as PMIx's
/// setup_fork uses); entries are replaced or appended.
///
/// # Safety
/// `s` a handle; `proc` a valid `pmix_proc_t`; `env` a valid location holding NULL or such an
/// array.
#[no_mangle]
pub unsafe extern "C" fn rshm_server_setup_fork(
    s: *mut rshm_server_t,
    proc: *const pmix_proc_t,
    env: *mut *mut *mut c_char,
) -> pmix_status_t {
    ffi_status(|| {
        if env.is_null() {
            return Err(AbiError::BadParam("NULL env".into()));
        }
        // SAFETY: caller contract.
        let (h, (ns, rank)) = unsafe { (handle(s)?, proc_ref(proc)?) };
        let vars = lock(h).client_env(ns, rank);
        for (name, value) in vars {
            // SAFETY: `env` holds NULL or a malloc'ed NULL-terminated array (caller contract).
            unsafe { setenv_array(env, name, &value) }?;
        }
        Ok(())
    })
}

/// Set NAME=value in a malloc'ed, NULL-terminated environment array.
///
/// # Safety
/// `env` is valid and `*env` is NULL or a malloc'ed NULL-terminated array of malloc'ed strings.
unsafe fn setenv_array(
    env: *mut *mut *mut c_char,
    name: &str,
    value: &str,
) -> Result<(), AbiError> {
    let entry = format!("{name}={value}");
    if entry.as_bytes().contains(&0) {
        return Err(AbiError::BadParam("environment value with a NUL".into()));
    }
    let prefix = format!("{name}=");
    // SAFETY: every pointer below follows the function's contract; new memory is malloc'ed so
    // the caller (or PMIx) frees it like its own entries.
    unsafe {
        let dup = libc::strdup(CString::new(entry).map_err(|_| AbiError::NoMem)?.as_ptr());
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
