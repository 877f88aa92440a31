//! The interposed server functions and the FFI around them: the crate's only `unsafe`.
//!
//! Each export runs inside a panic boundary, with rshm's part inside its own: a panic there
//! leaves the store's part undone and still makes the real call, whose status the host gets.

use core::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use rshm_abi::c::{
    c_slice, c_str, fixed_str, info_slice, info_value, proc_ref, read_infos, reg_infos,
};
use rshm_abi::types::{pmix_info_t, pmix_proc_t, pmix_status_t, status::*, NSPACE_BUF};
use rshm_abi::{ffi_or, ffi_void};
use rshm_gds::Info;

/// `pmix_op_cbfunc_t`.
type OpCb = Option<unsafe extern "C" fn(pmix_status_t, *mut c_void)>;
type InitFn = unsafe extern "C" fn(*mut c_void, *mut pmix_info_t, usize) -> pmix_status_t;
type FinalizeFn = unsafe extern "C" fn() -> pmix_status_t;
type RegisterNspaceFn = unsafe extern "C" fn(
    *const c_char,
    c_int,
    *mut pmix_info_t,
    usize,
    OpCb,
    *mut c_void,
) -> pmix_status_t;
type DeregisterNspaceFn = unsafe extern "C" fn(*const c_char, OpCb, *mut c_void);
type SetupForkFn = unsafe extern "C" fn(*const pmix_proc_t, *mut *mut *mut c_char) -> pmix_status_t;
type DefinePsetFn = unsafe extern "C" fn(*const pmix_proc_t, usize, *const c_char) -> pmix_status_t;
type DeletePsetFn = unsafe extern "C" fn(*mut c_char) -> pmix_status_t;
type RegisterResourcesFn =
    unsafe extern "C" fn(*mut pmix_info_t, usize, OpCb, *mut c_void) -> pmix_status_t;

/// The next definition of `name` (libpmix's), looked up once.
macro_rules! next {
    ($ty:ty, $name:literal) => {{
        static NEXT: OnceLock<Option<$ty>> = OnceLock::new();
        *NEXT.get_or_init(|| {
            // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks the symbol up.
            let p = unsafe { libc::dlsym(libc::RTLD_NEXT, $name.as_ptr()) };
            // SAFETY: libpmix defines the function with this signature (pmix.h, pmix_server.h).
            (!p.is_null()).then(|| unsafe { core::mem::transmute::<*mut c_void, $ty>(p) })
        })
    }};
}

// After `next!`: the module uses it.
mod registration;
use registration::registration;

extern "C" fn close_hook() {
    ffi_void(crate::close_at_exit)
}

/// Remove the store at exit when the host never finalizes.
pub(crate) fn register_exit_hook() {
    // SAFETY: registering a plain extern "C" fn (which catches its own panics) with atexit.
    unsafe { libc::atexit(close_hook) };
}

/// The infos of `PMIx_server_init` the store reads; one it cannot read is left out.
///
/// # Safety
/// `info` NULL or `ninfo` valid `pmix_info_t`.
unsafe fn init_infos(info: *const pmix_info_t, ninfo: usize) -> Vec<Info> {
    // SAFETY: caller contract.
    let Ok(all) = (unsafe { info_slice(info, ninfo) }) else {
        return Vec::new();
    };
    all.iter()
        .filter_map(|i| {
            let key = fixed_str(&i.key).ok()?;
            if !crate::wanted_init_key(key) {
                return None;
            }
            // SAFETY: each value obeys its type's layout (caller contract).
            let value = unsafe { info_value(i) }.ok()?;
            Some(Info::new(key, value))
        })
        .collect()
}

/// `PMIx_server_init`, interposed: the real one, then the store.
///
/// # Safety
/// `PMIx_server_init`'s contract (pmix_server.h).
#[no_mangle]
pub unsafe extern "C" fn PMIx_server_init(
    module: *mut c_void,
    info: *mut pmix_info_t,
    ninfo: usize,
) -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        let Some(real) = next!(InitFn, c"PMIx_server_init") else {
            return PMIX_ERR_NOT_SUPPORTED;
        };
        // SAFETY: the real function, with the caller's own arguments.
        let rc = unsafe { real(module, info, ninfo) };
        if rc == PMIX_SUCCESS {
            ffi_void(|| {
                // SAFETY: forwarded caller contract.
                crate::open(&unsafe { init_infos(info, ninfo) })
            });
        }
        rc
    })
}

