//! A namespace's posted data as the tables it is published in, so that a commit rewrites only
//! what it changes (format.md section 5, `part`):
//! - the base table (`part::POSTED`): what fences delivered, and commits once merged;
//! - one table per rank that committed since the last merge (`part::POSTED_RANKS` + rank):
//!   the rank's newer values, which a reader takes before the base's (`find`);
//! - the RANK_UNDEF index (`part::POSTED_INDEX`): rewritten only when a key is posted for the
//!   first time.
//!
//! A commit rewrites its rank's table (the rank's own values) and the root; the rank tables are
//! merged into the base once they hold more than the base does (or there are too many of
//! them), so every value is rewritten a bounded number of times on average, however many
//! ranks commit: the base doubles between merges.
//!
//! The writer keeps no copy of a rank table: only its values' size. Its values are read back
//! from the store ([`Writer::with_published`], `readback`) when the rank commits again, a merge
//! takes it into the base or a key of it is withdrawn; a rank's first commit since a merge is
//! encoded straight from the batch into the pack ([`PostedParts::stage_small`]).

#![forbid(unsafe_code)]

use std::collections::{BTreeMap, HashMap};

use super::part;
use super::rank_sizes::RankSizes;
use super::{check_poster, rank_part, readback, Commit, FenceBatch, Posted, UNDEF_INDEX};
use crate::error::{Error, Result};
use crate::layout::Realm;
use crate::table::small::{Items, RankTable};
use crate::table::TableBuilder;
use crate::value::Value;
use crate::writer::{Transaction, Writer, PACK_TABLE_MAX};

/// A batch of at most this many ranks (a commit, a direct-modex reply) goes to the ranks' own
/// tables; a larger one (a fence) to the base, except for ranks that have a table.
const SMALL_BATCH_RANKS: usize = 16;
/// Rank tables are merged into the base once their values outweigh the base's and this.
const MERGE_MIN_BYTES: usize = 256 << 10;
/// ... or once there are more of them than this (each is a root reference and a mapping)...
const MAX_RANK_TABLES: usize = 1024;
/// ... or once the root records they cost every publication since the last merge add up to
/// more than the base and this: small commits (a key or two) would otherwise write mostly
/// roots. (A root record is 32 bytes: format.md section 5.)
const MERGE_MIN_ROOT_BYTES: usize = 64 << 10;
const ROOT_RECORD: usize = 32;

/// The RANK_UNDEF index: `rshm.undef:<key>` → the key's first poster.
#[derive(Clone, Default)]
struct Index {
    table: TableBuilder,
    indexed: HashMap<Box<str>, u32>,
}

impl Index {
    fn add(&mut self, key: &str, rank: u32) -> Result<()> {
        let entry = format!("{UNDEF_INDEX}{key}");
        self.table
            .insert(Realm::Meta, &entry, &Value::ProcRank(rank))?;
        self.indexed.insert(key.into(), rank);
        Ok(())
    }

    fn remove(&mut self, key: &str) {
        self.table
            .remove(Realm::Meta, &format!("{UNDEF_INDEX}{key}"));
        self.indexed.remove(key);
    }
}

/// The posted data of one namespace, as its writer keeps it between publications.
pub struct PostedParts {
    base: Posted,
    /// The published rank tables: bytes of each one's values, and their sum (the tables are
    /// in the store).
    ranks: RankSizes,
    /// Bytes of root records the rank tables cost the publications since the last merge.
    root_bytes: usize,
    index: Index,
}

/// The tables a change rewrites, built but neither published nor kept yet: publish them
/// ([`PostedParts::publish`]) and keep them ([`PostedParts::accept`]) once the transaction
/// committed; dropped, they change nothing.
#[derive(Default)]
pub struct Staged {
    base: Option<Posted>,
    /// Rank tables: the new one, or `None` when the rank's table goes.
    ranks: BTreeMap<u32, Option<Posted>>,
    index: Option<Index>,
}

/// A rank's commit whose table is encoded straight into the pack
/// ([`PostedParts::stage_small`]).
pub struct SmallCommit<'b> {
    rank: u32,
    table: RankTable<'b>,
}

impl Staged {
    /// Whether the change rewrites nothing.
    pub fn is_empty(&self) -> bool {
        self.base.is_none() && self.ranks.is_empty() && self.index.is_none()
    }
}

impl Default for PostedParts {
    fn default() -> Self {
        PostedParts {
            base: Posted::unindexed(),
            ranks: RankSizes::default(),
            root_bytes: 0,
            index: Index::default(),
        }
    }
}

