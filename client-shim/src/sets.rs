//! Process sets read from the store (docs/psets-groups.md): `PMIX_PSET_NAMES` of a process and
//! `PMIX_PSET_MEMBERS` of a set (PMIx_Get), and the `PMIx_Query_info` keys of process sets. The
//! store answers only once its server published a set table; before that (or from a server
//! that does not publish sets) every call is for the host library.

#![forbid(unsafe_code)]

use std::sync::Arc;

use gds::psets::{self, groups, IndexView};
use gds::{part, Error, Info, Pin, Realm, TableView, Value, ValueRef};

use crate::client::Client;

/// `PMIX_RANK_WILDCARD`.
const RANK_WILDCARD: u32 = u32::MAX - 1;
/// `PMIX_QUERY_REFRESH_CACHE`: only the host can refresh.
const QUERY_REFRESH_CACHE: &str = "pmix.qry.rfsh";

/// What the store says about a set Get or query.
#[derive(Debug, PartialEq)]
pub enum SetAnswer {
    Value(Value),
    /// Settled by the store: `PMIX_ERR_NOT_FOUND`.
    NotFound,
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
    fn with_sets<T>(&self, pin: &Pin<'_>, f: impl FnOnce(&IndexView<'_>) -> T) -> Option<T> {
        let table = self
            .reader()
            .table(pin, psets::NAMESPACE, part::PSETS)
            .ok()?;
        psets::index_of(table).map(|ix| f(&ix))
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
    /// named by `ns` (rank `PMIX_RANK_WILDCARD`).
    pub fn set_get(&self, pin: &Pin<'_>, ns: &str, rank: u32, key: &str) -> SetAnswer {
        if key == groups::GROUP_NAMES {
            return match self.group_index(pin) {
                None => SetAnswer::Pass,
                Some(ix) => match psets::names_of(&ix, ns, rank) {
                    Some(v) => SetAnswer::Value(v),
                    None => SetAnswer::NotFound,
                },
            };
        }
        let answer = self.with_sets(pin, |ix| match key {
            psets::PSET_NAMES => psets::names_of(ix, ns, rank),
            psets::PSET_MEMBERS if rank == RANK_WILDCARD => {
                ix.find(ns).map(|i| psets::members_value(ix, i))
            }
            _ => None,
        });
        match answer {
            None => SetAnswer::Pass,
            Some(Some(v)) => SetAnswer::Value(v),
            // A set's members asked of a namespace: the host may know it.
            Some(None) if key == psets::PSET_MEMBERS => SetAnswer::Pass,
            Some(None) => SetAnswer::NotFound,
        }
    }

    /// `PMIx_Query_info` of process-set keys: one info per key in the order asked, or the
    /// error that ends the call (`gds::psets::query`). `None`: for the host library (a key of
    /// another kind, a refresh asked for, or no set table).
    pub fn set_query(&self, queries: &[SetQuery]) -> Option<Result<Vec<Info>, Error>> {
        let ours = queries.iter().all(|q| {
            !q.keys.is_empty()
                && q.keys.iter().all(|k| psets::is_query_key(k))
                && !q.qualifiers.iter().any(|i| i.key == QUERY_REFRESH_CACHE)
        });
        if !ours || queries.is_empty() {
            return None;
        }
        let pin = self.reader().pin();
        self.with_sets(&pin, |ix| {
            let mut infos = Vec::new();
            for q in queries {
                let pset = q.qualifiers.iter().find_map(|i| match &i.value {
                    Value::String(s) if i.key == psets::PSET_NAME => Some(s.as_str()),
                    _ => None,
                });
                for k in &q.keys {
                    infos.push(Info::new(k, psets::query(ix, k, pset)?));
                }
            }
            Ok(infos)
        })
    }
}
