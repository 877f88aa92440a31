//! The retrieval rules for reserved keys (standard 6.1, 6.2): which realm a (rank, key,
//! qualifiers) names, decided with a few lookups in a table built by [`super::register`].
//!
//! Precedence, in order:
//! 1. A realm qualifier: PMIX_SESSION_INFO, PMIX_JOB_INFO, PMIX_APP_INFO, PMIX_NODE_INFO,
//!    PMIX_PROC_INFO (6.1), with its selector (PMIX_SESSION_ID, PMIX_APPNUM, PMIX_HOSTNAME or
//!    PMIX_NODEID); without a selector the realm is the target process's (or, for rank
//!    WILDCARD, the caller's) session, app or node.
//! 2. Without one, the key's default realm (6.1.1-6.1.5): session keys → the session; app keys →
//!    the target's (or caller's) app; node keys → the node named by PMIX_HOSTNAME/PMIX_NODEID
//!    (6.2.1.5: PMIX_NODE_INFO is then not needed), else the target's node, else the local node.
//! 3. For a specific rank, the process-level value comes first (6.2.1.4), then the default realm
//!    for app and node keys (6.2.1.3 and 6.2.1.5 ask `PMIx_Get(&myproc, PMIX_APP_SIZE)` and
//!    `PMIx_Get(&myproc, PMIX_NODE_SIZE)`). A job key asked with a specific rank is not found:
//!    6.1.2 names the job with rank WILDCARD.
//! 4. Rank WILDCARD and any other key: the job realm.

#![forbid(unsafe_code)]

use super::keys::{self, default_realm, DefaultRealm, NODE_SELECTABLE_JOB_KEYS};
use super::node_ids;
use super::node_names;
use super::query::{Qualifiers, TargetRank};
use crate::bytes::same_bytes;
use crate::error::{Error, Result};
use crate::layout::Realm;
use crate::table::TableView;
use crate::valueref::ValueRef;

fn number(t: &TableView, realm: Realm, key: &str) -> Option<u32> {
    t.get(realm, key)
        .and_then(|v| v.as_u64())
        .and_then(|n| u32::try_from(n).ok())
}

/// Answer a PMIx_Get of `key` for `rank` of the namespace whose job table is `t`, asked by the
/// process `caller` of the same namespace (None for a caller outside it, e.g. the server), with
/// the server's registered resources (`resources::NAMESPACE`), when given, as a fallback for
/// node-realm values the namespace does not have (17.2.5). This is the rules alone: what a miss
/// means, directives, and posted data are the answer policy's ([`super::policy`]).
pub fn get<'t>(
    t: &'t TableView,
    resources: Option<&'t TableView>,
    caller: Option<u32>,
    rank: TargetRank,
    key: &str,
    q: &Qualifiers,
) -> Result<ValueRef<'t>> {
    if q.is_plain() {
        if let Some(v) = get_plain(t, caller, rank, key) {
            return Ok(v);
        }
    }
    get_by_rules(t, || resources, caller, rank, key, q)
}

/// [`get`] without the [`get_plain`] shortcut: the rules in full. For tests that hold the two
/// routes to the same answers; callers use [`get`].
#[doc(hidden)]
pub fn get_by_rules_only<'t>(
    t: &'t TableView,
    caller: Option<u32>,
    rank: TargetRank,
    key: &str,
    q: &Qualifiers,
) -> Result<ValueRef<'t>> {
    get_by_rules(t, || None, caller, rank, key, q)
}

/// The answer of a get without qualifiers when the namespace's table holds it: rule 3 (the
/// rank's own value), then the key's default realm (rules 2 and 4: the session, the target's or
/// caller's app and node, the job for rank WILDCARD). `None` is not NOT_FOUND: it sends the
/// request down [`get_by_rules`], which also answers the misses (NOT_FOUND, the resources'
/// node values). Inlined into the callers' get so its answer stays in registers.
#[inline(always)]
pub(crate) fn get_plain<'t>(
    t: &'t TableView,
    caller: Option<u32>,
    rank: TargetRank,
    key: &str,
) -> Option<ValueRef<'t>> {
    let k = t.key_id(key.as_bytes())?;
    let target = match rank {
        TargetRank::Rank(r) => {
            if let Some(v) = t.get_by_id(Realm::Proc(r), k) {
                return Some(v);
            }
            Some(r)
        }
        TargetRank::Wildcard => None,
        TargetRank::Undef => return None,
    };
    let realm = match t.default_realm(k)? {
        // A job key of a specific rank is NOT_FOUND (6.1.2): the general path says so.
        DefaultRealm::Job | DefaultRealm::Proc => match target {
            None => Realm::Job,
            Some(_) => return None,
        },
        DefaultRealm::Session => Realm::Session(t.job_meta().session.unwrap_or(0)),
        DefaultRealm::App => Realm::App(app_of(t, target.or(caller))),
        DefaultRealm::Node => {
            let id = match target.and_then(|r| node_of(t, r)) {
                Some(id) => id,
                None => match t.job_meta().local_node {
                    Some(id) => id,
                    None => node_of(t, caller?)?,
                },
            };
            if same_bytes(key.as_bytes(), keys::NODEID.as_bytes()) {
                return node_ids::host_id(t, id);
            }
            Realm::Node(id)
        }
    };
    t.get_by_id(realm, k)
}

/// The app of process `r`: its PMIX_APPNUM, else app 0, as OpenPMIx assumes for a process
/// whose app it was not told (its `pmix_globals.appnum` starts at 0, `hash_cache_job_info` stores
/// 0 for a proc array without one).
#[inline]
fn app_of(t: &TableView, r: Option<u32>) -> u32 {
    r.and_then(|r| number(t, Realm::Proc(r), keys::APPNUM))
        .unwrap_or(0)
}