impl PostedParts {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of rank tables (values committed since the last merge).
    pub fn rank_tables(&self) -> usize {
        self.ranks.len()
    }

    /// The change that stores `batch` (a commit, a direct-modex reply or a fence) in namespace
    /// `ns` of `w`'s store: a put of each of its values, latest wins whatever the scope. Nothing
    /// is kept before [`PostedParts::accept`]; the rank tables it rewrites are read back from
    /// `w`.
    pub fn stage(&self, batch: FenceBatch, w: &mut Writer, ns: &str) -> Result<Staged> {
        let mut staged = Staged::default();
        if batch.is_empty() {
            return Ok(staged);
        }
        let mut index: Option<Index> = None;
        for (key, rank) in batch.first_posters() {
            if !self.index.indexed.contains_key(key) {
                index
                    .get_or_insert_with(|| self.index.clone())
                    .add(key, rank)?;
            }
        }
        staged.index = index;
        let small = batch.ranks().len() <= SMALL_BATCH_RANKS;
        let (rest, own) = batch.split(|r| small || self.ranks.contains(r))?;
        if !rest.is_empty() {
            let mut base = self.base.clone();
            base.apply(rest)?;
            staged.base = Some(base);
        }
        for (rank, values) in own {
            let mut t = self.rank_table(w, ns, rank)?;
            t.apply(values)?;
            staged.ranks.insert(rank, Some(t));
        }
        self.merge_if_due(&mut staged, w, ns)?;
        Ok(staged)
    }

    /// A commit of one rank that has no table since the last merge, bringing no key the
    /// namespace has not posted before and no merge: its table, planned straight from the
    /// commit's values, to be encoded into the pack ([`PostedParts::publish_small`]), with no
    /// table built or kept. `None` for any other commit: [`PostedParts::stage`] it as a batch.
    pub fn stage_small<'b>(&self, commit: &'b Commit<'_>) -> Result<Option<SmallCommit<'b>>> {
        if commit.keys().any(|k| !self.index.indexed.contains_key(k)) {
            return Ok(None);
        }
        self.small(commit.rank(), commit.latest())
    }

