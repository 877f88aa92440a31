//! Table segments (format.md section 6): the keys and values of one (namespace, part).
//!
//! [`TableBuilder`] is the writer's side: insert (realm, key, value) triples, then encode an
//! immutable segment. [`TableView`] is the reader's: validate once at map time, then look up in
//! a few cache misses (key hash slot, key record, entry slot, entry record, value).
//!
//! A builder holds its entries in two forms: inserted one by one (a hash map, any order), and
//! merged in bulk from a sorted run ([`TableBuilder::merge_run`]: a fence batch), kept as a
//! vector sorted in the segment's entry order, so that encoding a million of them is a
//! sequential pass with no sort. The segment is planned (every size and offset) before a byte
//! is written, so the writer can create the file at its final size and encode straight into the
//! mapping.
//!
//! - `builder`: [`TableBuilder`], its one-by-one inserts, proc columns and value arenas.
//! - `bulk`: the bulk-merge interface (sorted runs of entries) and the merge itself.
//! - `encode`: the segment's plan and its encoding; `small`: a rank's posted table encoded
//!   straight from a commit's values, without a builder.
//! - `view`: [`TableView`], a mapped table's validation and lookups; `short_keys`: its index of
//!   short keys.

#![forbid(unsafe_code)]

mod arena;
mod builder;
pub(crate) mod bulk;
mod column_blocks;
mod encode;
mod short_keys;
pub(crate) mod small;
mod view;

use crate::error::{Error, Result};
use crate::layout::MAX_KEY_LEN;

pub(crate) use builder::column_value;
pub use builder::TableBuilder;
pub use view::{ColumnShape, KeyTag, TableView};

/// Refuse a key the format cannot hold.
pub(crate) fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > MAX_KEY_LEN || key.as_bytes().contains(&0) {
        return Err(Error::InvalidArgument(format!(
            "bad key {key:?} (1..=511 bytes, no NUL)"
        )));
    }
    Ok(())
}
