//! `librshm_preload.so`: `LD_PRELOAD` it into an unmodified PMIx client and its `PMIx_Get` is
//! answered from rshm's shared memory whenever the store can answer, and passed to the real
//! `PMIx_Get` (the next definition, `dlsym(RTLD_NEXT)`) otherwise.
//!
//! When (docs/ffi.md): a store is announced (`$RSHM_STORE`) and attaches, the key and proc are
//! not NULL, the directives parse, and the answer policy (`gds::jobdata::policy`,
//! docs/jobdata.md "Answer policy") does not pass the Get on: the store's value, or a NOT_FOUND
//! the store settles. Everything else (no store, a namespace or value it does not hold, a scope
//! error, PMIX_GET_REFRESH_CACHE, a required directive it does not know) goes to libpmix.
//! Values are allocated with malloc like libpmix's, so `PMIX_VALUE_RELEASE` frees them.
//!
//! This file is the crate's only code, and its `unsafe` is the FFI itself.

use core::ffi::c_char;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use abi::c::info_slice;
use abi::get;
use abi::types::{pmix_info_t, pmix_proc_t, pmix_status_t, pmix_value_t, status::*};
use rshm_client::Outcome;

type GetFn = unsafe extern "C" fn(
    *const pmix_proc_t,
    *const c_char,
    *const pmix_info_t,
    usize,
    *mut *mut pmix_value_t,
) -> pmix_status_t;

/// Gets answered from the store (a value, or a NOT_FOUND the store settles), and passed on to
/// libpmix (process-local counters; written to `$RSHM_PRELOAD_STATS/<pid>` at exit when that
/// variable names a directory).
static ANSWERED: AtomicU64 = AtomicU64::new(0);
static PASSED: AtomicU64 = AtomicU64::new(0);

/// Whether to count at all: a shared counter's atomic add is a cache-line write per Get.
fn counting() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("RSHM_PRELOAD_STATS").is_some())
}

extern "C" fn write_stats() {
    if let Some(dir) = std::env::var_os("RSHM_PRELOAD_STATS") {
        let path = std::path::Path::new(&dir).join(std::process::id().to_string());
        let _ = std::fs::write(
            path,
            format!(
                "answered {}\npassed {}\n",
                ANSWERED.load(Ordering::Relaxed),
                PASSED.load(Ordering::Relaxed)
            ),
        );
    }
}

/// Attach once, at the first Get; a client that cannot attach (no store, unknown format,
/// permission) stays on libpmix for the rest of its life.
fn attached() -> bool {
    static ATTACHED: OnceLock<bool> = OnceLock::new();
    *ATTACHED.get_or_init(|| {
        if std::env::var_os(rshm_client::client::env::STORE).is_none() {
            return false;
        }
        // SAFETY: NULL path and proc are valid arguments: both come from the environment.
        let rc = unsafe { rshm_client::rshm_client_attach(core::ptr::null(), core::ptr::null()) };
        if rc != PMIX_SUCCESS && std::env::var_os("RSHM_PRELOAD_VERBOSE").is_some() {
            eprintln!("rshm-preload: not attached ({rc}): {}", abi::last_error());
        }
        if std::env::var_os("RSHM_PRELOAD_STATS").is_some() {
            // SAFETY: registering a plain extern "C" fn with atexit.
            unsafe { libc::atexit(write_stats) };
        }
        rc == PMIX_SUCCESS
    })
}

fn next_get() -> Option<GetFn> {
    static NEXT: OnceLock<Option<GetFn>> = OnceLock::new();
    *NEXT.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks the symbol up.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"PMIx_Get".as_ptr()) };
        // SAFETY: libpmix's PMIx_Get has exactly this signature (pmix.h).
        (!p.is_null()).then(|| unsafe { core::mem::transmute::<*mut libc::c_void, GetFn>(p) })
    })
}

/// Try the store: the status it answers with (`PMIX_SUCCESS` with `*val` set, or a settled
/// `PMIX_ERR_NOT_FOUND`), or `None`: not the store's to answer, ask libpmix.
///
/// # Safety
/// PMIx_Get's argument contract.
unsafe fn from_store(
    proc_: *const pmix_proc_t,
    key: *const c_char,
    info: *const pmix_info_t,
    ninfo: usize,
    val: *mut *mut pmix_value_t,
) -> Option<pmix_status_t> {
    if key.is_null() || proc_.is_null() || val.is_null() || !attached() {
        return None;
    }
    let parsed;
    let req = if ninfo == 0 {
        // Nothing to build or drop for the common call.
        &get::NO_DIRECTIVES
    } else {
        // SAFETY: `ninfo` readable infos at `info` (PMIx_Get's contract).
        let infos = unsafe { info_slice(info, ninfo) }.ok()?;
        parsed = get::parse(infos).ok()?;
        &parsed
    };
    let mut outcome = None;
    let status = abi::ffi_call(|| {
        // SAFETY: PMIx_Get's contract is rshm_client_get's.
        outcome = Some(unsafe { rshm_client::rshm_client_get_with(proc_, key, req, val) }?);
        Ok(())
    });
    match (status, outcome?) {
        (PMIX_SUCCESS, Outcome::Answered) => Some(PMIX_SUCCESS),
        (PMIX_SUCCESS, Outcome::NotFound) => Some(PMIX_ERR_NOT_FOUND),
        _ => None,
    }
}

/// `PMIx_Get`, interposed.
///
/// # Safety
/// PMIx_Get's contract (pmix.h).
#[no_mangle]
pub unsafe extern "C" fn PMIx_Get(
    proc_: *const pmix_proc_t,
    key: *const c_char,
    info: *const pmix_info_t,
    ninfo: usize,
    val: *mut *mut pmix_value_t,
) -> pmix_status_t {
    // SAFETY: forwarded PMIx_Get contract.
    if let Some(status) = unsafe { from_store(proc_, key, info, ninfo, val) } {
        if counting() {
            ANSWERED.fetch_add(1, Ordering::Relaxed);
        }
        return status;
    }
    if counting() {
        PASSED.fetch_add(1, Ordering::Relaxed);
    }
    match next_get() {
        // SAFETY: the real PMIx_Get, with the caller's own arguments.
        Some(real) => unsafe { real(proc_, key, info, ninfo, val) },
        None => PMIX_ERR_NOT_SUPPORTED,
    }
}
