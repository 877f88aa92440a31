//! `librshm_client_preload.so`: `LD_PRELOAD` it into an unmodified PMIx client and its `PMIx_Get` is
//! answered from rshm's shared memory whenever the store can answer, and passed to the real
//! `PMIx_Get` (the next definition, `dlsym(RTLD_NEXT)`) otherwise.
//!
//! When (docs/ffi.md): a store is announced (`$RSHM_STORE`) and attaches, the key and proc are
//! not NULL, the directives parse, and the answer policy (`rshm_gds::jobdata::policy`,
//! docs/jobdata.md "Answer policy") does not pass the Get on: the store's value, or a NOT_FOUND
//! the store settles. Everything else (no store, a namespace or value it does not hold, a scope
//! error, PMIX_GET_REFRESH_CACHE, a required directive it does not know) goes to libpmix.
//! Values are allocated with malloc like libpmix's, so `PMIX_VALUE_RELEASE` frees them.
//!
//! `PMIx_Query_info` of the process-set keys alone is answered from the store too, once the
//! server published sets (docs/psets-groups.md); every other query goes to libpmix.
//!
//! `exports` holds the interposed `PMIx_Get` and the crate's only `unsafe` (the FFI itself).

#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod exports;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

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

/// The counters, written at exit (`exports::write_stats` runs this).
fn write_stats() {
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
        if std::env::var_os(rshm_abi::env::STORE).is_none() {
            return false;
        }
        // Store and identity from the environment.
        let res = rshm_client::attach(None, None);
        if let Err(e) = &res {
            if rshm_abi::verbose::level("RSHM_MCA_client_preload_verbose", "RSHM_PRELOAD_VERBOSE")
                > 0
            {
                eprintln!("rshm-preload: not attached ({}): {e}", e.status());
            }
        }
        if std::env::var_os("RSHM_PRELOAD_STATS").is_some() {
            exports::write_stats_at_exit();
        }
        res.is_ok()
    })
}
