//! The bulk-merge interface: entries handed to a [`TableBuilder`] as one sorted run
//! ([`SortedRun`], merged by [`TableBuilder::merge_run`]) instead of inserted one by one, so
//! that a million of them (a fence batch, a registration's proc extras, its node realm) cost
//! one sequential pass, no hashing per entry, and their values are moved in, not copied.
//!
//! A run is its own key table (`keys`), its entries ([`BulkEntry`], `kid` an index into
//! `keys`) and the arenas that hold their values (`loc` is [`run_loc`] of an arena and an
//! offset, `len` the value's length). The caller guarantees:
//! - order: entries sorted by (class, id, key bytes), each (class, id, key) at most once
//!   ([`byte_order`] gives the keys' rank in byte order; [`last_wins`] sorts a run built in
//!   another order and keeps the later of repeated entries);
//! - keys: each passed [`check_key`] (1..=511 bytes, no NUL): the merge interns them as they
//!   are;
//! - values: each stored as an entry stores it ([`append_stored`]: its bytes and the entry's
//!   flags), its `loc` and `len` inside the run's arenas; `wasted` counts the arena bytes no
//!   entry refers to;
//! - classes below 2^8 (format.md), and no proc-column value (the proc realm and a column's
//!   key) when the builder has proc columns: those belong in the columns.
//!
//! `merge_run` checks what the builder holds and the run may exceed: a value over 4 GiB among
//! the builder's own entries and the key limit ([`MAX_KEYS`]) are errors. The caller's
//! guarantees are checked in debug builds only (`debug_assert!`): a run that breaks them is a
//! bug of its maker, and checking a million entries on every merge would cost what the bulk
//! path saves.

use std::ops::RangeInclusive;

use super::arena::Arena;
use super::builder::{column_of, EntryKey, StoredValue, TableBuilder};
use super::check_key;
use crate::error::{Error, Result};
use crate::layout::{ENTRY_RAW_BYTES, MAX_KEYS};
use crate::value::Value;

/// A value location is `arena << LOC_BITS | offset in that arena`.
pub(super) const LOC_BITS: u32 = 48;
pub(super) const LOC_MASK: u64 = (1 << LOC_BITS) - 1;
/// Flag of a bulk entry that was replaced or removed. Builder-internal: never written (a dead
/// entry is skipped), and outside the format's defined flag bits.
pub(super) const DEAD: u16 = 0x8000;

/// One entry merged in bulk, or of a [`SortedRun`]: 24 bytes, so a million of them are read
/// and written sequentially in a few milliseconds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BulkEntry {
    pub class: u16,
    /// Entry flags (`ENTRY_RAW_BYTES`), plus the builder-internal `DEAD`.
    pub flags: u16,
    pub id: u32,
    /// In a builder: its key id. In a [`SortedRun`]: the index of the run's key.
    pub kid: u32,
    pub len: u32,
    /// The value's location ([`LOC_BITS`]): in a builder among its arenas, in a run among the
    /// run's.
    pub loc: u64,
}

impl BulkEntry {
    pub(super) fn live(&self) -> bool {
        self.flags & DEAD == 0
    }

    /// The record of a loose (hashed) entry.
    pub(super) fn of((class, id, kid): EntryKey, (flags, loc, len): StoredValue) -> BulkEntry {
        BulkEntry {
            class,
            flags,
            id,
            kid,
            // Values over 4 GiB are refused at encode; keep them whole until then.
            len: len as u32,
            loc,
        }
    }
}

/// Entries to merge into a builder ([`TableBuilder::merge_run`]): sorted by (class, id, key
/// bytes), each (class, id, key) at most once, keys already checked (1..=511 bytes, no NUL).
pub(crate) struct SortedRun {
    pub keys: Vec<Box<str>>,
    pub entries: Vec<BulkEntry>,
    /// The values' bytes; an entry's `loc` is [`run_loc`] of its arena and offset.
    pub arenas: Vec<Vec<u8>>,
    /// Bytes of the arenas no entry refers to (values replaced inside the run).
    pub wasted: usize,
}

