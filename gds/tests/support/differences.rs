//! The documented differences between rshm's job-data answers and OpenPMIx 4.2.2's
//! (docs/jobdata.md has the table with the standard's text): shared by the conformance test and
//! the preload test (client-shim/preload/tests), which must differ from libpmix in exactly these.

#![allow(dead_code)]

/// Why a query's answer differs from OpenPMIx 4.2.2 (docs/jobdata.md, with the standard's text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Why {
    /// 6.1.5: PMIX_HOSTNAME / PMIX_NODEID are node keys that "return information about either
    /// the local node or the node specified by PMIX_HOSTNAME or PMIX_NODEID", and the two
    /// "interchangeably reference the same location". OpenPMIx answers neither.
    NodeIdentity,
    /// 6.1 PMIX_APP_INFO: "the application realm to which the target process belongs"; 6.2.1.3
    /// gets "the #processes in our application" with PMIx_Get(&myproc, PMIX_APP_SIZE).
    /// OpenPMIx answers only for rank WILDCARD.
    AppOfTarget,
    /// 6.1 PMIX_NODE_INFO: "the node upon which the specified process is executing"; 6.2.1.5
    /// gets "the #procs on our node" with PMIx_Get(&myproc, PMIX_NODE_SIZE). OpenPMIx: NOT-FOUND.
    NodeOfTarget,
    /// 6.1.3 / 6.1.5: in the app (node) realm a key means that app's (node's) quantity ("the
    /// number of nodes currently hosting processes in the specified application"). OpenPMIx
    /// returns the job's value instead, wrong here (app 1 runs on node002 alone).
    NoJobFallback,
    /// 6.1 PMIX_JOB_INFO: "the job realm corresponding to the namespace in the target process'
    /// identifier": the rank does not matter. OpenPMIx: NOT-FOUND unless rank is WILDCARD.
    JobInfoAnyRank,
    /// Not matched yet (docs/jobdata.md): once any proc array is given, OpenPMIx derives no
    /// rank's local rank, node rank or node id from the maps (`pmix_gds_hash_store_map`); rshm
    /// derives them where the arrays give none.
    MapsBesideProcArrays,
}

use Why::*;

/// Node identity queries differ in both registrations (the maps alone name the nodes).
pub const NODE_IDENTITY: &[&str] = &[
    "j14", "j15", "n01", "n08", "n09", "q06", "r614-26", "r615-04", "r615-05", "r615-06",
    "r615-07", "r615-13", "r615-14", "r615-15", "r615-16",
];

/// Full registration (examples/job-2node.txt): every other query whose answer differs, and why.
pub const FULL: &[(&str, Why)] = &[
    ("p13", AppOfTarget),
    ("e6213-01", AppOfTarget),
    ("e6213-04", AppOfTarget),
    ("r61-10", AppOfTarget),
    ("r61-11", AppOfTarget),
    ("r61-12", AppOfTarget),
    ("r61-13", AppOfTarget),
    ("r61-31", AppOfTarget),
    ("r613-03", AppOfTarget),
    ("r613-04", AppOfTarget),
    ("r613-05", AppOfTarget),
    ("r613-06", AppOfTarget),
    ("r613-10", AppOfTarget),
    ("r613-25", AppOfTarget),
    ("e6215-01", NodeOfTarget),
    ("r615-03", NodeOfTarget),
    ("r61-21", NodeOfTarget),
    ("r61-22", NodeOfTarget),
    ("e6213-03", NoJobFallback),
    ("e6215-11", NoJobFallback),
    ("r61-04", NoJobFallback),
    ("r61-05", NoJobFallback),
    ("r613-22", NoJobFallback),
    ("r612-04", JobInfoAnyRank),
    ("r612-05", JobInfoAnyRank),
    ("r612-33", JobInfoAnyRank),
];

/// Minimal registration (maps and two extra keys only): every other query whose answer differs.
pub const MINIMAL: &[(&str, Why)] = &[
    ("a04", NoJobFallback),
    ("e6213-03", NoJobFallback),
    ("e6215-11", NoJobFallback),
    ("r61-04", NoJobFallback),
    ("r61-05", NoJobFallback),
    ("r61-09", NoJobFallback),
    ("r613-17", NoJobFallback),
    ("r613-18", NoJobFallback),
    ("r613-22", NoJobFallback),
    ("r612-04", JobInfoAnyRank),
    ("r612-05", JobInfoAnyRank),
    ("r612-33", JobInfoAnyRank),
];

/// examples/job-slurm.txt with examples/corpus-toplevel.txt.
pub const SLURM: &[(&str, Why)] = &[
    // Rank 5's own node id, registered: OpenPMIx answers it for local ranks only.
    ("t35", NodeIdentity),
    // Slurm gives the local rank of local ranks only.
    ("t34", MapsBesideProcArrays),
];

/// examples/job-toplevel.txt with examples/corpus-toplevel.txt.
pub const TOPLEVEL: &[(&str, Why)] = &[
    ("t24", AppOfTarget),
    ("t35", NodeIdentity),
    ("t30", MapsBesideProcArrays),
    ("t31", MapsBesideProcArrays),
    ("t34", MapsBesideProcArrays),
];
