//! Table segments (format.md section 6): the keys and values of one (namespace, part).
//!
//! [`TableBuilder`] is the writer's side: insert (realm, key, value) triples, then encode an
//! immutable segment. [`TableView`] is the reader's: validate once at map time, then look up in
//! a few cache misses (key hash slot, key record, entry slot, entry record, value).

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::sync::Arc;

use crate::bytes::{slice_at, u16_at, u32_at, u64_at, Encoder};
use crate::error::{Error, Result};
use crate::layout::{
    entry_hash, key_hash, slots_for, ColumnKind, Entry, KeyEntry, Kind, Realm, TableHeader,
    COLUMNS, ENTRY_RAW_BYTES, HEADER_LEN, MAX_KEYS, MAX_KEY_LEN, REGION_ALIGN, VALUE_ALIGN,
};
use crate::raw::{RoMap, ValidatedValues};
use crate::segment::encode_header;
use crate::value::Value;
use crate::valueref::ValueRef;

/// An entry's identity in the builder: (class, id, builder key id).
type EntryKey = (u16, u32, u32);
/// An entry's stored value: (entry flags, offset and length of the archive or the raw bytes in
/// the builder's arena).
type StoredValue = (u16, usize, usize);

/// Builds a table: (realm, key) → value, latest insert wins.
#[derive(Default, Clone)]
pub struct TableBuilder {
    key_ids: HashMap<Box<str>, u32>,
    keys: Vec<Box<str>>,
    /// (class, id, builder key id) → archived value bytes.
    entries: HashMap<EntryKey, StoredValue>,
    /// Every value's bytes, appended: no allocation per value, and values inserted in rank
    /// order (a fence batch) are read back almost sequentially by `encode`.
    arena: Vec<u8>,
    /// Bytes of `arena` no entry refers to any more (replaced or removed values).
    garbage: usize,
    /// Ranks covered by proc columns (0: none).
    ranks: u32,
    /// Proc columns (format.md "Proc columns"), allocated on first use; all-ones = absent.
    columns: [Option<Vec<u32>>; COLUMNS.len()],
    /// Whether a column's key was ever stored as an entry of a proc (so a column insert must
    /// evict it); false in the common case, which keeps column inserts free of hashing.
    column_key_in_entries: [bool; COLUMNS.len()],
}

/// The column of `key`, if it has one.
fn column_of(key: &str) -> Option<usize> {
    COLUMNS.iter().position(|c| c.key == key)
}