/// A rank's node (the store's): the node whose host id its PMIX_NODEID is.
#[inline]
fn node_of(t: &TableView, r: u32) -> Option<u32> {
    node_ids::node_of_rank(t, r)
}

/// The rules in full, for a caller that tried [`get_plain`] already (the same answers: the
/// shortcut only takes the first step of rules 2-4 early). `resources` is called only when a
/// node value needs the fallback (a client's get then costs one table lookup, not two).
#[inline(never)]
pub(crate) fn get_by_rules<'t>(
    t: &'t TableView,
    resources: impl FnOnce() -> Option<&'t TableView>,
    caller: Option<u32>,
    rank: TargetRank,
    key: &str,
    q: &Qualifiers,
) -> Result<ValueRef<'t>> {
    // The key is hashed and probed once; every realm below looks it up by id.
    let kid = t.key_id(key.as_bytes());
    let in_t = |realm: Realm| match realm {
        Realm::Node(n) if same_bytes(key.as_bytes(), keys::NODEID.as_bytes()) => {
            node_ids::host_id(t, n)
        }
        _ => kid.and_then(|k| t.get_by_id(realm, k)),
    };
    let node_of = |r: u32| node_of(t, r);
    // A process-level value. A rank's hostname is its node's, read through the node (the
    // registration does not store it per rank when it equals the node's).
    let proc_value = |r: u32| match in_t(Realm::Proc(r)) {
        Some(v) => Some(v),
        None if same_bytes(key.as_bytes(), keys::HOSTNAME.as_bytes()) => {
            in_t(Realm::Node(node_of(r)?))
        }
        None => None,
    };
    let found = |realm: Realm| in_t(realm).ok_or(Error::NotFound);
    // A node value: the namespace's own, else the resources' for the same hostname.
    let node_value = |realm: Realm| -> Result<ValueRef<'t>> {
        if let Some(v) = in_t(realm) {
            return Ok(v);
        }
        let Realm::Node(id) = realm else {
            return Err(Error::NotFound);
        };
        let Some(res) = resources() else {
            return Err(Error::NotFound);
        };
        let host = t
            .get(Realm::Node(id), keys::HOSTNAME)
            .and_then(|h| h.as_str())
            .ok_or(Error::NotFound)?;
        let rid = node_names::find(res, host).ok_or(Error::NotFound)?;
        res.get(Realm::Node(rid), key).ok_or(Error::NotFound)
    };
    let target = match rank {
        TargetRank::Rank(r) => Some(r),
        _ => None,
    };
    let who = target.or(caller);
    let session = || -> Result<Realm> {
        let ours = t.job_meta().session.unwrap_or(0);
        match q.session_id {
            // Another session's data is not in this namespace's store (6.1.1).
            Some(s) if s != ours => Err(Error::NotFound),
            _ => Ok(Realm::Session(ours)),
        }
    };
    let app = || -> Result<Realm> { Ok(Realm::App(q.appnum.unwrap_or_else(|| app_of(t, who)))) };
    // The node named by a selector qualifier; an unknown hostname names no node.
    let selected = || -> Result<Option<u32>> {
        if let Some(id) = q.nodeid {
            return node_ids::node(t, id).map(Some).ok_or(Error::NotFound);
        }
        match &q.hostname {
            Some(h) => node_names::find(t, h).map(Some).ok_or(Error::NotFound),
            None => Ok(None),
        }
    };
    let local_node = || t.job_meta().local_node.or_else(|| caller.and_then(node_of));
    let node = || -> Result<Realm> {
        let id = match selected()? {
            Some(id) => Some(id),
            None => target.and_then(node_of).or_else(local_node),
        };
        id.map(Realm::Node).ok_or(Error::NotFound)
    };

    // 1. Realm qualifiers (6.1).
    if q.session_info {
        return found(session()?);
    }
    if q.job_info {
        return found(Realm::Job);
    }
    if q.app_info {
        return found(app()?);
    }
    if q.node_info {
        return node_value(node()?);
    }
    if q.proc_info {
        return target.and_then(proc_value).ok_or(Error::NotFound);
    }

    // 2-4. Default realms.
    let default = match kid {
        Some(k) => t.default_realm(k).unwrap_or_else(|| default_realm(key)),
        None => default_realm(key),
    };
    if let Some(v) = target.and_then(proc_value) {
        return Ok(v);
    }
    match default {
        DefaultRealm::Session => found(session()?),
        DefaultRealm::App => found(app()?),
        DefaultRealm::Node => node_value(node()?),
        DefaultRealm::Job => {
            let selector = q.nodeid.is_some() || q.hostname.is_some();
            if selector && NODE_SELECTABLE_JOB_KEYS.contains(&key) {
                if let Some(id) = selected()? {
                    return node_value(Realm::Node(id));
                }
            }
            match target {
                Some(_) => Err(Error::NotFound),
                None => found(Realm::Job),
            }
        }
        DefaultRealm::Proc => match rank {
            TargetRank::Rank(_) => Err(Error::NotFound),
            TargetRank::Wildcard => found(Realm::Job),
            // RANK_UNDEF is for posted (non-reserved) data: the modex issue's.
            TargetRank::Undef => Err(Error::NotFound),
        },
    }
}

/// Whether `rank` runs on the store's own node (for the scope rules of posted data), when the
/// job data says.
pub fn is_local(t: &TableView, rank: u32) -> Option<bool> {
    // The host's ids compared, not the store's nodes: one column read per posted-card Get.
    let local = t.job_meta().local_host_id?;
    Some(node_ids::as_u32(node_ids::of_rank(t, rank)?)? == local)
}
