//! `rshm_server_setup_fork`: the environment a server hands each client (`rshm_abi::env` names it).

use core::ffi::c_char;

use rshm_abi::c::{proc_ref, setenv_array};
use rshm_abi::types::{pmix_proc_t, pmix_status_t};
use rshm_abi::{ffi_status, AbiError};

use super::{handle, lock, rshm_server_t};

/// What a client needs to attach, added to its environment (`PMIx_server_setup_fork`):
/// `RSHM_STORE`, `RSHM_STORE_OWNER` (the owner's uid, which the client requires),
/// `RSHM_STORE_ID` (the store's id, which the client requires of the store at that path),
/// `RSHM_NSPACE`, `RSHM_RANK`. `*env` is a NULL-terminated, malloc'ed array of "NAME=value"
/// strings (as PMIx's setup_fork uses); entries are replaced or appended.
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
