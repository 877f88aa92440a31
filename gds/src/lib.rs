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
//! - [`value`]: the PMIx value model, archived with rkyv and read in place ([`packed_array`]:
//!   arrays of fixed-width elements as one byte string).
//! - [`layout`]: `#[repr(C)]` mirrors of the format's records, with const asserts.
//! - [`protocol`]: the ordering-relevant atomic steps (what loom checks).
//! - [`sync`]: the only place atomics come from (`--cfg gds_loom` switches to loom).
//! - `raw`: the only `unsafe` code: mappings, atomics in mapped bytes, unchecked archive access,
//!   epoch-protected snapshots (the only part built under `gds_loom`).
//! - `dir`: the store directory: placement, safe creation, access (ACLs) and trust, the
//!   writer's lock, sweeping dead stores.
//! - `prefault`: page faults of large new buffers taken ahead on another core.
//! - `table`, `root`: encoding and lookup of the two immutable segment kinds (`table::bulk`:
//!   entries merged as sorted runs; `table::column_blocks`: proc columns stored in blocks of 32
//!   ranks).
//! - `writer`, `reader`: the public store API.
//!
//! Above the store, PMIx's rules for what it holds:
//! - [`jobdata`]: a namespace's registration as a table, and the rules of a Get over it; the
//!   keys of the proc columns.
//! - [`modex`]: data the processes post (Put/Commit, fences).
//! - [`psets`]: process sets and groups.
//!
//! The store's modules name none of them, nor anything of PMIx (tests/layers.rs): each layer
//! numbers its own table parts ([`part`] lists them), chooses which of its tables are small
//! enough for the pack (`Transaction::put_table_packable`) and its bit of the withdrawn mask
//! (`Writer::withdraw`); what job data derives from a mapped table it keeps in the view's slot
//! for it (`TableView::derived`). The crate root hands the store what it must know of PMIx by
//! name: the proc columns' keys and the server's temporary directory variable.

#![deny(unsafe_code)]

pub mod error;
#[cfg(not(gds_loom))]
pub mod jobdata;
pub mod layout;
#[cfg(not(gds_loom))]
pub mod modex;
pub mod packed_array;
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

/// The keys of the format's proc columns, which job data defines: the table code (below the
/// layers) maps keys to columns with this list, handed down here.
#[cfg(not(gds_loom))]
pub(crate) use jobdata::columns::COLUMN_KEYS;

/// The PMIx server's temporary directory (the standard's `PMIX_SERVER_TMPDIR`), which the
/// store's placement (`choose_base_dir`) takes when it is a tmpfs.
#[cfg(not(gds_loom))]
pub(crate) const ENV_SERVER_TMPDIR: &str = "PMIX_SERVER_TMPDIR";
/// Test knobs (feature `test-knobs`, off by default; the test crates turn it on).
#[cfg(all(not(gds_loom), feature = "test-knobs"))]
pub use reader::ENV_READER_RETIRE;
#[cfg(not(gds_loom))]
pub use reader::{Pin, Reader, ReaderStats, ENV_STORE};
#[cfg(not(gds_loom))]
pub use table::{ColumnShape, KeyTag, TableBuilder, TableView};
#[cfg(not(gds_loom))]
pub use valueref::ValueRef;
#[cfg(not(gds_loom))]
pub use writer::{StoreOptions, Transaction, Writer, WriterStats};

/// Table part numbers of a namespace (format.md section 5, `part`), in one place: the store
/// gives parts no meaning, each layer above it defines its own (`tests/parts.rs` checks they
/// do not collide; the topology's, `rshm_topo::PART`, is outside this crate).
#[cfg(not(gds_loom))]
pub mod part {
    pub use crate::jobdata::part::{DATA, DATA_REPLICAS, RESOURCES};
    pub use crate::modex::part::{POSTED, POSTED_INDEX, POSTED_RANKS};
    pub use crate::psets::part::{GROUPS, PSETS};
}
