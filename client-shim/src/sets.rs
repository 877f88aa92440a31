//! Process sets read from the store (docs/psets-groups.md): `PMIX_PSET_NAMES` of a process and
//! `PMIX_PSET_MEMBERS` of a set (PMIx_Get), and the `PMIx_Query_info` keys of process sets. The
//! store answers only once its server published a set table; before that (or from a server
//! that does not publish sets) every call is for the host library.

#![forbid(unsafe_code)]

use std::sync::Arc;

use rshm_abi::types::RANK_WILDCARD;
use rshm_gds::psets::{self, groups, IndexView, Sets};
use rshm_gds::{part, Error, Info, Pin, Realm, TableView, Value, ValueRef};

use crate::client::Client;

/// `PMIX_QUERY_REFRESH_CACHE`: only the host can refresh.
const QUERY_REFRESH_CACHE: &str = "pmix.qry.rfsh";

/// What the store says about a set Get or query.
#[derive(Debug, PartialEq)]
pub enum SetAnswer<'p> {
    Value(Value),
    /// A set's members, read in place: written straight into the caller's `pmix_proc_t` array.
    Members(Vec<(&'p str, u32)>),
    /// Settled by the store: `PMIX_ERR_NOT_FOUND`.
    NotFound,
    /// A set with more members than an answer holds (`rshm_gds::psets::MAX_ANSWER_MEMBERS`): an
    /// error saying so, nothing allocated.
    TooLarge(String),
    /// Not the store's to answer: the host library's.
    Pass,
}

/// Whether `key` is a Get key this module answers.
pub fn is_get_key(key: &str) -> bool {
    matches!(
        key,
        psets::PSET_NAMES | psets::PSET_MEMBERS | groups::GROUP_NAMES
    )
}

/// What a Get addressed to a group (12.2) is.
pub enum GroupHit<'p> {
    /// A value of the group's table (its job realm, or a member's endpoint data).
    Value(ValueRef<'p>, &'p Arc<TableView>),
    /// `{group, rank}` names this member: ask its native `{nspace, rank}`.
    Member(&'p str, u32),
    /// A group rank the group does not have, or a member without endpoint data.
    NotFound,
    /// Not a group the store holds (or a group value it does not hold): the host library's.
    None,
}

/// One query of a `PMIx_Query_info` call, read from C.
pub struct SetQuery {
    pub keys: Vec<String>,
    pub qualifiers: Vec<Info>,
}

impl Client {
    /// The sets of the pinned generation: the chunks its chunk list names.
    fn pset_index<'p>(&'p self, pin: &'p Pin<'_>) -> Option<Sets<'p>> {
        psets::read(self.reader(), pin)
    }

    fn group_index<'p>(&'p self, pin: &'p Pin<'_>) -> Option<IndexView<'p>> {
        let table = self
            .reader()
            .table(pin, groups::NAMESPACE, part::GROUPS)
            .ok()?;
        psets::index_of(table)
    }

    /// A Get of `key` addressed to (`ns`, `rank`) where `ns` may be a group id (12.2): the
    /// group's own values for `PMIX_RANK_WILDCARD`, a member's endpoint data, and for anything
    /// else the member the group rank names, whose native identifier the caller asks instead.
    pub fn group_get<'p>(
        &'p self,
        pin: &'p Pin<'_>,
        ns: &str,
        rank: u32,
        key: &str,
    ) -> GroupHit<'p> {
        let Some(ix) = self.group_index(pin) else {
            return GroupHit::None;
        };
        let Some(g) = ix.find(ns) else {
            return GroupHit::None;
        };
        let table = || self.reader().table_arc(pin, ns, part::GROUPS).ok();
        if rank == RANK_WILDCARD {
            return match table().and_then(|t| t.get(Realm::Job, key).map(|v| (v, t))) {
                Some((v, t)) => GroupHit::Value(v, t),
                None => GroupHit::None,
            };
        }
        if u64::from(rank) >= ix.member_count(g) {
            return GroupHit::NotFound;
        }
        if key == groups::GROUP_ENDPT_DATA {
            return match table().and_then(|t| t.get(Realm::Proc(rank), key).map(|v| (v, t))) {
                Some((v, t)) => GroupHit::Value(v, t),
                None => GroupHit::NotFound,
            };
        }
        match ix.member_at(g, rank) {
            Some(m) => GroupHit::Member(m.nspace, m.rank),
            None => GroupHit::NotFound,
        }
    }

    /// PMIx_Get of `PMIX_PSET_NAMES` of (`ns`, `rank`), or of `PMIX_PSET_MEMBERS` of the set
    /// named by `ns` (rank `PMIX_RANK_WILDCARD`); `PMIX_GROUP_NAMES` of (`ns`, `rank`).
    pub fn set_get<'p>(
        &'p self,
        pin: &'p Pin<'_>,
        ns: &str,
        rank: u32,
        key: &str,
    ) -> SetAnswer<'p> {
        if key == groups::GROUP_NAMES {
            return match self.group_index(pin) {
                None => SetAnswer::Pass,
                Some(ix) => match psets::names_of(&Sets::single(ix), ns, rank) {
                    Some(v) => SetAnswer::Value(v),
                    None => SetAnswer::NotFound,
                },
            };
        }
        let Some(ix) = self.pset_index(pin) else {
            return SetAnswer::Pass;
        };
        match key {
            psets::PSET_NAMES => match psets::names_of(&ix, ns, rank) {
                Some(v) => SetAnswer::Value(v),
                None => SetAnswer::NotFound,
            },
            // A set's members asked of a namespace, or an unknown set: the host may know it.
            psets::PSET_MEMBERS if rank == RANK_WILDCARD => match ix.find(ns) {
                Some(i) => match psets::check_answer_size(&ix, i) {
                    Ok(()) => SetAnswer::Members(members(&ix, i)),
                    Err(e) => SetAnswer::TooLarge(e.to_string()),
                },
                None => SetAnswer::Pass,
            },
            _ => SetAnswer::Pass,
        }
    }

    /// `PMIx_Query_info` of process-set keys: (key, answer) per key in the order asked (a
    /// value, or a set's members), or the error that ends the call (`rshm_gds::psets::query`).
    /// `None`: for the host library (a key of another kind, a refresh asked for, or no set
    /// table).
    pub fn set_query<'p>(
        &'p self,
        pin: &'p Pin<'_>,
        queries: &[SetQuery],
    ) -> Option<Result<Vec<(String, SetAnswer<'p>)>, Error>> {
        let ours = queries.iter().all(|q| {
            !q.keys.is_empty()
                && q.keys.iter().all(|k| psets::is_query_key(k))
                && !q.qualifiers.iter().any(|i| i.key == QUERY_REFRESH_CACHE)
        });
        if !ours || queries.is_empty() {
            return None;
        }
        let ix = self.pset_index(pin)?;
        let mut out = Vec::new();
        for q in queries {
            let pset = q.qualifiers.iter().find_map(|i| match &i.value {
                Value::String(s) if i.key == psets::PSET_NAME => Some(s.as_str()),
                _ => None,
            });
            for k in &q.keys {
                let answer = if k == psets::QUERY_PSET_MEMBERSHIP {
                    // As rshm_gds::psets::query answers it, the members read in place.
                    let Some(name) = pset else {
                        return Some(psets::query(&ix, k, None).map(|_| Vec::new()));
                    };
                    match ix.find(name) {
                        Some(i) => match psets::check_answer_size(&ix, i) {
                            Ok(()) => SetAnswer::Members(members(&ix, i)),
                            Err(e) => return Some(Err(e)),
                        },
                        None => return Some(Err(Error::NotFound)),
                    }
                } else {
                    match psets::query(&ix, k, pset) {
                        Ok(v) => SetAnswer::Value(v),
                        Err(e) => return Some(Err(e)),
                    }
                };
                out.push((k.clone(), answer));
            }
        }
        Some(Ok(out))
    }
}

/// Set `i`'s members, in order, borrowing the index's names.
fn members<'p>(ix: &Sets<'p>, i: usize) -> Vec<(&'p str, u32)> {
    ix.members(i)
        .into_iter()
        .map(|m| (m.nspace, m.rank))
        .collect()
}
