//! The Rust half of `pmix_mca_gds_rshm.so`, rshm's gds component for the OpenPMIx 4.2 and 5.0
//! lines: one staticlib, linked into each line's build.
//!
//! The component is a small C adapter (`component/gds_rshm.c`, compiled against OpenPMIx's
//! internal headers) linked with this crate's staticlib, which holds both shims (server-shim's
//! `rshm_server_*` and client-shim's `rshm_client_*`), so that a process has one Rust runtime
//! whatever role it plays. All store logic stays in the shims and `gds`: a Get the component
//! takes is decided by the answer policy every rshm front end follows (`rshm_gds::jobdata::policy`,
//! docs/jobdata.md "Answer policy"). What this crate adds is the host's side: which Gets it
//! takes at all inside an unmodified OpenPMIx 4.2 ([`serves`]: only where 4.2.2's own store
//! gives the same answer, so a job's answers are the same with or without rshm). Everything
//! else, and whatever the policy does not answer from the store, is `PMIX_ERR_NOT_FOUND`, and
//! libpmix answers it with gds/hash as it would without rshm. docs/openpmix.md is the guide.
//!
//! Everything specific to OpenPMIx lives in `component/`: this filter, the C adapter (the
//! shared `gds_rshm.c` and one file per line, `v42.c` and `v50.c`) and its Makefile (which
//! builds for one line at a time, `PMIX_LINE`). The filter is 4.2.2's and serves the 5.0 line
//! as well: every answer of `component/tests/jobs.sh` under OpenPMIx 5.0.7 equals gds/hash's.

#![deny(unsafe_code)]

#[allow(unsafe_code)]
mod exports;

use rshm_abi::get::GetRequest;
use rshm_abi::types::keys::PMIX_TIMEOUT;
pub use rshm_abi::types::{RANK_UNDEF, RANK_WILDCARD};
use rshm_gds::jobdata::keys::{self, DefaultRealm};
use rshm_gds::jobdata::Qualifiers;

pub use exports::{rshm_gds42_fetch, rshm_gds42_store_announced};

pub use rshm_client;
pub use rshm_server;

/// Directives that change nothing for a store that never waits: the component still answers
/// (a miss falls back to libpmix, which then honours them).
const HARMLESS: &[&str] = &[PMIX_TIMEOUT];

/// A realm qualifier other than `PMIX_PROC_INFO` / `PMIX_APP_INFO` (the session, job or node
/// flag, or a session, app, host or node selector): where 4.2.2's answers and the standard's
/// rules part, so the component leaves the Get to libpmix.
fn realm_qualified(q: &Qualifiers) -> bool {
    q.session_info
        || q.job_info
        || q.node_info
        || q.session_id.is_some()
        || q.appnum.is_some()
        || q.hostname.is_some()
        || q.nodeid.is_some()
}

/// A process's rank, not a special one (wildcard, undef, local node, invalid, local peers).
fn a_rank(rank: u32) -> bool {
    rank < RANK_UNDEF - 4
}

/// Whether the component answers PMIx_Get of `key` for `rank` with these directives, or leaves
/// it to libpmix (gds/hash and the server). The rule: answer exactly where OpenPMIx 4.2.2's own
/// store gives the same answer as rshm's job data, so that a job gets the same answers with or
/// without the component (tools/pmix-host's corpora check it; docs/jobdata.md lists where the
/// standard's rules and 4.2.2 disagree, and there libpmix keeps answering):
///
/// - non-reserved keys (posted data, and custom keys the host registered): always;
/// - no realm qualifier (`PMIX_*_INFO`, `PMIX_SESSION_ID`, `PMIX_APPNUM`, `PMIX_HOSTNAME`,
///   `PMIX_NODEID`) and no directive other than the scope/wait ones the store reads, except
///   `PMIX_PROC_INFO` / `PMIX_APP_INFO` on a process key of a rank (both name that process's
///   own value then, in the standard and in 4.2.2 alike);
/// - rank WILDCARD: the session, job, app and node keys except the node's identity
///   (`PMIX_HOSTNAME`, `PMIX_NODEID`: 4.2.2 answers neither for WILDCARD);
/// - a rank: process keys, `PMIX_HOSTNAME`, and `PMIX_NODEID` of a rank on this node (4.2.2
///   answers it for local ranks only, see [`rshm_gds42_fetch`]); no app, node or job key asked
///   with a rank;
/// - rank UNDEF, other special ranks, and NULL keys: never.
pub fn serves(key: &str, rank: u32, req: &GetRequest) -> bool {
    serves_in(key, keys::default_realm(key), rank, req)
}

