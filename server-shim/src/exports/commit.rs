//! A process's commit handed over whole (`rshm_server_commit`): what a gds module's `store`
//! receives one key at a time, kept by the caller (its values stay valid) until the process's
//! last key, then published in one call.

use core::ffi::c_char;

use smallvec::SmallVec;

use rshm_abi::c::{c_slice, c_str, proc_ref};
use rshm_abi::types::{pmix_proc_t, pmix_status_t, pmix_value_t, KEY_BUF};
use rshm_abi::{ffi_status, AbiError};

use super::{flushed, handle, lock, rshm_flushed_t, rshm_server_t, Read};
use crate::server::PostedData;

/// One value of a commit (`rshm_server_commit`).
#[repr(C)]
pub struct rshm_kv_t {
    /// `PMIX_LOCAL`, `PMIX_REMOTE` or `PMIX_GLOBAL`.
    pub scope: u8,
    /// A non-reserved key (not starting with "pmix").
    pub key: *const c_char,
    pub value: *const pmix_value_t,
}

/// Publish the values `proc` committed (`kvs`, in put order) as one generation: what
/// `rshm_server_stage` of each then `rshm_server_flush` do (latest wins; a value the store
/// cannot read, or a key it cannot hold, withdraws its key instead; on a failure to publish the
/// keys are withdrawn and `out` says how), in one call. A process's first commit since its
/// values were last merged goes from `kvs`'s values straight into the store: nothing is copied
/// in between. Values staged before are published first.
///
/// # Safety
/// `s` a handle; `proc` a valid `pmix_proc_t`; `kvs` NULL (with `n` 0) or `n` valid
/// `rshm_kv_t` (each key NUL-terminated, each value valid); `out` NULL or a valid location.
#[no_mangle]
pub unsafe extern "C" fn rshm_server_commit(
    s: *mut rshm_server_t,
    proc: *const pmix_proc_t,
    kvs: *const rshm_kv_t,
    n: usize,
    out: *mut rshm_flushed_t,
) -> pmix_status_t {
    ffi_status(|| {
        // SAFETY: caller contract for each pointer; NULL with a length, a misaligned pointer
        // and an overflowing length are refused.
        let (h, (ns, rank), kvs) = unsafe { (handle(s)?, proc_ref(proc)?, c_slice(kvs, n)?) };
        // Inline for a commit of up to 16 keys: nothing allocated (docs/modex.md).
        let mut read: SmallVec<[_; 16]> = SmallVec::with_capacity(kvs.len());
        let mut unnamed = 0;
        for kv in kvs {
            if kv.value.is_null() {
                return Err(AbiError::BadParam("NULL value".into()));
            }
            // SAFETY: a NUL-terminated key (caller contract); one too long for PMIx is refused.
            let Ok(key) = (unsafe { c_str(kv.key, KEY_BUF - 1) }) else {
                // A key no store can name, so none holds an older value of it.
                unnamed += 1;
                continue;
            };
            // SAFETY: a valid value (caller contract; a byte object's bytes outlive this call);
            // one the store cannot read is `None`, staged as the withdrawal of its key.
            read.push((kv.scope, key, unsafe { Read::of(kv.value) }.ok()));
        }
        let all = read.iter().all(|(_, _, v)| v.is_some());
        let result = {
            let mut server = lock(h);
            if all {
                let values: SmallVec<[(u8, &str, PostedData<'_>); 16]> = read
                    .iter()
                    .filter_map(|(scope, key, v)| Some((*scope, *key, v.as_ref()?.data())))
                    .collect();
                server.commit(ns, rank, &values)
            } else {
                for (scope, key, v) in &read {
                    match v {
                        Some(v) => server.stage_ref(ns, rank, *scope, key, v.data()),
                        None => server.stage_refused(ns, rank, key),
                    };
                }
                server.flush()
            }
        };
        let mut report = flushed(read.len(), &result);
        report.values += unnamed;
        report.refused += unnamed;
        // SAFETY: NULL or a valid location (caller contract).
        if let Some(out) = unsafe { out.as_mut() } {
            *out = report;
        }
        result.map(|_| ()).map_err(|u| u.error.into())
    })
}
