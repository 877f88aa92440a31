//! Process sets (the standard's 12.1; defined and deleted by the host, 17.2.19-20) in the
//! store: the server's [`Registry`] of sets, published as chunk tables of at most
//! [`CHUNK_SETS`] sets each (store names [`chunk_namespace`], part [`crate::part::PSETS`]), each
//! holding one value, a set index ([`index`]), and the chunk list naming them in order
//! ([`LIST_NAMESPACE`]); and what a reader answers from them ([`read`]): `PMIX_PSET_NAMES` of a
//! process, `PMIX_PSET_MEMBERS` of a set, and the `PMIx_Query_info` keys
//! `PMIX_QUERY_NUM_PSETS`, `PMIX_QUERY_PSET_NAMES`, `PMIX_QUERY_PSET_MEMBERSHIP`
//! (docs/psets-groups.md).

#![forbid(unsafe_code)]

pub mod groups;
pub mod index;
pub mod layers;

use std::collections::{BTreeMap, HashMap};

use crate::error::{Error, Result};
use crate::layout::{Realm, MAX_NSPACE_LEN};
use crate::reader::{Pin, Reader};
use crate::table::{TableBuilder, TableView};
use crate::value::{types, DataArray, Proc, Value};
use crate::valueref::ValueRef;
use crate::writer::Transaction;

pub use index::{IndexView, Member, Run};

/// Table parts of process sets and groups (format.md section 5, `part`: parts are u32
/// chosen by the layers above the store; `rshm_gds::part` lists every layer's).
pub mod part {
    /// The process sets: the chunk list under the store name [`super::LIST_NAMESPACE`], and
    /// each chunk of sets under `rshm.psets.<id>`.
    pub const PSETS: u32 = 5;
    /// The process groups ([`super::groups`]): the group index under the store name
    /// `rshm.groups`, and each group's own table under its group id.
    pub const GROUPS: u32 = 6;
}
pub use layers::Sets;

/// The store name of the chunk list (part [`crate::part::PSETS`]): which chunk tables hold the
/// sets, in definition order. Its own name, not an earlier layout's `rshm.psets`: a reader that
/// knows only that layout finds no set table and passes set calls to its host library.
pub const LIST_NAMESPACE: &str = "rshm.psets.list";
/// The chunk list's metadata key (class 6): a byte object of little-endian `u32`s, the version
/// ([`LIST_VERSION`]), the number of chunks, then each chunk's id in order.
pub const LIST_KEY: &str = "rshm.sets.chunks";
/// The chunk list's version word.
pub const LIST_VERSION: u32 = 1;
/// What a chunk's store name starts with; its id in decimal follows.
pub const CHUNK_PREFIX: &str = "rshm.psets.";
/// The metadata key (class 6) whose byte object is the set index (of a chunk, or of groups).
pub const INDEX_KEY: &str = "rshm.sets";
/// The most sets one chunk holds: a change of one set rewrites one chunk (two when it merges
/// with a neighbour), whatever the number of sets.
pub const CHUNK_SETS: usize = 1024;
/// The fewest sets a chunk but the last keeps: below, it merges with a neighbour (or the two
/// are split evenly), so S sets take at most 4 S / [`CHUNK_SETS`] + 1 chunks.
pub const MIN_CHUNK_SETS: usize = CHUNK_SETS / 4;

/// The store name of chunk `id`.
pub fn chunk_namespace(id: u32) -> String {
    format!("{CHUNK_PREFIX}{id}")
}

/// `PMIX_RANK_VALID`: ranks from here up are special (wildcard, undef, ...).
pub use crate::jobdata::query::RANK_VALID;

/// `PMIX_PSET_NAME`: a process's launch-time set label (job data, registered by the host).
pub const PSET_NAME: &str = "pmix.pset.nm";
/// `PMIX_PSET_NAMES`: the sets a process is in (12.1, 14.1.2 of v5.0).
pub const PSET_NAMES: &str = "pmix.pset.nms";
/// `PMIX_PSET_MEMBERS`: a set's members.
pub const PSET_MEMBERS: &str = "pmix.pset.mems";
/// `PMIX_QUERY_NUM_PSETS`.
pub const QUERY_NUM_PSETS: &str = "pmix.qry.psetnum";
/// `PMIX_QUERY_PSET_NAMES`.
pub const QUERY_PSET_NAMES: &str = "pmix.qry.psets";
/// `PMIX_QUERY_PSET_MEMBERSHIP`.
pub const QUERY_PSET_MEMBERSHIP: &str = "pmix.qry.pmems";

/// The longest set name: a namespace's (`PMIX_MAX_NSLEN`), as 17.2.19 asks hosts to keep set
/// names apart from namespaces.
pub const MAX_NAME_LEN: usize = MAX_NSPACE_LEN;

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

