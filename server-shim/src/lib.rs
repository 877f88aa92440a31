//! rshm's server library: what a PMIx server (or an OpenPMIx gds component) calls to put job
//! data and posted data into a store, with the semantics of the standard's server APIs (17.2).
//!
//! - [`server`]: the logic (safe Rust) over `gds`.
//! - `exports`: the C ABI of `include/rshm_server.h` (the crate's only `unsafe`).

#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod exports;
pub mod server;
pub mod topology;

pub use server::{
    Flushed, PostedData, PostedRef, PostedValue, Server, ServerOptions, Unpublished, Withdrawn,
};
