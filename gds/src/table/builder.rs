//! [`TableBuilder`]: (realm, key) → value as the writer inserts them one by one (a hash map in
//! any order), the proc columns, the arenas that hold every value's bytes, and their
//! compaction. Bulk merges are in `bulk`, the segment's plan and encoding in `encode`.

use std::collections::hash_map::Entry as MapEntry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::arena::Arena;
use super::bulk::{value_in, BulkEntry, DEAD, LOC_BITS};
use super::check_key;
use crate::error::{try_vec, Error, Result};
use crate::layout::{fmix64, ColumnKind, Realm, COLUMN_KINDS, ENTRY_RAW_BYTES, MAX_KEYS};
use crate::value::Value;
use crate::COLUMN_KEYS;

/// An entry's identity in the builder: (class, id, builder key id).
pub(super) type EntryKey = (u16, u32, u32);

/// Hashes an [`EntryKey`]: small integers (a class, a rank or node id, a key id the builder
/// numbered itself), mixed by [`fmix64`]. A registration inserts some 150,000 entries at 1M
/// ranks, where SipHash was a tenth of each insert; no one chooses these integers to collide
/// (key ids are the builder's own, ids are ranks and node ids of the job).
#[derive(Clone, Copy, Default)]
pub(super) struct EntryHasher(u64);

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

pub(super) type EntryMap = HashMap<EntryKey, StoredValue, BuildHasherDefault<EntryHasher>>;
/// An entry's stored value: (entry flags, location of the archive or the raw bytes in the
/// builder's arenas (see [`LOC_BITS`]), length).
pub(super) type StoredValue = (u16, u64, usize);
/// Arenas a builder keeps before it compacts them into one (every merged run brings its own).
const MAX_ARENAS: usize = 64;

/// Builds a table: (realm, key) → value, latest insert wins.
#[derive(Default, Clone)]
pub struct TableBuilder {
    pub(super) key_ids: HashMap<Box<str>, u32>,
    pub(super) keys: Vec<Box<str>>,
    /// Entries inserted one by one: (class, id, builder key id) → value.
    pub(super) entries: EntryMap,
    /// Entries merged in bulk, sorted by (class, id, key bytes). A (class, id, key) is live at
    /// most once in `entries` and `bulk` together: an insert or remove marks the bulk one DEAD.
    pub(super) bulk: Vec<BulkEntry>,
    /// Live (not DEAD) entries of `bulk`.
    pub(super) bulk_live: usize,
    /// Every value's bytes, appended: no allocation per value, and values inserted in rank
    /// order (a fence batch) are read back almost sequentially by `encode`. Arena 0 receives
    /// inserts; the others are merged runs' arenas, moved in whole (not copied).
    pub(super) arenas: Vec<Arena>,
    /// Bytes of the arenas no entry refers to any more (replaced or removed values).
    pub(super) garbage: usize,
    /// Ranks covered by proc columns (0: none).
    pub(super) ranks: u32,
    /// Proc columns (format.md "Proc columns"), allocated on first use; all-ones = absent.
    pub(super) columns: [Option<Vec<u32>>; COLUMN_KINDS.len()],
    /// Whether a column's key was ever stored as an entry of a proc (so a column insert must
    /// evict it); false in the common case, which keeps column inserts free of hashing.
    pub(super) column_key_in_entries: [bool; COLUMN_KINDS.len()],
    /// [`TableBuilder::block_columns_above`]; `None`: [`column_blocks::PLAIN_UP_TO`](super::column_blocks::PLAIN_UP_TO).
    pub(super) plain_columns_up_to: Option<usize>,
}

