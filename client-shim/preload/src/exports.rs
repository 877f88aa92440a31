//! The interposed `PMIx_Get` and the FFI around it: the crate's only `unsafe`.

use core::ffi::c_char;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use abi::c::info_slice;
use abi::get;
use abi::types::{pmix_info_t, pmix_proc_t, pmix_query_t, pmix_status_t, pmix_value_t, status::*};
use abi::{ffi_or, ffi_void};
use rshm_client::Outcome;

use crate::{attached, counting, ANSWERED, PASSED};

type GetFn = unsafe extern "C" fn(
    *const pmix_proc_t,
    *const c_char,
    *const pmix_info_t,
    usize,
    *mut *mut pmix_value_t,
) -> pmix_status_t;

type QueryFn = unsafe extern "C" fn(
    *mut pmix_query_t,
    usize,
    *mut *mut pmix_info_t,
    *mut usize,
) -> pmix_status_t;

extern "C" fn write_stats() {
    ffi_void(crate::write_stats)
}

/// Write the counters at exit.
pub(crate) fn write_stats_at_exit() {
    // SAFETY: registering a plain extern "C" fn (which catches its own panics) with atexit.
    unsafe { libc::atexit(write_stats) };
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

/// Try the store: the status it answers with (`PMIX_SUCCESS` with `*val` set, or a NOT_FOUND
/// the answer policy settles), or `Err(())`: not the store's to answer, ask libpmix.
///
/// # Safety
/// PMIx_Get's argument contract.
unsafe fn from_store(
    proc_: *const pmix_proc_t,
    key: *const c_char,
    info: *const pmix_info_t,
    ninfo: usize,
    val: *mut *mut pmix_value_t,
) -> Result<pmix_status_t, ()> {
    if key.is_null() || proc_.is_null() || val.is_null() || !attached() {
        return Err(());
    }
    let parsed;
    let req = if ninfo == 0 {
        // Nothing to build or drop for the common call.
        &get::NO_DIRECTIVES
    } else {
        // SAFETY: `ninfo` readable infos at `info`, each value laid out as its type says
        // (PMIx_Get's contract).
        parsed = unsafe { get::parse(info_slice(info, ninfo).map_err(drop)?) }.map_err(drop)?;
        &parsed
    };
    // SAFETY: PMIx_Get's contract is rshm_client_get's.
    match unsafe { rshm_client::rshm_client_get_with(proc_, key, req, val) } {
        Ok(Outcome::Answered) => Ok(PMIX_SUCCESS),
        Ok(Outcome::NotFound) => Ok(PMIX_ERR_NOT_FOUND),
        _ => Err(()),
    }
}

/// `PMIx_Get`, interposed. A panic on the store's path passes the call on to libpmix, like any
/// other failure there; one anywhere else is `PMIX_ERROR`.
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
    ffi_or(PMIX_ERROR, || {
        // SAFETY: forwarded PMIx_Get contract.
        let ours = ffi_or(Err(()), || unsafe {
            from_store(proc_, key, info, ninfo, val)
        });
        if let Ok(status) = ours {
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
    })
}

fn next_query() -> Option<QueryFn> {
    static NEXT: OnceLock<Option<QueryFn>> = OnceLock::new();
    *NEXT.get_or_init(|| {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks the symbol up.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, c"PMIx_Query_info".as_ptr()) };
        // SAFETY: libpmix's PMIx_Query_info has exactly this signature (pmix.h).
        (!p.is_null()).then(|| unsafe { core::mem::transmute::<*mut libc::c_void, QueryFn>(p) })
    })
}

/// `PMIx_Query_info`, interposed: a call of process-set keys only (`PMIX_QUERY_NUM_PSETS`,
/// `PMIX_QUERY_PSET_NAMES`, `PMIX_QUERY_PSET_MEMBERSHIP`) is answered from the store once its
/// server published sets (docs/psets-groups.md), as its host answers them (a success, a
/// NOT_FOUND, a BAD_PARAM for a membership query without its set); anything else goes to
/// libpmix.
///
/// # Safety
/// PMIx_Query_info's contract (pmix.h).
#[no_mangle]
pub unsafe extern "C" fn PMIx_Query_info(
    queries: *mut pmix_query_t,
    nqueries: usize,
    results: *mut *mut pmix_info_t,
    nresults: *mut usize,
) -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        if attached() && !queries.is_null() && !results.is_null() && !nresults.is_null() {
            // SAFETY: forwarded PMIx_Query_info contract.
            let st = ffi_or(PMIX_ERR_NOT_SUPPORTED, || unsafe {
                rshm_client::rshm_client_query(queries, nqueries, results, nresults)
            });
            if matches!(st, PMIX_SUCCESS | PMIX_ERR_NOT_FOUND | PMIX_ERR_BAD_PARAM) {
                if counting() {
                    ANSWERED.fetch_add(1, Ordering::Relaxed);
                }
                return st;
            }
        }
        if counting() {
            PASSED.fetch_add(1, Ordering::Relaxed);
        }
        match next_query() {
            // SAFETY: the real PMIx_Query_info, with the caller's own arguments.
            Some(real) => unsafe { real(queries, nqueries, results, nresults) },
            None => PMIX_ERR_NOT_SUPPORTED,
        }
    })
}
