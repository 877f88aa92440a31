//! The server's [`Registry`] of process sets: the sets in chunks of at most [`CHUNK_SETS`], the
//! member checks a definition passes, the journal of changes since the last publication, and
//! staging the chunks a change touched (what [`Staged`] counts) into a transaction.

use std::collections::{BTreeMap, HashMap};

#[cfg(doc)]
use super::MIN_CHUNK_SETS;
use super::{
    check_name, check_set_name, chunk_namespace, index, index_table, list_table, Run, CHUNK_SETS,
    LIST_NAMESPACE, MAX_MEMBERS, RANK_VALID,
};
use crate::error::{Error, Result};
use crate::table::TableBuilder;
use crate::writer::Transaction;

/// A set as the server keeps it: name and runs (namespace numbers of the registry).
type Set = (String, Vec<Run>);

/// Named, ordered sets of processes, as the server keeps them between publications: chunks of
/// at most [`CHUNK_SETS`] sets in definition order, each published as its own table, and the
/// changes since the last publication ([`Registry::stage`] publishes the chunks they touched,
/// [`Registry::rollback`] undoes them).
#[derive(Clone, Debug, Default)]
pub struct Registry {
    nspaces: Vec<String>,
    ns_ids: HashMap<String, u32>,
    /// Chunk ids in definition order.
    order: Vec<u32>,
    chunks: HashMap<u32, Vec<Set>>,
    /// The chunk holding each set.
    chunk_of: HashMap<String, u32>,
    next_id: u32,
    len: usize,
    /// The most sets a chunk holds; 0: [`CHUNK_SETS`].
    chunk_sets: usize,
    journal: Journal,
}

/// What the registry was at the last publication, as far as the changes since touched it.
#[derive(Clone, Debug, Default)]
struct Journal {
    open: bool,
    order: Vec<u32>,
    /// Each chunk touched since, as it was (`None`: created since).
    before: BTreeMap<u32, Option<Vec<Set>>>,
    nspaces: usize,
    next_id: u32,
    len: usize,
}

/// What [`Registry::stage`] wrote: the observable bound of a change's work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Staged {
    /// Chunk tables written.
    pub chunks: usize,
    /// Sets they hold.
    pub sets: usize,
    /// Bytes of their set indexes.
    pub index_bytes: usize,
    /// Chunk tables removed.
    pub removed: usize,
    /// Chunks the list names (4 bytes each).
    pub list: usize,
}

/// What a rank names: an ordinary rank, or one of the reserved values (17.2.19 lists processes;
/// of the reserved ranks only `PMIX_RANK_WILDCARD`, a whole namespace, is a process list).
fn check_member_rank(ns: &str, rank: u32) -> Result<()> {
    if rank < RANK_VALID || rank == index::RANK_WILDCARD {
        return Ok(());
    }
    let what = match u32::MAX - rank {
        0 => "PMIX_RANK_UNDEF",
        2 => "PMIX_RANK_LOCAL_NODE",
        3 => "PMIX_RANK_INVALID",
        4 => "PMIX_RANK_LOCAL_PEERS",
        _ => "a reserved rank (PMIX_RANK_VALID and above)",
    };
    Err(Error::InvalidArgument(format!(
        "set member {ns}:{rank} is {what}: a member is a process, or PMIX_RANK_WILDCARD for a \
         whole namespace"
    )))
}

