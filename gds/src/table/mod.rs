//! Table segments (format.md section 6): the keys and values of one (namespace, part).
//!
//! [`TableBuilder`] is the writer's side: insert (realm, key, value) triples, then encode an
//! immutable segment. [`TableView`] is the reader's: validate once at map time, then look up in
//! a few cache misses (key hash slot, key record, entry slot, entry record, value).
//!
//! A builder holds its entries in two forms: inserted one by one (a hash map, any order), and
//! merged in bulk from a sorted run ([`TableBuilder::merge_run`]: a fence batch), kept as a
//! vector sorted in the segment's entry order, so that encoding a million of them is a
//! sequential pass with no sort. [`Layout`] plans a segment (every size and offset) before a
//! byte is written, so the writer can create the file at its final size and encode straight
//! into the mapping.

#![forbid(unsafe_code)]

use std::collections::hash_map::Entry as MapEntry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::RangeInclusive;
use std::sync::{Arc, OnceLock};

use crate::bytes::{same_bytes, slice_at, u16_at, u32_at, u64_at, Encoder, Sink};
use crate::column_blocks::{self, Blocked, BlockedAt};
use crate::error::{Error, Result};
use crate::jobdata::keys::{default_realm, meta, DefaultRealm};
use crate::layout::{
    entry_hash, fmix64, key_hash, slots_for, ColumnKind, Entry, KeyEntry, Kind, Realm, TableHeader,
    COLUMNS, ENTRY_RAW_BYTES, HEADER_LEN, MAX_KEYS, MAX_KEY_LEN, REGION_ALIGN, VALUE_ALIGN,
};
use crate::raw::{RoMap, ValidatedValues};
use crate::segment::encode_header;
use crate::value::Value;
use crate::valueref::ValueRef;

/// An entry's identity in the builder: (class, id, builder key id).
type EntryKey = (u16, u32, u32);

/// Hashes an [`EntryKey`]: small integers (a class, a rank or node id, a key id the builder
/// numbered itself), mixed by [`fmix64`]. A registration inserts some 150,000 entries at 1M
/// ranks, where SipHash was a tenth of each insert; no one chooses these integers to collide
/// (key ids are the builder's own, ids are ranks and node ids of the job).
#[derive(Clone, Copy, Default)]
struct EntryHasher(u64);

