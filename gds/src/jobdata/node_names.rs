//! The hostname -> node id index of a table (job data or resources): one store-metadata value,
//! [`meta::NODES_BY_NAME`], instead of a meta key per hostname. A reader keeps facts per
//! distinct key of a table (12 B each, made at map time), so a key per hostname made every
//! client's private memory grow with the node count: +184 KiB at 1M ranks on 15,625 nodes
//! (docs/performance.md). One key keeps it flat.
//!
//! The value is a byte object, little-endian u32s (docs/jobdata.md, "The node index"):
//! `slots` (a power of two, at least twice the names), then `slots` slots of
//! (`id + 1`, 0 for an empty slot; `name_off`; `name_len`), then the names' bytes; offsets
//! count from the value's start. A name's probe starts at slot `key_hash(name) & (slots - 1)`
//! (xxh3-64, as the key index) and moves to the next slot, wrapping, until the name or an empty
//! slot. The slots are filled in name order, so equal name sets give equal bytes.
//!
//! The value lies in a published table, so a reader checks every offset it follows: a forged
//! index answers "no such node", never a panic or an out-of-bounds read.

use super::keys::meta;
use crate::error::{Error, Result};
use crate::layout::{key_hash, Realm};
use crate::table::TableView;

const SLOT: usize = 12;

/// The index of `names` (hostname, node id). A name given twice keeps its last id.
pub(crate) fn build<'a>(names: impl IntoIterator<Item = (&'a str, u32)>) -> Result<Vec<u8>> {
    let mut names: Vec<(&str, u32)> = names.into_iter().collect();
    // Stable: of equal names the last given stays last, and wins below.
    names.sort_by(|a, b| a.0.cmp(b.0));
    names.dedup_by(|later, earlier| {
        let same = later.0 == earlier.0;
        if same {
            earlier.1 = later.1;
        }
        same
    });
    let slots = (names.len() * 2).next_power_of_two().max(1);
    let names_off = 4 + slots * SLOT;
    let total = names_off + names.iter().map(|(n, _)| n.len()).sum::<usize>();
    let too_big = || Error::InvalidArgument("the hostnames of a job exceed 4 GiB".into());
    u32::try_from(total).map_err(|_| too_big())?;
    let mut out = vec![0u8; names_off];
    out[..4].copy_from_slice(&(slots as u32).to_le_bytes());
    let mask = slots - 1;
    for (name, id) in names {
        let id1 = id.checked_add(1).ok_or_else(|| {
            Error::InvalidArgument(format!("node id {id} of {name:?} is out of range"))
        })?;
        let mut s = key_hash(name.as_bytes()) as usize & mask;
        // Terminates: at most half the slots are full.
        while u32_at(&out, 4 + s * SLOT) != Some(0) {
            s = (s + 1) & mask;
        }
        let at = 4 + s * SLOT;
        // `total` fits u32, so do these.
        let fields = [id1, out.len() as u32, name.len() as u32];
        for (i, f) in fields.into_iter().enumerate() {
            out[at + 4 * i..at + 4 * i + 4].copy_from_slice(&f.to_le_bytes());
        }
        out.extend_from_slice(name.as_bytes());
    }
    debug_assert_eq!(out.len(), total);
    Ok(out)
}

/// The node id of `host` in table `t`, by its index; None when `t` has no index or it does not
/// name `host`.
pub fn find(t: &TableView, host: &str) -> Option<u32> {
    let index = t.get(Realm::Meta, meta::NODES_BY_NAME)?.as_bytes()?;
    find_in(index, host.as_bytes())
}

/// The node ids the index of `t` names (unordered, an id once per name; empty without an
/// index). A forged index yields what its slots hold, within its bytes.
pub(crate) fn ids(t: &TableView) -> impl Iterator<Item = u32> + '_ {
    let index = t
        .get(Realm::Meta, meta::NODES_BY_NAME)
        .and_then(|v| v.as_bytes())
        .unwrap_or(&[]);
    let slots = u32_at(index, 0).unwrap_or(0) as usize;
    (0..slots).filter_map(move |s| {
        let id1 = u32_at(index, 4usize.checked_add(s.checked_mul(SLOT)?)?)?;
        id1.checked_sub(1)
    })
}

