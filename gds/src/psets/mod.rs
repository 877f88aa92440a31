//! Process sets (the standard's 12.1; defined and deleted by the host, 17.2.19-20) in the
//! store: the server's [`Registry`] of sets, published as one table per change (store name
//! [`NAMESPACE`], part [`crate::part::PSETS`]) holding one value, the set index
//! ([`index`]); and what a reader answers from it: `PMIX_PSET_NAMES` of a process,
//! `PMIX_PSET_MEMBERS` of a set, and the `PMIx_Query_info` keys `PMIX_QUERY_NUM_PSETS`,
//! `PMIX_QUERY_PSET_NAMES`, `PMIX_QUERY_PSET_MEMBERSHIP` (docs/psets-groups.md).

#![forbid(unsafe_code)]

pub mod groups;
pub mod index;
pub mod layers;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::{Error, Result};
use crate::layout::{Realm, MAX_NSPACE_LEN};
use crate::table::{TableBuilder, TableView};
use crate::value::{types, DataArray, Proc, Value};
use crate::valueref::ValueRef;
use crate::writer::Transaction;

pub use index::{IndexView, Member, Run};

/// Table parts of process sets and groups (format.md section 5, `part`: parts are u32
/// chosen by the layers above the store; `gds::part` lists every layer's).
pub mod part {
    /// The process sets, under the store name [`super::NAMESPACE`].
    pub const PSETS: u32 = 5;
    /// The process groups ([`super::groups`]): the group index under the store name
    /// `rshm.groups`, and each group's own table under its group id.
    pub const GROUPS: u32 = 6;
}
pub use layers::Sets;

/// The store name of the process-set table. Published as part [`crate::part::PSETS`], so it
/// cannot collide with a PMIx namespace of the same name, whose data is part 0.
pub const NAMESPACE: &str = "rshm.psets";
/// The metadata key (class 6) whose byte object is the set index.
pub const INDEX_KEY: &str = "rshm.sets";
/// The store name of the delta table (part [`crate::part::PSETS`]): the changes since the base.
pub const DELTA_NAMESPACE: &str = "rshm.psets.delta";
/// The delta table's metadata key whose byte object names the base's sets gone since the merge.
pub const GONE_KEY: &str = "rshm.sets.gone";

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

/// Named, ordered sets of processes, as the server keeps them between publications: the base
/// (the sets as of the last merge, published as [`NAMESPACE`]) and the delta beside it (sets
/// defined since, and the base's sets deleted or defined again since, published as
/// [`DELTA_NAMESPACE`]). A define or delete publishes the delta alone; once the delta
/// outweighs [`Registry::merge_bound`] the change is published as a new base instead.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    nspaces: Vec<String>,
    ns_ids: HashMap<String, u32>,
    /// In definition order; those named in `gone` are no longer sets.
    base: Vec<(String, Vec<Run>)>,
    base_pos: HashMap<String, usize>,
    gone: BTreeSet<String>,
    /// By definition sequence (after the base's): a set defined again leaves its old place.
    delta: BTreeMap<u64, (String, Vec<Run>)>,
    /// Each delta set's sequence number.
    delta_pos: HashMap<String, u64>,
    next_seq: u64,
}

/// What undoes one [`Registry::define`] or delete whose publication failed.
#[derive(Debug)]
pub struct Undo {
    name: String,
    pushed: Option<u64>,
    delta_prev: Option<(u64, Vec<Run>)>,
    gone_added: bool,
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

/// The fewest delta entries (sets plus gone names) a merge waits for.
pub const MIN_DELTA: usize = 64;

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sets.
    pub fn len(&self) -> usize {
        self.base.len() - self.gone.len() + self.delta.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a set of that name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.delta_pos.contains_key(name)
            || (self.base_pos.contains_key(name) && !self.gone.contains(name))
    }

    /// Define `name` with `members` in their order (17.2.19). A name defined again is replaced
    /// and moves to the end of the definition order, as a delete then a define would leave it.
    /// Checked first: a refused definition changes nothing. Costs the set's own size and a
    /// logarithm of the sets', not the base's or the delta's size.
    pub fn define(&mut self, name: &str, members: &[(&str, u32)]) -> Result<Undo> {
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
        let mut undo = self.remove(name);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.delta.insert(seq, (name.to_owned(), runs));
        self.delta_pos.insert(name.to_owned(), seq);
        undo.pushed = Some(seq);
        Ok(undo)
    }

    /// Delete `name` (17.2.20). Returns whether it existed.
    pub fn delete(&mut self, name: &str) -> bool {
        self.delete_undoable(name).is_some()
    }

    /// Delete `name`; `None` (nothing changed) when there is no such set.
    pub fn delete_undoable(&mut self, name: &str) -> Option<Undo> {
        let undo = self.remove(name);
        (undo.delta_prev.is_some() || undo.gone_added).then_some(undo)
    }

    fn remove(&mut self, name: &str) -> Undo {
        let mut undo = Undo {
            name: name.to_owned(),
            pushed: None,
            delta_prev: None,
            gone_added: false,
        };
        if let Some(seq) = self.delta_pos.remove(name) {
            if let Some((_, runs)) = self.delta.remove(&seq) {
                undo.delta_prev = Some((seq, runs));
            }
        } else if self.base_pos.contains_key(name) {
            undo.gone_added = self.gone.insert(name.to_owned());
        }
        undo
    }

