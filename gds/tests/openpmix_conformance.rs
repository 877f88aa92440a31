//! Differential conformance: the same registration and the same PMIx_Get queries, answered by
//! Debian's real OpenPMIx 4.2.2 (tools/pmix-host: a real server host and real clients) and by
//! rshm's job data (`jobdata::build` + `jobdata::get`). Every difference must be one that
//! docs/jobdata.md documents, with the standard's text; a documented difference that stops
//! differing fails too, so the list stays true.
//!
//! OpenPMIx's answers are taken under `PMIX_MCA_gds=hash` (ds21 falls back to job values in
//! places hash does not; tools/pmix-host/README.md). Statuses that come from the server's host
//! rather than its store (NOT-SUPPORTED: the host refused a direct modex; TIMEOUT: the server
//! waited for data never posted) count as NOT-FOUND, which is what a store answers there.

#[path = "support/pmixhost.rs"]
mod pmixhost;

mod common;

use std::collections::{BTreeMap, HashMap};

use gds::jobdata::{self, TargetRank};
use gds::{part, Reader, Writer};
use pmixhost::{CorpusQuery, CorpusRank};

/// Keys posted by the clients (Put/Commit/Fence): modex data, not job data.
const POSTED: [&str; 3] = ["test.card", "test.lcard", "test.rcard"];

type Triple = (String, String, String);

fn normalize(status: &str, ty: &str, value: &str) -> Triple {
    match status {
        "NOT-SUPPORTED" | "TIMEOUT" | "NOT-FOUND" => ("NOT-FOUND".into(), "-".into(), "-".into()),
        _ => (status.into(), ty.into(), value.into()),
    }
}

/// Run one job + corpus through both; return (id, rank) → (openpmix, rshm) for every difference.
fn differences(job: &str, corpus: &str) -> BTreeMap<(String, u32), (Triple, Triple)> {
    let (reg, answers) = pmixhost::run_job(job, corpus, &[("PMIX_MCA_gds", "hash")]);
    assert!(
        !answers.is_empty(),
        "OpenPMIx produced no answers for {corpus}"
    );
    let (table, summary) = jobdata::build(Some(&reg.local_host), &reg.infos).expect("registration");
    assert!(summary.job_size > 0);

    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let mut tx = w.begin();
    tx.put_table(&reg.nspace, part::DATA, &table).unwrap();
    tx.commit().unwrap();
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let t = r.table(&pin, &reg.nspace, part::DATA).unwrap();

    let queries: HashMap<String, CorpusQuery> = pmixhost::read_corpus(corpus)
        .into_iter()
        .map(|q| (q.id.clone(), q))
        .collect();
    let mut diffs = BTreeMap::new();
    let mut compared = 0;
    for a in &answers {
        let q = &queries[&a.id];
        if POSTED.contains(&q.key.as_str()) {
            continue;
        }
        let rank = match q.rank {
            CorpusRank::Me => TargetRank::Rank(a.rank),
            CorpusRank::Rank(n) => TargetRank::Rank(n),
            CorpusRank::Wildcard => TargetRank::Wildcard,
            CorpusRank::Undef => TargetRank::Undef,
        };
        let ours = match jobdata::get(t, Some(a.rank), rank, &q.key, &q.quals) {
            Ok(v) => {
                let (ty, text) = pmixhost::canonical(&v.to_value());
                ("SUCCESS".to_string(), ty, text)
            }
            Err(gds::Error::NotFound) => ("NOT-FOUND".into(), "-".into(), "-".into()),
            Err(e) => panic!("{}: rshm error {e}", a.id),
        };
        let theirs = normalize(&a.status, &a.type_name, &a.value);
        compared += 1;
        if theirs != ours {
            diffs.insert((a.id.clone(), a.rank), (theirs, ours));
        }
    }
    assert!(
        compared > 20,
        "only {compared} answers compared for {corpus}"
    );
    eprintln!(
        "{job} + {corpus}: {compared} answers compared, {} differ",
        diffs.len()
    );
    diffs
}

/// Why a query's answer differs from OpenPMIx 4.2.2 (docs/jobdata.md, with the standard's text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
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
}

use Why::*;

/// Node identity queries differ in both registrations (the maps alone name the nodes).
const NODE_IDENTITY: &[&str] = &[
    "j14", "j15", "n01", "n08", "n09", "q06", "r614-26", "r615-04", "r615-05", "r615-06",
    "r615-07", "r615-13", "r615-14", "r615-15", "r615-16",
];

/// Full registration (examples/job-2node.txt): every other query whose answer differs, and why.
const FULL: &[(&str, Why)] = &[
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
const MINIMAL: &[(&str, Why)] = &[
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

/// The differing query ids must be exactly the documented ones: nothing new, nothing stale.
fn check(job: &str, known: &[(&str, Why)]) {
    let mut differing = BTreeMap::new();
    for corpus in ["examples/corpus-2node.txt", "examples/corpus-realms.txt"] {
        for ((id, rank), d) in differences(job, corpus) {
            differing.entry(id).or_insert_with(Vec::new).push((rank, d));
        }
    }
    let known: BTreeMap<&str, Why> = known
        .iter()
        .copied()
        .chain(NODE_IDENTITY.iter().map(|id| (*id, NodeIdentity)))
        .collect();
    let unexplained: Vec<String> = differing
        .iter()
        .filter(|(id, _)| !known.contains_key(id.as_str()))
        .map(|(id, d)| format!("{id}: {:?}", d[0]))
        .collect();
    let stale: Vec<&&str> = known
        .keys()
        .filter(|id| !differing.contains_key(**id))
        .collect();
    assert!(
        unexplained.is_empty() && stale.is_empty(),
        "{job}: differences not documented: {unexplained:#?}\ndocumented but no longer differing: {stale:?}"
    );
}

#[test]
fn full_registration_matches_openpmix_except_documented_differences() {
    check("examples/job-2node.txt", FULL);
}

#[test]
fn minimal_registration_matches_openpmix_except_documented_differences() {
    check("examples/job-2node-minimal.txt", MINIMAL);
}
