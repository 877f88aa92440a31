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

use std::collections::{BTreeSet, HashMap};

use crate::error::{Error, Result};
use crate::layout::{Realm, MAX_NSPACE_LEN};
use crate::table::{TableBuilder, TableView};
use crate::value::{types, DataArray, Proc, Value};
use crate::valueref::ValueRef;
use crate::writer::Transaction;

pub use index::{IndexView, Member, Run};
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
    /// In definition order, after the base's.
    delta: Vec<(String, Vec<Run>)>,
}

/// What undoes one [`Registry::define`] or delete whose publication failed.
#[derive(Debug)]
pub struct Undo {
    name: String,
    pushed: bool,
    delta_prev: Option<(usize, Vec<Run>)>,
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
        self.delta.iter().any(|(n, _)| n == name)
            || (self.base_pos.contains_key(name) && !self.gone.contains(name))
    }

    /// Define `name` with `members` in their order (17.2.19). A name defined again is replaced
    /// and moves to the end of the definition order, as a delete then a define would leave it.
    /// Checked first: a refused definition changes nothing. Costs the set's own size and the
    /// delta's, not the base's.
    pub fn define(&mut self, name: &str, members: &[(&str, u32)]) -> Result<Undo> {
        check_name(name, "set name")?;
        for (ns, _) in members {
            check_name(ns, "member namespace")?;
        }
        let mut runs = Vec::new();
        for &(ns, rank) in members {
            let id = self.ns_id(ns)?;
            index::push_member(&mut runs, id, rank);
        }
        let mut undo = self.remove(name);
        self.delta.push((name.to_owned(), runs));
        undo.pushed = true;
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
            pushed: false,
            delta_prev: None,
            gone_added: false,
        };
        if let Some(p) = self.delta.iter().position(|(n, _)| n == name) {
            undo.delta_prev = Some((p, self.delta.remove(p).1));
        } else if self.base_pos.contains_key(name) {
            undo.gone_added = self.gone.insert(name.to_owned());
        }
        undo
    }

    /// Undo the last define or delete (its publication failed).
    pub fn undo(&mut self, undo: Undo) {
        if undo.pushed {
            self.delta.pop();
        }
        if let Some((p, runs)) = undo.delta_prev {
            self.delta
                .insert(p.min(self.delta.len()), (undo.name.clone(), runs));
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
        let gone = std::mem::take(&mut self.gone);
        let mut base = std::mem::take(&mut self.base);
        base.retain(|(n, _)| !gone.contains(n));
        base.extend(delta);
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
        index::encode(&nspaces, &Self::specs(live.chain(&self.delta)))
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
        let sets = index::encode(&nspaces, &Self::specs(self.delta.iter()))?;
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
            ix.find(name)
                .map(|i| members_value(ix, i))
                .ok_or(Error::NotFound)
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
