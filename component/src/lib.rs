//! The Rust half of `pmix_mca_gds_rshm.so`, rshm's gds component for the OpenPMIx 4.2 line.
//!
//! The component is a small C adapter (`component/gds_rshm.c`, compiled against OpenPMIx's
//! internal headers) linked with this crate's staticlib, which holds both shims (server-shim's
//! `rshm_server_*` and client-shim's `rshm_client_*`), so that a process has one Rust runtime
//! whatever role it plays. All store logic stays in the shims and `gds`: which PMIx_Get calls
//! the component answers is the answer policy every rshm front end follows
//! (`gds::jobdata::policy`, docs/jobdata.md "Answer policy"). What the policy does not answer
//! from the store (a pass, and NOT_FOUND too: a module's fetch cannot make OpenPMIx 4.2 stop
//! there) is `PMIX_ERR_NOT_FOUND`, and libpmix answers it with gds/hash as it would without
//! rshm. docs/openpmix.md is the guide.
//!
//! Everything specific to OpenPMIx 4.2 lives in `component/`: the C adapter and its Makefile
//! (which refuses to build against another OpenPMIx version), and this fetch.

use core::ffi::c_char;

use abi::c::info_slice;
use abi::get;
use abi::types::status::{PMIX_ERR_NOT_FOUND, PMIX_SUCCESS};
use abi::types::{pmix_info_t, pmix_proc_t, pmix_status_t, pmix_value_t};
use rshm_client::Outcome;

pub use rshm_client;
pub use rshm_server;

/// The gds module's `fetch` for one key: `PMIX_SUCCESS` with `*val` a new `malloc`ed value
/// (released by libpmix's `PMIX_VALUE_RELEASE` when the `pmix_kval_t` holding it is) when the
/// answer policy answers from the store; otherwise `PMIX_ERR_NOT_FOUND` (a pass, a settled
/// NOT_FOUND, a request that does not parse, a store that cannot be read: never another status,
/// so the caller falls back to hash). Not attached (`rshm_client_attach`): `PMIX_ERR_NOT_FOUND`.
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
    if proc_.is_null() || key.is_null() || val.is_null() {
        return PMIX_ERR_NOT_FOUND;
    }
    let mut answered = false;
    let status = abi::ffi_call(|| {
        let parsed;
        let req = if ninfo == 0 || info.is_null() {
            &get::NO_DIRECTIVES
        } else {
            // SAFETY: `ninfo` valid infos at `info` (caller contract).
            parsed = get::parse(unsafe { info_slice(info, ninfo) }?)?;
            &parsed
        };
        // SAFETY: forwarded caller contract (rshm_client_get's).
        let outcome = unsafe { rshm_client::rshm_client_get_with(proc_, key, req, val) }?;
        answered = matches!(outcome, Outcome::Answered);
        Ok(())
    });
    if status == PMIX_SUCCESS && answered {
        PMIX_SUCCESS
    } else {
        PMIX_ERR_NOT_FOUND
    }
}
