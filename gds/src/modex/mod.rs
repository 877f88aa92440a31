//! Posted data (standard ch. 5): what processes `PMIx_Put` + `PMIx_Commit`, and what a
//! collecting `PMIx_Fence` delivers from other nodes — the business-card exchange.
//!
//! The writer keeps one [`Posted`] per namespace and publishes its table as the namespace's
//! `part::POSTED` table: a commit, or a whole fence batch, is one transaction, so readers see
//! all of it or none of it. A later put of a key replaces the earlier one (whatever its scope);
//! a reader that already holds the old value keeps a valid view of it (docs/protocol.md).

#![forbid(unsafe_code)]

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::jobdata::keys::is_reserved;
use crate::jobdata::query::RANK_VALID;
use crate::jobdata::TargetRank;
use crate::layout::{Realm, ENTRY_RAW_BYTES, MAX_KEYS, MAX_KEY_LEN};
use crate::table::bulk::{byte_order, last_wins, BulkEntry, SortedRun};
use crate::table::{check_key, TableBuilder, TableView};
use crate::value::Value;
use crate::valueref::ValueRef;

/// `pmix_scope_t` values a store holds (5.2.1.1). `PMIX_INTERNAL` (4) "is intended solely for
/// this process" and never reaches a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Scope {
    /// PMIX_LOCAL: "only available to processes on the local node".
    Local = 1,
    /// PMIX_REMOTE: "only available to processes on remote nodes".
    Remote = 2,
    /// PMIX_GLOBAL: "shared with all other requesting processes, regardless of location".
    Global = 3,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Global, Scope::Local, Scope::Remote];

    /// From a raw `pmix_scope_t`.
    pub fn from_raw(v: u8) -> Result<Scope> {
        match v {
            1 => Ok(Scope::Local),
            2 => Ok(Scope::Remote),
            3 => Ok(Scope::Global),
            4 => Err(Error::InvalidArgument(
                "PMIX_INTERNAL data never leaves its process".into(),
            )),
            v => Err(Error::InvalidArgument(format!("unknown scope {v}"))),
        }
    }

    /// Whether data of this scope is visible to a requester on the poster's node (`local`) or on
    /// another node.
    pub fn reaches(self, local: bool) -> bool {
        match self {
            Scope::Global => true,
            Scope::Local => local,
            Scope::Remote => !local,
        }
    }

    fn realm(self, rank: u32) -> Realm {
        Realm::Posted {
            rank,
            scope: self as u8,
        }
    }
}

/// Only a process posts data: special rank values (`PMIX_RANK_VALID` and above: WILDCARD,
/// UNDEF, LOCAL_NODE, ...) name sets of processes or none, never a poster.
fn check_poster(rank: u32) -> Result<()> {
    if rank >= RANK_VALID {
        return Err(Error::InvalidArgument(format!(
            "rank {rank:#x} is a special rank value, not a process that can post"
        )));
    }
    Ok(())
}

/// Prefix of the RANK_UNDEF index: `rshm.undef:<key>` → the rank that posted the key.
const UNDEF_INDEX: &str = "rshm.undef:";

/// The posted data of one namespace, as its writer accumulates it.
#[derive(Default, Clone)]
pub struct Posted {
    table: TableBuilder,
    /// Keys in the RANK_UNDEF index, with the rank it names (the key's first poster).
    indexed: HashMap<Box<str>, u32>,
}

impl Posted {
    pub fn new() -> Self {
        Self::default()
    }

    /// Store `key` posted by `rank` with `scope`: a commit's value (local data) or a fence's
    /// (remote data). Reserved keys are refused (5.1: they cannot be posted).
    pub fn put(&mut self, rank: u32, scope: Scope, key: &str, value: &Value) -> Result<()> {
        check_poster(rank)?;
        if is_reserved(key) {
            return Err(Error::InvalidArgument(format!(
                "{key:?} is a reserved key: clients cannot post it"
            )));
        }
        for other in Scope::ALL.into_iter().filter(|s| *s != scope) {
            self.table.remove(other.realm(rank), key);
        }
        self.table.insert(scope.realm(rank), key, value)?;
        // Globally unique keys are retrieved with PMIX_RANK_UNDEF (5.1): index who posted them
        // (a key posted by many ranks is not globally unique; its first poster stands).
        if !self.indexed.contains_key(key) {
            self.index_undef(key.into(), rank)?;
        }
        Ok(())
    }

    /// Remove what `rank` posted under `key`, in every scope: for a key whose newer value the
    /// store could not take, so that readers stop finding the older one here. If `rank` is the
    /// key's RANK_UNDEF poster, that index entry goes too (a reader then finds the key by rank
    /// only; the next put of the key indexes it again). Returns whether anything was removed.
    pub fn withdraw(&mut self, rank: u32, key: &str) -> Result<bool> {
        check_poster(rank)?;
        let mut removed = false;
        for scope in Scope::ALL {
            removed |= self.table.remove(scope.realm(rank), key);
        }
        if self.indexed.get(key) == Some(&rank) {
            self.table
                .remove(Realm::Meta, &format!("{UNDEF_INDEX}{key}"));
            self.indexed.remove(key);
            removed = true;
        }
        Ok(removed)
    }