/// Refuses a process listed twice in `runs` (or covered by a wildcard member of its namespace
/// too): its sets would list it twice. Sorts a copy of the runs: the set's own size x log.
fn check_distinct(runs: &[Run], nspaces: &[String]) -> Result<()> {
    let mut spans: Vec<(u32, u32, u32)> = runs
        .iter()
        .map(|r| {
            if r.first == index::RANK_WILDCARD {
                (r.ns, 0, u32::MAX)
            } else {
                (r.ns, r.first, r.first + (r.count - 1))
            }
        })
        .collect();
    spans.sort_unstable();
    for w in spans.windows(2) {
        let ((ns, _, last), (ns2, first2, _)) = (w[0], w[1]);
        if ns == ns2 && first2 <= last {
            let name = nspaces.get(ns as usize).map_or("?", String::as_str);
            return Err(Error::InvalidArgument(format!(
                "set member {name}:{first2} is listed twice (or also as {name}:PMIX_RANK_WILDCARD): \
                 each process is a member once"
            )));
        }
    }
    Ok(())
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry whose chunks hold at most `n` sets (at least 4), not [`CHUNK_SETS`]: for tests
    /// that cross many chunks with few sets.
    pub fn with_chunk_sets(n: usize) -> Self {
        Registry {
            chunk_sets: n.max(4),
            ..Self::default()
        }
    }

    /// The most sets a chunk holds.
    pub fn chunk_sets(&self) -> usize {
        if self.chunk_sets == 0 {
            CHUNK_SETS
        } else {
            self.chunk_sets
        }
    }

    /// How many sets.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether a set of that name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.chunk_of.contains_key(name)
    }

    /// How many sets each chunk holds, in order.
    pub fn chunk_lens(&self) -> Vec<usize> {
        self.order
            .iter()
            .map(|id| self.chunks.get(id).map_or(0, Vec::len))
            .collect()
    }

    /// Define `name` with `members` in their order (17.2.19). A name defined again is replaced
    /// and moves to the end of the definition order, as a delete then a define would leave it.
    /// Checked first: a refused definition changes nothing. Costs the set's own size, plus the
    /// chunk it leaves (at most [`CHUNK_SETS`] sets) when it is defined again.
    pub fn define(&mut self, name: &str, members: &[(&str, u32)]) -> Result<()> {
        check_set_name(name)?;
        if members.len() > MAX_MEMBERS {
            return Err(Error::InvalidArgument(format!(
                "set {name:?} has {} members, more than a set may have ({MAX_MEMBERS})",
                members.len()
            )));
        }
        for &(ns, rank) in members {
            check_name(ns, "member namespace")?;
            check_member_rank(ns, rank)?;
            if ns == name || self.contains(ns) {
                return Err(Error::InvalidArgument(format!(
                    "set member {ns}:{rank} names a process set, not a namespace: {{set, rank}} \
                     would be ambiguous"
                )));
            }
        }
        if self.ns_ids.contains_key(name) || members.iter().any(|&(ns, _)| ns == name) {
            return Err(Error::InvalidArgument(format!(
                "set name {name:?} is a namespace some set's members name: a Get of {{{name}, \
                 PMIX_RANK_WILDCARD}} would be ambiguous"
            )));
        }
        self.open_journal();
        let mut runs = Vec::new();
        let mut new_ns = Vec::new();
        for &(ns, rank) in members {
            let known = self.ns_ids.contains_key(ns);
            let id = self.ns_id(ns)?;
            if !known {
                new_ns.push(ns);
            }
            index::push_member(&mut runs, id, rank);
        }
        if let Err(e) = check_distinct(&runs, &self.nspaces) {
            // Nothing changes: the namespaces just numbered go again.
            for ns in new_ns {
                self.ns_ids.remove(ns);
                self.nspaces.pop();
            }
            return Err(e);
        }
        self.remove(name);
        self.append((name.to_owned(), runs));
        Ok(())
    }

    /// Delete `name` (17.2.20). Returns whether it existed (when not, nothing changed).
    pub fn delete(&mut self, name: &str) -> bool {
        if !self.contains(name) {
            return false;
        }
        self.open_journal();
        self.remove(name)
    }

    fn open_journal(&mut self) {
        if self.journal.open {
            return;
        }
        self.journal = Journal {
            open: true,
            order: self.order.clone(),
            before: BTreeMap::new(),
            nspaces: self.nspaces.len(),
            next_id: self.next_id,
            len: self.len,
        };
    }

    /// Note chunk `id` as changed since the last publication, keeping what it was the first
    /// time (a copy of at most [`CHUNK_SETS`] sets).
    fn touch(&mut self, id: u32) {
        if !self.journal.before.contains_key(&id) {
            let was = self.chunks.get(&id).cloned();
            self.journal.before.insert(id, was);
        }
    }

    fn append(&mut self, set: Set) {
        let tail = match self.order.last() {
            Some(&id) if self.chunks.get(&id).map_or(0, Vec::len) < self.chunk_sets() => id,
            _ => self.new_chunk(),
        };
        self.touch(tail);
        self.chunk_of.insert(set.0.clone(), tail);
        self.chunks.entry(tail).or_default().push(set);
        self.len += 1;
    }

    /// A new empty chunk at the end of the order.
    fn new_chunk(&mut self) -> u32 {
        let mut id = self.next_id;
        while self.chunks.contains_key(&id) {
            id = id.wrapping_add(1);
        }
        self.next_id = id.wrapping_add(1);
        self.touch(id);
        self.chunks
            .insert(id, Vec::with_capacity(self.chunk_sets()));
        self.order.push(id);
        id
    }

    /// Take `name` out of its chunk; the chunk left below [`MIN_CHUNK_SETS`] merges.
    fn remove(&mut self, name: &str) -> bool {
        let Some(id) = self.chunk_of.remove(name) else {
            return false;
        };
        self.touch(id);
        if let Some(c) = self.chunks.get_mut(&id) {
            if let Some(p) = c.iter().position(|(n, _)| n == name) {
                c.remove(p);
                self.len -= 1;
            }
        }
        self.rebalance(id);
        true
    }

    /// Chunk `id` just lost a set: gone when empty; merged with its smaller neighbour (or the
    /// two split evenly when they would not fit one) when under [`MIN_CHUNK_SETS`] and not the
    /// last. Every chunk but the last then holds at least [`MIN_CHUNK_SETS`] sets.
    fn rebalance(&mut self, id: u32) {
        let n = self.chunks.get(&id).map_or(0, Vec::len);
        let Some(pos) = self.order.iter().position(|&c| c == id) else {
            return;
        };
        if n == 0 {
            self.order.remove(pos);
            self.chunks.remove(&id);
            return;
        }
        if n >= self.chunk_sets() / 4 || pos + 1 == self.order.len() {
            return;
        }
        let size = |c: Option<&u32>| {
            c.and_then(|c| self.chunks.get(c))
                .map_or(usize::MAX, Vec::len)
        };
        let prev = pos.checked_sub(1);
        let with_prev = size(prev.and_then(|p| self.order.get(p))) <= size(self.order.get(pos + 1));
        let (a_pos, b_pos) = match prev {
            Some(p) if with_prev => (p, pos),
            _ => (pos, pos + 1),
        };
        let (a, b) = (self.order[a_pos], self.order[b_pos]);
        self.touch(a);
        self.touch(b);
        let mut sets = self.chunks.remove(&a).unwrap_or_default();
        sets.extend(self.chunks.remove(&b).unwrap_or_default());
        if sets.len() <= self.chunk_sets() {
            for (name, _) in &sets {
                self.chunk_of.insert(name.clone(), a);
            }
            self.chunks.insert(a, sets);
            self.order.remove(b_pos);
        } else {
            let second = sets.split_off(sets.len() / 2);
            for (name, _) in &sets {
                self.chunk_of.insert(name.clone(), a);
            }
            for (name, _) in &second {
                self.chunk_of.insert(name.clone(), b);
            }
            self.chunks.insert(a, sets);
            self.chunks.insert(b, second);
        }
    }

    /// Undo every define and delete since the last publication (its publication failed): the
    /// sets, their chunks and their order are as the last publication left them.
    pub fn rollback(&mut self) {
        if !self.journal.open {
            return;
        }
        let j = std::mem::take(&mut self.journal);
        for id in j.before.keys() {
            if let Some(now) = self.chunks.remove(id) {
                for (name, _) in now {
                    self.chunk_of.remove(&name);
                }
            }
        }
        for (id, was) in j.before {
            if let Some(was) = was {
                for (name, _) in &was {
                    self.chunk_of.insert(name.clone(), id);
                }
                self.chunks.insert(id, was);
            }
        }
        self.order = j.order;
        self.next_id = j.next_id;
        self.len = j.len;
        for ns in self.nspaces.drain(j.nspaces..) {
            self.ns_ids.remove(&ns);
        }
    }

    /// The changes since the last publication were published: forget what undoes them.
    pub fn published(&mut self) {
        self.journal = Journal::default();
    }

    fn ns_id(&mut self, ns: &str) -> Result<u32> {
        if let Some(&id) = self.ns_ids.get(ns) {
            return Ok(id);
        }
        let id = u32::try_from(self.nspaces.len())
            .map_err(|_| Error::InvalidArgument("too many namespaces".into()))?;
        self.nspaces.push(ns.to_owned());
        self.ns_ids.insert(ns.to_owned(), id);
        Ok(id)
    }

    fn specs(sets: &[Set]) -> Vec<index::SetSpec<'_>> {
        sets.iter()
            .map(|(name, runs)| index::SetSpec { name, runs })
            .collect()
    }

    /// Every set in definition order.
    pub fn sets(&self) -> impl Iterator<Item = (&str, &[Run])> + '_ {
        self.order
            .iter()
            .filter_map(|id| self.chunks.get(id))
            .flatten()
            .map(|(n, r)| (n.as_str(), r.as_slice()))
    }

    /// The set index of every set, in one index (not what is published: the chunks are).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let specs: Vec<index::SetSpec<'_>> = self
            .sets()
            .map(|(name, runs)| index::SetSpec { name, runs })
            .collect();
        index::encode(&self.nspaces, &specs)
    }

    /// A table holding every set in one index ([`INDEX_KEY`]): the group index's form
    /// (groups are few), not the process sets' (chunks, [`Registry::stage`]).
    pub fn table(&self) -> Result<TableBuilder> {
        index_table(self.encode()?)
    }

    /// A chunk's set index.
    fn encode_chunk(&self, sets: &[Set]) -> Result<Vec<u8>> {
        index::encode(&self.nspaces, &Self::specs(sets))
    }

    /// Stage the publication of the changes since the last one: each chunk they touched
    /// written again (or removed), and the chunk list. A change of one set touches at most
    /// three chunks (the one it leaves, a neighbour that one merges with, the last), so its
    /// cost is bounded by 3 x [`CHUNK_SETS`] sets plus 4 bytes a chunk for the list, whatever
    /// the number of sets. Then [`Registry::published`] once the transaction committed, or
    /// [`Registry::rollback`].
    pub fn stage(&self, tx: &mut Transaction<'_>) -> Result<Staged> {
        let mut staged = Staged::default();
        for (&id, was) in &self.journal.before {
            match self.chunks.get(&id) {
                Some(sets) => {
                    let bytes = self.encode_chunk(sets)?;
                    staged.chunks += 1;
                    staged.sets += sets.len();
                    staged.index_bytes += bytes.len();
                    tx.put_table(
                        &chunk_namespace(id),
                        crate::part::PSETS,
                        &index_table(bytes)?,
                    )?;
                }
                // Published before, gone now; a chunk made and emptied since never was.
                None if was.is_some() => {
                    staged.removed += 1;
                    tx.remove_table(&chunk_namespace(id), crate::part::PSETS)?;
                }
                None => {}
            }
        }
        staged.list = self.order.len();
        tx.put_table(
            LIST_NAMESPACE,
            crate::part::PSETS,
            &list_table(&self.order)?,
        )?;
        Ok(staged)
    }

    /// Stage the removal of every published set table: the chunk list and its chunks.
    pub fn stage_removal(&self, tx: &mut Transaction<'_>) -> Result<()> {
        let published = if self.journal.open {
            &self.journal.order
        } else {
            &self.order
        };
        for &id in published {
            tx.remove_table(&chunk_namespace(id), crate::part::PSETS)?;
        }
        tx.remove_table(LIST_NAMESPACE, crate::part::PSETS)
    }
}