    /// [`PostedParts::stage_small`] of a batch (staged values): one rank's.
    pub fn stage_small_batch<'b>(&self, batch: &'b FenceBatch) -> Result<Option<SmallCommit<'b>>> {
        let Some(rank) = batch.single_rank() else {
            return Ok(None);
        };
        if batch
            .first_posters()
            .any(|(k, _)| !self.index.indexed.contains_key(k))
        {
            return Ok(None);
        }
        self.small(rank, batch.latest())
    }

    fn small<'b>(&self, rank: u32, items: Items<'b>) -> Result<Option<SmallCommit<'b>>> {
        if self.ranks.contains(rank) || items.is_empty() {
            return Ok(None);
        }
        let table = RankTable::plan(rank, items)?;
        let count = self.ranks.len() + 1;
        let bytes = self.ranks.total() + table.value_bytes();
        if table.total_len() > PACK_TABLE_MAX
            || self.merge_due(count, bytes, self.base.value_bytes())
        {
            return Ok(None);
        }
        Ok(Some(SmallCommit { rank, table }))
    }

    /// Write `commit`'s table into `tx` (published when it commits).
    pub fn publish_small(
        commit: &SmallCommit<'_>,
        tx: &mut Transaction<'_>,
        ns: &str,
    ) -> Result<()> {
        let p = rank_part(commit.rank).ok_or(Error::Corrupt("rank table of a special rank"))?;
        tx.put_packed(ns, p, commit.table.total_len(), |out, gen| {
            commit.table.write(out, gen)
        })
    }

    /// Keep `commit`, once published.
    pub fn accept_small(&mut self, commit: SmallCommit<'_>) {
        self.ranks.insert(commit.rank, commit.table.value_bytes());
        self.root_bytes += self.ranks.len() * ROOT_RECORD;
    }

    /// Rank `rank`'s table as published (read back from `w`), or an empty one.
    fn rank_table(&self, w: &mut Writer, ns: &str, rank: u32) -> Result<Posted> {
        let mut t = Posted::unindexed();
        if self.ranks.contains(rank) {
            let mut batch = FenceBatch::new();
            self.load(w, ns, rank, &mut batch)?;
            t.apply(batch)?;
        }
        Ok(t)
    }

    /// Add rank `rank`'s published values to `batch`.
    fn load(&self, w: &mut Writer, ns: &str, rank: u32, batch: &mut FenceBatch) -> Result<()> {
        let p = rank_part(rank).ok_or(Error::Corrupt("rank table of a special rank"))?;
        w.with_published(ns, p, |bytes| {
            readback::each_value(bytes, |rank, scope, key, flags, value| {
                batch.put_stored(rank, scope, key, flags, value)
            })
        })?
        .ok_or(Error::Corrupt("a rank table the store does not name"))
    }

    /// The change that withdraws what `rank` posted under `key`, in every scope and table (and
    /// its RANK_UNDEF index entry if `rank` is the key's poster); `None` if there is nothing
    /// to withdraw.
    pub fn stage_withdraw(
        &self,
        rank: u32,
        key: &str,
        w: &mut Writer,
        ns: &str,
    ) -> Result<Option<Staged>> {
        let mut staged = Staged::default();
        let found = self.withdraw_in(&mut staged, rank, key, w, ns)?;
        Ok(found.then_some(staged))
    }

    /// Add to `staged` the withdrawal of what `rank` posted under `key` (as
    /// [`PostedParts::stage_withdraw`], on top of what `staged` already changes); returns
    /// whether there was anything to withdraw.
    pub fn withdraw_in(
        &self,
        staged: &mut Staged,
        rank: u32,
        key: &str,
        w: &mut Writer,
        ns: &str,
    ) -> Result<bool> {
        check_poster(rank)?;
        let mut found = false;
        let table = match staged.ranks.get(&rank) {
            Some(t) => t.clone(),
            None if self.ranks.contains(rank) => Some(self.rank_table(w, ns, rank)?),
            None => None,
        };
        if let Some(mut t) = table {
            if t.withdraw(rank, key)? {
                staged.ranks.insert(rank, (!t.is_empty()).then_some(t));
                found = true;
            }
        }
        let had_base = staged.base.is_some();
        let mut base = staged.base.take().unwrap_or_else(|| self.base.clone());
        let removed = base.withdraw(rank, key)?;
        if removed || had_base {
            staged.base = Some(base);
        }
        found |= removed;
        let index = staged.index.as_ref().unwrap_or(&self.index);
        if index.indexed.get(key) == Some(&rank) {
            let mut index = staged.index.take().unwrap_or_else(|| self.index.clone());
            index.remove(key);
            staged.index = Some(index);
            found = true;
        }
        Ok(found)
    }

    /// Whether `count` rank tables of `bytes` value bytes, beside a base of `base_bytes`, are
    /// due to be merged into it: grown past it, too many, or costing more in root records
    /// than a merge costs.
    fn merge_due(&self, count: usize, bytes: usize, base_bytes: usize) -> bool {
        let roots = self.root_bytes + count * ROOT_RECORD;
        count > MAX_RANK_TABLES
            || bytes > base_bytes.max(MERGE_MIN_BYTES)
            || roots > base_bytes.max(MERGE_MIN_ROOT_BYTES)
    }

    /// Merge every rank table into the base when [`PostedParts::merge_due`].
    fn merge_if_due(&self, staged: &mut Staged, w: &mut Writer, ns: &str) -> Result<()> {
        let mut count = self.ranks.len();
        let mut bytes = self.ranks.total();
        for (rank, t) in &staged.ranks {
            if let Some(old) = self.ranks.get(*rank) {
                count -= 1;
                bytes -= old;
            }
            if let Some(t) = t {
                count += 1;
                bytes += t.value_bytes();
            }
        }
        let base = staged.base.as_ref().unwrap_or(&self.base);
        if !self.merge_due(count, bytes, base.value_bytes()) {
            return Ok(());
        }
        // Room for every rank table's values (their count estimated).
        let mut all = FenceBatch::with_capacity(count.max(bytes / 64), bytes);
        for rank in self.ranks.ranks() {
            if !staged.ranks.contains_key(&rank) {
                self.load(w, ns, rank, &mut all)?;
            }
        }
        for t in staged.ranks.values().flatten() {
            push_all(&mut all, t)?;
        }
        let mut merged = base.clone();
        merged.apply(all)?;
        staged.base = Some(merged);
        for rank in self.ranks.ranks() {
            staged.ranks.insert(rank, None);
        }
        staged.ranks.retain(|rank, _| self.ranks.contains(*rank));
        Ok(())
    }

    /// Write `staged`'s tables into `tx` (published when it commits).
    pub fn publish(staged: &Staged, tx: &mut Transaction<'_>, ns: &str) -> Result<()> {
        if let Some(base) = &staged.base {
            if base.is_empty() {
                tx.remove_table(ns, part::POSTED)?;
            } else {
                tx.put_table_packable(ns, part::POSTED, base.table())?;
            }
        }
        if let Some(index) = &staged.index {
            if index.table.is_empty() {
                tx.remove_table(ns, part::POSTED_INDEX)?;
            } else {
                tx.put_table_packable(ns, part::POSTED_INDEX, &index.table)?;
            }
        }
        for (rank, t) in &staged.ranks {
            let p = rank_part(*rank).ok_or(Error::Corrupt("rank table of a special rank"))?;
            match t {
                Some(t) => tx.put_table_packable(ns, p, t.table())?,
                None => tx.remove_table(ns, p)?,
            }
        }
        Ok(())
    }

    /// Keep `staged`, once published.
    pub fn accept(&mut self, staged: Staged) {
        if let Some(base) = staged.base {
            self.base = base;
        }
        let merged = staged.ranks.values().all(Option::is_none) && !staged.ranks.is_empty();
        if let Some(index) = staged.index {
            self.index = index;
        }
        for (rank, t) in staged.ranks {
            self.ranks.remove(rank);
            if let Some(t) = t {
                self.ranks.insert(rank, t.value_bytes());
            }
        }
        self.root_bytes = if merged && self.ranks.is_empty() {
            0
        } else {
            self.root_bytes + self.ranks.len() * ROOT_RECORD
        };
    }

    /// Remove every posted table of `ns` in `tx` (what [`PostedParts`] publishes).
    pub fn remove_all(&self, tx: &mut Transaction<'_>, ns: &str) -> Result<()> {
        tx.remove_table(ns, part::POSTED)?;
        tx.remove_table(ns, part::POSTED_INDEX)?;
        for rank in self.ranks.ranks() {
            if let Some(p) = rank_part(rank) {
                tx.remove_table(ns, p)?;
            }
        }
        Ok(())
    }
}