/// [`serves`] of a key whose default realm the caller looked up (`keys::default_realm(key)`).
#[inline]
pub fn serves_in(key: &str, realm: DefaultRealm, rank: u32, req: &GetRequest) -> bool {
    if req.unknown.iter().any(|k| !HARMLESS.contains(&k.as_str())) {
        return false;
    }
    let q = &req.directives.qualifiers;
    if realm_qualified(q) {
        return false;
    }
    let a_rank = a_rank(rank);
    if q.proc_info {
        return a_rank;
    }
    if q.app_info {
        return a_rank && realm == DefaultRealm::Proc && keys::is_reserved(key);
    }
    if !keys::is_reserved(key) {
        return a_rank || rank == RANK_WILDCARD;
    }
    if rank == RANK_WILDCARD {
        realm != DefaultRealm::Proc && key != keys::HOSTNAME && key != keys::NODEID
    } else if a_rank {
        realm == DefaultRealm::Proc || key == keys::HOSTNAME || key == keys::NODEID
    } else {
        false
    }
}

/// A rank's reserved key that OpenPMIx 4.2.2 answers from that process's own values alone
/// (its gds/hash fetch ignores the key's realm and `PMIX_APP_INFO` for a valid rank, and its
/// client adds `PMIX_APP_INFO` to every app key), where rshm's rules would go on to the
/// process's app or node: asked as `PMIX_PROC_INFO`, a miss passes to libpmix.
pub fn process_level_only(key: &str, rank: u32, req: &GetRequest) -> bool {
    process_level_only_in(key, keys::default_realm(key), rank, req)
}

/// [`process_level_only`] of a key whose default realm the caller looked up.
#[inline]
pub fn process_level_only_in(key: &str, realm: DefaultRealm, rank: u32, req: &GetRequest) -> bool {
    let q = &req.directives.qualifiers;
    a_rank(rank)
        && keys::is_reserved(key)
        && key != keys::HOSTNAME
        && key != keys::NODEID
        && !realm_qualified(q)
        && (q.app_info || realm != DefaultRealm::Proc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> GetRequest {
        GetRequest::default()
    }

    #[test]
    fn posted_keys_are_served_for_ranks_and_wildcard_only() {
        assert!(serves("test.card", 3, &plain()));
        assert!(serves("test.job.str", RANK_WILDCARD, &plain()));
        assert!(!serves("test.card", RANK_UNDEF, &plain()));
        assert!(!serves("test.card", RANK_UNDEF - 2, &plain()));
    }

    #[test]
    fn reserved_keys_follow_openpmix_4_2_realms() {
        assert!(serves("pmix.job.size", RANK_WILDCARD, &plain()));
        assert!(serves("pmix.node.size", RANK_WILDCARD, &plain()));
        assert!(!serves("pmix.hname", RANK_WILDCARD, &plain()));
        assert!(!serves("pmix.nodeid", RANK_WILDCARD, &plain()));
        assert!(serves("pmix.lrank", 5, &plain()));
        assert!(serves("pmix.hname", 5, &plain()));
        assert!(serves("pmix.nodeid", 5, &plain()));
        assert!(!serves("pmix.app.size", 0, &plain()));
        assert!(!serves("pmix.node.size", 0, &plain()));
        assert!(!serves("pmix.job.size", 0, &plain()));
        assert!(!serves("pmix.lrank", RANK_WILDCARD, &plain()));
    }

    #[test]
    fn qualified_and_unknown_requests_are_left_to_libpmix() {
        let mut r = plain();
        r.directives.qualifiers.node_info = true;
        assert!(!serves("pmix.local.size", RANK_WILDCARD, &r));
        let mut r = plain();
        r.directives.qualifiers.proc_info = true;
        assert!(serves("pmix.lrank", 6, &r));
        assert!(serves("test.proc.int", 3, &r));
        assert!(!serves("pmix.lrank", RANK_WILDCARD, &r));
        let mut r = plain();
        r.directives.qualifiers.app_info = true;
        assert!(serves("pmix.appnum", 6, &r));
        assert!(!serves("pmix.app.size", 6, &r));
        assert!(!serves("test.app.u16", 6, &r));
        let mut r = plain();
        r.unknown.push("pmix.get.refresh".into());
        assert!(!serves("test.card", 1, &r));
        let mut r = plain();
        r.unknown.push("pmix.timeout".into());
        assert!(serves("test.card", 1, &r));
    }
}