/// `PMIx_server_finalize`, interposed: the real one, then the store is removed.
///
/// # Safety
/// `PMIx_server_finalize`'s contract.
#[no_mangle]
pub unsafe extern "C" fn PMIx_server_finalize() -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        let Some(real) = next!(FinalizeFn, c"PMIx_server_finalize") else {
            return PMIX_ERR_NOT_SUPPORTED;
        };
        // SAFETY: the real function.
        let rc = unsafe { real() };
        ffi_void(crate::close);
        rc
    })
}

/// `PMIx_server_register_nspace`, interposed: the store first (its clients may start from the
/// callback), then the real one; a registration the real one refuses at once leaves the store.
///
/// # Safety
/// `PMIx_server_register_nspace`'s contract.
#[no_mangle]
pub unsafe extern "C" fn PMIx_server_register_nspace(
    nspace: *const c_char,
    nlocalprocs: c_int,
    info: *mut pmix_info_t,
    ninfo: usize,
    cbfunc: OpCb,
    cbdata: *mut c_void,
) -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        let Some(real) = next!(RegisterNspaceFn, c"PMIx_server_register_nspace") else {
            return PMIX_ERR_NOT_SUPPORTED;
        };
        let ns = ffi_or(None, || {
            // SAFETY: forwarded caller contract (`ninfo` infos).
            let copy = unsafe { registration(info, ninfo) };
            let (p, n) = match &copy {
                Some(c) => (c.top.as_ptr(), c.top.len()),
                None => (info.cast_const(), ninfo),
            };
            // SAFETY: forwarded caller contract (a NUL-terminated nspace; `n` infos at `p`,
            // the caller's or the copy's, which lives to the end of this closure).
            let (ns, infos) =
                unsafe { (c_str(nspace, NSPACE_BUF - 1).ok()?, reg_infos(p, n).ok()?) };
            crate::register_nspace(ns, nlocalprocs, infos).then_some(ns)
        });
        // SAFETY: the real function, with the caller's own arguments.
        let rc = unsafe { real(nspace, nlocalprocs, info, ninfo, cbfunc, cbdata) };
        if let Some(ns) = ns {
            if rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED {
                ffi_void(|| crate::deregister_nspace(ns));
            }
        }
        rc
    })
}

/// `PMIx_server_deregister_nspace`, interposed: the namespace leaves the store, then the real
/// one.
///
/// # Safety
/// `PMIx_server_deregister_nspace`'s contract.
#[no_mangle]
pub unsafe extern "C" fn PMIx_server_deregister_nspace(
    nspace: *const c_char,
    cbfunc: OpCb,
    cbdata: *mut c_void,
) {
    ffi_void(|| {
        ffi_void(|| {
            // SAFETY: a NUL-terminated nspace (caller contract).
            if let Ok(ns) = unsafe { c_str(nspace, NSPACE_BUF - 1) } {
                crate::deregister_nspace(ns);
            }
        });
        if let Some(real) = next!(DeregisterNspaceFn, c"PMIx_server_deregister_nspace") {
            // SAFETY: the real function, with the caller's own arguments.
            unsafe { real(nspace, cbfunc, cbdata) };
        }
    })
}

/// `PMIx_server_register_resources`, interposed: the store first, then the real one.
///
/// # Safety
/// `PMIx_server_register_resources`'s contract.
#[no_mangle]
pub unsafe extern "C" fn PMIx_server_register_resources(
    info: *mut pmix_info_t,
    ninfo: usize,
    cbfunc: OpCb,
    cbdata: *mut c_void,
) -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        let Some(real) = next!(RegisterResourcesFn, c"PMIx_server_register_resources") else {
            return PMIX_ERR_NOT_SUPPORTED;
        };
        ffi_void(|| {
            // SAFETY: `ninfo` valid infos (caller contract).
            if let Ok(infos) = unsafe { read_infos(info, ninfo) } {
                crate::register_resources(&infos);
            }
        });
        // SAFETY: the real function, with the caller's own arguments.
        unsafe { real(info, ninfo, cbfunc, cbdata) }
    })
}