    /// Store a fence batch: the same as `put` of each of its values in the order they were
    /// added (latest wins, whatever the scope; a key's first poster is its RANK_UNDEF rank),
    /// but merged in one pass: no hashing or sorting per value when the batch comes in rank
    /// order, and the batch's bytes are moved in, not copied. Publish [`Posted::table`] as
    /// usual afterwards; one transaction makes the whole batch visible at once.
    ///
    /// Nothing is changed when this fails (more than 2^24 distinct keys in the table).
    pub fn apply(&mut self, batch: FenceBatch) -> Result<()> {
        if batch.entries.is_empty() {
            return Ok(());
        }
        // Every new key may bring its RANK_UNDEF index key: refuse before changing anything.
        if self.table.key_count() + 2 * batch.keys.len() > MAX_KEYS {
            return Err(Error::InvalidArgument(
                "more than 2^24 distinct keys".into(),
            ));
        }
        let (run, newly_indexed) = batch.into_run(&self.indexed);
        self.table.merge_run(run, POSTED_CLASSES)?;
        // The RANK_UNDEF index of keys posted for the first time (a few entries, inserted one
        // by one; they sort before every posted entry, so encoding still streams).
        for (key, rank) in newly_indexed {
            self.index_undef(key, rank)?;
        }
        Ok(())
    }

    /// Record `rank` as the RANK_UNDEF poster of `key`.
    fn index_undef(&mut self, key: Box<str>, rank: u32) -> Result<()> {
        let index = format!("{UNDEF_INDEX}{key}");
        self.table
            .insert(Realm::Meta, &index, &Value::ProcRank(rank))?;
        self.indexed.insert(key, rank);
        Ok(())
    }

    /// The table to publish as the namespace's `part::POSTED`.
    pub fn table(&self) -> &TableBuilder {
        &self.table
    }

    /// Number of posted values.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// Entry classes of posted data (scopes LOCAL, REMOTE, GLOBAL): a put replaces its key in all.
const POSTED_CLASSES: std::ops::RangeInclusive<u16> = 7..=9;

/// A collecting fence's data (`store_modex`: every process's posted values, typically one or a
/// few keys per rank in rank order, the values business cards), built cheaply and merged into a
/// namespace's [`Posted`] in one pass ([`Posted::apply`]).
///
/// ```
/// # use gds::modex::{FenceBatch, Posted, Scope};
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
        let k = match self.key_ids.get(key) {
            Some(&k) => k,
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
                self.key_ids.insert(key.into(), k);
                self.first_rank.push(rank);
                k
            }
        };
        self.last_key = Some(k);
        Ok(k)
    }

    /// The batch as a sorted run for [`TableBuilder::merge_run`], and the keys `indexed` lacks
    /// with their first poster (for the RANK_UNDEF index).
    fn into_run(self, indexed: &HashMap<Box<str>, u32>) -> (SortedRun, Vec<(Box<str>, u32)>) {
        let FenceBatch {
            keys,
            first_rank,
            entries,
            arena,
            ..
        } = self;
        let newly_indexed = keys
            .iter()
            .zip(first_rank)
            .filter(|(k, _)| !indexed.contains_key(*k))
            .map(|(k, r)| (k.clone(), r))
            .collect();
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

/// The rank that posted `key`, for a `PMIX_RANK_UNDEF` lookup (5.3: globally unique keys), so
/// that the caller can tell whether that rank is local before calling [`get`].
pub fn undef_rank(t: &TableView, key: &str) -> Option<u32> {
    t.get(Realm::Meta, &format!("{UNDEF_INDEX}{key}"))?
        .as_u64()
        .and_then(|r| u32::try_from(r).ok())
}

/// PMIx_Get of a non-reserved key from a posted-data table (5.3 as far as a store decides it).
///
/// `local` tells whether the target process is on the requester's node (from the job data:
/// `jobdata::is_local`). Visible: GLOBAL, plus LOCAL data to local requesters and REMOTE data to
/// remote ones; `data_scope` (PMIX_DATA_SCOPE) narrows that to one scope. A key that exists only
/// in scopes the requester may not see is `ExistsOutsideScope`; an absent key is `NotFound`,
/// after which the server decides whether to wait, ask its host, or answer (PMIX_IMMEDIATE,
/// PMIX_OPTIONAL: 5.3 steps 2-3).
pub fn get<'t>(
    t: &'t TableView,
    rank: TargetRank,
    key: &str,
    local: bool,
    data_scope: Option<Scope>,
) -> Result<ValueRef<'t>> {
    let rank = match rank {
        TargetRank::Rank(r) => r,
        TargetRank::Undef => {
            let idx = t
                .get(Realm::Meta, &format!("{UNDEF_INDEX}{key}"))
                .ok_or(Error::NotFound)?;
            idx.as_u64()
                .and_then(|r| u32::try_from(r).ok())
                .ok_or(Error::Corrupt("undef index"))?
        }
        TargetRank::Wildcard => return Err(Error::NotFound),
    };
    let Some(kid) = t.key_id(key.as_bytes()) else {
        return Err(Error::NotFound);
    };
    let mut outside = false;
    for scope in Scope::ALL {
        let Some(v) = t.get_by_id(scope.realm(rank), kid) else {
            continue;
        };
        if scope.reaches(local) && data_scope.is_none_or(|s| s == scope) {
            return Ok(v);
        }
        outside = true;
    }
    Err(if outside {
        Error::ExistsOutsideScope
    } else {
        Error::NotFound
    })
}
