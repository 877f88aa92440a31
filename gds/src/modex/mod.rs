//! Posted data (standard ch. 5): what processes `PMIx_Put` + `PMIx_Commit`, and what a
//! collecting `PMIx_Fence` delivers from other nodes — the business-card exchange.
//!
//! The writer keeps one [`Posted`] per namespace and publishes its table as the namespace's
//! `part::POSTED` table: a commit, or a whole fence batch, is one transaction, so readers see
//! all of it or none of it. A later put of a key replaces the earlier one (whatever its scope);
//! a reader that already holds the old value keeps a valid view of it (docs/protocol.md).

#![forbid(unsafe_code)]

use crate::error::{Error, Result};
use crate::jobdata::keys::is_reserved;
use crate::jobdata::TargetRank;
use crate::layout::Realm;
use crate::table::{TableBuilder, TableView};
use crate::value::Value;
use crate::valueref::ValueRef;

/// `pmix_scope_t` values a store holds (5.2.1.1). `PMIX_INTERNAL` (4) "is intended solely for
/// this process" and never reaches a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Scope {
    /// PMIX_LOCAL: "only available to processes on the local node".
    Local = 1,
    /// PMIX_REMOTE: "only available to processes on remote nodes".
    Remote = 2,
    /// PMIX_GLOBAL: "shared with all other requesting processes, regardless of location".
    Global = 3,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Global, Scope::Local, Scope::Remote];

    /// From a raw `pmix_scope_t`.
    pub fn from_raw(v: u8) -> Result<Scope> {
        match v {
            1 => Ok(Scope::Local),
            2 => Ok(Scope::Remote),
            3 => Ok(Scope::Global),
            4 => Err(Error::InvalidArgument(
                "PMIX_INTERNAL data never leaves its process".into(),
            )),
            v => Err(Error::InvalidArgument(format!("unknown scope {v}"))),
        }
    }

    /// Whether data of this scope is visible to a requester on the poster's node (`local`) or on
    /// another node.
    pub fn reaches(self, local: bool) -> bool {
        match self {
            Scope::Global => true,
            Scope::Local => local,
            Scope::Remote => !local,
        }
    }

    fn realm(self, rank: u32) -> Realm {
        Realm::Posted {
            rank,
            scope: self as u8,
        }
    }
}

/// Prefix of the RANK_UNDEF index: `rshm.undef:<key>` → the rank that posted the key.
const UNDEF_INDEX: &str = "rshm.undef:";

/// The posted data of one namespace, as its writer accumulates it.
#[derive(Default, Clone)]
pub struct Posted {
    table: TableBuilder,
    /// Keys already in the RANK_UNDEF index (it records the first poster of each key).
    indexed: std::collections::HashSet<Box<str>>,
}

impl Posted {
    pub fn new() -> Self {
        Self::default()
    }

    /// Store `key` posted by `rank` with `scope`: a commit's value (local data) or a fence's
    /// (remote data). Reserved keys are refused (5.1: they cannot be posted).
    pub fn put(&mut self, rank: u32, scope: Scope, key: &str, value: &Value) -> Result<()> {
        if is_reserved(key) {
            return Err(Error::InvalidArgument(format!(
                "{key:?} is a reserved key: clients cannot post it"
            )));
        }
        for other in Scope::ALL.into_iter().filter(|s| *s != scope) {
            self.table.remove(other.realm(rank), key);
        }
        self.table.insert(scope.realm(rank), key, value)?;
        // Globally unique keys are retrieved with PMIX_RANK_UNDEF (5.1): index who posted them
        // (a key posted by many ranks is not globally unique; its first poster stands).
        if !self.indexed.contains(key) {
            self.indexed.insert(key.into());
            let index = format!("{UNDEF_INDEX}{key}");
            self.table
                .insert(Realm::Meta, &index, &Value::ProcRank(rank))?;
        }
        Ok(())
    }

    /// The table to publish as the namespace's `part::POSTED`.
    pub fn table(&self) -> &TableBuilder {
        &self.table
    }

    /// Number of posted values.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// The rank that posted `key`, for a `PMIX_RANK_UNDEF` lookup (5.3: globally unique keys), so
/// that the caller can tell whether that rank is local before calling [`get`].
pub fn undef_rank(t: &TableView, key: &str) -> Option<u32> {
    t.get(Realm::Meta, &format!("{UNDEF_INDEX}{key}"))?
        .as_u64()
        .and_then(|r| u32::try_from(r).ok())
}

/// PMIx_Get of a non-reserved key from a posted-data table (5.3 as far as a store decides it).
///
/// `local` tells whether the target process is on the requester's node (from the job data:
/// `jobdata::is_local`). Visible: GLOBAL, plus LOCAL data to local requesters and REMOTE data to
/// remote ones; `data_scope` (PMIX_DATA_SCOPE) narrows that to one scope. A key that exists only
/// in scopes the requester may not see is `ExistsOutsideScope`; an absent key is `NotFound`,
/// after which the server decides whether to wait, ask its host, or answer (PMIX_IMMEDIATE,
/// PMIX_OPTIONAL: 5.3 steps 2-3).
pub fn get<'t>(
    t: &'t TableView,
    rank: TargetRank,
    key: &str,
    local: bool,
    data_scope: Option<Scope>,
) -> Result<ValueRef<'t>> {
    let rank = match rank {
        TargetRank::Rank(r) => r,
        TargetRank::Undef => {
            let idx = t
                .get(Realm::Meta, &format!("{UNDEF_INDEX}{key}"))
                .ok_or(Error::NotFound)?;
            idx.as_u64()
                .and_then(|r| u32::try_from(r).ok())
                .ok_or(Error::Corrupt("undef index"))?
        }
        TargetRank::Wildcard => return Err(Error::NotFound),
    };
    let Some(kid) = t.key_id(key.as_bytes()) else {
        return Err(Error::NotFound);
    };
    let mut outside = false;
    for scope in Scope::ALL {
        let Some(v) = t.get_by_id(scope.realm(rank), kid) else {
            continue;
        };
        if scope.reaches(local) && data_scope.is_none_or(|s| s == scope) {
            return Ok(v);
        }
        outside = true;
    }
    Err(if outside {
        Error::ExistsOutsideScope
    } else {
        Error::NotFound
    })
}
