//! rshm's store: the shared-memory data store ("GDS") for PMIx.
//!
//! One writer (the PMIx server) publishes immutable segments into a store directory; any number
//! of readers in other processes map them read-only and look values up without locks or syscalls.
//! The format is `docs/format.md`; the publication protocol is `docs/protocol.md`.
//!
//! # Trust
//!
//! A reader trusts the store's owner (the writer's user, checked on every file it opens) as it
//! trusts the server: published bytes are immutable by the writer's promise, and readers hand
//! them out as shared slices and validate each table once, not on every read. A process running
//! as the owner that changes published bytes in place (not through a [`Writer`]) can make
//! readers answer values that were never written, or fault (SIGBUS on a truncated file). Safe
//! code of a process that only reads cannot cause either. [`Reader::attach`] says the same.
//!
//! Module map:
//! - [`value`]: the PMIx value model, archived with rkyv and read in place.
//! - [`layout`]: `#[repr(C)]` mirrors of the format's records, with const asserts.
//! - [`protocol`]: the ordering-relevant atomic steps (what loom checks).
//! - [`sync`]: the only place atomics come from (`--cfg gds_loom` switches to loom).
//! - `raw`: the only `unsafe` code: mappings, atomics in mapped bytes, unchecked archive access,
//!   epoch-protected snapshots (the only part built under `gds_loom`).
//! - `dir`: the store directory: placement, safe creation, access (ACLs) and trust, the
//!   writer's lock, sweeping dead stores.
//! - `prefault`: page faults of large new buffers taken ahead on another core.
//! - `table`, `root`: encoding and lookup of the two immutable segment kinds (`table::bulk`:
//!   entries merged as sorted runs); `column_blocks`: proc columns stored in blocks of 32 ranks.
//! - `writer`, `reader`: the public store API.
//!
//! Above the store, PMIx's rules for what it holds:
//! - [`jobdata`]: a namespace's registration as a table, and the rules of a Get over it.
//! - [`modex`]: data the processes post (Put/Commit, fences).
//!
//! The store's modules name neither (tests/layers.rs): what job data derives from a mapped
//! table it keeps in the view's slot for it (`TableView::derived`).

#![deny(unsafe_code)]

pub mod error;
#[cfg(not(gds_loom))]
pub mod jobdata;
pub mod layout;
#[cfg(not(gds_loom))]
pub mod modex;
pub mod packed;
pub mod protocol;
#[cfg(not(gds_loom))]
pub mod psets;
pub mod sync;
pub mod value;
#[cfg(not(gds_loom))]
mod valueref;

#[cfg(not(gds_loom))]
mod bytes;
#[cfg(not(gds_loom))]
pub mod check;
#[cfg(not(gds_loom))]
mod column_blocks;
#[cfg(not(gds_loom))]
mod dir;
#[cfg(not(gds_loom))]
mod pack;
#[cfg(not(gds_loom))]
mod pins;
#[cfg(not(gds_loom))]
mod prefault;
// The one module allowed `unsafe`; every other module is covered by the crate-level deny.
#[allow(unsafe_code)]
mod raw;
#[cfg(not(gds_loom))]
mod reader;
#[cfg(not(gds_loom))]
mod root;
#[cfg(not(gds_loom))]
mod segment;
#[cfg(not(gds_loom))]
mod table;
#[cfg(not(gds_loom))]
mod writer;

#[cfg(not(gds_loom))]
pub use bytes::same_bytes;
pub use error::{Error, Result};
pub use layout::Realm;
pub use value::{ArchivedValue, DataArray, Info, Value};

/// The client's snapshot pointer (C1/C2), public only for loom-tests' models.
#[cfg(gds_loom)]
pub use raw::{CellGuard, CellHandle, SnapshotCell};

/// A cache hint for walks the hardware prefetcher cannot follow (the C registration reader's).
pub use raw::prefetch;

#[cfg(not(gds_loom))]
pub use dir::{
    choose_base_dir, default_base_dir, is_tmpfs, sweep_dead_stores, Ownership, Skipped,
    SweepReport, ENV_DIR, ENV_STORE_ID, ENV_STORE_OWNER, LOCK_NAME, STORE_ID_NAME,
};
#[cfg(not(gds_loom))]
pub use jobdata::JobMeta;
#[cfg(not(gds_loom))]
pub use reader::{Pin, Reader, ReaderStats, ENV_READER_RETIRE, ENV_STORE};
#[cfg(not(gds_loom))]
pub use table::{ColumnShape, KeyTag, TableBuilder, TableView};
#[cfg(not(gds_loom))]
pub use valueref::ValueRef;
#[cfg(not(gds_loom))]
pub use writer::{StoreOptions, Transaction, Writer, WriterStats};

/// Table part numbers of a namespace (format.md section 5, `part`).
pub mod part {
    /// The namespace's data table.
    pub const DATA: u32 = 0;
    /// Resources not tied to a namespace (`jobdata::resources`), under its own store name.
    pub const RESOURCES: u32 = 1;
    /// Data posted by the namespace's processes (`modex`): fences, and commits once merged.
    pub const POSTED: u32 = 2;
    /// The RANK_UNDEF index of the namespace's posted keys (`modex::PostedParts`).
    pub const POSTED_INDEX: u32 = 3;
    /// The node topology (`topo`: hwloc XML), under its own store name.
    pub const TOPOLOGY: u32 = 4;
    /// The process sets (`psets`): the chunk list under the store name `rshm.psets.list`, and
    /// each chunk of sets under `rshm.psets.<id>`.
    pub const PSETS: u32 = 5;
    /// The process groups (`psets::groups`): the group index under the store name
    /// `rshm.groups`, and each group's own table under its group id.
    pub const GROUPS: u32 = 6;
    /// NUMA replicas of the namespace's data table: domain `d`'s is `DATA_REPLICAS + d`, for
    /// `d` below 8 (`topo::numa`), byte-equal to part DATA, its pages on that domain.
    pub const DATA_REPLICAS: u32 = 8;
    /// Part of rank 0's own posted table: rank `r`'s is `POSTED_RANKS + r` (`modex::rank_part`),
    /// holding what `r` committed since its values were last merged into `POSTED`.
    pub const POSTED_RANKS: u32 = 16;
}
