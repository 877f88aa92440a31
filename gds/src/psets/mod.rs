//! Process sets (the standard's 12.1; defined and deleted by the host, 17.2.19-20) in the
//! store: the server's [`Registry`] of sets, published as one table per change (store name
//! [`NAMESPACE`], part [`crate::part::PSETS`]) holding one value, the set index
//! ([`index`]); and what a reader answers from it: `PMIX_PSET_NAMES` of a process,
//! `PMIX_PSET_MEMBERS` of a set, and the `PMIx_Query_info` keys `PMIX_QUERY_NUM_PSETS`,
//! `PMIX_QUERY_PSET_NAMES`, `PMIX_QUERY_PSET_MEMBERSHIP` (docs/psets-groups.md).

#![forbid(unsafe_code)]

pub mod groups;
pub mod index;

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::layout::{Realm, MAX_NSPACE_LEN};
use crate::table::{TableBuilder, TableView};
use crate::value::{types, DataArray, Proc, Value};
use crate::valueref::ValueRef;

pub use index::{IndexView, Member, Run};

/// The store name of the process-set table. Published as part [`crate::part::PSETS`], so it
/// cannot collide with a PMIx namespace of the same name, whose data is part 0.
pub const NAMESPACE: &str = "rshm.psets";
/// The metadata key (class 6) whose byte object is the set index.
pub const INDEX_KEY: &str = "rshm.sets";

/// `PMIX_RANK_VALID`: ranks from here up are special (wildcard, undef, ...).
pub const RANK_VALID: u32 = u32::MAX - 50;

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

/// Named, ordered sets of processes, as the server keeps them between publications.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    nspaces: Vec<String>,
    ns_ids: HashMap<String, u32>,
    /// In definition order.
    sets: Vec<(String, Vec<Run>)>,
}

pub(crate) fn check_name(name: &str, what: &str) -> Result<()> {
    if name.is_empty() || name.len() > MAX_NAME_LEN || name.as_bytes().contains(&0) {
        return Err(Error::InvalidArgument(format!(
            "bad {what} {name:?} (1..={MAX_NAME_LEN} bytes, no NUL)"
        )));
    }
    Ok(())
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many sets.
    pub fn len(&self) -> usize {
        self.sets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Whether a set of that name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.sets.iter().any(|(n, _)| n == name)
    }

    /// Define `name` with `members` in their order (17.2.19). A name defined again is replaced
    /// and moves to the end of the definition order, as a delete then a define would leave it.
    /// Checked first: a refused definition changes nothing.
    pub fn define(&mut self, name: &str, members: &[(&str, u32)]) -> Result<()> {
        check_name(name, "set name")?;
        for (ns, _) in members {
            check_name(ns, "member namespace")?;
        }
        let mut runs = Vec::new();
        for &(ns, rank) in members {
            let id = self.ns_id(ns)?;
            index::push_member(&mut runs, id, rank);
        }
        self.sets.retain(|(n, _)| n != name);
        self.sets.push((name.to_owned(), runs));
        Ok(())
    }

    /// Delete `name` (17.2.20). Returns whether it existed.
    pub fn delete(&mut self, name: &str) -> bool {
        let before = self.sets.len();
        self.sets.retain(|(n, _)| n != name);
        before != self.sets.len()
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

    /// The set index of every set.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let nspaces: Vec<&str> = self.nspaces.iter().map(String::as_str).collect();
        let specs: Vec<index::SetSpec<'_>> = self
            .sets
            .iter()
            .map(|(name, runs)| index::SetSpec { name, runs })
            .collect();
        index::encode(&nspaces, &specs)
    }

    /// The table to publish as ([`NAMESPACE`], `part::PSETS`).
    pub fn table(&self) -> Result<TableBuilder> {
        let mut t = TableBuilder::new();
        t.insert(Realm::Meta, INDEX_KEY, &Value::ByteObject(self.encode()?))?;
        Ok(t)
    }
}

/// The set index of a published set table; `None` when the table holds none (or a forged one).
pub fn index_of(table: &TableView) -> Option<IndexView<'_>> {
    match table.get(Realm::Meta, INDEX_KEY)? {
        ValueRef::Bytes(b) => IndexView::new(b).ok(),
        _ => None,
    }
}

/// The names of the sets, in definition order.
pub fn names(ix: &IndexView<'_>) -> Vec<String> {
    (0..ix.len())
        .filter_map(|i| ix.name(i).map(str::to_owned))
        .collect()
}

/// The names of the sets in definition order, joined by `,`, built in one string.
pub fn joined_names(ix: &IndexView<'_>) -> String {
    let mut out = String::new();
    for name in (0..ix.len()).filter_map(|i| ix.name(i)) {
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
pub fn members_value(ix: &IndexView<'_>, i: usize) -> Value {
    Value::DataArray(Box::new(DataArray {
        elem_type: types::PROC,
        items: ix
            .members(i)
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
pub fn names_of(ix: &IndexView<'_>, ns: &str, rank: u32) -> Option<Value> {
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
pub fn query(ix: &IndexView<'_>, key: &str, pset: Option<&str>) -> Result<Value> {
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