/// The column value of `value` if its type is the column's and it is not the absent pattern.
fn column_value(kind: ColumnKind, value: &Value) -> Option<u32> {
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

    /// Insert or replace the value of `key` in `realm`.
    pub fn insert(&mut self, realm: Realm, key: &str, value: &Value) -> Result<()> {
        if let (Realm::Proc(r), Some(c)) = (realm, column_of(key)) {
            if r < self.ranks {
                let ranks = self.ranks as usize;
                let col = &mut self.columns[c];
                match column_value(COLUMNS[c].kind, value) {
                    Some(v) => {
                        col.get_or_insert_with(|| vec![u32::MAX; ranks])[r as usize] = v;
                        if self.column_key_in_entries[c] {
                            self.remove_entry(realm, key);
                        }
                        return Ok(());
                    }
                    // Another type, or the absent pattern: an entry holds it.
                    None => {
                        if let Some(col) = col {
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

    fn insert_stored(&mut self, realm: Realm, key: &str, flags: u16, bytes: &[u8]) -> Result<()> {
        if key.is_empty() || key.len() > MAX_KEY_LEN || key.as_bytes().contains(&0) {
            return Err(Error::InvalidArgument(format!(
                "bad key {key:?} (1..=511 bytes, no NUL)"
            )));
        }
        let kid = match self.key_ids.get(key) {
            Some(&id) => id,
            None => {
                if self.keys.len() >= MAX_KEYS {
                    return Err(Error::InvalidArgument(
                        "more than 2^24 distinct keys".into(),
                    ));
                }
                let id = self.keys.len() as u32;
                self.keys.push(key.into());
                self.key_ids.insert(key.into(), id);
                id
            }
        };
        let (class, id) = realm.class_id();
        let off = self.arena.len();
        self.arena.extend_from_slice(bytes);
        if let Some((_, _, old)) = self
            .entries
            .insert((class, id, kid), (flags, off, bytes.len()))
        {
            self.garbage += old;
            self.compact_if_wasteful();
        }
        Ok(())
    }

    /// Rebuild the arena from the live values once replaced ones outweigh them (a long-lived
    /// builder whose values are updated again and again stays proportional to its contents).
    fn compact_if_wasteful(&mut self) {
        let live = self.arena.len() - self.garbage;
        if self.garbage < live.max(1 << 20) {
            return;
        }
        let mut arena = Vec::with_capacity(live);
        for (_, off, len) in self.entries.values_mut() {
            let start = arena.len();
            arena.extend_from_slice(&self.arena[*off..*off + *len]);
            *off = start;
        }
        self.arena = arena;
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
        match self.entries.remove(&(class, id, kid)) {
            Some((_, _, len)) => {
                self.garbage += len;
                self.compact_if_wasteful();
                true
            }
            None => false,
        }
    }

    /// Number of (realm, key) values, entries and column values alike.
    pub fn len(&self) -> usize {
        let in_columns: usize = self
            .columns
            .iter()
            .flatten()
            .map(|col| col.iter().filter(|v| **v != u32::MAX).count())
            .sum();
        self.entries.len() + in_columns
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Encode the segment for generation `generation` (header state BUILDING).
    /// Deterministic: the same contents give the same bytes whatever the insertion order.
    pub fn encode(&self, generation: u64) -> Result<Vec<u8>> {
        // Keys that still have an entry, and the keys of present columns, in byte order: ids
        // are stable for equal contents.
        let mut names: Vec<&str> = {
            let mut seen = vec![false; self.keys.len()];
            for &(_, _, k) in self.entries.keys() {
                seen[k as usize] = true;
            }
            (0..self.keys.len())
                .filter(|&k| seen[k])
                .map(|k| &*self.keys[k])
                .collect()
        };
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
        let mut entries: Vec<(u16, u32, u32, u16, &[u8])> = self
            .entries
            .iter()
            .map(|(&(c, i, k), &(flags, off, len))| {
                (
                    c,
                    i,
                    final_id[k as usize],
                    flags,
                    &self.arena[off..off + len],
                )
            })
            .collect();
        // (class, id, key_id) packed in one u64 (class < 2^8, key ids < 2^24: format.md), so
        // the sort compares integers: a million cards sort in a few tens of milliseconds.
        entries.sort_unstable_by_key(|e| ((e.0 as u64) << 56) | ((e.1 as u64) << 24) | e.2 as u64);

        let key_count = names.len();
        let key_slots = slots_for(key_count);
        let entry_count = entries.len();
        let entry_slots = slots_for(entry_count);
        if entry_count > u32::MAX as usize / 2 {
            return Err(Error::InvalidArgument(
                "too many entries for one table".into(),
            ));
        }

        // Reserve the whole segment once (values padded to 16; the rest is small): no
        // reallocation copies of what may be hundreds of MiB.
        let values: usize = entries.iter().map(|e| e.4.len().next_multiple_of(16)).sum();
        let mut enc = Encoder {
            buf: Vec::with_capacity(values + entries.len() * 40 + 4096),
        };
        encode_header(&mut enc, Kind::Table, generation, 0);
        let th = HEADER_LEN;
        enc.bytes(&[0u8; size_of::<TableHeader>()]);

        // Keys, key index, strings.
        enc.pad_to(REGION_ALIGN);
        let keys_off = enc.len();
        let mut str_off = 0u32;
        let mut hashes = Vec::with_capacity(key_count);
        for name in &names {
            let key = name.as_bytes();
            let h = key_hash(key);
            hashes.push(h);
            enc.u64(h);
            enc.u32(str_off);
            enc.u32(key.len() as u32);
            str_off += key.len() as u32;
        }
        enc.pad_to(REGION_ALIGN);
        let key_index_off = enc.len();
        let mut slots = vec![0u32; key_slots];
        for (kid, h) in hashes.iter().enumerate() {
            let mut s = (*h as usize) & (key_slots - 1);
            while slots[s] != 0 {
                s = (s + 1) & (key_slots - 1);
            }
            slots[s] = kid as u32 + 1;
        }
        slots.iter().for_each(|&s| enc.u32(s));
        enc.pad_to(REGION_ALIGN);
        let strings_off = enc.len();
        for name in &names {
            enc.bytes(name.as_bytes());
        }
        let strings_len = enc.len() - strings_off;

        // Entries (value offsets back-patched below) and entry index.
        enc.pad_to(REGION_ALIGN);
        let entries_off = enc.len();
        let mut slots = vec![0u32; entry_slots];
        for (i, &(class, id, kid, flags, bytes)) in entries.iter().enumerate() {
            enc.u16(class);
            enc.u16(flags);
            enc.u32(id);
            enc.u32(kid);
            enc.u32(
                u32::try_from(bytes.len())
                    .map_err(|_| Error::InvalidArgument("value larger than 4 GiB".into()))?,
            );
            enc.u64(0);
            let mut s = (entry_hash(class, id, kid) as usize) & (entry_slots - 1);
            while slots[s] != 0 {
                s = (s + 1) & (entry_slots - 1);
            }
            slots[s] = i as u32 + 1;
        }
        enc.pad_to(REGION_ALIGN);
        let entry_index_off = enc.len();
        slots.iter().for_each(|&s| enc.u32(s));

        // Proc columns, present ones in column order, each 8-aligned.
        enc.pad_to(REGION_ALIGN);
        let columns_off = enc.len();
        let mut column_mask = 0u32;
        for (c, col) in self.columns.iter().enumerate() {
            let Some(col) = col else { continue };
            column_mask |= 1 << c;
            enc.pad_to(REGION_ALIGN);
            match COLUMNS[c].kind {
                ColumnKind::Uint16 => col.iter().for_each(|&v| enc.u16(v as u16)),
                ColumnKind::Uint32 | ColumnKind::ProcRank => col.iter().for_each(|&v| enc.u32(v)),
            }
        }

        // Values, each 16-aligned.
        for (i, &(_, _, _, _, bytes)) in entries.iter().enumerate() {
            enc.pad_to(VALUE_ALIGN);
            let off = enc.len();
            enc.bytes(bytes);
            let rec = entries_off as usize + i * size_of::<Entry>();
            enc.put_u64(rec + core::mem::offset_of!(Entry, value_off), off);
        }
        enc.pad_to(REGION_ALIGN);

        let total = enc.len();
        enc.put_u64(32, total);
        enc.put_u32(th, key_count as u32);
        enc.put_u32(th + 4, key_slots as u32);
        enc.put_u64(th + 8, keys_off);
        enc.put_u64(th + 16, key_index_off);
        enc.put_u64(th + 24, strings_off);
        enc.put_u64(th + 32, strings_len);
        enc.put_u32(th + 40, entry_count as u32);
        enc.put_u32(th + 44, entry_slots as u32);
        enc.put_u64(th + 48, entries_off);
        enc.put_u64(th + 56, entry_index_off);
        if column_mask != 0 {
            enc.put_u32(th + 64, self.ranks);
            enc.put_u32(th + 68, column_mask);
            enc.put_u64(th + 72, columns_off);
        }
        Ok(enc.buf)
    }
}

/// A mapped, validated table.
pub struct TableView {
    values: ValidatedValues,
    h: TableHeader,
    /// Per column: (key id, byte offset) when present.
    columns: [Option<(u32, usize)>; COLUMNS.len()],
}

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
            reserved: [0; 48],
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
        for k in 0..h.key_count as u64 {
            let rec = (h.keys_off + k * KEY_REC) as usize;
            let off = u32_at(b, rec + 8).ok_or_else(corrupt("key record"))? as u64;
            let len = u32_at(b, rec + 12).ok_or_else(corrupt("key record"))? as u64;
            if len == 0 || len > MAX_KEY_LEN as u64 || off + len > h.strings_len {
                return Err(Error::Corrupt("key string out of bounds"));
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
            if key_id >= h.key_count {
                return Err(Error::Corrupt("entry key id out of range"));
            }
        }
        let values =
            ValidatedValues::validate(map, h.entries_off as usize, h.entry_count as usize)?;
        let mut view = TableView {
            values,
            h,
            columns: [None; COLUMNS.len()],
        };
        if h.column_mask >> COLUMNS.len() != 0 {
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
            let len = h.rank_count as u64 * col.kind.width() as u64;
            slice_at(view.bytes(), off, len).ok_or_else(corrupt("proc column out of bounds"))?;
            let kid = view
                .key_id(col.key.as_bytes())
                .ok_or_else(corrupt("proc column key"))?;
            view.columns[c] = Some((kid, off as usize));
            off += len;
        }
        Ok(view)
    }

    /// The proc-column value of (`rank`, key id `kid`), if a column holds it.
    fn column(&self, kid: u32, rank: u32) -> Option<ValueRef<'_>> {
        if rank >= self.h.rank_count {
            return None;
        }
        let c = self
            .columns
            .iter()
            .position(|c| c.is_some_and(|(k, _)| k == kid))?;
        let (_, off) = self.columns[c]?;
        let b = self.bytes();
        let v = match COLUMNS[c].kind {
            ColumnKind::Uint16 => match u16_at(b, off + rank as usize * 2)? {
                u16::MAX => return None,
                v => ValueRef::Uint16(v),
            },
            kind => match u32_at(b, off + rank as usize * 4)? {
                u32::MAX => return None,
                v if kind == ColumnKind::ProcRank => ValueRef::ProcRank(v),
                v => ValueRef::Uint32(v),
            },
        };
        Some(v)
    }

    fn bytes(&self) -> &[u8] {
        self.values.bytes()
    }

    /// The key id of `key`, if the table has it.
    pub fn key_id(&self, key: &[u8]) -> Option<u32> {
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
            if u64_at(b, rec)? == hash && self.key_str(kid)? == key {
                return Some(kid);
            }
            s = (s + 1) & mask;
        }
        None
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
    pub fn get(&self, realm: Realm, key: &str) -> Option<ValueRef<'_>> {
        self.get_by_id(realm, self.key_id(key.as_bytes())?)
    }

    /// The value of key id `kid` (from [`TableView::key_id`]) in `realm`: for callers that look
    /// one key up in several realms, so the key is hashed and probed once.
    pub fn get_by_id(&self, realm: Realm, kid: u32) -> Option<ValueRef<'_>> {
        if let Realm::Proc(rank) = realm {
            if let Some(v) = self.column(kid, rank) {
                return Some(v);
            }
        }
        self.values
            .value(self.entry(realm, kid)?)
            .map(ValueRef::from)
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
        let columns = self.columns.iter().flatten().flat_map(move |&(kid, _)| {
            (0..self.h.rank_count).filter_map(move |r| {
                Some((Realm::Proc(r), self.key_str(kid)?, self.column(kid, r)?))
            })
        });
        entries.chain(columns)
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
