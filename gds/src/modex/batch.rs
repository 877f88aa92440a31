//! A fence's (or a commit's) values, gathered cheaply before they are merged into posted
//! tables in one pass.

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};

use super::{check_poster, Scope, POSTED_CLASSES, UNDEF_INDEX};
use crate::error::{Error, Result};
use crate::jobdata::keys::is_reserved;
use crate::layout::{ENTRY_RAW_BYTES, MAX_KEYS, MAX_KEY_LEN};
use crate::table::bulk::{byte_order, last_wins, BulkEntry, SortedRun};
use crate::table::check_key;
use crate::table::small::{Item, Items};
use crate::value::Value;

/// Keys a batch finds by comparing them all before it indexes them by name.
const LINEAR_KEYS: usize = 32;

/// A collecting fence's data (`store_modex`: every process's posted values, typically one or a
/// few keys per rank in rank order, the values business cards), built cheaply and merged into a
/// namespace's [`Posted`] in one pass ([`Posted::apply`]).
///
/// ```
/// # use rshm_gds::modex::{FenceBatch, Posted, Scope};
/// let mut batch = FenceBatch::with_capacity(2, 128);
/// batch.put_bytes(0, Scope::Global, "btl.tcp.card", &[0u8; 64]).unwrap();
/// batch.put_bytes(1, Scope::Global, "btl.tcp.card", &[1u8; 64]).unwrap();
/// let mut posted = Posted::new();
/// posted.apply(batch).unwrap();
/// assert_eq!(posted.len(), 3); // two cards and the RANK_UNDEF index of the key
/// ```
#[derive(Default)]
pub struct FenceBatch {
    keys: Vec<Box<str>>,
    /// `keys` by name once there are more than [`LINEAR_KEYS`] (empty before: a commit's few
    /// keys are found by comparing, without hashing or a second copy of each).
    key_ids: HashMap<Box<str>, u32>,
    /// Per key: the rank of its first put (its RANK_UNDEF rank, if the namespace has none yet).
    first_rank: Vec<u32>,
    /// The key of the previous put (most batches repeat one key): skips the hash lookup.
    last_key: Option<u32>,
    /// In put order; `kid` indexes `keys`, `loc` is the offset in `arena`.
    entries: Vec<BulkEntry>,
    arena: Vec<u8>,
}

impl FenceBatch {
    pub fn new() -> Self {
        Self::default()
    }

    /// A batch with room for `values` values of `bytes` bytes in all (no reallocation while it
    /// is filled).
    pub fn with_capacity(values: usize, bytes: usize) -> Self {
        FenceBatch {
            entries: Vec::with_capacity(values),
            arena: Vec::with_capacity(bytes),
            ..Self::default()
        }
    }

    /// Add `key` posted by `rank` with `scope` (as [`Posted::put`]; reserved keys refused).
    pub fn put(&mut self, rank: u32, scope: Scope, key: &str, value: &Value) -> Result<()> {
        check_poster(rank)?;
        if let Value::ByteObject(bytes) = value {
            return self.put_bytes(rank, scope, key, bytes);
        }
        let kid = self.key(rank, key)?;
        let archived = value.archive()?;
        self.push(rank, scope, kid, 0, &archived)
    }

    /// Add a `PMIX_BYTE_OBJECT` value (a business card) from its bytes: the same as
    /// `put(rank, scope, key, &Value::ByteObject(bytes.to_vec()))` without building the value.
    pub fn put_bytes(&mut self, rank: u32, scope: Scope, key: &str, bytes: &[u8]) -> Result<()> {
        check_poster(rank)?;
        let kid = self.key(rank, key)?;
        self.push(rank, scope, kid, ENTRY_RAW_BYTES, bytes)
    }

    /// Number of values added (a replaced one counts until the batch is applied).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Add a value as a table stores it (`flags`, bytes): moving values between batches and
    /// tables without decoding them.
    pub(crate) fn put_stored(
        &mut self,
        rank: u32,
        scope: Scope,
        key: &str,
        flags: u16,
        bytes: &[u8],
    ) -> Result<()> {
        check_poster(rank)?;
        let kid = self.key(rank, key)?;
        self.push(rank, scope, kid, flags, bytes)
    }