impl Hasher for EntryHasher {
    fn finish(&self) -> u64 {
        fmix64(self.0)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u16(&mut self, n: u16) {
        self.write_u64(n as u64);
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(23) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type EntryMap = HashMap<EntryKey, StoredValue, BuildHasherDefault<EntryHasher>>;
/// An entry's stored value: (entry flags, location of the archive or the raw bytes in the
/// builder's arenas (see [`LOC_BITS`]), length).
type StoredValue = (u16, u64, usize);

/// A value location is `arena << LOC_BITS | offset in that arena`.
const LOC_BITS: u32 = 48;
const LOC_MASK: u64 = (1 << LOC_BITS) - 1;
/// Arenas a builder keeps before it compacts them into one (every merged run brings its own).
const MAX_ARENAS: usize = 64;
/// Flag of a bulk entry that was replaced or removed. Builder-internal: never written (a dead
/// entry is skipped), and outside the format's defined flag bits.
const DEAD: u16 = 0x8000;

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
    fn live(&self) -> bool {
        self.flags & DEAD == 0
    }

    /// The record of a loose (hashed) entry.
    fn of((class, id, kid): EntryKey, (flags, loc, len): StoredValue) -> BulkEntry {
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

/// Builds a table: (realm, key) → value, latest insert wins.
#[derive(Default, Clone)]
pub struct TableBuilder {
    key_ids: HashMap<Box<str>, u32>,
    keys: Vec<Box<str>>,
    /// Entries inserted one by one: (class, id, builder key id) → value.
    entries: EntryMap,
    /// Entries merged in bulk, sorted by (class, id, key bytes). A (class, id, key) is live at
    /// most once in `entries` and `bulk` together: an insert or remove marks the bulk one DEAD.
    bulk: Vec<BulkEntry>,
    /// Live (not DEAD) entries of `bulk`.
    bulk_live: usize,
    /// Every value's bytes, appended: no allocation per value, and values inserted in rank
    /// order (a fence batch) are read back almost sequentially by `encode`. Arena 0 receives
    /// inserts; the others are merged runs' arenas, moved in whole (not copied).
    arenas: Vec<Vec<u8>>,
    /// Bytes of the arenas no entry refers to any more (replaced or removed values).
    garbage: usize,
    /// Ranks covered by proc columns (0: none).
    ranks: u32,
    /// Proc columns (format.md "Proc columns"), allocated on first use; all-ones = absent.
    columns: [Option<Vec<u32>>; COLUMNS.len()],
    /// Whether a column's key was ever stored as an entry of a proc (so a column insert must
    /// evict it); false in the common case, which keeps column inserts free of hashing.
    column_key_in_entries: [bool; COLUMNS.len()],
    /// [`TableBuilder::block_columns_above`]; `None`: [`column_blocks::PLAIN_UP_TO`].
    plain_columns_up_to: Option<usize>,
}

/// The column of `key`, if it has one.
fn column_of(key: &str) -> Option<usize> {
    COLUMNS.iter().position(|c| c.key == key)
}

/// The column value of `value` if its type is the column's and it is not the absent pattern.
pub(crate) fn column_value(kind: ColumnKind, value: &Value) -> Option<u32> {
    match (kind, value) {
        (ColumnKind::Uint16, Value::Uint16(v)) if *v != u16::MAX => Some(*v as u32),
        (ColumnKind::Uint32, Value::Uint32(v)) if *v != u32::MAX => Some(*v),
        (ColumnKind::ProcRank, Value::ProcRank(v)) if *v != u32::MAX => Some(*v),
        _ => None,
    }
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
pub(crate) fn value_in(arenas: &[Vec<u8>], loc: u64, len: usize) -> &[u8] {
    let off = (loc & LOC_MASK) as usize;
    &arenas[(loc >> LOC_BITS) as usize][off..off + len]
}

/// (class, id, key order) packed in one u64 (class < 2^8, key ids < 2^24: format.md), so that
/// entry order is an integer comparison.
fn packed(class: u16, id: u32, key_order: u32) -> u64 {
    ((class as u64) << 56) | ((id as u64) << 24) | key_order as u64
}

/// Merge two sequences sorted by `key` (ties: `a` first).
fn merge_by<T: Copy>(
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
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder that stores the standard proc keys of ranks `0..ranks` densely (proc columns).
    pub fn with_ranks(ranks: u32) -> Self {
        TableBuilder {
            ranks,
            ..Self::default()
        }
    }

    /// Store a proc column in blocks (format.md "Blocked columns") only when its plain form
    /// is larger than `plain_bytes` (default 64 KiB: a smaller column stays cached and skips
    /// the decode) and the blocks are smaller. 0 blocks every column that blocks make smaller:
    /// for tests of the blocked form with a few ranks.
    pub fn block_columns_above(&mut self, plain_bytes: usize) -> &mut Self {
        self.plain_columns_up_to = Some(plain_bytes);
        self
    }

    /// Room for `entries` more entries, `keys` more keys and `bytes` more bytes of values:
    /// a builder filled in one go (a registration) reserves what it will hold instead of
    /// growing by doubling, each doubling a copy into fresh pages.
    pub fn reserve(&mut self, entries: usize, keys: usize, bytes: usize) {
        self.entries.reserve(entries);
        self.key_ids.reserve(keys);
        self.keys.reserve(keys);
        if self.arenas.is_empty() {
            self.arenas.push(Vec::new());
        }
        self.arenas[0].reserve(bytes);
    }

    /// Every proc column, moved out for a registration's read-ahead to fill on several
    /// threads, each value stored inverted (`!v`: zero is absent), so that an absent column
    /// is allocated zeroed (if `allocate`, else left empty) and its pages are faulted in by
    /// the threads that fill them, not all up front by this one. Returns the mask of those
    /// that were present. Give them back with [`TableBuilder::put_columns`].
    pub(crate) fn take_columns(&mut self, allocate: bool) -> ([Vec<u32>; COLUMNS.len()], u32) {
        let ranks = if allocate { self.ranks as usize } else { 0 };
        let mut present = 0;
        let cols = std::array::from_fn(|c| match self.columns[c].take() {
            Some(mut col) => {
                present |= 1 << c;
                col.iter_mut().for_each(|v| *v = !*v);
                col
            }
            None => vec![0; ranks],
        });
        (cols, present)
    }

    /// The columns [`TableBuilder::take_columns`] took (inverted), those in `keep` kept (the
    /// others are all-absent). Their values are proc values stored without an entry's
    /// eviction: the caller stored none of these keys as entries of a proc meanwhile.
    pub(crate) fn put_columns(&mut self, cols: [Vec<u32>; COLUMNS.len()], keep: u32) {
        for (c, mut col) in cols.into_iter().enumerate() {
            debug_assert!(self.columns[c].is_none());
            if keep & (1 << c) != 0 {
                debug_assert_eq!(col.len(), self.ranks as usize);
                col.iter_mut().for_each(|v| *v = !*v);
                self.columns[c] = Some(col);
            }
        }
    }

    /// [`TableBuilder::insert_column`] unless the rank's column value is there already: a value
    /// derived from the maps, which any value the host gave overrides.
    pub(crate) fn insert_column_if_absent(&mut self, c: usize, rank: u32, v: u32) -> Result<()> {
        let given = rank < self.ranks
            && self.columns[c]
                .as_ref()
                .is_some_and(|col| col[rank as usize] != u32::MAX);
        if given {
            return Ok(());
        }
        self.insert_column(c, rank, v)
    }

    /// Insert or replace the value of `key` in `realm`.
    pub fn insert(&mut self, realm: Realm, key: &str, value: &Value) -> Result<()> {
        if let (Realm::Proc(r), Some(c)) = (realm, column_of(key)) {
            if r < self.ranks {
                match column_value(COLUMNS[c].kind, value) {
                    Some(v) => {
                        self.set_column(c, r, v);
                        return Ok(());
                    }
                    // Another type, or the absent pattern: an entry holds it.
                    None => {
                        if let Some(col) = &mut self.columns[c] {
                            col[r as usize] = u32::MAX;
                        }
                        self.column_key_in_entries[c] = true;
                    }
                }
            }
        }
        // Byte objects (cards, endpoints) are stored as their bytes: nothing to archive or
        // validate, and a reader's view is the bytes themselves (format.md `RAW_BYTES`).
        if let Value::ByteObject(bytes) = value {
            return self.insert_stored(realm, key, ENTRY_RAW_BYTES, bytes);
        }
        let archived = value.archive()?;
        self.insert_stored(realm, key, 0, &archived)
    }

    /// The proc column of `key`, if it has one (for [`TableBuilder::insert_column`]).
    pub(crate) fn column_index(key: &str) -> Option<usize> {
        column_of(key)
    }

    /// [`TableBuilder::insert`] of (`Realm::Proc(rank)`, the key of column `c`, the value of
    /// the column's type whose number is `v`), without matching the key or making a [`Value`]:
    /// a registration's derived per-rank values, a million at a time.
    #[inline]
    pub(crate) fn insert_column(&mut self, c: usize, rank: u32, v: u32) -> Result<()> {
        let kind = COLUMNS[c].kind;
        let absent = match kind {
            ColumnKind::Uint16 => u16::MAX as u32,
            ColumnKind::Uint32 | ColumnKind::ProcRank => u32::MAX,
        };
        if rank < self.ranks && v < absent {
            self.set_column(c, rank, v);
            return Ok(());
        }
        let value = match kind {
            ColumnKind::Uint16 => Value::Uint16(u16::try_from(v).map_err(|_| {
                Error::InvalidArgument(format!("{} does not fit a uint16", COLUMNS[c].key))
            })?),
            ColumnKind::Uint32 => Value::Uint32(v),
            ColumnKind::ProcRank => Value::ProcRank(v),
        };
        self.insert(Realm::Proc(rank), COLUMNS[c].key, &value)
    }

    /// [`TableBuilder::insert`] of (`Realm::Proc(rank)`, the key of column `c`, a value of the
    /// column's type whose column value is `v`, as [`column_value`] gives it): `rank` below the
    /// builder's ranks, `v` not the absent pattern.
    #[inline]
    pub(crate) fn set_column(&mut self, c: usize, rank: u32, v: u32) {
        debug_assert!(rank < self.ranks && v != u32::MAX);
        let ranks = self.ranks as usize;
        self.columns[c].get_or_insert_with(|| vec![u32::MAX; ranks])[rank as usize] = v;
        if self.column_key_in_entries[c] {
            self.remove_entry(Realm::Proc(rank), COLUMNS[c].key);
        }
    }

    /// The id of `key`, interned if new (and whether it was).
    fn intern(&mut self, key: &str) -> Result<(u32, bool)> {
        if let Some(&id) = self.key_ids.get(key) {
            return Ok((id, false));
        }
        if self.keys.len() >= MAX_KEYS {
            return Err(Error::InvalidArgument(
                "more than 2^24 distinct keys".into(),
            ));
        }
        let id = self.keys.len() as u32;
        self.keys.push(key.into());
        self.key_ids.insert(key.into(), id);
        Ok((id, true))
    }

    /// [`TableBuilder::insert`] of a value already archived (`flags` 0) or raw bytes
    /// (`ENTRY_RAW_BYTES`).
    pub(crate) fn insert_stored(
        &mut self,
        realm: Realm,
        key: &str,
        flags: u16,
        bytes: &[u8],
    ) -> Result<()> {
        check_key(key)?;
        let (kid, new_key) = self.intern(key)?;
        let (class, id) = realm.class_id();
        if self.arenas.is_empty() {
            self.arenas.push(Vec::new());
        }
        let arena_len = self.arenas[0].len() as u64;
        let replaced = match self.entries.entry((class, id, kid)) {
            MapEntry::Occupied(mut e) => {
                let (old_flags, old_loc, old_len) = *e.get();
                // The same value again (a registration's node arrays repeat what the maps
                // gave): kept where it is, no copy to throw away.
                if old_flags == flags && value_in(&self.arenas, old_loc, old_len) == bytes {
                    return Ok(());
                }
                e.insert((flags, arena_len, bytes.len()));
                self.garbage += old_len;
                true
            }
            MapEntry::Vacant(e) => {
                e.insert((flags, arena_len, bytes.len()));
                !new_key && self.kill_bulk(class, id, kid)
            }
        };
        self.arenas[0].extend_from_slice(bytes);
        if replaced {
            self.compact_if_wasteful();
        }
        Ok(())
    }

    /// Mark the bulk entry (`class`, `id`, `kid`) dead, if there is a live one.
    fn kill_bulk(&mut self, class: u16, id: u32, kid: u32) -> bool {
        if self.bulk_live == 0 {
            return false;
        }
        let start = self.bulk.partition_point(|e| (e.class, e.id) < (class, id));
        for e in &mut self.bulk[start..] {
            if (e.class, e.id) != (class, id) {
                break;
            }
            if e.kid == kid && e.live() {
                e.flags |= DEAD;
                self.bulk_live -= 1;
                self.garbage += e.len as usize;
                return true;
            }
        }
        false
    }

    fn arena_bytes(&self) -> usize {
        self.arenas.iter().map(Vec::len).sum()
    }

    /// Rebuild the arenas into one from the live values once replaced ones outweigh them (a
    /// long-lived builder whose values are updated again and again stays proportional to its
    /// contents), or once merged runs brought too many.
    fn compact_if_wasteful(&mut self) {
        let live = self.arena_bytes() - self.garbage;
        let too_many = self.arenas.len() > MAX_ARENAS;
        if self.garbage < live.max(1 << 20) && !too_many {
            return;
        }
        if !too_many && self.arenas.len() > 1 {
            // First free the arenas no live value is in (a fence that replaced every value of
            // an earlier one): no copy.
            let mut used = vec![0usize; self.arenas.len()];
            for &(_, loc, len) in self.entries.values() {
                used[(loc >> LOC_BITS) as usize] += len;
            }
            for e in self.bulk.iter().filter(|e| e.live()) {
                used[(e.loc >> LOC_BITS) as usize] += e.len as usize;
            }
            for (arena, used) in self.arenas.iter_mut().zip(used) {
                if used == 0 && !arena.is_empty() {
                    debug_assert!(self.garbage >= arena.len(), "garbage accounting");
                    self.garbage -= arena.len();
                    *arena = Vec::new();
                }
            }
            self.bulk.retain(BulkEntry::live);
            let live = self.arena_bytes() - self.garbage;
            if self.garbage < live.max(1 << 20) {
                return;
            }
        }
        let mut arena = Vec::with_capacity(live);
        let arenas = std::mem::take(&mut self.arenas);
        for (_, loc, len) in self.entries.values_mut() {
            let start = arena.len() as u64;
            arena.extend_from_slice(value_in(&arenas, *loc, *len));
            *loc = start;
        }
        self.bulk.retain(BulkEntry::live);
        for e in &mut self.bulk {
            let start = arena.len() as u64;
            arena.extend_from_slice(value_in(&arenas, e.loc, e.len as usize));
            e.loc = start;
        }
        self.arenas = vec![arena];
        self.garbage = 0;
    }

    /// Remove the value of `key` in `realm`; true if there was one.
    pub fn remove(&mut self, realm: Realm, key: &str) -> bool {
        let mut removed = false;
        if let (Realm::Proc(r), Some(c)) = (realm, column_of(key)) {
            if let Some(slot) = self.columns[c]
                .as_mut()
                .and_then(|col| col.get_mut(r as usize))
            {
                removed = *slot != u32::MAX;
                *slot = u32::MAX;
            }
        }
        self.remove_entry(realm, key) || removed
    }

    fn remove_entry(&mut self, realm: Realm, key: &str) -> bool {
        let Some(&kid) = self.key_ids.get(key) else {
            return false;
        };
        let (class, id) = realm.class_id();
        let removed = match self.entries.remove(&(class, id, kid)) {
            Some((_, _, len)) => {
                self.garbage += len;
                true
            }
            None => self.kill_bulk(class, id, kid),
        };
        if removed {
            self.compact_if_wasteful();
        }
        removed
    }

    /// Number of (realm, key) values, entries and column values alike.
    pub fn len(&self) -> usize {
        let in_columns: usize = self
            .columns
            .iter()
            .flatten()
            .map(|col| col.iter().filter(|v| **v != u32::MAX).count())
            .sum();
        self.entries.len() + self.bulk_live + in_columns
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Distinct keys the builder has interned (a bound for [`MAX_KEYS`] checks).
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

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
        let kid_map: Vec<u32> = keys
            .iter()
            .map(|k| self.intern(k).map(|(id, _)| id))
            .collect::<Result<_>>()?;
        if self.arenas.is_empty() {
            self.arenas.push(Vec::new());
        }
        // The run's arenas follow the builder's: an entry's arena index moves up by as many.
        let arena_base = (self.arenas.len() as u64) << LOC_BITS;
        for e in &mut entries {
            e.kid = kid_map[e.kid as usize];
            e.loc += arena_base;
        }
        self.arenas.extend(arenas);
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

    /// Plan the segment: which keys and entries, in which order, at which offsets.
    pub(crate) fn layout(&self) -> Result<Layout<'_>> {
        // Keys that still have an entry, and the keys of present columns, in byte order: ids
        // are stable for equal contents.
        let mut seen = vec![false; self.keys.len()];
        let mut values = 0usize;
        for e in self.bulk.iter().filter(|e| e.live()) {
            seen[e.kid as usize] = true;
            values += (e.len as usize).next_multiple_of(VALUE_ALIGN);
        }
        for (&(_, _, k), &(_, _, len)) in &self.entries {
            seen[k as usize] = true;
            if len > u32::MAX as usize {
                return Err(Error::InvalidArgument("value larger than 4 GiB".into()));
            }
            values += len.next_multiple_of(VALUE_ALIGN);
        }
        let mut names: Vec<&str> = (0..self.keys.len())
            .filter(|&k| seen[k])
            .map(|k| &*self.keys[k])
            .collect();
        for (c, col) in COLUMNS.iter().enumerate() {
            if self.columns[c].is_some() {
                names.push(col.key);
            }
        }
        names.sort_unstable();
        names.dedup();
        let mut final_id = vec![u32::MAX; self.keys.len()];
        for (new, name) in names.iter().enumerate() {
            if let Some(&old) = self.key_ids.get(*name) {
                final_id[old as usize] = new as u32;
            }
        }
        let mut loose: Vec<BulkEntry> = self
            .entries
            .iter()
            .map(|(&k, &v)| BulkEntry::of(k, v))
            .collect();
        loose.sort_unstable_by_key(|e| packed(e.class, e.id, final_id[e.kid as usize]));

        let key_count = names.len();
        let key_slots = slots_for(key_count);
        let entry_count = self.bulk_live + loose.len();
        let entry_slots = slots_for(entry_count);
        if entry_count > u32::MAX as usize / 2 {
            return Err(Error::InvalidArgument(
                "too many entries for one table".into(),
            ));
        }
        let align = |n: usize| n.next_multiple_of(REGION_ALIGN);
        let keys_off = align(HEADER_LEN + size_of::<TableHeader>());
        let key_index_off = align(keys_off + key_count * size_of::<KeyEntry>());
        let strings_off = align(key_index_off + key_slots * 4);
        let strings_len: usize = names.iter().map(|n| n.len()).sum();
        let entries_off = align(strings_off + strings_len);
        let entry_index_off = align(entries_off + entry_count * size_of::<Entry>());
        let columns_off = align(entry_index_off + entry_slots * 4);
        let mut end = columns_off;
        let mut column_mask = 0u32;
        let mut column_blocks = 0u32;
        let blocked: [Option<Blocked>; COLUMNS.len()] = std::array::from_fn(|c| {
            let up_to = self
                .plain_columns_up_to
                .unwrap_or(column_blocks::PLAIN_UP_TO);
            Blocked::plan(self.columns[c].as_deref()?, COLUMNS[c].kind, up_to)
        });
        for (c, col) in self.columns.iter().enumerate() {
            if col.is_some() {
                column_mask |= 1 << c;
                let len = match &blocked[c] {
                    Some(b) => {
                        column_blocks |= 1 << c;
                        b.len()
                    }
                    None => self.ranks as usize * COLUMNS[c].kind.width(),
                };
                end = align(end) + len;
            }
        }
        let values_off = end.next_multiple_of(VALUE_ALIGN);
        // The last entry in segment order: its value is padded to REGION_ALIGN, not VALUE_ALIGN.
        let last_bulk = self.bulk.iter().rev().find(|e| e.live());
        let last = match (last_bulk, loose.last()) {
            (Some(b), Some(l)) => {
                let kb = packed(b.class, b.id, final_id[b.kid as usize]);
                let kl = packed(l.class, l.id, final_id[l.kid as usize]);
                Some(if kb > kl { b } else { l })
            }
            (b, l) => b.or(l),
        };
        let total = match last {
            None => align(end),
            Some(e) => align(
                values_off + values - (e.len as usize).next_multiple_of(VALUE_ALIGN)
                    + e.len as usize,
            ),
        };
        Ok(Layout {
            b: self,
            names,
            final_id,
            loose,
            entry_count,
            key_slots,
            entry_slots,
            keys_off,
            key_index_off,
            strings_off,
            strings_len,
            entries_off,
            entry_index_off,
            columns_off,
            column_mask,
            column_blocks,
            blocked,
            values_off,
            total,
        })
    }

    /// Encode the segment for generation `generation` (header state BUILDING).
    /// Deterministic: the same contents give the same bytes whatever the insertion order.
    pub fn encode(&self, generation: u64) -> Result<Vec<u8>> {
        let layout = self.layout()?;
        let mut buf = vec![0u8; layout.total_len()];
        layout.write(&mut buf[..], generation)?;
        Ok(buf)
    }
}

/// Refuse a key the format cannot hold.
pub(crate) fn check_key(key: &str) -> Result<()> {
    if key.is_empty() || key.len() > MAX_KEY_LEN || key.as_bytes().contains(&0) {
        return Err(Error::InvalidArgument(format!(
            "bad key {key:?} (1..=511 bytes, no NUL)"
        )));
    }
    Ok(())
}

/// A planned table segment ([`TableBuilder::layout`]): every region's offset and the file's
/// length, known before a byte is written.
pub(crate) struct Layout<'a> {
    b: &'a TableBuilder,
    names: Vec<&'a str>,
    /// Builder key id → key id in the segment.
    final_id: Vec<u32>,
    /// The one-by-one entries, in segment order.
    loose: Vec<BulkEntry>,
    entry_count: usize,
    key_slots: usize,
    entry_slots: usize,
    keys_off: usize,
    key_index_off: usize,
    strings_off: usize,
    strings_len: usize,
    entries_off: usize,
    entry_index_off: usize,
    columns_off: usize,
    column_mask: u32,
    /// Bit `c`: column `c` is stored in blocks (`blocked[c]`).
    column_blocks: u32,
    blocked: [Option<Blocked>; COLUMNS.len()],
    values_off: usize,
    total: usize,
}

fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
}
fn put64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
}

/// Hash-index slots in one bucket of [`fill_index`]: 32 KiB of slots, which stay in cache while
/// the bucket's items are inserted.
const BUCKET_SLOTS_LOG2: u32 = 13;

/// Fill a hash index (format.md "Lookup": linear probing) whose `slots` bytes are zero: item
/// `i` (stored as `i + 1`) goes to the first free slot from `homes[i]`.
///
/// A large index is filled bucket by bucket (items grouped by the top bits of their home slot,
/// in item order inside a bucket), so its slots are written while in cache instead of at
/// random over megabytes. Any insertion order gives a valid index (a probe from an item's home
/// slot meets no empty slot before the item); a small index (one bucket) is filled in item
/// order, as it always was.
fn fill_index(slots: &mut [u8], homes: &[u32]) {
    let n = slots.len() / 4;
    if n == 0 {
        return;
    }
    let mask = n - 1;
    let mut insert = |item: u32, home: u32| {
        let mut s = home as usize;
        loop {
            let slot = &mut slots[s * 4..s * 4 + 4];
            if slot == [0u8; 4] {
                slot.copy_from_slice(&(item + 1).to_ne_bytes());
                return;
            }
            s = (s + 1) & mask;
        }
    };
    let buckets = n >> BUCKET_SLOTS_LOG2;
    if buckets <= 1 {
        for (i, &h) in homes.iter().enumerate() {
            insert(i as u32, h);
        }
        return;
    }
    let mut next = vec![0usize; buckets];
    for &h in homes {
        next[(h >> BUCKET_SLOTS_LOG2) as usize] += 1;
    }
    let mut sum = 0;
    for c in &mut next {
        (*c, sum) = (sum, sum + *c);
    }
    // (item, home) grouped by bucket: written as `buckets` sequential streams.
    let mut grouped = vec![0u64; homes.len()];
    for (i, &h) in homes.iter().enumerate() {
        let b = &mut next[(h >> BUCKET_SLOTS_LOG2) as usize];
        grouped[*b] = ((i as u64) << 32) | h as u64;
        *b += 1;
    }
    for g in grouped {
        insert((g >> 32) as u32, g as u32);
    }
}

/// Records of the entry region written per chunk: 192 KiB, written while in cache.
const ENTRY_CHUNK: usize = 8192;
/// Ranks of a proc column [`Layout::write`] converts per write.
const COLUMN_CHUNK: usize = 16384;
/// Pieces per gathered write of values (IOV_MAX is 1024 on Linux).
const MAX_PIECES: usize = 1024;
/// Zeros for the padding between values.
const ZEROS: [u8; VALUE_ALIGN] = [0; VALUE_ALIGN];

/// Values on their way to the segment: runs of bytes adjacent in the builder's arenas (a fence
/// batch's cards, 16-byte multiples in rank order, are one run), and padding; written with one
/// gathered write per `MAX_PIECES` pieces.
struct ValueWriter<'a> {
    arenas: &'a [Vec<u8>],
    /// File offset of the first piece.
    off: usize,
    /// (location, length) of arena bytes, or (u64::MAX, padding length).
    pieces: Vec<(u64, usize)>,
    /// File offset after the last piece.
    end: usize,
}

impl ValueWriter<'_> {
    fn push(&mut self, sink: &mut (impl Sink + ?Sized), loc: u64, len: usize) -> Result<()> {
        if let Some(last) = self.pieces.last_mut() {
            let adjacent = last.0 != u64::MAX
                && if loc == u64::MAX {
                    // Padding the arena holds already (a run padded as the file is): zeros
                    // right after the last piece.
                    let off = (last.0 & LOC_MASK) as usize + last.1;
                    self.arenas[(last.0 >> LOC_BITS) as usize]
                        .get(off..off + len)
                        .is_some_and(|pad| pad.iter().all(|&b| b == 0))
                } else {
                    last.0 + last.1 as u64 == loc && last.0 >> LOC_BITS == loc >> LOC_BITS
                };
            if adjacent {
                last.1 += len;
                self.end += len;
                return Ok(());
            }
        }
        if self.pieces.len() == MAX_PIECES {
            self.flush(sink)?;
        }
        self.pieces.push((loc, len));
        self.end += len;
        Ok(())
    }

