//! The answer policy: whether the store answers a PMIx_Get, says NOT_FOUND, or leaves it to a
//! host PMIx library (5.3, 5.4, 6.2). One decision for every front end: the direct client
//! (`rshm_client_get`), the preloaded `PMIx_Get` and the OpenPMIx gds component differ only in
//! what they do with [`Decision::Pass`]. docs/jobdata.md "Answer policy" has the table.
//!
//! The store never waits and never asks anyone: what it cannot settle from its own tables is a
//! pass. A miss is settled (NOT_FOUND) only where the standard makes the registered job data
//! the whole answer: a reserved key of a realm above the process (a WILDCARD target, or a
//! session/job/app/node realm qualifier) of a namespace the store holds (6.2: "If the
//! information is not found, then the PMIX_ERR_NOT_FOUND error constant is returned"). A
//! process-level miss is a pass: a host library keeps values of its own process (e.g. the
//! server's identity) that no registration carries. A miss of posted data is a pass: 5.3 lets
//! the server wait for it or ask the host (direct modex).

#![forbid(unsafe_code)]

use std::sync::Arc;

use super::keys;
use super::node_ids;
use super::node_names;
use super::part;
use super::query::{Qualifiers, TargetRank, RANK_VALID, RANK_WILDCARD};
use super::resolve::{get_by_rules, get_plain, is_local};
use super::resources;
use crate::error::Error;
use crate::modex::{self, Scope};
use crate::reader::{Pin, Reader};
use crate::table::TableView;
use crate::valueref::ValueRef;

/// The directives of a PMIx_Get that decide how it is answered (5.4.2, 6.1). The return mode
/// (`PMIX_GET_STATIC_VALUES`, `PMIX_GET_POINTER_VALUES`) and `PMIX_TIMEOUT` are not here: they
/// never change the decision (the store can return every mode, and never waits).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Directives {
    /// Realm qualifiers and selectors (6.1), `PMIX_OPTIONAL`, `PMIX_IMMEDIATE`.
    pub qualifiers: Qualifiers,
    /// `PMIX_DATA_SCOPE` (5.4): which posted data to search.
    pub scope: Option<Scope>,
    /// `PMIX_GET_REFRESH_CACHE` given true (5.3 step 1: the server refreshes the cache first).
    pub refresh: bool,
    /// A directive the store does not know, marked `PMIX_INFO_REQD` (1.3.1: "If the required
    /// attribute is not available ... the call will return the error code for not supported").
    /// Unknown directives without the flag are ignored ("allowed to treat the attribute as
    /// optional, ignoring it if support is not available").
    pub unknown_required: bool,
}

impl Directives {
    /// No directive (what `Default` gives), usable in a `static`.
    pub const NONE: Directives = Directives {
        qualifiers: Qualifiers::NONE,
        scope: None,
        refresh: false,
        unknown_required: false,
    };

    /// Nothing that changes where a reserved key is looked up or that only a host can honour:
    /// the request may take the shortcut ([`decide`]).
    #[inline]
    pub fn is_plain(&self) -> bool {
        self.qualifiers.is_plain() && !self.refresh && !self.unknown_required
    }
}

/// What to do with a PMIx_Get.
pub enum Decision<'p> {
    /// The store's answer: the value, and the table whose mapping holds it (pointer-mode values
    /// keep it mapped).
    Answer(ValueRef<'p>, &'p Arc<TableView>),
    /// `PMIX_ERR_NOT_FOUND`, settled: the store holds everything PMIx would search.
    NotFound,
    /// Not the store's to settle: a host PMIx library may do better (it may wait, ask its
    /// server, refresh, or hold values the store does not). Without a host: an error status.
    Pass(Pass),
}

impl std::fmt::Debug for Decision<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Decision::Answer(v, _) => f.debug_tuple("Answer").field(v).finish(),
            Decision::NotFound => f.write_str("NotFound"),
            Decision::Pass(p) => f.debug_tuple("Pass").field(p).finish(),
        }
    }
}

