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
    entry_hash, key_hash, slots_for, Entry, KeyEntry, Kind, Realm, TableHeader, HEADER_LEN,
    MAX_KEYS, MAX_KEY_LEN, REGION_ALIGN, VALUE_ALIGN,
};
use crate::raw::{RoMap, ValidatedValues};
use crate::segment::encode_header;
use crate::value::{ArchivedValue, Value};

/// Builds a table: (realm, key) → value, latest insert wins.
#[derive(Default, Clone)]
pub struct TableBuilder {
    key_ids: HashMap<Box<str>, u32>,
    keys: Vec<Box<str>>,
    /// (class, id, builder key id) → archived value bytes.
    entries: HashMap<(u16, u32, u32), Box<[u8]>>,
}

impl TableBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Insert or replace the value of `key` in `realm`.
    pub fn insert(&mut self, realm: Realm, key: &str, value: &Value) -> Result<()> {
        let archived = value.archive()?;
        self.insert_archived(realm, key, archived.as_slice().into())
    }

    fn insert_archived(&mut self, realm: Realm, key: &str, archived: Box<[u8]>) -> Result<()> {
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
        self.entries.insert((class, id, kid), archived);
        Ok(())
    }

    /// Remove the value of `key` in `realm`; true if there was one.
    pub fn remove(&mut self, realm: Realm, key: &str) -> bool {
        let Some(&kid) = self.key_ids.get(key) else {
            return false;
        };
        let (class, id) = realm.class_id();
        self.entries.remove(&(class, id, kid)).is_some()
    }

    /// Number of (realm, key) entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Encode the segment for generation `generation` (header state BUILDING).
    /// Deterministic: the same contents give the same bytes whatever the insertion order.
    pub fn encode(&self, generation: u64) -> Result<Vec<u8>> {
        // Only keys that still have an entry, in byte order: ids are stable for equal contents.
        let mut used: Vec<u32> = {
            let mut seen = vec![false; self.keys.len()];
            for &(_, _, k) in self.entries.keys() {
                seen[k as usize] = true;
            }
            (0..self.keys.len() as u32)
                .filter(|&k| seen[k as usize])
                .collect()
        };
        used.sort_by(|a, b| self.keys[*a as usize].cmp(&self.keys[*b as usize]));
        let mut final_id = vec![u32::MAX; self.keys.len()];
        for (new, &old) in used.iter().enumerate() {
            final_id[old as usize] = new as u32;
        }
        let mut entries: Vec<(u16, u32, u32, &[u8])> = self
            .entries
            .iter()
            .map(|(&(c, i, k), v)| (c, i, final_id[k as usize], &v[..]))
            .collect();
        entries.sort_unstable_by_key(|e| (e.0, e.1, e.2));

        let key_count = used.len();
        let key_slots = slots_for(key_count);
        let entry_count = entries.len();
        let entry_slots = slots_for(entry_count);
        if entry_count > u32::MAX as usize / 2 {
            return Err(Error::InvalidArgument(
                "too many entries for one table".into(),
            ));
        }

        let mut enc = Encoder::default();
        encode_header(&mut enc, Kind::Table, generation, 0);
        let th = HEADER_LEN;
        enc.bytes(&[0u8; size_of::<TableHeader>()]);

        // Keys, key index, strings.
        enc.pad_to(REGION_ALIGN);
        let keys_off = enc.len();
        let mut str_off = 0u32;
        let mut hashes = Vec::with_capacity(key_count);
        for &k in &used {
            let key = self.keys[k as usize].as_bytes();
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
        for &k in &used {
            enc.bytes(self.keys[k as usize].as_bytes());
        }
        let strings_len = enc.len() - strings_off;

        // Entries (value offsets back-patched below) and entry index.
        enc.pad_to(REGION_ALIGN);
        let entries_off = enc.len();
        let mut slots = vec![0u32; entry_slots];
        for (i, &(class, id, kid, bytes)) in entries.iter().enumerate() {
            enc.u16(class);
            enc.u16(0);
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

        // Values, each 16-aligned.
        for (i, &(_, _, _, bytes)) in entries.iter().enumerate() {
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
        Ok(enc.buf)
    }
}

/// A mapped, validated table.
pub struct TableView {
    values: ValidatedValues,
    h: TableHeader,
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
        Ok(TableView { values, h })
    }

    fn bytes(&self) -> &[u8] {
        self.values.map().bytes()
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
        let mask = self.h.entry_slots as u64 - 1;
        let mut s = entry_hash(class, id, kid) & mask;
        for _ in 0..self.h.entry_slots {
            let slot = u32_at(b, (self.h.entry_index_off + s * 4) as usize)?;
            if slot == 0 {
                return None;
            }
            let e = (slot - 1) as usize;
            let rec = self.h.entries_off as usize + e * ENTRY_REC as usize;
            if u16_at(b, rec)? == class && u32_at(b, rec + 4)? == id && u32_at(b, rec + 8)? == kid {
                return Some(e);
            }
            s = (s + 1) & mask;
        }
        None
    }

    /// The value of `key` in `realm`.
    pub fn get(&self, realm: Realm, key: &str) -> Option<&ArchivedValue> {
        let kid = self.key_id(key.as_bytes())?;
        self.values.value(self.entry(realm, kid)?)
    }

    /// Every entry in (realm, key) order: (realm, key, value). Unknown classes are skipped.
    pub fn entries(&self) -> impl Iterator<Item = (Realm, &[u8], &ArchivedValue)> + '_ {
        let b = self.bytes();
        (0..self.h.entry_count as usize).filter_map(move |e| {
            let rec = self.h.entries_off as usize + e * ENTRY_REC as usize;
            let realm = Realm::from_class_id(u16_at(b, rec)?, u32_at(b, rec + 4)?)?;
            let key = self.key_str(u32_at(b, rec + 8)?)?;
            Some((realm, key, self.values.value(e)?))
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.h.entry_count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.h.entry_count == 0
    }

    /// Size of the mapped segment in bytes.
    pub fn mapped_len(&self) -> usize {
        self.bytes().len()
    }
}