/// [`find`] in the index's bytes.
fn find_in(index: &[u8], host: &[u8]) -> Option<u32> {
    let slots = u32_at(index, 0)? as usize;
    if !slots.is_power_of_two() {
        return None;
    }
    let mask = slots - 1;
    let mut s = key_hash(host) as usize & mask;
    // At most `slots` probes, even when a forged index has no empty slot.
    for _ in 0..slots {
        let at = 4usize.checked_add(s.checked_mul(SLOT)?)?;
        let id1 = u32_at(index, at)?;
        if id1 == 0 {
            return None;
        }
        let off = u32_at(index, at + 4)? as usize;
        let len = u32_at(index, at + 8)? as usize;
        if index.get(off..off.checked_add(len)?)? == host {
            return Some(id1 - 1);
        }
        s = (s + 1) & mask;
    }
    None
}

/// Little-endian, as value contents are (rkyv's `value_format`); `crate::bytes::u32_at` reads
/// the segment's own records, in native order.
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let bytes = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_found_and_no_other() {
        let names: Vec<String> = (0..1000).map(|i| format!("node{i:04}")).collect();
        let index = build(names.iter().map(|n| n.as_str()).zip(0u32..)).unwrap();
        for (id, n) in names.iter().enumerate() {
            assert_eq!(find_in(&index, n.as_bytes()), Some(id as u32), "{n}");
        }
        for absent in ["node1000", "node", "", "node00000", "NODE0001"] {
            assert_eq!(find_in(&index, absent.as_bytes()), None, "{absent}");
        }
    }

    #[test]
    fn a_name_given_twice_keeps_its_last_id_and_two_names_may_share_an_id() {
        let index = build([("b", 1), ("a", 0), ("b", 7), ("alias", 0)]).unwrap();
        assert_eq!(find_in(&index, b"a"), Some(0));
        assert_eq!(find_in(&index, b"alias"), Some(0));
        assert_eq!(find_in(&index, b"b"), Some(7));
    }

    #[test]
    fn the_bytes_do_not_depend_on_the_order_names_come_in() {
        let a = build([("x", 0), ("y", 1), ("z", 2)]).unwrap();
        let b = build([("z", 2), ("x", 0), ("y", 1)]).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn an_empty_index_finds_nothing() {
        let index = build([]).unwrap();
        assert_eq!(find_in(&index, b"n0"), None);
    }

    #[test]
    fn a_forged_index_finds_nothing_and_does_not_panic() {
        let good = build([("n0", 0), ("n1", 1), ("n2", 2)]).unwrap();
        // Truncated anywhere, or every byte flipped in turn: an answer, if any, is a name
        // the bytes really hold at a slot, never a read outside them.
        for cut in 0..good.len() {
            let _ = find_in(&good[..cut], b"n1");
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0xff;
            if let Some(id) = find_in(&bad, b"n1") {
                assert!(id == 1 || i < 4 + 8 * SLOT, "byte {i}: id {id}");
            }
        }
        // No empty slot and no match: the probe still ends.
        let mut full = vec![0u8; 4 + 4 * SLOT];
        full[..4].copy_from_slice(&4u32.to_le_bytes());
        for s in 0..4 {
            full[4 + s * SLOT..8 + s * SLOT].copy_from_slice(&1u32.to_le_bytes());
        }
        assert_eq!(find_in(&full, b"n1"), None);
        // Slot count not a power of two, or absurdly large.
        let mut odd = good.clone();
        odd[..4].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(find_in(&odd, b"n1"), None);
        let mut huge = good;
        huge[..4].copy_from_slice(&(1u32 << 31).to_le_bytes());
        assert_eq!(find_in(&huge, b"n1"), None);
    }
}
