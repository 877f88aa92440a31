//! rshm's client library: attach to a store a server announced at setup_fork, and answer
//! PMIx_Get from the shared mapping, with PMIx_Get's semantics (standard 5.4, ch. 6).
//!
//! - [`client`]: the logic (safe Rust): which table answers, who asks, pointer-mode values.
//! - `exports`: the C ABI of `include/rshm_client.h` (the crate's only `unsafe`).
//!
//! The preloadable `PMIx_Get` is the `rshm-preload` crate (client-shim/preload), built on this.

#![deny(unsafe_code)]

pub mod client;
#[allow(unsafe_code)]
mod exports;
pub mod locality;
pub mod sets;

pub use client::{identity_from_env, Asked, Client, Outcome};
pub use exports::{
    attach, rshm_client_attach, rshm_client_get_asked, rshm_client_get_with, rshm_client_query,
    with_client,
};