    fn flush(&mut self, sink: &mut (impl Sink + ?Sized)) -> Result<()> {
        let bufs: Vec<&[u8]> = self
            .pieces
            .iter()
            .map(|&(loc, len)| match loc {
                u64::MAX => &ZEROS[..len],
                loc => value_in(self.arenas, loc, len),
            })
            .collect();
        sink.write_all_at(self.off, &bufs)?;
        self.pieces.clear();
        self.off = self.end;
        Ok(())
    }
}

impl Layout<'_> {
    /// Length of the segment file.
    pub(crate) fn total_len(&self) -> usize {
        self.total
    }

    /// Write the segment for generation `generation` (header state BUILDING) into `out`, whose
    /// `total_len()` bytes are zero (a fresh, fallocated file or a zeroed buffer): padding and
    /// reserved fields are not written. Every region is written sequentially: the head (headers,
    /// keys, strings) from a small buffer, entries per chunk, values straight from the arenas,
    /// the entry index once built.
    pub(crate) fn write(&self, out: &mut (impl Sink + ?Sized), generation: u64) -> Result<()> {
        let b = self.b;
        let mut head = vec![0u8; self.entries_off];
        let mut enc = Encoder::default();
        encode_header(&mut enc, Kind::Table, generation, self.total as u64);
        head[..HEADER_LEN].copy_from_slice(&enc.buf);
        let th = HEADER_LEN;
        put32(&mut head, th, self.names.len() as u32);
        put32(&mut head, th + 4, self.key_slots as u32);
        put64(&mut head, th + 8, self.keys_off as u64);
        put64(&mut head, th + 16, self.key_index_off as u64);
        put64(&mut head, th + 24, self.strings_off as u64);
        put64(&mut head, th + 32, self.strings_len as u64);
        put32(&mut head, th + 40, self.entry_count as u32);
        put32(&mut head, th + 44, self.entry_slots as u32);
        put64(&mut head, th + 48, self.entries_off as u64);
        put64(&mut head, th + 56, self.entry_index_off as u64);
        if self.column_mask != 0 {
            put32(&mut head, th + 64, b.ranks);
            put32(&mut head, th + 68, self.column_mask);
            put64(&mut head, th + 72, self.columns_off as u64);
            put32(&mut head, th + 80, self.column_blocks);
        }

        // Keys, key index, strings.
        let mut str_off = 0usize;
        let mut homes = Vec::with_capacity(self.names.len());
        for (kid, name) in self.names.iter().enumerate() {
            let h = key_hash(name.as_bytes());
            homes.push((h as usize & self.key_slots.wrapping_sub(1)) as u32);
            let rec = self.keys_off + kid * size_of::<KeyEntry>();
            put64(&mut head, rec, h);
            put32(&mut head, rec + 8, str_off as u32);
            put32(&mut head, rec + 12, name.len() as u32);
            let s = self.strings_off + str_off;
            head[s..s + name.len()].copy_from_slice(name.as_bytes());
            str_off += name.len();
        }
        fill_index(
            &mut head[self.key_index_off..self.key_index_off + self.key_slots * 4],
            &homes,
        );
        out.write_at(0, &head)?;
        drop(head);

        // Entries (per chunk) and their values (gathered), in segment order; the entry index
        // after, from the entries' home slots.
        let final_id = &self.final_id;
        let key = |e: &BulkEntry| packed(e.class, e.id, final_id[e.kid as usize]);
        let mut bulk = b.bulk.iter().copied().filter(BulkEntry::live);
        let mask = self.entry_slots.wrapping_sub(1);
        let mut homes = Vec::with_capacity(self.entry_count);
        let mut chunk = vec![0u8; ENTRY_CHUNK.min(self.entry_count) * size_of::<Entry>()];
        let (mut in_chunk, mut chunk_off) = (0usize, self.entries_off);
        let mut values = ValueWriter {
            arenas: &b.arenas,
            off: self.values_off,
            pieces: Vec::with_capacity(MAX_PIECES),
            end: self.values_off,
        };
        let mut v = self.values_off;
        let mut put = |e: BulkEntry| -> Result<()> {
            let kid = final_id[e.kid as usize];
            let len = e.len as usize;
            let r = &mut chunk[in_chunk * size_of::<Entry>()..(in_chunk + 1) * size_of::<Entry>()];
            r[0..2].copy_from_slice(&e.class.to_ne_bytes());
            r[2..4].copy_from_slice(&(e.flags & !DEAD).to_ne_bytes());
            r[4..8].copy_from_slice(&e.id.to_ne_bytes());
            r[8..12].copy_from_slice(&kid.to_ne_bytes());
            r[12..16].copy_from_slice(&e.len.to_ne_bytes());
            r[16..24].copy_from_slice(&(v as u64).to_ne_bytes());
            in_chunk += 1;
            if in_chunk * size_of::<Entry>() == chunk.len() {
                out.write_at(chunk_off, &chunk)?;
                chunk_off += chunk.len();
                in_chunk = 0;
            }
            if v != values.end {
                values.push(out, u64::MAX, v - values.end)?;
            }
            if len > 0 {
                values.push(out, e.loc, len)?;
            }
            v = (v + len).next_multiple_of(VALUE_ALIGN);
            homes.push((entry_hash(e.class, e.id, kid) as usize & mask) as u32);
            Ok(())
        };
        let first_bulk = b.bulk.iter().find(|e| e.live()).map(key);
        if self.loose.is_empty() {
            bulk.try_for_each(&mut put)?;
        } else if first_bulk.is_none_or(|f| self.loose.last().map(key) < Some(f)) {
            // Every one-by-one entry sorts first (a fence's RANK_UNDEF index, class 6, before
            // its posted data): no per-entry merge.
            self.loose
                .iter()
                .copied()
                .chain(bulk)
                .try_for_each(&mut put)?;
        } else {
            merge_by(bulk, self.loose.iter().copied(), key).try_for_each(&mut put)?;
        }
        if in_chunk > 0 {
            out.write_at(chunk_off, &chunk[..in_chunk * size_of::<Entry>()])?;
        }
        if !values.pieces.is_empty() {
            values.flush(out)?;
        }
        drop(chunk);
        debug_assert_eq!(homes.len(), self.entry_count);
        let mut index = vec![0u8; self.entry_slots * 4];
        fill_index(&mut index, &homes);
        drop(homes);
        out.write_at(self.entry_index_off, &index)?;
        drop(index);

        // Proc columns, present ones in column order, each 8-aligned, written a chunk at a
        // time from one small buffer: at 1M ranks a buffer of all of them would be 20 MB of
        // fresh pages, each a page fault, for one copy.
        let mut off = self.columns_off;
        let mut buf = Vec::with_capacity(COLUMN_CHUNK * 4);
        for (c, col) in b.columns.iter().enumerate() {
            let Some(col) = col else { continue };
            off = off.next_multiple_of(REGION_ALIGN);
            if let Some(blocked) = &self.blocked[c] {
                blocked.write(col, COLUMNS[c].kind, out, off)?;
                off += blocked.len();
                continue;
            }
            for part in col.chunks(COLUMN_CHUNK) {
                buf.clear();
                match COLUMNS[c].kind {
                    ColumnKind::Uint16 => part
                        .iter()
                        .for_each(|&v| buf.extend_from_slice(&(v as u16).to_ne_bytes())),
                    ColumnKind::Uint32 | ColumnKind::ProcRank => part
                        .iter()
                        .for_each(|&v| buf.extend_from_slice(&v.to_ne_bytes())),
                }
                out.write_at(off, &buf)?;
                off += buf.len();
            }
        }
        Ok(())
    }
}