/// Add every value of `t` to `batch`.
fn push_all(batch: &mut FenceBatch, t: &Posted) -> Result<()> {
    for (rank, scope, key, flags, bytes) in t.values() {
        batch.put_stored(rank, scope, key, flags, bytes)?;
    }
    Ok(())
}

/// A commit's rank table encoded straight from its batch (`table::small`) is the table the
/// builder encodes for the same values.
#[cfg(test)]
mod small_commit_tests {
    use crate::modex::{FenceBatch, Posted, Scope};
    use crate::table::small::RankTable;
    use crate::value::Value;

    /// The table a commit's batch makes through the builder (what a merge or a later commit of
    /// the rank encodes), and straight from the batch: the same bytes, for random commits
    /// (keys put twice, every scope, byte objects and archived values, none).
    #[test]
    fn a_rank_table_encodes_as_the_builder_encodes_it() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let scopes = [Scope::Local, Scope::Remote, Scope::Global];
        for round in 0..400 {
            let rank = next(5000) as u32;
            let mut batch = FenceBatch::new();
            for _ in 0..next(40) {
                let key = format!("k.{}", next(30));
                let scope = scopes[next(3) as usize];
                match next(4) {
                    0 => batch.put(rank, scope, &key, &Value::Uint32(next(1 << 30) as u32)),
                    1 => batch.put(
                        rank,
                        scope,
                        &key,
                        &Value::String("s".repeat(next(90) as usize)),
                    ),
                    _ => batch.put_bytes(rank, scope, &key, &vec![round as u8; next(300) as usize]),
                }
                .unwrap();
            }
            let items = batch.latest();
            let small = RankTable::plan(rank, items).unwrap();
            let mut direct = vec![0xa5; small.total_len()];
            small.write(&mut direct, 7).unwrap();
            let mut posted = Posted::unindexed();
            let mut again = FenceBatch::new();
            for i in batch.latest() {
                let scope = Scope::of_class(i.class).unwrap();
                again
                    .put_stored(rank, scope, i.key, i.flags, i.bytes)
                    .unwrap();
            }
            posted.apply(again).unwrap();
            let built = posted.table().encode(7).unwrap();
            assert_eq!(direct, built, "round {round}");
            assert_eq!(small.value_bytes(), posted.value_bytes(), "round {round}");
        }
    }
}
