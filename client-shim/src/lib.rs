//! rshm's client side for C callers. Today it is the Rust entry point a client uses to attach;
//! the C ABI (`rshm_client.h`, PMIx_Get semantics, the preloadable `PMIx_Get`) is tracked in
//! issue #5 and not built yet.

#![forbid(unsafe_code)]

pub use gds::{Pin, Reader};

/// Attach to the store named by `$RSHM_STORE`, as a client started by an rshm server does.
pub fn attach_from_env() -> gds::Result<Reader> {
    Reader::attach_from_env()
}