    /// Distinct keys of the batch.
    pub(crate) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// The distinct ranks the batch holds values of, ascending.
    pub(crate) fn ranks(&self) -> Vec<u32> {
        let mut ranks: Vec<u32> = self.entries.iter().map(|e| e.id).collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }

    /// Each key with the rank of its first put (its RANK_UNDEF poster if nobody posted it
    /// before).
    pub(crate) fn first_posters(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.keys
            .iter()
            .zip(&self.first_rank)
            .map(|(k, &r)| (&**k, r))
    }

    /// The one rank the batch holds values of, if it holds values of exactly one.
    pub(crate) fn single_rank(&self) -> Option<u32> {
        let first = self.entries.first()?.id;
        self.entries.iter().all(|e| e.id == first).then_some(first)
    }

    /// Each key's latest value (the last put wins, whatever its scope), in key order of first
    /// put, as a rank's table holds it.
    pub(crate) fn latest(&self) -> Items<'_> {
        let mut last = vec![usize::MAX; self.keys.len()];
        for (i, e) in self.entries.iter().enumerate() {
            last[e.kid as usize] = i;
        }
        last.into_iter()
            .filter(|&i| i != usize::MAX)
            .map(|i| {
                let e = &self.entries[i];
                Item {
                    class: e.class,
                    key: &self.keys[e.kid as usize],
                    flags: e.flags,
                    bytes: &self.arena[e.loc as usize..e.loc as usize + e.len as usize],
                }
            })
            .collect()
    }

    /// Forget every value, keeping the buffers (a staging batch reused commit after commit).
    pub fn clear(&mut self) {
        self.keys.clear();
        self.key_ids.clear();
        self.first_rank.clear();
        self.last_key = None;
        self.entries.clear();
        self.arena.clear();
    }

    /// The batch without the values `drop` picks (by rank and key), put order kept; keys left
    /// without a value are gone too (a put that failed half-way leaves its key interned).
    pub fn without(self, drop: impl Fn(u32, &str) -> bool) -> Result<FenceBatch> {
        let mut out = FenceBatch::new();
        for e in &self.entries {
            let key = &self.keys[e.kid as usize];
            if drop(e.id, key) {
                continue;
            }
            let scope = Scope::of_class(e.class).ok_or(Error::Corrupt("posted class"))?;
            let bytes = &self.arena[e.loc as usize..e.loc as usize + e.len as usize];
            out.put_stored(e.id, scope, key, e.flags, bytes)?;
        }
        Ok(out)
    }

    /// Split the batch: the values of ranks `own` picks go to a batch of their own per rank,
    /// the others stay together; put order is kept within each.
    pub(crate) fn split(
        self,
        own: impl Fn(u32) -> bool,
    ) -> Result<(FenceBatch, BTreeMap<u32, FenceBatch>)> {
        let mut ranks: BTreeMap<u32, FenceBatch> = BTreeMap::new();
        // One destination (a commit: one rank; a fence: none of its ranks own a table): the
        // batch moves whole, without copying its values or interning its keys again.
        if let Some(first) = self.entries.first().map(|e| e.id) {
            let one_rank = self.entries.iter().all(|e| e.id == first);
            if one_rank && own(first) {
                ranks.insert(first, self);
                return Ok((FenceBatch::new(), ranks));
            }
            if !self.entries.iter().any(|e| own(e.id)) {
                return Ok((self, ranks));
            }
        }
        let mut rest = FenceBatch::new();
        for e in &self.entries {
            let to = if own(e.id) {
                ranks.entry(e.id).or_default()
            } else {
                &mut rest
            };
            let scope = Scope::of_class(e.class).ok_or(Error::Corrupt("posted class"))?;
            let bytes = &self.arena[e.loc as usize..e.loc as usize + e.len as usize];
            to.put_stored(e.id, scope, &self.keys[e.kid as usize], e.flags, bytes)?;
        }
        Ok((rest, ranks))
    }

    fn push(&mut self, rank: u32, scope: Scope, kid: u32, flags: u16, bytes: &[u8]) -> Result<()> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| Error::InvalidArgument("value larger than 4 GiB".into()))?;
        self.entries.push(BulkEntry {
            class: scope.realm(rank).class_id().0,
            flags,
            id: rank,
            kid,
            len,
            loc: self.arena.len() as u64,
        });
        self.arena.extend_from_slice(bytes);
        Ok(())
    }

    /// The batch's id of `key`, checked and interned on first use.
    fn key(&mut self, rank: u32, key: &str) -> Result<u32> {
        if let Some(k) = self.last_key {
            if *self.keys[k as usize] == *key {
                return Ok(k);
            }
        }
        let known = if self.key_ids.is_empty() {
            self.keys.iter().position(|k| **k == *key).map(|k| k as u32)
        } else {
            self.key_ids.get(key).copied()
        };
        let k = match known {
            Some(k) => k,
            None => {
                if is_reserved(key) {
                    return Err(Error::InvalidArgument(format!(
                        "{key:?} is a reserved key: clients cannot post it"
                    )));
                }
                check_key(key)?;
                // Its RANK_UNDEF index key must fit too (checked here, not half-way through a
                // merge).
                if UNDEF_INDEX.len() + key.len() > MAX_KEY_LEN {
                    return Err(Error::InvalidArgument(format!(
                        "key {key:?} too long to index for PMIX_RANK_UNDEF"
                    )));
                }
                if self.keys.len() >= MAX_KEYS {
                    return Err(Error::InvalidArgument(
                        "more than 2^24 distinct keys".into(),
                    ));
                }
                let k = self.keys.len() as u32;
                self.keys.push(key.into());
                if !self.key_ids.is_empty() {
                    self.key_ids.insert(key.into(), k);
                } else if self.keys.len() > LINEAR_KEYS {
                    self.key_ids = (0..).zip(&self.keys).map(|(i, k)| (k.clone(), i)).collect();
                }
                self.first_rank.push(rank);
                k
            }
        };
        self.last_key = Some(k);
        Ok(k)
    }

    /// The batch as a sorted run for [`TableBuilder::merge_run`], and the keys `indexed` lacks
    /// with their first poster (for the RANK_UNDEF index; none without `indexed`).
    pub(super) fn into_run(
        self,
        indexed: Option<&HashMap<Box<str>, u32>>,
    ) -> (SortedRun, Vec<(Box<str>, u32)>) {
        let FenceBatch {
            keys,
            first_rank,
            entries,
            arena,
            ..
        } = self;
        let newly_indexed = match indexed {
            Some(indexed) => keys
                .iter()
                .zip(first_rank)
                .filter(|(k, _)| !indexed.contains_key(*k))
                .map(|(k, r)| (k.clone(), r))
                .collect(),
            None => Vec::new(),
        };
        // Key order: byte order of the keys (the segment's entry order).
        let order = byte_order(&keys);
        // (rank, key) order, each (rank, key) once: the last put wins, whatever its scope. A
        // batch given in rank order with its keys in byte order (the common case) is checked
        // in one pass and not sorted.
        let pos = |e: &BulkEntry| ((e.id as u64) << 32) | order[e.kid as usize] as u64;
        let (mut entries, wasted) = last_wins(entries, pos);
        // Then by class (scope): a stable partition, skipped when there is one scope.
        let first = entries[0].class;
        if entries.iter().any(|e| e.class != first) {
            let mut parted = Vec::with_capacity(entries.len());
            for class in POSTED_CLASSES {
                parted.extend(entries.iter().filter(|e| e.class == class));
            }
            entries = parted;
        }
        (
            SortedRun {
                keys,
                entries,
                arenas: vec![arena],
                wasted,
            },
            newly_indexed,
        )
    }
}