pub(crate) fn check_name(name: &str, what: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.as_bytes().contains(&0) {
        return Err(Error::InvalidArgument(format!(
            "bad {what} {name:?} (1..={MAX_NAME_LEN} bytes, no NUL)"
        )));
    }
    Ok(())
}

/// The most members one set may have (a wildcard member counts as one): a member Get builds
/// an array of that many `pmix_proc_t` (260 bytes each, ~270 MB at this bound).
pub const MAX_MEMBERS: usize = 1 << 20;
/// The most sets one call may define.
pub const MAX_SETS_PER_CALL: usize = 1 << 20;
/// The most members a Get or query answer holds; a set with more (only a forged or foreign
/// store has one) is answered with an error, not allocated.
pub const MAX_ANSWER_MEMBERS: u64 = MAX_MEMBERS as u64;
/// Names the store keeps for its own tables: no set name starts with it.
pub const RESERVED_PREFIX: &str = "rshm.";

/// A set name (17.2.19, and what the answers can carry unambiguously): a name as a namespace's
/// (1..=255 bytes, no NUL), without `,` (`PMIX_QUERY_PSET_NAMES` joins names with it), white
/// space or control characters (a list of names read back by a person or a parser), and not in
/// the store's own name space (`rshm.`).
pub fn check_set_name(name: &str) -> Result<()> {
    check_name(name, "set name")?;
    let bad = |why: &str| {
        Err(Error::InvalidArgument(format!(
            "bad set name {name:?}: {why} (docs/psets-groups.md, \"Names and members\")"
        )))
    };
    if name.contains(',') {
        return bad("a ',' would make PMIX_QUERY_PSET_NAMES, a ','-joined list, ambiguous");
    }
    if name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("white space or a control character");
    }
    if name.starts_with(RESERVED_PREFIX) {
        return bad("names starting with \"rshm.\" are the store's own");
    }
    Ok(())
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

/// The set index of a published set table; `None` when the table holds none (or a forged one).
pub fn index_of(table: &TableView) -> Option<IndexView<'_>> {
    key_index(table, INDEX_KEY)
}

fn key_index<'a>(table: &'a TableView, key: &str) -> Option<IndexView<'a>> {
    match table.get(Realm::Meta, key)? {
        ValueRef::Bytes(b) => IndexView::new(b).ok(),
        _ => None,
    }
}

/// The chunk ids of a published chunk list; `None` when it holds none (or a forged one).
pub fn chunk_ids(table: &TableView) -> Option<Vec<u32>> {
    let ValueRef::Bytes(b) = table.get(Realm::Meta, LIST_KEY)? else {
        return None;
    };
    let word = |i: usize| -> Option<u32> {
        Some(u32::from_le_bytes(
            b.get(i * 4..i * 4 + 4)?.try_into().ok()?,
        ))
    };
    if word(0)? != LIST_VERSION {
        return None;
    }
    let n = word(1)? as usize;
    if n > b.len() / 4 {
        return None;
    }
    (0..n).map(|i| word(2 + i)).collect()
}

/// The chunk list's bytes for chunk ids `ids` in order.
pub fn encode_list(ids: &[u32]) -> Result<Vec<u8>> {
    let n = u32::try_from(ids.len())
        .map_err(|_| Error::InvalidArgument("too many chunks (max 2^32-1)".into()))?;
    let mut out = Vec::with_capacity(8 + ids.len() * 4);
    for w in [LIST_VERSION, n].iter().chain(ids) {
        out.extend_from_slice(&w.to_le_bytes());
    }
    Ok(out)
}

/// Stage set indexes as chunk tables and the list naming them in their order: what
/// [`Registry::stage`] publishes, for an index built otherwise (a test's forged one).
pub fn stage_indexes(tx: &mut Transaction<'_>, chunks: &[(u32, Vec<u8>)]) -> Result<()> {
    for (id, bytes) in chunks {
        tx.put_table(
            &chunk_namespace(*id),
            crate::part::PSETS,
            &index_table(bytes.clone())?,
        )?;
    }
    let ids: Vec<u32> = chunks.iter().map(|(id, _)| *id).collect();
    tx.put_table(LIST_NAMESPACE, crate::part::PSETS, &list_table(&ids)?)
}

fn index_table(bytes: Vec<u8>) -> Result<TableBuilder> {
    let mut t = TableBuilder::new();
    t.insert(Realm::Meta, INDEX_KEY, &Value::ByteObject(bytes))?;
    Ok(t)
}

fn list_table(ids: &[u32]) -> Result<TableBuilder> {
    let mut t = TableBuilder::new();
    t.insert(Realm::Meta, LIST_KEY, &Value::ByteObject(encode_list(ids)?))?;
    Ok(t)
}

