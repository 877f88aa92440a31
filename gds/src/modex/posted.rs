//! One posted-data table as its writer builds it.

#![forbid(unsafe_code)]

use std::collections::HashMap;

use super::{check_poster, FenceBatch, Scope, POSTED_CLASSES, UNDEF_INDEX};
use crate::error::{Error, Result};
use crate::jobdata::keys::is_reserved;
use crate::layout::{Realm, MAX_KEYS};
use crate::table::TableBuilder;
use crate::value::Value;

/// One posted-data table, as its writer accumulates it: with its own RANK_UNDEF index (a
/// namespace's whole posted data in one table), or without ([`Posted::unindexed`]: one table
/// of [`PostedParts`](super::PostedParts), whose index is a table of its own).
#[derive(Clone)]
pub struct Posted {
    table: TableBuilder,
    /// Keys in the RANK_UNDEF index, with the rank it names (the key's first poster).
    indexed: HashMap<Box<str>, u32>,
    /// Whether the table holds the RANK_UNDEF index of its keys.
    own_index: bool,
}

impl Default for Posted {
    fn default() -> Self {
        Posted {
            table: TableBuilder::new(),
            indexed: HashMap::new(),
            own_index: true,
        }
    }
}

impl Posted {
    pub fn new() -> Self {
        Self::default()
    }

    /// A table without the RANK_UNDEF index.
    pub fn unindexed() -> Self {
        Posted {
            own_index: false,
            ..Self::default()
        }
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
        if self.own_index && !self.indexed.contains_key(key) {
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
        if batch.is_empty() {
            return Ok(());
        }
        // Every new key may bring its RANK_UNDEF index key: refuse before changing anything.
        if self.table.key_count() + 2 * batch.key_count() > MAX_KEYS {
            return Err(Error::InvalidArgument(
                "more than 2^24 distinct keys".into(),
            ));
        }
        let (run, newly_indexed) = batch.into_run(self.own_index.then_some(&self.indexed));
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

    /// Bytes of its values (for decisions on when to merge tables).
    pub(crate) fn value_bytes(&self) -> usize {
        self.table.value_bytes()
    }

    /// Every posted value: (rank, scope, key, entry flags, stored bytes).
    pub(crate) fn values(&self) -> impl Iterator<Item = (u32, Scope, &str, u16, &[u8])> + '_ {
        self.table
            .stored()
            .filter_map(|(class, id, key, flags, bytes)| {
                Some((id, Scope::of_class(class)?, key, flags, bytes))
            })
    }

    /// Number of posted values.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}
