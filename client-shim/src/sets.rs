//! Process sets read from the store (docs/psets-groups.md): `PMIX_PSET_NAMES` of a process and
//! `PMIX_PSET_MEMBERS` of a set (PMIx_Get), and the `PMIx_Query_info` keys of process sets. The
//! store answers only once its server published a set table; before that (or from a server
//! that does not publish sets) every call is for the host library.

#![forbid(unsafe_code)]

use gds::psets::{self, IndexView};
use gds::{part, Error, Info, Pin, Value};

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
    matches!(key, psets::PSET_NAMES | psets::PSET_MEMBERS)
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

    /// PMIx_Get of `PMIX_PSET_NAMES` of (`ns`, `rank`), or of `PMIX_PSET_MEMBERS` of the set
    /// named by `ns` (rank `PMIX_RANK_WILDCARD`).
    pub fn set_get(&self, pin: &Pin<'_>, ns: &str, rank: u32, key: &str) -> SetAnswer {
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
