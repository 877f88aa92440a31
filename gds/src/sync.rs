//! The one place atomics come from. Built with `--cfg gds_loom`, the protocol runs on loom's
//! model-checked atomics (see loom-tests/); otherwise on the hardware's.
//!
//! Only [`crate::protocol`] and the `raw` module (which casts mapped bytes to these types) use
//! them. Loom atomics cannot live in mapped bytes, so under `gds_loom` the mapping code is not
//! built and the protocol is exercised on heap-allocated words instead.

#![forbid(unsafe_code)]

#[cfg(gds_loom)]
pub use loom::sync::atomic::{AtomicU32, AtomicU64};

#[cfg(not(gds_loom))]
pub use core::sync::atomic::{AtomicU32, AtomicU64};

pub use core::sync::atomic::Ordering;
