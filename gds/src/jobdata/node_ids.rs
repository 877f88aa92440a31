//! The host's node ids and the store's node indexes. The node realm is laid out by the store's
//! own numbering (the node map's order, or a node array's id), which stays private: a host may
//! number its nodes otherwise (Open MPI's mpirun on a node that holds no ranks numbers the
//! compute nodes 1..n while its node map lists them alone). What a Get sees is the host's id:
//! the `PMIX_NODEID` its ranks carry, else the top-level one of the store's node, else the
//! store's index.

#![forbid(unsafe_code)]

use super::columns::NODEID_COLUMN;
use super::keys;
use super::node_names;
use crate::layout::Realm;
use crate::table::TableView;
use crate::valueref::ValueRef;

pub(crate) fn as_u32(v: ValueRef<'_>) -> Option<u32> {
    v.as_u64().and_then(|n| u32::try_from(n).ok())
}

/// The `PMIX_NODEID` rank `r` carries (its column, else a stored entry): the host's id.
pub(crate) fn of_rank(t: &TableView, r: u32) -> Option<ValueRef<'_>> {
    t.column_at(NODEID_COLUMN, r)
        .or_else(|| t.get(Realm::Proc(r), keys::NODEID))
}

/// The host's id of the store's node `node`, as a value of the table: the id its leader rank
/// carries, else (the store's node holding no rank) the top-level `PMIX_NODEID`, else the
/// node's own entry (the store's index or a node array's id).
pub(crate) fn host_id(t: &TableView, node: u32) -> Option<ValueRef<'_>> {
    host_id_given_local(t, node, t.job_meta().local_node)
}

/// [`host_id`] with the store's own node given (for [`super::JobMeta`], which holds it).
pub(crate) fn host_id_given_local(
    t: &TableView,
    node: u32,
    local: Option<u32>,
) -> Option<ValueRef<'_>> {
    let leader = t
        .get(Realm::Node(node), keys::LOCALLDR)
        .and_then(as_u32)
        .and_then(|l| of_rank(t, l));
    if leader.is_some() {
        return leader;
    }
    if local == Some(node) {
        if let Some(v) = t.get(Realm::Job, keys::NODEID) {
            return Some(v);
        }
    }
    t.get(Realm::Node(node), keys::NODEID)
}

/// The store's node whose host id is `id`: the node of the same index when its id agrees (the
/// common case, one lookup), else the first of the named nodes that has it.
pub(crate) fn node(t: &TableView, id: u32) -> Option<u32> {
    let has = |n: u32| host_id(t, n).and_then(as_u32) == Some(id);
    if has(id) {
        return Some(id);
    }
    let mut named: Vec<u32> = node_names::ids(t).collect();
    named.sort_unstable();
    named.dedup();
    named.into_iter().find(|&n| n != id && has(n))
}

/// The store's node of rank `r`.
pub(crate) fn node_of_rank(t: &TableView, r: u32) -> Option<u32> {
    node(t, of_rank(t, r).and_then(as_u32)?)
}
