//! The component's C entry points into the shims, `rshm_gds42_fetch` (gds_rshm.c's fetch) and
//! `rshm_gds42_store_announced`: the crate's only `unsafe`.

use core::ffi::c_char;

use rshm_abi::c::{c_str, info_slice};
use rshm_abi::get::{self, GetRequest};
use rshm_abi::types::status::{PMIX_ERR_NOT_FOUND, PMIX_SUCCESS};
use rshm_abi::types::{pmix_info_t, pmix_proc_t, pmix_status_t, pmix_value_t, KEY_BUF};
use rshm_abi::{ffi_or, ffi_status, AbiError};
use rshm_client::Outcome;
use rshm_gds::jobdata::{keys, Decision};

/// The gds module's `fetch` for one key: `PMIX_SUCCESS` with `*val` a new `malloc`ed value
/// (released by libpmix's `PMIX_VALUE_RELEASE` when the `pmix_kval_t` holding it is), or
/// `PMIX_ERR_NOT_FOUND` for anything the component leaves to libpmix ([`crate::serves`]), the store does
/// not hold, or cannot read (never another status, a panic included: the caller then falls back
/// to hash).
/// Not attached (`rshm_client_attach`): `PMIX_ERR_NOT_FOUND`.
///
/// # Safety
/// `proc_` is NULL or a valid `pmix_proc_t`; `key` NULL or NUL-terminated; `info` NULL or
/// `ninfo` valid `pmix_info_t`; `val` a valid location.
#[no_mangle]
pub unsafe extern "C" fn rshm_gds42_fetch(
    proc_: *const pmix_proc_t,
    key: *const c_char,
    info: *const pmix_info_t,
    ninfo: usize,
    val: *mut *mut pmix_value_t,
) -> pmix_status_t {
    ffi_or(PMIX_ERR_NOT_FOUND, || {
        let status = ffi_status(|| {
            if proc_.is_null() || key.is_null() || val.is_null() {
                return Err(AbiError::Store(rshm_gds::Error::NotFound));
            }
            // The caller's proc and key, read once for every check below and the lookup.
            // SAFETY: a valid pmix_proc_t and a NUL-terminated key (caller contract).
            let (ns, rank) = unsafe { rshm_abi::c::proc_ref(proc_) }?;
            // SAFETY: as above.
            let key_str = unsafe { c_str(key, KEY_BUF - 1) }?;
            let mut req = if ninfo == 0 || info.is_null() {
                GetRequest::default()
            } else {
                // SAFETY: `ninfo` valid infos at `info`, each value laid out as its type says
                // (caller contract).
                unsafe { get::parse(info_slice(info, ninfo)?) }?
            };
            let realm = keys::default_realm(key_str);
            if crate::process_level_only_in(key_str, realm, rank, &req) {
                req.directives.qualifiers.app_info = false;
                req.directives.qualifiers.proc_info = true;
            }
            if !crate::serves_in(key_str, realm, rank, &req) {
                return Err(AbiError::Store(rshm_gds::Error::NotFound));
            }
            if !keys::is_reserved(key_str) && own_lossy(ns, rank, key_str, &req)? {
                return Err(AbiError::Store(rshm_gds::Error::NotFound));
            }
            if key_str == keys::NODEID && !same_node(ns, rank, &req)? {
                return Err(AbiError::Store(rshm_gds::Error::NotFound));
            }
            // SAFETY: `val` is a valid location (checked non-NULL; caller contract).
            match unsafe { rshm_client::rshm_client_get_asked((ns, rank, key_str), &req, val) }? {
                Outcome::Answered => Ok(()),
                // A NOT_FOUND the policy settles is still hash's to give: OpenPMIx 4.2 asks it
                // next whatever a module says.
                _ => Err(AbiError::Store(rshm_gds::Error::NotFound)),
            }
        });
        if status == PMIX_SUCCESS {
            PMIX_SUCCESS
        } else {
            PMIX_ERR_NOT_FOUND
        }
    })
}

/// Whether the store's answer is a value the calling process posted itself that OpenPMIx 4.2.2
/// does not carry to its server intact (a `PMIX_DATA_BUFFER` arrives empty: its `pack_val` has
/// no case for the type): libpmix answers that from what the process put, as without rshm.
/// Another process's key is never one (no lookup).
fn own_lossy(ns: &str, rank: u32, key: &str, req: &GetRequest) -> Result<bool, AbiError> {
    rshm_client::with_client(|c| {
        if c.me() != Some((ns, rank)) {
            return Ok(false);
        }
        let pin = c.reader().pin();
        Ok(matches!(
            c.decide(&pin, ns, rank, key, req),
            Decision::Answer(v, _) if v.type_code() == rshm_gds::value::types::DATA_BUFFER
        ))
    })
}

/// Whether rank `rank` of `ns` runs on the caller's node (both PMIX_NODEID values known and
/// equal).
fn same_node(ns: &str, rank: u32, req: &GetRequest) -> Result<bool, AbiError> {
    rshm_client::with_client(|c| {
        let Some((my_ns, me)) = c.me() else {
            return Ok(false);
        };
        if my_ns != ns {
            return Ok(false);
        }
        let pin = c.reader().pin();
        let node = |r: u32| match c.decide(&pin, ns, r, keys::NODEID, req) {
            Decision::Answer(v, _) => Some(v.to_value()),
            _ => None,
        };
        Ok(matches!((node(me), node(rank)), (Some(a), Some(b)) if a == b))
    })
}

/// Whether the environment names a store (`$RSHM_STORE`, set by the server's setup_fork): a
/// client without one declines the component at its handshake without trying to attach.
#[no_mangle]
pub extern "C" fn rshm_gds42_store_announced() -> bool {
    ffi_or(false, || std::env::var_os(rshm_abi::env::STORE).is_some())
}