/// [`TableView::node_dense`] of one key from the (node id, entry index) of its node entries:
/// a dense array when the largest node id is below 4 x its node entries + 64 (node ids are
/// dense in a registration: 0..nodes), else empty.
fn dense_node_index(entries: &[(u32, u32)]) -> Box<[u32]> {
    let max = entries.iter().map(|&(id, _)| id).max();
    match max {
        Some(max) if (max as usize) < 4 * entries.len() + 64 => {
            let mut dense = vec![0u32; max as usize + 1];
            for &(id, e) in entries {
                dense[id as usize] = e + 1;
            }
            dense.into_boxed_slice()
        }
        _ => Box::default(),
    }
}

/// A present proc column of a mapped table.
#[derive(Clone, Copy, Debug)]
struct ColumnAt {
    kid: u32,
    /// Byte offset of a plain column.
    off: usize,
    /// Where a blocked column's parts are (`column_blocks`).
    blocked: Option<BlockedAt>,
}

/// How a table stores one of its proc columns (format.md "Proc columns", "Blocked columns"):
/// what `rshm dump` shows an admin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnShape {
    /// The column's key (`pmix.lrank`, ...).
    pub key: &'static str,
    /// Bytes per value.
    pub width: usize,
    /// Bytes the column takes in the segment.
    pub bytes: usize,
    /// Blocked: (blocks of 32 ranks, blocks stored as values); `None`: plain.
    pub blocks: Option<(usize, usize)>,
}

