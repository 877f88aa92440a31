//! The interposed `PMIx_Get` and the FFI around it: the crate's only `unsafe`.

use core::ffi::c_char;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use rshm_abi::c::info_slice;
use rshm_abi::get;
use rshm_abi::types::{
    pmix_info_t, pmix_proc_t, pmix_query_t, pmix_status_t, pmix_value_t, status::*,
};
use rshm_abi::{ffi_or, ffi_void};
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

/// libpmix's internal `PMIX_ERR_TAKE_NEXT_OPTION` (src/util/pmix_error.h, not in
/// pmix_common.h, so not among abi's statuses, which tests/c_layout.rs checks against it).
const PMIX_ERR_TAKE_NEXT_OPTION: pmix_status_t = -1366;

type RelFn = unsafe extern "C" fn(*const c_char, *const c_char, *mut u16) -> pmix_status_t;
type LoadFn = unsafe extern "C" fn(*mut pmix_topology_t) -> pmix_status_t;

/// `pmix_topology_t` (pmix_common.h).
#[repr(C)]
pub struct pmix_topology_t {
    source: *mut c_char,
    topology: *mut libc::c_void,
}

/// The next definition of `name` (libpmix's), or None.
fn next_fn(name: &core::ffi::CStr) -> Option<usize> {
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks the symbol up.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    (!p.is_null()).then_some(p as usize)
}

/// `PMIx_Get_relative_locality`, interposed: two locality strings compared in the caller's
/// thread without hwloc (`rshm_topo::relative_locality`), with libpmix 4.2.2's very answers,
/// statuses included: it returns `PMIX_ERR_TAKE_NEXT_OPTION` with the locality set when both
/// strings are hwloc's, and without it when either is not; `PMIX_ERROR` for a tag it does not
/// know. Before the store is attached, or with a NULL argument, libpmix answers.
///
/// # Safety
/// PMIx_Get_relative_locality's contract (pmix.h).
#[no_mangle]
pub unsafe extern "C" fn PMIx_Get_relative_locality(
    locality1: *const c_char,
    locality2: *const c_char,
    locality: *mut u16,
) -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        if !locality1.is_null() && !locality2.is_null() && !locality.is_null() && attached() {
            // SAFETY: the caller's NUL-terminated strings (pmix.h contract).
            let (a, b) = unsafe {
                (
                    core::ffi::CStr::from_ptr(locality1).to_str(),
                    core::ffi::CStr::from_ptr(locality2).to_str(),
                )
            };
            if let (Ok(a), Ok(b)) = (a, b) {
                let (status, loc) = match rshm_topo::relative_locality(a, b) {
                    Ok(l) => (PMIX_ERR_TAKE_NEXT_OPTION, Some(l)),
                    Err(rshm_topo::RelativeError::NotHwloc) => (PMIX_ERR_TAKE_NEXT_OPTION, None),
                    Err(rshm_topo::RelativeError::Unrecognized(l)) => (PMIX_ERROR, Some(l)),
                };
                if let Some(l) = loc {
                    // SAFETY: checked non-NULL; the caller's pmix_locality_t.
                    unsafe { locality.write(l) };
                }
                return status;
            }
        }
        static NEXT: OnceLock<Option<usize>> = OnceLock::new();
        match *NEXT.get_or_init(|| next_fn(c"PMIx_Get_relative_locality")) {
            // SAFETY: libpmix's function of exactly this signature, with the caller's
            // arguments.
            Some(f) => unsafe {
                core::mem::transmute::<usize, RelFn>(f)(locality1, locality2, locality)
            },
            None => PMIX_ERR_NOT_SUPPORTED,
        }
    })
}

/// `PMIx_Load_topology`, interposed: when the server published the node's topology in the
/// store, the hwloc topology is built from its XML at the first call and that one handed out
/// from then on, as libpmix hands out its own (`source` "hwloc:<release>", set when the caller gave
/// none; one that names another source goes to libpmix). Otherwise libpmix answers.
///
/// # Safety
/// PMIx_Load_topology's contract (pmix.h).
#[no_mangle]
pub unsafe extern "C" fn PMIx_Load_topology(topo: *mut pmix_topology_t) -> pmix_status_t {
    ffi_or(PMIX_ERROR, || {
        // SAFETY: a non-NULL `topo` is the caller's pmix_topology_t.
        let source = (!topo.is_null()).then(|| unsafe { (*topo).source });
        let hwloc_source = |s: *mut c_char| {
            // SAFETY: a non-NULL source is a NUL-terminated string (pmix.h contract).
            s.is_null() || unsafe { libc::strncasecmp(s, c"hwloc".as_ptr(), 5) } == 0
        };
        if let Some(src) = source.filter(|s| hwloc_source(*s)) {
            if let Some(t) = store_topology() {
                if src.is_null() {
                    // SAFETY: strdup of a static NUL-terminated string (rshm_topo::SOURCE ends in NUL).
                    let s = unsafe { libc::strdup(rshm_topo::SOURCE.as_ptr().cast()) };
                    if s.is_null() {
                        return PMIX_ERR_NOMEM;
                    }
                    // SAFETY: `topo` checked non-NULL above.
                    unsafe { (*topo).source = s };
                }
                // SAFETY: `topo` checked non-NULL above.
                unsafe { (*topo).topology = t as *mut libc::c_void };
                return PMIX_SUCCESS;
            }
        }
        static NEXT: OnceLock<Option<usize>> = OnceLock::new();
        match *NEXT.get_or_init(|| next_fn(c"PMIx_Load_topology")) {
            // SAFETY: libpmix's function of exactly this signature, with the caller's argument.
            Some(f) => unsafe { core::mem::transmute::<usize, LoadFn>(f)(topo) },
            None => PMIX_ERR_NOT_SUPPORTED,
        }
    })
}

/// The topology built from the store's XML, once per process (0 when there is none).
fn store_topology() -> Option<usize> {
    static TOPO: OnceLock<usize> = OnceLock::new();
    let t = *TOPO.get_or_init(|| {
        if !attached() {
            return 0;
        }
        rshm_client::with_client(|c| c.hwloc_topology().map_err(rshm_abi::AbiError::Store))
            .map_or(0, |p| p as usize)
    });
    (t != 0).then_some(t)
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