    /// Undo a define or delete (its publication failed); several in the reverse of their order.
    pub fn undo(&mut self, undo: Undo) {
        if let Some(seq) = undo.pushed {
            self.delta.remove(&seq);
            self.delta_pos.remove(&undo.name);
            if seq + 1 == self.next_seq {
                self.next_seq = seq;
            }
        }
        if let Some((seq, runs)) = undo.delta_prev {
            self.delta.insert(seq, (undo.name.clone(), runs));
            self.delta_pos.insert(undo.name.clone(), seq);
        }
        if undo.gone_added {
            self.gone.remove(&undo.name);
        }
    }

    /// How many delta entries (sets defined and base sets gone since the merge) the next
    /// publication merges past: the square root of the base's sets, at least [`MIN_DELTA`].
    /// A define then rewrites at most that many sets, and a merge (the whole index) comes once
    /// per that many changes: 10 000 sets defined one by one cost ~200 sets each, not 5 000.
    pub fn merge_bound(&self) -> usize {
        self.base.len().isqrt().max(MIN_DELTA)
    }

    /// Whether the delta outweighs its bound: publish [`Registry::table`] (and remove the
    /// delta table), then [`Registry::merge`].
    pub fn needs_merge(&self) -> bool {
        self.delta.len() + self.gone.len() > self.merge_bound()
    }

    /// Fold the delta into the base (after the base was published).
    pub fn merge(&mut self) {
        let delta = std::mem::take(&mut self.delta);
        self.delta_pos.clear();
        let gone = std::mem::take(&mut self.gone);
        let mut base = std::mem::take(&mut self.base);
        if !gone.is_empty() {
            base.retain(|(n, _)| !gone.contains(n));
        }
        base.extend(delta.into_values());
        self.base_pos = base
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        self.base = base;
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

    fn specs<'a>(sets: impl Iterator<Item = &'a (String, Vec<Run>)>) -> Vec<index::SetSpec<'a>> {
        sets.map(|(name, runs)| index::SetSpec { name, runs })
            .collect()
    }

    /// The set index of every set (base and delta merged).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let nspaces: Vec<&str> = self.nspaces.iter().map(String::as_str).collect();
        let live = self.base.iter().filter(|(n, _)| !self.gone.contains(n));
        index::encode(&nspaces, &Self::specs(live.chain(self.delta.values())))
    }

    /// The table to publish as ([`NAMESPACE`], `part::PSETS`): every set, merged.
    pub fn table(&self) -> Result<TableBuilder> {
        let mut t = TableBuilder::new();
        t.insert(Realm::Meta, INDEX_KEY, &Value::ByteObject(self.encode()?))?;
        Ok(t)
    }

    /// Stage the publication of the change just made: the delta table alone, or, once the
    /// delta outweighs its bound, every set as a new base and the delta table removed.
    /// Returns whether it merged: call [`Registry::merge`] once the transaction committed
    /// (or [`Registry::undo`] if it failed).
    pub fn stage_change(&self, tx: &mut Transaction<'_>) -> Result<bool> {
        let merge = self.needs_merge();
        if merge {
            self.stage_base(tx)?;
        } else {
            tx.put_table(DELTA_NAMESPACE, crate::part::PSETS, &self.delta_table()?)?;
        }
        Ok(merge)
    }

    /// Stage every set as a new base and the delta table removed (then [`Registry::merge`]).
    pub fn stage_base(&self, tx: &mut Transaction<'_>) -> Result<()> {
        tx.put_table(NAMESPACE, crate::part::PSETS, &self.table()?)?;
        tx.remove_table(DELTA_NAMESPACE, crate::part::PSETS)
    }

    /// The delta table to publish as ([`DELTA_NAMESPACE`], `part::PSETS`) beside the last
    /// published base: the sets defined since ([`INDEX_KEY`]) and the base's sets gone since
    /// ([`GONE_KEY`], an index of names without members).
    pub fn delta_table(&self) -> Result<TableBuilder> {
        let nspaces: Vec<&str> = self.nspaces.iter().map(String::as_str).collect();
        let sets = index::encode(&nspaces, &Self::specs(self.delta.values()))?;
        let gone: Vec<index::SetSpec<'_>> = self
            .gone
            .iter()
            .map(|name| index::SetSpec { name, runs: &[] })
            .collect();
        let gone = index::encode(&[], &gone)?;
        let mut t = TableBuilder::new();
        t.insert(Realm::Meta, INDEX_KEY, &Value::ByteObject(sets))?;
        t.insert(Realm::Meta, GONE_KEY, &Value::ByteObject(gone))?;
        Ok(t)
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

/// A generation's sets from its base table and delta table; `None` when it has neither.
pub fn sets_of_tables<'a>(
    base: Option<&'a TableView>,
    delta: Option<&'a TableView>,
) -> Option<Sets<'a>> {
    if base.is_none() && delta.is_none() {
        return None;
    }
    Some(Sets::new(
        base.and_then(index_of),
        delta.and_then(index_of),
        delta.and_then(|t| key_index(t, GONE_KEY)),
    ))
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
/// 4.2.2's hosts (PRRTE) answer it (docs/psets-groups.md "Queries"). `pset` is the
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
