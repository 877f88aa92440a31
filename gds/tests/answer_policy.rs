//! The answer policy (`jobdata::policy`, docs/jobdata.md "Answer policy"): each directive and
//! qualifier, on a hit and on a miss, for each kind of target, against one store holding a
//! job's data and its posted data. One row per case; every row names the rule it checks.
//!
//! Job: node001 = ranks 0-3 (the store's node), node002 = ranks 4-7; the caller is rank 0.

mod common;

use rshm_gds::jobdata::query::RANK_VALID;
use rshm_gds::jobdata::query::{RANK_UNDEF, RANK_WILDCARD};
use rshm_gds::jobdata::{self, Decision, Directives, Pass, Qualifiers};
use rshm_gds::modex::{Posted, Scope};
use rshm_gds::{part, Info, Reader, Value, Writer};

use common::store;

const NS: &str = "ns";
const W: u32 = RANK_WILDCARD;
const UNDEF: u32 = RANK_UNDEF;
/// `PMIX_RANK_LOCAL_NODE`.
const LOCAL_NODE: u32 = u32::MAX - 2;

fn publish(w: &mut Writer) {
    let infos = vec![
        Info::new("pmix.nmap", Value::String("pmix[node[3:1-2]]".into())),
        Info::new("pmix.pmap", Value::String("pmix[0-3;4-7]".into())),
        Info::new("test.job", Value::String("registered".into())),
    ];
    let (t, _) = jobdata::build(Some("node001"), &infos).unwrap();
    let mut p = Posted::new();
    let card = |s: &str| Value::ByteObject(s.as_bytes().to_vec());
    p.put(1, Scope::Global, "card", &card("1g")).unwrap();
    p.put(1, Scope::Remote, "rcard", &card("1r")).unwrap();
    p.put(5, Scope::Global, "card", &card("5g")).unwrap();
    let mut tx = w.begin();
    tx.put_table(NS, part::DATA, &t).unwrap();
    tx.put_table_packable(NS, part::POSTED, p.table()).unwrap();
    tx.commit().unwrap();
}

/// The decision reduced to what a row states.
#[derive(Debug, PartialEq)]
enum Want {
    Answer(Value),
    NotFound,
    PassDirective,
    PassAbsent,
    PassOutsideScope,
}

fn want(d: Decision<'_>) -> Want {
    match d {
        Decision::Answer(v, _) => Want::Answer(v.to_value()),
        Decision::NotFound => Want::NotFound,
        Decision::Pass(Pass::Directive) => Want::PassDirective,
        Decision::Pass(Pass::Absent) => Want::PassAbsent,
        Decision::Pass(Pass::OutsideScope) => Want::PassOutsideScope,
        Decision::Pass(Pass::Store(e)) => panic!("store error {e}"),
    }
}

fn d(f: impl FnOnce(&mut Directives)) -> Directives {
    let mut d = Directives::default();
    f(&mut d);
    d
}

fn q(f: impl FnOnce(&mut Qualifiers)) -> Directives {
    d(|d| f(&mut d.qualifiers))
}