/// Why a Get is passed on, and the status a front end without a host library returns.
#[derive(Debug)]
pub enum Pass {
    /// `PMIX_GET_REFRESH_CACHE`, or an unknown directive marked required: only a host can
    /// honour it (`PMIX_ERR_NOT_SUPPORTED` without one).
    Directive,
    /// The store does not hold the value, the namespace, or the target (a special rank):
    /// a host may wait for it or ask for it (`PMIX_ERR_NOT_FOUND` without one).
    Absent,
    /// The key was posted in a scope that excludes the requester (5.4:
    /// `PMIX_ERR_EXISTS_OUTSIDE_SCOPE` without a host).
    OutsideScope,
    /// The store could not be read (its error without a host).
    Store(Error),
}

impl Pass {
    /// The error a front end without a host library returns.
    pub fn into_error(self) -> Option<Error> {
        match self {
            Pass::Directive => None,
            Pass::Absent => Some(Error::NotFound),
            Pass::OutsideScope => Some(Error::ExistsOutsideScope),
            Pass::Store(e) => Some(e),
        }
    }
}

/// Whether a miss in the job table `t` is settled: a reserved key (or a custom key asked with a
/// realm qualifier), asked of a realm above the process, and of this job's own session and
/// nodes. Another session, or a node the job does not run on, may be known to the server (6.2:
/// it may ask its host).
fn miss_is_final(t: &TableView, key: &str, rank: TargetRank, q: &Qualifiers) -> bool {
    let registered_only = keys::is_reserved(key) || !q.is_plain();
    let realm_flag = q.session_info || q.job_info || q.app_info || q.node_info;
    let above_proc = !q.proc_info && (realm_flag || rank == TargetRank::Wildcard);
    let ours = t.job_meta().session.unwrap_or(0);
    let our_session = q.session_id.is_none_or(|s| s == ours);
    let our_node = q.nodeid.is_none_or(|id| node_ids::node(t, id).is_some())
        && q.hostname
            .as_deref()
            .is_none_or(|h| node_names::find(t, h).is_some());
    registered_only && above_proc && our_session && our_node
}

/// Decide PMIx_Get of `key` for (`ns`, `rank`) with directives `d`, asked by `caller` (its rank
/// when it belongs to `ns`, else None). `rank` is the raw `pmix_rank_t`.
///
/// The common Get (a reserved key, no directive) takes one job-table lookup here, inlined into
/// the front end; everything else is [`decide_general`].
#[inline(always)]
pub fn decide<'p>(
    reader: &'p Reader,
    pin: &'p Pin<'_>,
    caller: Option<u32>,
    ns: &str,
    rank: u32,
    key: &str,
    d: &Directives,
) -> Decision<'p> {
    decide_in(reader, pin, part::DATA, caller, ns, rank, key, d)
}

/// [`decide`] reading the namespace's job data from `data_part`: its NUMA replica
/// (`part::DATA_REPLICAS + domain`, a byte-equal copy of part DATA) when the reader chose one,
/// part DATA when that replica is not published.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn decide_in<'p>(
    reader: &'p Reader,
    pin: &'p Pin<'_>,
    data_part: u32,
    caller: Option<u32>,
    ns: &str,
    rank: u32,
    key: &str,
    d: &Directives,
) -> Decision<'p> {
    if d.is_plain() && !special(rank) && keys::is_reserved(key) {
        if let Ok(t) = job_table(reader, pin, ns, data_part) {
            if let Some(v) = get_plain(t, caller, TargetRank::from_raw(rank), key) {
                return Decision::Answer(v, t);
            }
        }
    }
    decide_general_in(reader, pin, data_part, caller, ns, rank, key, d)
}

/// The job table of `ns`: part `data_part` when that is a replica and published, else DATA.
#[inline(always)]
fn job_table<'p>(
    reader: &'p Reader,
    pin: &'p Pin<'_>,
    ns: &str,
    data_part: u32,
) -> crate::Result<&'p Arc<TableView>> {
    if data_part != part::DATA {
        if let Ok(t) = reader.table_arc(pin, ns, data_part) {
            return Ok(t);
        }
    }
    reader.table_arc(pin, ns, part::DATA)
}

