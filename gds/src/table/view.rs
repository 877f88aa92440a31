//! The reader's side of a table: [`TableView`] validates a mapped segment once, at map time,
//! then looks values up in a few cache misses (key hash slot, key record, entry slot, entry
//! record, value), with process-local indexes built from the shared bytes.
//!
//! The view reads the format and nothing more: what a key or a value means to PMIx is the
//! layers above it. A layer that asks the same derived facts on every get keeps them in the
//! view, computed on first use and dropped with it, without the store knowing their type (a
//! type parameter would run through the reader's every table and snapshot):
//! - a byte per key, from its name ([`TableView::key_tag`] with the layer's [`KeyTag`]; job
//!   data: each key's default realm): one array read on the get path, no call, the array's
//!   owner told by a `TypeId` kept beside it;
//! - one value from the whole table ([`TableView::derived`], a `OnceLock<Box<dyn Any + Send +
//!   Sync>>`; job data: the job's session and node), for what gets ask less often: a load and
//!   a dynamic type check.

use std::any::{Any, TypeId};
use std::sync::{Arc, OnceLock};

use super::column_blocks::{self, BlockedAt};
use super::short_keys::ShortKeys;
use crate::bytes::{same_bytes, slice_at, u16_at, u32_at, u64_at};
use crate::error::{Error, Result};
use crate::layout::{
    class_defined, entry_hash, key_hash, ColumnKind, Entry, KeyEntry, Realm, TableHeader,
    COLUMN_KINDS, HEADER_LEN, MAX_KEYS, MAX_KEY_LEN, REGION_ALIGN,
};
use crate::raw::{RoMap, ValidatedValues};
use crate::valueref::ValueRef;
use crate::COLUMN_KEYS;

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

/// What a layer above the store reads in a key's name, as a byte [`TableView::key_tag`] keeps
/// per key of a mapped table.
pub trait KeyTag: 'static {
    /// The byte of the key named `name`.
    fn tag(name: &[u8]) -> u8;
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
    columns: [Option<ColumnAt>; COLUMN_KINDS.len()],
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
    /// A byte per key id from the layer above's [`KeyTag`] (whose type is kept beside them),
    /// built on first use ([`TableView::key_tag`]).
    key_tags: OnceLock<(TypeId, Box<[u8]>)>,
    /// What the layer above derives from this table, once ([`TableView::derived`]).
    derived: OnceLock<Box<dyn Any + Send + Sync>>,
}

/// A key's dense node index ([`TableView::node_dense`]), set on first use.
type NodeIndex = OnceLock<Box<[u32]>>;

/// What a [`TableView`] knows of one key id without probing the entry index.
#[derive(Clone, Copy, Default)]
struct KeyInfo {
    /// Bit `min(class, 31)` is set when the key has an entry of that class.
    classes: u32,
    /// 1 + the entry index of (job realm, key); 0 when there is none.
    job: u32,
    /// 1 + the proc column holding the key; 0 when none does.
    column: u8,
    /// 1 + the key's slot in `node_dense`; 0 when it has none (or its slot does not fit).
    node: u16,
}

// 12 bytes a key of a client's private memory (a node-name key per node at scale).
const _: () = assert!(size_of::<KeyInfo>() == 12);

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
            let class = u16_at(b, rec).ok_or_else(corrupt("entry record"))?;
            let id = u32_at(b, rec + 4).ok_or_else(corrupt("entry record"))?;
            let Some(k) = keys.get_mut(key_id as usize) else {
                return Err(Error::Corrupt("entry key id out of range"));
            };
            if !class_defined(class) {
                return Err(Error::Corrupt("entry class"));
            }
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
            columns: [None; COLUMN_KINDS.len()],
            keys,
            node_dense,
            short: ShortKeys::default(),
            key_tags: OnceLock::new(),
            derived: OnceLock::new(),
        };
        // Every key string was checked in bounds above.
        view.short =
            ShortKeys::build((0..h.key_count).filter_map(|kid| Some((kid, view.key_str(kid)?))));
        if h.column_mask >> COLUMN_KINDS.len() != 0 || h.column_blocks & !h.column_mask != 0 {
            return Err(Error::Corrupt("unknown proc column"));
        }
        if h.column_mask != 0 && !h.columns_off.is_multiple_of(REGION_ALIGN as u64) {
            return Err(Error::Corrupt("proc columns not aligned"));
        }
        let mut off = h.columns_off;
        for (c, kind) in COLUMN_KINDS.iter().enumerate() {
            if h.column_mask & (1 << c) == 0 {
                continue;
            }
            off = off
                .checked_next_multiple_of(REGION_ALIGN as u64)
                .ok_or_else(corrupt("proc columns"))?;
            let width = kind.width();
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
                .key_id(COLUMN_KEYS[c].as_bytes())
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
        let kind = COLUMN_KINDS[c];
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

    /// The [`KeyTag`] `K` of key `kid`, or `None` when the table has no key `kid`. The tags of
    /// every key are computed on the first call and kept as long as the view. One `K` per view:
    /// the first call's is kept, and another `K` has its tag computed on every call.
    #[inline]
    pub fn key_tag<K: KeyTag>(&self, kid: u32) -> Option<u8> {
        let (owner, tags) = self.key_tags.get_or_init(|| {
            let tags = (0..self.h.key_count).map(|k| K::tag(self.key_str(k).unwrap_or_default()));
            (TypeId::of::<K>(), tags.collect())
        });
        if *owner == TypeId::of::<K>() {
            tags.get(kid as usize).copied()
        } else {
            self.uncached_tag::<K>(kid)
        }
    }

    /// [`TableView::key_tag`] for a `K` other than the one whose tags the view keeps.
    #[cold]
    #[inline(never)]
    fn uncached_tag<K: KeyTag>(&self, kid: u32) -> Option<u8> {
        if kid >= self.h.key_count {
            return None;
        }
        self.key_str(kid).map(K::tag)
    }

    /// What the layer above derives from this table (values of it that gets ask again and
    /// again), computed by `init` on the first call and kept as long as the view: once per
    /// mapped table, for any number of gets. One type per view: the first call's `T` is kept,
    /// and a call with another type gets `None` (its caller computes without the cache).
    /// Racing first calls run `init` once; the others wait for it (so `init` must not call
    /// `derived` itself).
    #[inline]
    pub fn derived<T: Any + Send + Sync>(&self, init: impl FnOnce(&TableView) -> T) -> Option<&T> {
        self.derived
            .get_or_init(|| Box::new(init(self)))
            .downcast_ref()
    }

    /// Number of keys: key ids are `0..key_count()`.
    pub fn key_count(&self) -> u32 {
        self.h.key_count
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
        let keys = COLUMN_KEYS.iter().zip(COLUMN_KINDS);
        keys.zip(&self.columns).filter_map(|((&key, kind), at)| {
            let width = kind.width();
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
                key,
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
