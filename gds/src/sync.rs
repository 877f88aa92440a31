//! The one place atomics come from. Built with `--cfg gds_loom`, the protocol runs on loom's
//! model-checked atomics (see loom-tests/); otherwise on the hardware's.
//!
//! Only [`crate::protocol`] and the `raw` module (which casts mapped bytes to these types) use
//! them, and, outside any protocol step, a registration's read-ahead threads, which store proc
//! column values through `raw::shared_u32s` (Relaxed: the thread scope orders them). Loom atomics cannot live in mapped bytes, so under `gds_loom` the mapping code is not
//! built and the protocol is exercised on heap-allocated words instead.
//!
//! The epoch scheme that retires a client's old snapshots (steps C1/C2, `raw::SnapshotCell`)
//! comes from here too: [`epoch`] is crossbeam-epoch, which runs on loom's atomics when built
//! with its own cfg, `crossbeam_loom`. `--cfg gds_loom` therefore needs `--cfg crossbeam_loom`
//! beside it, so that the loom models check the epoch code the store really runs.

#![forbid(unsafe_code)]

#[cfg(all(gds_loom, not(crossbeam_loom)))]
compile_error!(
    "--cfg gds_loom needs --cfg crossbeam_loom as well (RUSTFLAGS=\"--cfg gds_loom --cfg \
     crossbeam_loom\"): without it crossbeam-epoch orders memory outside loom's view"
);

#[cfg(gds_loom)]
pub use loom::sync::atomic::{fence, AtomicU32, AtomicU64};

#[cfg(not(gds_loom))]
pub use core::sync::atomic::{fence, AtomicU32, AtomicU64};

pub use core::sync::atomic::Ordering;

/// Epoch-based reclamation (crossbeam-epoch): pins, guards and deferred destruction.
pub use crossbeam_epoch as epoch;