/// A mapped, validated table.
pub struct TableView {
    values: ValidatedValues,
    h: TableHeader,
    /// Per column, when present: where it lies.
    columns: [Option<ColumnAt>; COLUMNS.len()],
    /// Per key id, what the reader learnt about it while validating (process-local, built
    /// once at map time; the shared bytes are never written): lets a get skip the entry index
    /// for the job realm and for realms the key has no entry in.
    keys: Box<[KeyInfo]>,
    /// Per key id that has node entries (sorted by key id): 1 + the entry index of (node `id`,
    /// key) at `[id]` (0: none), when the key's node entries are dense enough; else empty. A node value (a rank's hostname, the
    /// node size) is then one array read instead of a probe of the entry index, which is a
    /// cache miss in a big table.
    ///
    /// Built on a key's first node get, not at map time: a client pays memory only for the
    /// node keys it asks (PMIX_HOSTNAME: 4 B per node), so its private memory stays flat in M.
    node_dense: Box<[(u32, NodeIndex)]>,
    /// The table's keys of at most 16 bytes, found without the shared key index.
    short: ShortKeys,
    /// The job's session and local node (`jobdata::keys::meta`), read at map time: a session
    /// or node key's default realm is then known without a lookup.
    job_meta: JobMeta,
}

/// What a job table says of its session and of the store's own node (`jobdata::keys::meta`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobMeta {
    /// `meta::SESSION_ID`, when registered.
    pub session: Option<u32>,
    /// `meta::LOCAL_NODEID`, when the registration names the store's node.
    pub local_node: Option<u32>,
}