#[test]
fn every_directive_and_qualifier_decides_as_the_table_says() {
    use Want::*;
    let (_b, mut w) = store();
    publish(&mut w);
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let u32v = |n| Answer(Value::Uint32(n));
    let s = |t: &str| Answer(Value::String(t.into()));
    let b = |t: &str| Answer(Value::ByteObject(t.as_bytes().to_vec()));
    let none = Directives::default();
    let rows: Vec<(&str, &str, u32, &str, Directives, Want)> = vec![
        // No directive: the retrieval rules (ch. 6, 5.3).
        (
            "reserved hit, job",
            NS,
            W,
            "pmix.job.size",
            none.clone(),
            u32v(8),
        ),
        (
            "reserved hit, rank",
            NS,
            5,
            "pmix.lrank",
            none.clone(),
            Answer(Value::Uint16(1)),
        ),
        (
            "node identity (6.1.5)",
            NS,
            W,
            "pmix.hname",
            none.clone(),
            s("node001"),
        ),
        (
            "6.2: job-realm miss is final",
            NS,
            W,
            "pmix.mapby",
            none.clone(),
            NotFound,
        ),
        (
            "proc-realm miss: host values",
            NS,
            1,
            "pmix.mapby",
            none.clone(),
            PassAbsent,
        ),
        (
            "6.1.2: job key of a rank",
            NS,
            1,
            "pmix.job.size",
            none.clone(),
            PassAbsent,
        ),
        (
            "job key, rank UNDEF: the job",
            NS,
            UNDEF,
            "pmix.job.size",
            none.clone(),
            u32v(8),
        ),
        (
            "proc key, rank UNDEF",
            NS,
            UNDEF,
            "pmix.lrank",
            none.clone(),
            PassAbsent,
        ),
        (
            "special rank",
            NS,
            LOCAL_NODE,
            "pmix.hname",
            none.clone(),
            PassAbsent,
        ),
        (
            "namespace not held",
            "other",
            W,
            "pmix.job.size",
            none.clone(),
            PassAbsent,
        ),
        ("5.3: posted hit", NS, 1, "card", none.clone(), b("1g")),
        (
            "5.3: remote posted hit",
            NS,
            5,
            "card",
            none.clone(),
            b("5g"),
        ),
        (
            "5.1: UNDEF, first poster",
            NS,
            UNDEF,
            "card",
            none.clone(),
            b("1g"),
        ),
        (
            "5.3: posted miss (host waits)",
            NS,
            1,
            "nope",
            none.clone(),
            PassAbsent,
        ),
        (
            "5.3: posted miss, WILDCARD",
            NS,
            W,
            "nope",
            none.clone(),
            PassAbsent,
        ),
        (
            "5.3: posted miss, UNDEF",
            NS,
            UNDEF,
            "nope",
            none.clone(),
            PassAbsent,
        ),
        (
            "custom key the host registered",
            NS,
            W,
            "test.job",
            none.clone(),
            s("registered"),
        ),
        (
            "5.4: outside the scope",
            NS,
            1,
            "rcard",
            none.clone(),
            PassOutsideScope,
        ),
        // Realm qualifiers (6.1): registered data only, so a miss is final.
        (
            "PMIX_NODE_INFO hit",
            NS,
            1,
            "pmix.local.size",
            q(|q| q.node_info = true),
            u32v(4),
        ),
        (
            "PMIX_NODE_INFO miss",
            NS,
            1,
            "pmix.mapby",
            q(|q| q.node_info = true),
            NotFound,
        ),
        (
            "PMIX_JOB_INFO, custom",
            NS,
            3,
            "test.job",
            q(|q| q.job_info = true),
            s("registered"),
        ),
        (
            "PMIX_JOB_INFO, custom miss",
            NS,
            3,
            "nope",
            q(|q| q.job_info = true),
            NotFound,
        ),
        (
            "PMIX_SESSION_INFO miss",
            NS,
            W,
            "pmix.univ.size",
            q(|q| q.session_info = true),
            NotFound,
        ),
        (
            "PMIX_APP_INFO miss",
            NS,
            W,
            "pmix.app.size",
            q(|q| q.app_info = true),
            NotFound,
        ),
        (
            "PMIX_PROC_INFO miss: host values",
            NS,
            1,
            "pmix.mapby",
            q(|q| q.proc_info = true),
            PassAbsent,
        ),
        (
            "PMIX_PROC_INFO hit",
            NS,
            6,
            "pmix.lrank",
            q(|q| q.proc_info = true),
            Answer(Value::Uint16(2)),
        ),
        (
            "PMIX_HOSTNAME selector (6.2.1.5)",
            NS,
            W,
            "pmix.local.size",
            q(|q| {
                q.node_info = true;
                q.hostname = Some("node002".into())
            }),
            u32v(4),
        ),
        (
            "PMIX_NODEID selector, miss with a rank",
            NS,
            1,
            "pmix.mapby",
            q(|q| q.nodeid = Some(1)),
            PassAbsent,
        ),
        (
            "another session's: the server may know it",
            NS,
            W,
            "pmix.univ.size",
            q(|q| {
                q.session_info = true;
                q.session_id = Some(7)
            }),
            PassAbsent,
        ),
        (
            "our session's miss",
            NS,
            W,
            "pmix.univ.size",
            q(|q| {
                q.session_info = true;
                q.session_id = Some(0)
            }),
            NotFound,
        ),
        (
            "a node the job does not run on (hostname)",
            NS,
            W,
            "pmix.node.size",
            q(|q| {
                q.node_info = true;
                q.hostname = Some("node099".into())
            }),
            PassAbsent,
        ),
        (
            "a node the job does not run on (id)",
            NS,
            W,
            "pmix.node.size",
            q(|q| {
                q.node_info = true;
                q.nodeid = Some(99)
            }),
            PassAbsent,
        ),
        (
            "one of the job's nodes, miss",
            NS,
            W,
            "pmix.mapby",
            q(|q| {
                q.node_info = true;
                q.nodeid = Some(1)
            }),
            NotFound,
        ),
        // PMIX_OPTIONAL / PMIX_IMMEDIATE: the store never asks anyone, so nothing changes.
        (
            "PMIX_OPTIONAL hit",
            NS,
            W,
            "pmix.job.size",
            q(|q| q.optional = true),
            u32v(8),
        ),
        (
            "PMIX_OPTIONAL job miss",
            NS,
            W,
            "pmix.mapby",
            q(|q| q.optional = true),
            NotFound,
        ),
        (
            "PMIX_OPTIONAL posted miss",
            NS,
            1,
            "nope",
            q(|q| q.optional = true),
            PassAbsent,
        ),
        (
            "PMIX_IMMEDIATE hit",
            NS,
            5,
            "card",
            q(|q| q.immediate = true),
            b("5g"),
        ),
        (
            "PMIX_IMMEDIATE proc miss",
            NS,
            1,
            "pmix.mapby",
            q(|q| q.immediate = true),
            PassAbsent,
        ),
        // PMIX_DATA_SCOPE (5.4): narrows the posted data searched.
        (
            "PMIX_DATA_SCOPE global",
            NS,
            1,
            "card",
            d(|d| d.scope = Some(Scope::Global)),
            b("1g"),
        ),
        (
            "PMIX_DATA_SCOPE local, posted global",
            NS,
            1,
            "card",
            d(|d| d.scope = Some(Scope::Local)),
            PassOutsideScope,
        ),
        (
            "PMIX_DATA_SCOPE, posted miss",
            NS,
            1,
            "nope",
            d(|d| d.scope = Some(Scope::Global)),
            PassAbsent,
        ),
        // PMIX_GET_REFRESH_CACHE (5.3 step 1) and unknown required directives (3.2.9): a host's.
        (
            "refresh, reserved hit",
            NS,
            W,
            "pmix.job.size",
            d(|d| d.refresh = true),
            PassDirective,
        ),
        (
            "refresh, posted hit",
            NS,
            5,
            "card",
            d(|d| d.refresh = true),
            PassDirective,
        ),
        (
            "required unknown",
            NS,
            W,
            "pmix.job.size",
            d(|d| d.unknown_required = true),
            PassDirective,
        ),
        (
            "required unknown beats a qualifier",
            NS,
            1,
            "pmix.mapby",
            d(|d| {
                d.unknown_required = true;
                d.qualifiers.node_info = true
            }),
            PassDirective,
        ),
    ];
    let mut wrong = Vec::new();
    for (name, ns, rank, key, dirs, expect) in rows {
        let got = want(jobdata::decide(&r, &pin, Some(0), ns, rank, key, &dirs));
        // The shortcut and the full decision agree on every row.
        let full = want(jobdata::policy::decide_general(
            &r,
            &pin,
            Some(0),
            ns,
            rank,
            key,
            &dirs,
        ));
        if got != expect || full != expect {
            wrong.push(format!(
                "{name}: want {expect:?}, got {got:?} (full path {full:?})"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn special_ranks_are_the_ones_above_rank_valid() {
    let (_b, mut w) = store();
    publish(&mut w);
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let none = Directives::default();
    let hostname = |rank| jobdata::decide(&r, &pin, Some(0), NS, rank, "pmix.hname", &none);
    assert!(matches!(
        hostname(RANK_VALID + 1),
        Decision::Pass(Pass::Absent)
    ));
    assert!(matches!(
        hostname(RANK_WILDCARD - 1),
        Decision::Pass(Pass::Absent)
    ));
    assert!(matches!(hostname(3), Decision::Answer(..)));
}
