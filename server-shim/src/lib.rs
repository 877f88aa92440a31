//! rshm's server side for C callers. Today it re-exports the Rust writer; the C ABI
//! (`rshm_server.h`: register_nspace from `pmix_info_t` arrays, setup_fork, ...) is tracked in
//! issue #5 and not built yet.

#![forbid(unsafe_code)]

pub use gds::{StoreOptions, Writer};

/// The environment variable a server exports to its clients at setup_fork.
pub const ENV_STORE: &str = "RSHM_STORE";