/// Keys of 1 to 16 bytes (nearly every PMIx key) as the reader finds them without the shared
/// key index: each key's bytes in two overlapping words, open-addressed by a multiply-shift of
/// those words. Process-local, built at map time; 24 bytes a slot, at most [`SHORT_KEYS_MAX`]
/// keys (a table with more short keys than that looks every key up in the shared index). The
/// shared index's probe reads bounds-checked records and the key's string; this is one slot
/// compare, for the get of a key a client asks a million times.
#[derive(Default)]
struct ShortKeys {
    /// Empty slots have `len` 0.
    slots: Box<[ShortKey]>,
    /// log2 of the slot count.
    bits: u32,
}

#[derive(Clone, Copy, Default)]
struct ShortKey {
    lo: u64,
    hi: u64,
    len: u32,
    kid: u32,
}

/// Short keys a [`ShortKeys`] holds at most (192 KiB of slots).
const SHORT_KEYS_MAX: usize = 4096;

/// A key of 1 to 16 bytes as two words: for each length class the two loads overlap and cover
/// every byte, so (length, words) are equal exactly when the bytes are.
#[inline]
fn short_words(k: &[u8]) -> Option<(u64, u64)> {
    let n = k.len();
    Some(match n {
        8..=16 => (u64_at(k, 0)?, u64_at(k, n - 8)?),
        4..=7 => (u32_at(k, 0)? as u64, u32_at(k, n - 4)? as u64),
        2..=3 => (u16_at(k, 0)? as u64, u16_at(k, n - 2)? as u64),
        1 => (k[0] as u64, 0),
        _ => return None,
    })
}

impl ShortKeys {
    #[inline]
    fn home(&self, lo: u64, hi: u64, len: usize) -> usize {
        let h = (lo ^ hi.rotate_left(29) ^ len as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (63 - self.bits) >> 1) as usize
    }

    /// From (key id, key bytes) of every key of a table; empty if it has too many short ones.
    fn build<'a>(keys: impl Iterator<Item = (u32, &'a [u8])> + Clone) -> ShortKeys {
        let count = keys
            .clone()
            .filter(|(_, k)| short_words(k).is_some())
            .count();
        if count == 0 || count > SHORT_KEYS_MAX {
            return ShortKeys::default();
        }
        let bits = (count * 2).next_power_of_two().trailing_zeros();
        let mut t = ShortKeys {
            slots: vec![ShortKey::default(); 1 << bits].into_boxed_slice(),
            bits,
        };
        let mask = t.slots.len() - 1;
        for (kid, k) in keys {
            let Some((lo, hi)) = short_words(k) else {
                continue;
            };
            let mut s = t.home(lo, hi, k.len());
            while t.slots[s].len != 0 {
                s = (s + 1) & mask;
            }
            t.slots[s] = ShortKey {
                lo,
                hi,
                len: k.len() as u32,
                kid,
            };
        }
        t
    }

    /// `Some(answer)` for a short key when the table's short keys are all here; `None`: ask
    /// the shared index.
    #[inline]
    fn find(&self, key: &[u8]) -> Option<Option<u32>> {
        if self.slots.is_empty() {
            return None;
        }
        let (lo, hi) = short_words(key)?;
        let mask = self.slots.len() - 1;
        let mut s = self.home(lo, hi, key.len());
        loop {
            let e = self.slots[s];
            if e.len == 0 {
                return Some(None);
            }
            if e.lo == lo && e.hi == hi && e.len as usize == key.len() {
                return Some(Some(e.kid));
            }
            s = (s + 1) & mask;
        }
    }
}

/// A key's dense node index ([`TableView::node_dense`]), set on first use.
type NodeIndex = OnceLock<Box<[u32]>>;

/// What a [`TableView`] knows of one key id without probing the entry index.
#[derive(Clone, Copy)]
struct KeyInfo {
    /// Bit `min(class, 31)` is set when the key has an entry of that class.
    classes: u32,
    /// 1 + the entry index of (job realm, key); 0 when there is none.
    job: u32,
    /// 1 + the proc column holding the key; 0 when none does.
    column: u8,
    /// 1 + the key's slot in `node_dense`; 0 when it has none (or its slot does not fit).
    node: u16,
    /// The key's default realm (standard 6.1), so a job-data get does not match its name.
    default: DefaultRealm,
}

// 12 bytes a key of a client's private memory (a node-name key per node at scale).
const _: () = assert!(size_of::<KeyInfo>() == 12);

impl Default for KeyInfo {
    fn default() -> Self {
        KeyInfo {
            classes: 0,
            job: 0,
            column: 0,
            node: 0,
            default: DefaultRealm::Proc,
        }
    }
}

/// The [`KeyInfo::classes`] bit of entry class `class`.
const fn class_bit(class: u16) -> u32 {
    1 << if class < 31 { class as u32 } else { 31 }
}

const JOB_CLASS_ID: (u16, u32) = Realm::Job.class_id();
const NODE_CLASS: u16 = Realm::Node(0).class_id().0;

const KEY_REC: u64 = size_of::<KeyEntry>() as u64;
const ENTRY_REC: u64 = size_of::<Entry>() as u64;