/// `PMIx_server_define_process_set` (17.2.19), interposed: the store first (the real call
/// notifies clients, which may then ask), then the real one. OpenPMIx 4.2.2 returns a status it
/// never sets (its caddy's lock status) and records the set whatever it returns, unless the
/// library is not initialized (`PMIX_ERR_INIT`, returned first): only then does the set leave
/// the store again.
///
/// # Safety
/// `PMIx_server_define_process_set`'s contract.
#[no_mangle]
pub unsafe extern "C" fn PMIx_server_define_process_set(
    members: *const pmix_proc_t,
    nmembers: usize,
    pset_name: *const c_char,
) -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        let Some(real) = next!(DefinePsetFn, c"PMIx_server_define_process_set") else {
            return PMIX_ERR_NOT_SUPPORTED;
        };
        let name = ffi_or(None, || {
            // SAFETY: a NUL-terminated name and `nmembers` procs (caller contract).
            let (name, procs) = unsafe {
                (
                    c_str(pset_name, NSPACE_BUF - 1).ok()?,
                    c_slice(members, nmembers).ok()?,
                )
            };
            let members = procs
                .iter()
                // SAFETY: an element of the caller's array.
                .map(|p| unsafe { proc_ref(p) })
                .collect::<Result<Vec<_>, _>>()
                .ok()?;
            crate::pset(name, Some(&members));
            Some(name)
        });
        // SAFETY: the real function, with the caller's own arguments.
        let rc = unsafe { real(members, nmembers, pset_name) };
        if let Some(name) = name {
            if rc == PMIX_ERR_INIT {
                ffi_void(|| crate::pset(name, None));
            }
        }
        rc
    })
}

/// `PMIx_server_delete_process_set` (17.2.20), interposed: the store first, then the real one.
///
/// # Safety
/// `PMIx_server_delete_process_set`'s contract.
#[no_mangle]
pub unsafe extern "C" fn PMIx_server_delete_process_set(pset_name: *mut c_char) -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        let Some(real) = next!(DeletePsetFn, c"PMIx_server_delete_process_set") else {
            return PMIX_ERR_NOT_SUPPORTED;
        };
        ffi_void(|| {
            // SAFETY: a NUL-terminated name (caller contract).
            if let Ok(name) = unsafe { c_str(pset_name, NSPACE_BUF - 1) } {
                crate::pset(name, None);
            }
        });
        // SAFETY: the real function, with the caller's own arguments.
        unsafe { real(pset_name) }
    })
}

/// `PMIx_server_setup_fork`, interposed: the real one, then the store's variables appended to
/// the same malloc'ed array (which the host frees as its own).
///
/// # Safety
/// `PMIx_server_setup_fork`'s contract.
#[no_mangle]
pub unsafe extern "C" fn PMIx_server_setup_fork(
    proc_: *const pmix_proc_t,
    env: *mut *mut *mut c_char,
) -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        let Some(real) = next!(SetupForkFn, c"PMIx_server_setup_fork") else {
            return PMIX_ERR_NOT_SUPPORTED;
        };
        // SAFETY: the real function, with the caller's own arguments.
        let rc = unsafe { real(proc_, env) };
        if rc == PMIX_SUCCESS && !env.is_null() {
            ffi_void(|| {
                // SAFETY: a valid proc (caller contract).
                let Ok((ns, rank)) = (unsafe { proc_ref(proc_) }) else {
                    return;
                };
                for (name, value) in crate::client_env(ns, rank) {
                    // SAFETY: `env` holds NULL or a malloc'ed NULL-terminated array (the
                    // contract of setup_fork, which the real call just extended).
                    if unsafe { rshm_abi::c::setenv_array(env, name, &value) }.is_err() {
                        return;
                    }
                }
            });
        }
        rc
    })
}
