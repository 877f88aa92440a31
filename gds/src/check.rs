//! Check untrusted segment bytes exactly as a reader would: header, structure, rkyv validation,
//! then every lookup. For fuzzing (gds/tests/fuzz.rs) and for inspecting a suspect file.

#![forbid(unsafe_code)]

use std::sync::Arc;

use crate::error::Result;
use crate::layout::{Kind, Realm};
use crate::raw::SharedMap;
use crate::root::RootView;
use crate::segment::check_segment;
use crate::table::TableView;

/// Check a table segment's bytes and read every value in it, plus `probes` lookups.
/// Returns the number of values read.
pub fn table_bytes(bytes: &[u8], probes: &[(Realm, &str)]) -> Result<usize> {
    let (map, _) = check_segment(&SharedMap::copy_of(bytes)?, 0, bytes.len(), Kind::Table)?;
    let t = TableView::new(Arc::new(map))?;
    let mut n = 0;
    for (_, key, v) in t.entries() {
        std::hint::black_box((key, v.to_value()));
        n += 1;
    }
    for &(realm, key) in probes {
        if let Some(v) = t.get(realm, key) {
            std::hint::black_box(v.to_value());
            n += 1;
        }
    }
    Ok(n)
}

/// Check a root segment's bytes, list every reference and look up `names`.
pub fn root_bytes(bytes: &[u8], names: &[&str]) -> Result<usize> {
    let (map, _) = check_segment(&SharedMap::copy_of(bytes)?, 0, bytes.len(), Kind::Root)?;
    let root = RootView::new(Arc::new(map))?;
    let listed = (0..root.len()).filter_map(|i| root.get(i)).count();
    let found = names.iter().filter_map(|n| root.find(n, 0)).count();
    Ok(listed + found)
}

/// The bytes of the segments a fresh store would write for one table (for building fuzz
/// corpora): (table segment, root segment naming it as namespace `ns`).
pub fn encode_store(ns: &str, table: &crate::TableBuilder) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut tbytes = table.encode(1)?;
    let mut rbytes = crate::root::encode(
        2,
        &[crate::root::RefSpec {
            name_hash: crate::layout::key_hash(ns.as_bytes()),
            name: ns,
            nsid: 1,
            part: 0,
            table_at: 1,
        }],
    )?;
    // Published segments carry the ready state (format.md section 3).
    for b in [&mut tbytes, &mut rbytes] {
        b[crate::layout::STATE_OFF..crate::layout::STATE_OFF + 4]
            .copy_from_slice(&crate::protocol::STATE_READY.to_ne_bytes());
    }
    Ok((tbytes, rbytes))
}