/// The rank of every key of `keys` in byte order: the order of entries with equal (class, id).
pub(crate) fn byte_order(keys: &[Box<str>]) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..keys.len() as u32).collect();
    ids.sort_unstable_by(|&a, &b| keys[a as usize].cmp(&keys[b as usize]));
    let mut order = vec![0u32; ids.len()];
    for (rank, &kid) in ids.iter().enumerate() {
        order[kid as usize] = rank as u32;
    }
    order
}

/// A run's entries in `pos` order, each position once, the later of equal ones kept; and the
/// value bytes of those dropped. Entries already in order (the common case) are only checked.
pub(crate) fn last_wins(
    mut entries: Vec<BulkEntry>,
    pos: impl Fn(&BulkEntry) -> u64,
) -> (Vec<BulkEntry>, usize) {
    let mut wasted = 0;
    if !entries.windows(2).all(|w| pos(&w[0]) < pos(&w[1])) {
        entries.sort_by_key(&pos); // stable: equal positions stay in the order given
        let mut kept: Vec<BulkEntry> = Vec::with_capacity(entries.len());
        for e in entries {
            match kept.last_mut() {
                Some(last) if pos(last) == pos(&e) => {
                    wasted += last.len as usize;
                    *last = e;
                }
                _ => kept.push(e),
            }
        }
        entries = kept;
    }
    (entries, wasted)
}

/// The `loc` of a run entry whose value is at `offset` in the run's arena `arena`.
pub(crate) fn run_loc(arena: usize, offset: usize) -> u64 {
    ((arena as u64) << LOC_BITS) | offset as u64
}

/// Append `value` to `arena` as an entry stores it: a byte object as its bytes (`RAW_BYTES`),
/// anything else archived. Returns the entry's flags.
pub(crate) fn append_stored(arena: &mut Vec<u8>, value: &Value) -> Result<u16> {
    Ok(match value {
        Value::ByteObject(b) => {
            arena.extend_from_slice(b);
            ENTRY_RAW_BYTES
        }
        v => {
            arena.extend_from_slice(&v.archive()?);
            0
        }
    })
}

/// The bytes at `loc` (see [`LOC_BITS`]).
pub(crate) fn value_in<A: AsRef<[u8]>>(arenas: &[A], loc: u64, len: usize) -> &[u8] {
    let off = (loc & LOC_MASK) as usize;
    &arenas[(loc >> LOC_BITS) as usize].as_ref()[off..off + len]
}

/// (class, id, key order) packed in one u64 (class < 2^8, key ids < 2^24: format.md), so that
/// entry order is an integer comparison.
pub(super) fn packed(class: u16, id: u32, key_order: u32) -> u64 {
    ((class as u64) << 56) | ((id as u64) << 24) | key_order as u64
}

/// Merge two sequences sorted by `key` (ties: `a` first).
pub(super) fn merge_by<T: Copy>(
    a: impl Iterator<Item = T>,
    b: impl Iterator<Item = T>,
    key: impl Fn(&T) -> u64,
) -> impl Iterator<Item = T> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) => {
            if key(x) <= key(y) {
                a.next()
            } else {
                b.next()
            }
        }
        (Some(_), None) => a.next(),
        (None, _) => b.next(),
    })
}

impl TableBuilder {
    /// Rank of every key id in byte order of the keys: the order of entries with equal
    /// (class, id).
    fn key_order(&self) -> Vec<u32> {
        byte_order(&self.keys)
    }

