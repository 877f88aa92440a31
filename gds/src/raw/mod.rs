//! The only `unsafe` code of the crate. Everything here is small and exposes a safe API whose
//! soundness this module argues for; the rest of the crate is `forbid(unsafe_code)`.
//!
//! - `map`: mappings of segment files and what is read through them (not built under
//!   `gds_loom`: loom atomics cannot live in mapped bytes).
//! - `snapshot`: the client's snapshot pointer and the retirement of old snapshots (C1/C2),
//!   built under `gds_loom` too, so loom-tests checks this very code.

#[cfg(not(gds_loom))]
mod map;
mod snapshot;

#[cfg(not(gds_loom))]
pub use map::*;
pub use snapshot::SnapshotCell;