impl TableView {
    /// Validate a mapped table segment whose common header was already checked.
    pub fn new(map: Arc<RoMap>) -> Result<TableView> {
        let b = map.bytes();
        let th = HEADER_LEN;
        let corrupt = |what| move || Error::Corrupt(what);
        let r32 = |o: usize| u32_at(b, th + o).ok_or(Error::Corrupt("table header"));
        let r64 = |o: usize| u64_at(b, th + o).ok_or(Error::Corrupt("table header"));
        let h = TableHeader {
            key_count: r32(0)?,
            key_slots: r32(4)?,
            keys_off: r64(8)?,
            key_index_off: r64(16)?,
            strings_off: r64(24)?,
            strings_len: r64(32)?,
            entry_count: r32(40)?,
            entry_slots: r32(44)?,
            entries_off: r64(48)?,
            entry_index_off: r64(56)?,
            rank_count: r32(64)?,
            column_mask: r32(68)?,
            columns_off: r64(72)?,
            column_blocks: r32(80)?,
            reserved: [0; 44],
        };
        let region = |off: u64, count: u32, size: u64, what: &'static str| -> Result<()> {
            let len = (count as u64)
                .checked_mul(size)
                .ok_or(Error::Corrupt(what))?;
            if count > 0
                && (!off.is_multiple_of(REGION_ALIGN as u64) || slice_at(b, off, len).is_none())
            {
                return Err(Error::Corrupt(what));
            }
            Ok(())
        };
        let slots_ok = |count: u32, slots: u32| {
            (count == 0 && slots == 0) || (slots.is_power_of_two() && slots > count)
        };
        if h.key_count as usize > MAX_KEYS || !slots_ok(h.key_count, h.key_slots) {
            return Err(Error::Corrupt("key count or slots"));
        }
        if !slots_ok(h.entry_count, h.entry_slots) {
            return Err(Error::Corrupt("entry count or slots"));
        }
        region(h.keys_off, h.key_count, KEY_REC, "key records")?;
        region(h.key_index_off, h.key_slots, 4, "key index")?;
        region(h.entries_off, h.entry_count, ENTRY_REC, "entry records")?;
        region(h.entry_index_off, h.entry_slots, 4, "entry index")?;
        if h.key_count > 0 {
            slice_at(b, h.strings_off, h.strings_len).ok_or_else(corrupt("key strings"))?;
        }
        let mut keys = vec![KeyInfo::default(); h.key_count as usize].into_boxed_slice();
        for (k, info) in keys.iter_mut().enumerate() {
            let rec = (h.keys_off + k as u64 * KEY_REC) as usize;
            let off = u32_at(b, rec + 8).ok_or_else(corrupt("key record"))? as u64;
            let len = u32_at(b, rec + 12).ok_or_else(corrupt("key record"))? as u64;
            if len == 0 || len > MAX_KEY_LEN as u64 || off + len > h.strings_len {
                return Err(Error::Corrupt("key string out of bounds"));
            }
            if let Some(Ok(name)) = slice_at(b, h.strings_off + off, len).map(std::str::from_utf8) {
                info.default = default_realm(name);
            }
        }
        for (off, slots, count) in [
            (h.key_index_off, h.key_slots, h.key_count),
            (h.entry_index_off, h.entry_slots, h.entry_count),
        ] {
            for s in 0..slots as u64 {
                let v = u32_at(b, (off + s * 4) as usize).ok_or_else(corrupt("index slot"))?;
                if v > count {
                    return Err(Error::Corrupt("index slot out of range"));
                }
            }
        }
        for e in 0..h.entry_count as u64 {
            let rec = (h.entries_off + e * ENTRY_REC) as usize;
            let key_id = u32_at(b, rec + 8).ok_or_else(corrupt("entry record"))?;
            let class = u16_at(b, rec).ok_or_else(corrupt("entry record"))?;
            let id = u32_at(b, rec + 4).ok_or_else(corrupt("entry record"))?;
            let Some(k) = keys.get_mut(key_id as usize) else {
                return Err(Error::Corrupt("entry key id out of range"));
            };
            k.classes |= class_bit(class);
            // (class, id, key) is unique in a valid table; in a corrupt one any of the
            // duplicates is as good an answer as the index's (all were validated).
            if (class, id) == JOB_CLASS_ID {
                k.job = e as u32 + 1;
            }
        }
        // A slot per key that has node entries (a few dozen), not per key: the hostname index
        // has a key per node.
        let node_bit = class_bit(NODE_CLASS);
        let node_dense: Box<[(u32, NodeIndex)]> = (0..keys.len() as u32)
            .filter(|&k| keys[k as usize].classes & node_bit != 0)
            .map(|k| (k, OnceLock::new()))
            .collect();
        for (slot, (k, _)) in node_dense.iter().enumerate() {
            // Keys past u16's slots find theirs by a search (`node_dense`).
            if let Ok(slot) = u16::try_from(slot + 1) {
                keys[*k as usize].node = slot;
            }
        }
        let values =
            ValidatedValues::validate(map, h.entries_off as usize, h.entry_count as usize)?;
        let mut view = TableView {
            values,
            h,
            columns: [None; COLUMNS.len()],
            keys,
            node_dense,
            short: ShortKeys::default(),
            job_meta: JobMeta::default(),
        };
        // Every key string was checked in bounds above.
        view.short =
            ShortKeys::build((0..h.key_count).filter_map(|kid| Some((kid, view.key_str(kid)?))));
        let meta_u32 = |key: &str| {
            let v = view.get(Realm::Meta, key)?.as_u64()?;
            u32::try_from(v).ok()
        };
        view.job_meta = JobMeta {
            session: meta_u32(meta::SESSION_ID),
            local_node: meta_u32(meta::LOCAL_NODEID),
        };
        if h.column_mask >> COLUMNS.len() != 0 || h.column_blocks & !h.column_mask != 0 {
            return Err(Error::Corrupt("unknown proc column"));
        }
        let mut off = h.columns_off;
        for (c, col) in COLUMNS.iter().enumerate() {
            if h.column_mask & (1 << c) == 0 {
                continue;
            }
            off = off
                .checked_next_multiple_of(REGION_ALIGN as u64)
                .ok_or_else(corrupt("proc columns"))?;
            let width = col.kind.width();
            let (blocked, len) = if h.column_blocks & (1 << c) != 0 {
                let (at, len) =
                    column_blocks::validate(view.bytes(), off as usize, h.rank_count, width)
                        .ok_or_else(corrupt("blocked proc column"))?;
                (Some(at), len as u64)
            } else {
                let len = h.rank_count as u64 * width as u64;
                slice_at(view.bytes(), off, len)
                    .ok_or_else(corrupt("proc column out of bounds"))?;
                (None, len)
            };
            let kid = view
                .key_id(col.key.as_bytes())
                .ok_or_else(corrupt("proc column key"))?;
            view.columns[c] = Some(ColumnAt {
                kid,
                off: off as usize,
                blocked,
            });
            if let Some(k) = view.keys.get_mut(kid as usize) {
                k.column = c as u8 + 1;
            }
            off += len;
        }
        Ok(view)
    }

    /// The proc-column value of (`rank`, key id `kid`), if a column holds it.
    fn column(&self, kid: u32, rank: u32) -> Option<ValueRef<'_>> {
        match self.keys.get(kid as usize)?.column {
            0 => None,
            c => self.column_at(c as usize - 1, rank),
        }
    }

    /// The value of `rank` in proc column `c`, if present.
    #[inline]
    pub(crate) fn column_at(&self, c: usize, rank: u32) -> Option<ValueRef<'_>> {
        if rank >= self.h.rank_count {
            return None;
        }
        let col = *self.columns.get(c)?.as_ref()?;
        let b = self.bytes();
        let kind = COLUMNS[c].kind;
        let raw = match (col.blocked, kind) {
            (Some(at), kind) => column_blocks::value_at(b, at, rank, kind.width())?,
            (None, ColumnKind::Uint16) => u16_at(b, col.off + rank as usize * 2)?.into(),
            (None, _) => u32_at(b, col.off + rank as usize * 4)?,
        };
        let v = match kind {
            // A forged block's line may leave u16: absent, as the pattern is.
            ColumnKind::Uint16 => match u16::try_from(raw) {
                Ok(u16::MAX) | Err(_) => return None,
                Ok(v) => ValueRef::Uint16(v),
            },
            _ if raw == u32::MAX => return None,
            ColumnKind::ProcRank => ValueRef::ProcRank(raw),
            ColumnKind::Uint32 => ValueRef::Uint32(raw),
        };
        Some(v)
    }

    fn bytes(&self) -> &[u8] {
        self.values.bytes()
    }

    /// The key id of `key`, if the table has it.
    #[inline]
    pub fn key_id(&self, key: &[u8]) -> Option<u32> {
        match self.short.find(key) {
            Some(found) => found,
            None => self.key_id_shared(key),
        }
    }

    /// [`TableView::key_id`] through the segment's own key index.
    fn key_id_shared(&self, key: &[u8]) -> Option<u32> {
        if self.h.key_slots == 0 {
            return None;
        }
        let b = self.bytes();
        let hash = key_hash(key);
        let mask = self.h.key_slots as u64 - 1;
        let mut s = hash & mask;
        for _ in 0..self.h.key_slots {
            let slot = u32_at(b, (self.h.key_index_off + s * 4) as usize)?;
            if slot == 0 {
                return None;
            }
            let kid = slot - 1;
            let rec = (self.h.keys_off + kid as u64 * KEY_REC) as usize;
            if u64_at(b, rec)? == hash && same_bytes(self.key_str(kid)?, key) {
                return Some(kid);
            }
            s = (s + 1) & mask;
        }
        None
    }

    /// The job's session and local node, as registered (read at map time).
    #[inline]
    pub fn job_meta(&self) -> JobMeta {
        self.job_meta
    }

    /// The default realm of key `kid` (its name's, standard 6.1; computed at map time).
    #[inline]
    pub(crate) fn default_realm(&self, kid: u32) -> Option<DefaultRealm> {
        self.keys.get(kid as usize).map(|k| k.default)
    }

    /// The bytes of key `kid`.
    pub fn key_str(&self, kid: u32) -> Option<&[u8]> {
        let b = self.bytes();
        let rec = (self.h.keys_off + kid as u64 * KEY_REC) as usize;
        let off = u32_at(b, rec + 8)? as u64;
        let len = u32_at(b, rec + 12)? as u64;
        slice_at(b, self.h.strings_off + off, len)
    }

    /// The entry index of (`realm`, `kid`).
    fn entry(&self, realm: Realm, kid: u32) -> Option<usize> {
        if self.h.entry_slots == 0 {
            return None;
        }
        let b = self.bytes();
        let (class, id) = realm.class_id();
        // The record we look for: class (bytes 0..2) and id, key_id (bytes 4..12); the flags in
        // between say how the value is stored, not which entry it is.
        let class_bytes = class.to_ne_bytes();
        let mut want = [0u8; 8];
        want[0..4].copy_from_slice(&id.to_ne_bytes());
        want[4..8].copy_from_slice(&kid.to_ne_bytes());
        let mask = self.h.entry_slots as u64 - 1;
        let mut s = entry_hash(class, id, kid) & mask;
        for _ in 0..self.h.entry_slots {
            let slot = u32_at(b, (self.h.entry_index_off + s * 4) as usize)?;
            if slot == 0 {
                return None;
            }
            let e = (slot - 1) as usize;
            let rec = self.h.entries_off as usize + e * ENTRY_REC as usize;
            if b.get(rec..rec + 2)? == class_bytes && b.get(rec + 4..rec + 12)? == want {
                return Some(e);
            }
            s = (s + 1) & mask;
        }
        None
    }

    /// The value of `key` in `realm`.
    #[inline]
    pub fn get(&self, realm: Realm, key: &str) -> Option<ValueRef<'_>> {
        self.get_by_id(realm, self.key_id(key.as_bytes())?)
    }

    /// The value of key id `kid` (from [`TableView::key_id`]) in `realm`: for callers that look
    /// one key up in several realms, so the key is hashed and probed once.
    ///
    /// The two answers of most gets, a proc column and the job realm's entry, are inlined into
    /// the caller (so the value is not written to memory and read back); other realms probe
    /// out of line.
    #[inline(always)]
    pub fn get_by_id(&self, realm: Realm, kid: u32) -> Option<ValueRef<'_>> {
        let info = *self.keys.get(kid as usize)?;
        match (realm, info.column) {
            (Realm::Proc(rank), c @ 1..) => {
                if let Some(v) = self.column_at(c as usize - 1, rank) {
                    return Some(v);
                }
            }
            (Realm::Job, _) => {
                return self
                    .values
                    .value(info.job.checked_sub(1)? as usize)
                    .map(ValueRef::from);
            }
            _ => {}
        }
        self.get_in_realm(realm, kid, info)
    }

    /// [`TableView::get_by_id`] in a realm other than the job's (session, app, node, proc
    /// entries): a dense node index or a probe of the entry index.
    #[inline(never)]
    fn get_in_realm(&self, realm: Realm, kid: u32, info: KeyInfo) -> Option<ValueRef<'_>> {
        let (class, id) = realm.class_id();
        // No entry of this class has the key: no need to probe (a cold probe is a cache miss
        // or two in a big table).
        if info.classes & class_bit(class) == 0 {
            return None;
        }
        let dense = match class {
            NODE_CLASS => Some(self.node_dense(kid)).filter(|d| !d.is_empty()),
            _ => None,
        };
        let e = if let Some(d) = dense {
            d.get(id as usize)?.checked_sub(1)? as usize
        } else {
            self.entry(realm, kid)?
        };
        self.values.value(e).map(ValueRef::from)
    }

    /// The dense node index of key id `kid` (empty when its node ids are sparse), built on
    /// first use by one walk over the entry records. Threads that race build it each and the
    /// first to finish stores it: no reader waits for another's walk.
    fn node_dense(&self, kid: u32) -> &[u32] {
        let i = match self.keys.get(kid as usize).map(|k| k.node) {
            Some(slot @ 1..) => slot as usize - 1,
            _ => match self.node_dense.binary_search_by_key(&kid, |(k, _)| *k) {
                Ok(i) => i,
                Err(_) => return &[],
            },
        };
        let cell = &self.node_dense[i].1;
        if let Some(d) = cell.get() {
            return d;
        }
        let b = self.bytes();
        let mut entries = Vec::new();
        for e in 0..self.h.entry_count as usize {
            let rec = self.h.entries_off as usize + e * ENTRY_REC as usize;
            // Validated at map time: every record is in bounds.
            if u16_at(b, rec) == Some(NODE_CLASS) && u32_at(b, rec + 8) == Some(kid) {
                if let Some(id) = u32_at(b, rec + 4) {
                    entries.push((id, e as u32));
                }
            }
        }
        let _ = cell.set(dense_node_index(&entries));
        cell.get().map_or(&[], |d| d)
    }

    /// Every value: the entries in (realm, key) order, then the proc columns by column and rank.
    /// Entries of unknown classes are skipped.
    pub fn entries(&self) -> impl Iterator<Item = (Realm, &[u8], ValueRef<'_>)> + '_ {
        let b = self.bytes();
        let entries = (0..self.h.entry_count as usize).filter_map(move |e| {
            let rec = self.h.entries_off as usize + e * ENTRY_REC as usize;
            let realm = Realm::from_class_id(u16_at(b, rec)?, u32_at(b, rec + 4)?)?;
            let key = self.key_str(u32_at(b, rec + 8)?)?;
            Some((realm, key, ValueRef::from(self.values.value(e)?)))
        });
        let columns = self
            .columns
            .iter()
            .flatten()
            .flat_map(move |&ColumnAt { kid, .. }| {
                (0..self.h.rank_count).filter_map(move |r| {
                    Some((Realm::Proc(r), self.key_str(kid)?, self.column(kid, r)?))
                })
            });
        entries.chain(columns)
    }

    /// The table's proc columns, in column order, and how each is stored.
    pub fn column_shapes(&self) -> impl Iterator<Item = ColumnShape> + '_ {
        COLUMNS.iter().zip(&self.columns).filter_map(|(col, at)| {
            let width = col.kind.width();
            let ranks = self.h.rank_count;
            let (bytes, blocks) = match at.as_ref()?.blocked {
                Some(b) => {
                    let (blocks, stored) = column_blocks::shape(self.bytes(), b, ranks);
                    let len = column_blocks::blocked_len(blocks, stored, width);
                    (len, Some((blocks, stored)))
                }
                None => (ranks as usize * width, None),
            };
            Some(ColumnShape {
                key: col.key,
                width,
                bytes,
                blocks,
            })
        })
    }

    /// Number of entries (not counting proc-column values).
    pub fn len(&self) -> usize {
        self.h.entry_count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.h.entry_count == 0 && self.h.column_mask == 0
    }

    /// Ranks covered by proc columns.
    pub fn rank_count(&self) -> u32 {
        self.h.rank_count
    }

    /// Size of the mapped segment in bytes.
    pub fn mapped_len(&self) -> usize {
        self.bytes().len()
    }

    /// Whether `addr` lies inside this table's mapping (the C client uses it to know which
    /// mapping a borrowed value keeps alive).
    pub fn contains_addr(&self, addr: usize) -> bool {
        let start = self.bytes().as_ptr() as usize;
        addr >= start && addr < start + self.bytes().len()
    }
}