/// The column of `key`, if it has one.
pub(super) fn column_of(key: &str) -> Option<usize> {
    COLUMN_KEYS.iter().position(|&k| k == key)
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
            self.arenas.push(Arena::default());
        }
        self.arenas[0].writable().reserve(bytes);
    }

    /// Every proc column, moved out for a registration's read-ahead to fill on several
    /// threads, each value stored inverted (`!v`: zero is absent), so that an absent column
    /// is allocated zeroed (if `allocate`, else left empty) and its pages are faulted in by
    /// the threads that fill them, not all up front by this one. Returns the mask of those
    /// that were present. Give them back with [`TableBuilder::put_columns`].
    /// Errs with [`Error::OutOfSpace`] (nothing taken) if the absent columns' memory cannot be
    /// had.
    pub(crate) fn take_columns(
        &mut self,
        allocate: bool,
    ) -> Result<([Vec<u32>; COLUMN_KINDS.len()], u32)> {
        let ranks = if allocate { self.ranks as usize } else { 0 };
        // `vec![0; n]` is a calloc, whose pages the filling threads fault in, but it aborts
        // when the memory cannot be had: asked for fallibly first, then given back.
        let absent = self.columns.iter().filter(|c| c.is_none()).count();
        drop(try_vec::<u32>(ranks.saturating_mul(absent))?);
        let mut present = 0;
        let cols = std::array::from_fn(|c| match self.columns[c].take() {
            Some(mut col) => {
                present |= 1 << c;
                col.iter_mut().for_each(|v| *v = !*v);
                col
            }
            None => vec![0; ranks],
        });
        Ok((cols, present))
    }

    /// The columns [`TableBuilder::take_columns`] took (inverted), those in `keep` kept (the
    /// others are all-absent). Their values are proc values stored without an entry's
    /// eviction: the caller stored none of these keys as entries of a proc meanwhile.
    pub(crate) fn put_columns(&mut self, cols: [Vec<u32>; COLUMN_KINDS.len()], keep: u32) {
        for (c, mut col) in cols.into_iter().enumerate() {
            debug_assert!(self.columns[c].is_none());
            if keep & (1 << c) != 0 {
                debug_assert_eq!(col.len(), self.ranks as usize);
                col.iter_mut().for_each(|v| *v = !*v);
                self.columns[c] = Some(col);
            }
        }
    }

    /// Whether some rank's value of column `c`'s key is held as an entry (another type than the
    /// column's): then the column alone does not tell whether a rank has a value.
    pub(crate) fn column_key_in_entries(&self, c: usize) -> bool {
        self.column_key_in_entries[c]
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
                match column_value(COLUMN_KINDS[c], value) {
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
        let kind = COLUMN_KINDS[c];
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
                Error::InvalidArgument(format!("{} does not fit a uint16", COLUMN_KEYS[c]))
            })?),
            ColumnKind::Uint32 => Value::Uint32(v),
            ColumnKind::ProcRank => Value::ProcRank(v),
        };
        self.insert(Realm::Proc(rank), COLUMN_KEYS[c], &value)
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
            self.remove_entry(Realm::Proc(rank), COLUMN_KEYS[c]);
        }
    }

    /// The id of `key`, interned if new (and whether it was).
    pub(super) fn intern(&mut self, key: &str) -> Result<(u32, bool)> {
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
        if !realm.is_storable() {
            return Err(Error::InvalidArgument(format!(
                "{realm:?} is not a storable realm"
            )));
        }
        let (kid, new_key) = self.intern(key)?;
        let (class, id) = realm.class_id();
        if self.arenas.is_empty() {
            self.arenas.push(Arena::default());
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
        self.arenas[0].writable().extend_from_slice(bytes);
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
        self.arenas.iter().map(Arena::len).sum()
    }

    /// Rebuild the arenas into one from the live values once replaced ones outweigh them (a
    /// long-lived builder whose values are updated again and again stays proportional to its
    /// contents), or once merged runs brought too many.
    pub(super) fn compact_if_wasteful(&mut self) {
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
                    *arena = Arena::default();
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
        self.arenas = vec![Arena::from(arena)];
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

    /// Every entry as stored: (class, id, key, entry flags, the value's stored bytes), inserted
    /// ones first, in no particular order (proc-column values are not entries: not listed).
    pub(crate) fn stored(&self) -> impl Iterator<Item = (u16, u32, &str, u16, &[u8])> + '_ {
        let loose = self
            .entries
            .iter()
            .map(|(&(class, id, kid), &(flags, loc, len))| (class, id, kid, flags, loc, len));
        let bulk = self
            .bulk
            .iter()
            .filter(|e| e.live())
            .map(|e| (e.class, e.id, e.kid, e.flags, e.loc, e.len as usize));
        loose.chain(bulk).map(|(class, id, kid, flags, loc, len)| {
            (
                class,
                id,
                &*self.keys[kid as usize],
                flags,
                value_in(&self.arenas, loc, len),
            )
        })
    }

    /// Bytes of the live values (what an encoded table holds of values, before alignment).
    pub(crate) fn value_bytes(&self) -> usize {
        self.arena_bytes() - self.garbage
    }

    /// Distinct keys the builder has interned (a bound for [`MAX_KEYS`] checks).
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }
}