/// PMIx's special ranks other than WILDCARD and UNDEF.
#[inline(always)]
fn special(rank: u32) -> bool {
    rank > RANK_VALID && rank < RANK_WILDCARD
}

/// [`decide`] in full: directives, the retrieval rules, posted data, and what a miss means.
pub fn decide_general<'p>(
    reader: &'p Reader,
    pin: &'p Pin<'_>,
    caller: Option<u32>,
    ns: &str,
    rank: u32,
    key: &str,
    d: &Directives,
) -> Decision<'p> {
    decide_general_in(reader, pin, part::DATA, caller, ns, rank, key, d)
}

#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn decide_general_in<'p>(
    reader: &'p Reader,
    pin: &'p Pin<'_>,
    data_part: u32,
    caller: Option<u32>,
    ns: &str,
    rank: u32,
    key: &str,
    d: &Directives,
) -> Decision<'p> {
    if d.refresh || d.unknown_required {
        return Decision::Pass(Pass::Directive);
    }
    if special(rank) {
        return Decision::Pass(Pass::Absent);
    }
    let target = TargetRank::from_raw(rank);
    let q = &d.qualifiers;
    let job = job_table(reader, pin, ns, data_part);
    let from_job = |job: crate::Result<&'p Arc<TableView>>| -> Decision<'p> {
        let t = match job {
            Ok(t) => t,
            Err(Error::NotFound) => return Decision::Pass(Pass::Absent),
            Err(e) => return Decision::Pass(Pass::Store(e)),
        };
        // The resources table is looked up only for a node value the namespace lacks.
        let res = || {
            reader
                .table(pin, resources::NAMESPACE, part::RESOURCES)
                .ok()
        };
        match get_by_rules(t, res, caller, target, key, q) {
            Ok(v) => Decision::Answer(v, t),
            Err(Error::NotFound) if miss_is_final(t, key, target, q) => Decision::NotFound,
            Err(Error::NotFound) => Decision::Pass(Pass::Absent),
            Err(e) => Decision::Pass(Pass::Store(e)),
        }
    };
    // Reserved keys are job data (ch. 6); so is a custom key the host registered, when a realm
    // qualifier asks for it.
    if keys::is_reserved(key) || !q.is_plain() {
        return from_job(job);
    }
    // A non-reserved key is posted data (5.3); a key no process posted may be one the host
    // registered with the job (posted data wins, as in libpmix).
    match posted(reader, pin, ns, target, key, d.scope, &job) {
        Ok((v, t)) => Decision::Answer(v, t),
        Err(Error::NotFound) => from_job(job),
        Err(Error::ExistsOutsideScope) => Decision::Pass(Pass::OutsideScope),
        Err(e) => Decision::Pass(Pass::Store(e)),
    }
}

/// The posted-data lookup of 5.3 / 5.4: scope by the target's locality (from the job data).
fn posted<'p>(
    reader: &'p Reader,
    pin: &'p Pin<'_>,
    ns: &str,
    target: TargetRank,
    key: &str,
    scope: Option<Scope>,
    job: &crate::Result<&'p Arc<TableView>>,
) -> crate::Result<(ValueRef<'p>, &'p Arc<TableView>)> {
    let local = |r: u32| match job {
        Ok(t) => is_local(t, r).unwrap_or(false),
        Err(_) => false,
    };
    modex::find(reader, pin, ns, target, key, local, scope)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_is_default_and_plain() {
        assert_eq!(Directives::NONE, Directives::default());
        assert!(Directives::NONE.is_plain());
        let refresh = Directives {
            refresh: true,
            ..Directives::NONE
        };
        assert!(!refresh.is_plain());
    }

    #[test]
    fn special_ranks_lie_between_rank_valid_and_wildcard() {
        assert!(!special(0) && !special(RANK_VALID));
        assert!(special(RANK_VALID + 1) && special(RANK_WILDCARD - 1));
        assert!(!special(RANK_WILDCARD) && !special(u32::MAX));
    }
}