    /// Merge a sorted run (a fence batch) into the table: one pass over the table's entries and
    /// the run's, no hashing per entry, and the run's arenas are moved in, not copied.
    ///
    /// An entry of `run` replaces the table's entry of the same (class, id, key); one whose
    /// class is in `group` also replaces the table's entries of the same (id, key) in every
    /// class of `group` (posted data: a put replaces the key whatever its scope). Entries
    /// inserted one by one are folded into the bulk ones. `run` must not hold proc-column
    /// values (class 5 and a column key) when the table has proc columns.
    pub(crate) fn merge_run(&mut self, run: SortedRun, group: RangeInclusive<u16>) -> Result<()> {
        let SortedRun {
            keys,
            mut entries,
            arenas,
            wasted,
        } = run;
        if self.entries.values().any(|v| v.2 > u32::MAX as usize) {
            return Err(Error::InvalidArgument("value larger than 4 GiB".into()));
        }
        let new_keys = keys
            .iter()
            .filter(|k| !self.key_ids.contains_key(&***k))
            .count();
        if self.keys.len() + new_keys > MAX_KEYS {
            return Err(Error::InvalidArgument(
                "more than 2^24 distinct keys".into(),
            ));
        }
        debug_assert!(
            self.ranks == 0
                || !entries
                    .iter()
                    .any(|e| e.class == 5 && column_of(&keys[e.kid as usize]).is_some())
        );
        debug_assert!(
            keys.iter().all(|k| check_key(k).is_ok()),
            "unchecked run key"
        );
        debug_assert!(
            {
                let order = byte_order(&keys);
                let at = |e: &BulkEntry| packed(e.class, e.id, order[e.kid as usize]);
                entries.windows(2).all(|w| at(&w[0]) < at(&w[1]))
            },
            "run entries out of order or repeated"
        );
        let kid_map: Vec<u32> = keys
            .iter()
            .map(|k| self.intern(k).map(|(id, _)| id))
            .collect::<Result<_>>()?;
        if self.arenas.is_empty() {
            self.arenas.push(Arena::default());
        }
        // The run's arenas follow the builder's: an entry's arena index moves up by as many.
        let arena_base = (self.arenas.len() as u64) << LOC_BITS;
        for e in &mut entries {
            e.kid = kid_map[e.kid as usize];
            e.loc += arena_base;
        }
        self.arenas.extend(arenas.into_iter().map(Arena::from));
        self.garbage += wasted;

        if self.bulk_live == 0 && self.entries.is_empty() {
            // The common case (a namespace's first fence): the run is the table.
            self.bulk = entries;
            self.bulk_live = self.bulk.len();
            self.compact_if_wasteful();
            return Ok(());
        }

        let order = self.key_order();
        let key = |e: &BulkEntry| packed(e.class, e.id, order[e.kid as usize]);
        // (id, key order) of the run's entries in `group`, sorted: what they evict in every
        // class of the group.
        let mut evict: Vec<u64> = entries
            .iter()
            .filter(|e| group.contains(&e.class))
            .map(|e| ((e.id as u64) << 32) | order[e.kid as usize] as u64)
            .collect();
        if !evict.is_sorted() {
            evict.sort_unstable();
        }
        evict.dedup();

        let mut loose: Vec<BulkEntry> = self
            .entries
            .drain()
            .map(|(k, v)| BulkEntry::of(k, v))
            .collect();
        loose.sort_unstable_by_key(key);
        let bulk = std::mem::take(&mut self.bulk);
        let old = merge_by(
            bulk.into_iter().filter(BulkEntry::live),
            loose.into_iter(),
            key,
        );
        let mut out = Vec::with_capacity(self.bulk_live + entries.len());
        let mut new = entries.into_iter().peekable();
        let (mut class, mut ev) = (u16::MAX, 0usize);
        let mut garbage = 0usize;
        for o in old {
            if group.contains(&o.class) {
                if o.class != class {
                    (class, ev) = (o.class, 0);
                }
                let k = ((o.id as u64) << 32) | order[o.kid as usize] as u64;
                while ev < evict.len() && evict[ev] < k {
                    ev += 1;
                }
                if evict.get(ev) == Some(&k) {
                    garbage += o.len as usize;
                    continue;
                }
            }
            let ko = key(&o);
            let mut replaced = false;
            while let Some(n) = new.peek() {
                let kn = key(n);
                if kn > ko {
                    break;
                }
                replaced = kn == ko;
                out.extend(new.next());
            }
            if replaced {
                garbage += o.len as usize;
            } else {
                out.push(o);
            }
        }
        out.extend(new);
        self.garbage += garbage;
        self.bulk_live = out.len();
        self.bulk = out;
        self.compact_if_wasteful();
        Ok(())
    }
}
