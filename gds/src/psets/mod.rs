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
mod registry;

use crate::error::{Error, Result};
use crate::layout::{Realm, MAX_NSPACE_LEN};
use crate::reader::{Pin, Reader};
use crate::table::{TableBuilder, TableView};
use crate::value::{types, DataArray, Proc, Value};
use crate::valueref::ValueRef;
use crate::writer::Transaction;

pub use index::{IndexView, Member, Run};
pub use registry::{Registry, Staged};

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