/// The sets of the pinned generation: the chunk list and the chunks it names, each read in
/// place; `None` when the generation has no chunk list (no set published). A chunk the list
/// names that is missing or does not read is left out: a forged store answers less.
pub fn read<'p>(r: &'p Reader, pin: &'p Pin<'_>) -> Option<Sets<'p>> {
    let list = r.table(pin, LIST_NAMESPACE, crate::part::PSETS).ok()?;
    let ids = chunk_ids(list).unwrap_or_default();
    let chunks = ids
        .iter()
        .filter_map(|&id| {
            let t = r
                .table(pin, &chunk_namespace(id), crate::part::PSETS)
                .ok()?;
            index_of(t)
        })
        .collect();
    Some(Sets::new(chunks))
}

/// The names of the sets, in definition order.
pub fn names(ix: &Sets<'_>) -> Vec<String> {
    ix.ids()
        .filter_map(|i| ix.name(i).map(str::to_owned))
        .collect()
}

/// The names of the sets in definition order, joined by `,`, built in one string.
pub fn joined_names(ix: &Sets<'_>) -> String {
    let mut out = String::new();
    for name in ix.ids().filter_map(|i| ix.name(i)) {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(name);
    }
    out
}

fn strings(v: Vec<String>) -> Value {
    Value::DataArray(Box::new(DataArray {
        elem_type: types::STRING,
        items: v.into_iter().map(Value::String).collect(),
    }))
}

/// Whether set `i`'s members fit an answer ([`MAX_ANSWER_MEMBERS`]); `InvalidArgument`
/// saying how many it has otherwise, before anything is built.
pub fn check_answer_size(ix: &Sets<'_>, i: usize) -> Result<()> {
    let n = ix.member_count(i);
    if n > MAX_ANSWER_MEMBERS {
        return Err(Error::InvalidArgument(format!(
            "set {:?} has {n} members, more than an answer holds ({MAX_ANSWER_MEMBERS})",
            ix.name(i).unwrap_or("?")
        )));
    }
    Ok(())
}

/// The members of set `i` as a `PMIX_DATA_ARRAY` of `PMIX_PROC`.
pub fn members_value(ix: &Sets<'_>, i: usize) -> Value {
    Value::DataArray(Box::new(DataArray {
        elem_type: types::PROC,
        items: ix
            .members(i)
            .into_iter()
            .map(|m| {
                Value::Proc(Proc {
                    nspace: m.nspace.to_owned(),
                    rank: m.rank,
                })
            })
            .collect(),
    }))
}

/// `PMIX_PSET_NAMES` of process (`ns`, `rank`): the names of the sets it is in, in definition
/// order, as a data array of strings (12.1); `None` when it is in none.
pub fn names_of(ix: &Sets<'_>, ns: &str, rank: u32) -> Option<Value> {
    let sets = ix.sets_of(ns, rank);
    if sets.is_empty() {
        return None;
    }
    Some(strings(
        sets.into_iter()
            .filter_map(|i| ix.name(i).map(str::to_owned))
            .collect(),
    ))
}

/// What a `PMIx_Query_info` key of process sets answers (12.1, 14.1.2 of v5.0), as OpenPMIx
/// 4.2.2's hosts (PRRTE) answer it (docs/psets-groups.md "What OpenPMIx 4.2.2 does with sets"). `pset` is the
/// `PMIX_PSET_NAME` qualifier of a membership query. `NotFound` (no set to list, an unknown
/// set) and `InvalidArgument` (a membership query without its set) end the whole call.
pub fn query(ix: &Sets<'_>, key: &str, pset: Option<&str>) -> Result<Value> {
    match key {
        QUERY_NUM_PSETS => Ok(Value::Size(ix.len() as u64)),
        // OpenPMIx 4.2.2's pmix_common.h: "a comma-delimited list of the names", a string
        // (the standard: an array of strings).
        QUERY_PSET_NAMES if ix.is_empty() => Err(Error::NotFound),
        QUERY_PSET_NAMES => Ok(Value::String(joined_names(ix))),
        QUERY_PSET_MEMBERSHIP => {
            let name = pset.ok_or_else(|| {
                Error::InvalidArgument("PMIX_QUERY_PSET_MEMBERSHIP needs PMIX_PSET_NAME".into())
            })?;
            let i = ix.find(name).ok_or(Error::NotFound)?;
            check_answer_size(ix, i)?;
            Ok(members_value(ix, i))
        }
        _ => Err(Error::InvalidArgument(format!(
            "not a process-set query: {key}"
        ))),
    }
}

/// Whether `key` is a `PMIx_Query_info` key [`query`] answers.
pub fn is_query_key(key: &str) -> bool {
    matches!(
        key,
        QUERY_NUM_PSETS | QUERY_PSET_NAMES | QUERY_PSET_MEMBERSHIP
    )
}
