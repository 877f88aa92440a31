//! The retrieval rules for reserved keys (PMIx v5 standard ch. 6), each test citing its section,
//! on a registration assembled as 17.2.3.2 describes: two nodes, two apps, a session.
//!
//! Job: nspace "rules", node001 = ranks 0-3 (the store's node), node002 = ranks 4-7; app 0 =
//! ranks 0-5, app 1 = ranks 6-7; session 7.

mod common;

use rshm_gds::jobdata::{self, Qualifiers, TargetRank};
use rshm_gds::{part, Error, Info, Reader, Value, Writer};

fn info(key: &str, value: Value) -> Info {
    Info::new(key, value)
}

fn array(key: &str, items: Vec<Info>) -> Info {
    Info::array(key, items)
}

fn registration(full: bool) -> Vec<Info> {
    let mut v = vec![
        info("pmix.nmap", Value::Regex(b"pmix[node[3:1-2]]\0".to_vec())),
        info("pmix.pmap", Value::Regex(b"pmix[0-3;4-7]\0".to_vec())),
    ];
    if !full {
        return v;
    }
    v.push(array(
        "pmix.ssn.arr",
        vec![
            info("pmix.session.id", Value::Uint32(7)),
            info("pmix.max.size", Value::Uint32(16)),
            info("pmix.num.nodes", Value::Uint32(4)),
        ],
    ));
    v.extend([
        info("pmix.univ.size", Value::Uint32(16)),
        info("pmix.jobid", Value::String("rules.1".into())),
        info("pmix.job.napps", Value::Uint32(2)),
        info("pmix.num.nodes", Value::Uint32(2)),
    ]);
    for (n, size, ldr, nodes) in [(0u32, 6u32, 0u32, 2u32), (1, 2, 6, 1)] {
        v.push(array(
            "pmix.app.arr",
            vec![
                info("pmix.appnum", Value::Uint32(n)),
                info("pmix.app.size", Value::Uint32(size)),
                info("pmix.aldr", Value::ProcRank(ldr)),
                info("pmix.num.nodes", Value::Uint32(nodes)),
                info("pmix.max.size", Value::Uint32(size)),
            ],
        ));
    }
    for (id, host, slots) in [(0u32, "node001", 8u32), (1, "node002", 6)] {
        v.push(array(
            "pmix.node.arr",
            vec![
                info("pmix.nodeid", Value::Uint32(id)),
                info("pmix.hname", Value::String(host.into())),
                info("pmix.node.size", Value::Uint32(4)),
                info("pmix.max.size", Value::Uint32(slots)),
            ],
        ));
    }
    for r in 0..8u32 {
        let app = if r < 6 { 0 } else { 1 };
        v.push(array(
            "pmix.pdata",
            vec![
                info("pmix.rank", Value::ProcRank(r)),
                info("pmix.appnum", Value::Uint32(app)),
                info(
                    "pmix.apprank",
                    Value::ProcRank(if app == 0 { r } else { r - 6 }),
                ),
                info("pmix.grank", Value::ProcRank(r + 100)),
                info(
                    "pmix.hname",
                    Value::String(if r < 4 { "node001" } else { "node002" }.into()),
                ),
            ],
        ));
    }
    v.push(array(
        "pmix.pdata",
        vec![
            info("pmix.rank", Value::ProcRank(3)),
            info("test.proc.int", Value::Int(-7)),
        ],
    ));
    v
}

struct Job {
    _base: tempfile::TempDir,
    _w: Writer,
    r: Reader,
}

fn job(full: bool) -> Job {
    let base = common::base_dir();
    let (t, summary) = jobdata::build(Some("node001"), &registration(full)).unwrap();
    assert_eq!(summary.job_size, 8);
    assert_eq!(summary.local_nodeid, Some(0));
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let mut tx = w.begin();
    tx.put_table("rules", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    let r = Reader::attach(w.path()).unwrap();
    Job {
        _base: base,
        _w: w,
        r,
    }
}

impl Job {
    /// PMIx_Get as rank `caller` would call it. Every answer is also asked of the rules alone
    /// (`get_by_rules_only`, without the `get_plain` shortcut most gets take): the two must agree,
    /// value and status, so each rule below tests the shortcut too.
    fn get(
        &self,
        caller: u32,
        rank: TargetRank,
        key: &str,
        q: Qualifiers,
    ) -> rshm_gds::Result<Value> {
        let pin = self.r.pin();
        let t = self.r.table(&pin, "rules", part::DATA)?;
        let got = jobdata::get(t, None, Some(caller), rank, key, &q).map(|v| v.to_value());
        let by_rules =
            jobdata::get_by_rules_only(t, Some(caller), rank, key, &q).map(|v| v.to_value());
        assert_eq!(
            format!("{got:?}"),
            format!("{by_rules:?}"),
            "shortcut and rules differ: rank {rank:?} key {key} caller {caller}"
        );
        got
    }
}

const ME: u32 = 1;
const W: TargetRank = TargetRank::Wildcard;
fn q() -> Qualifiers {
    Qualifiers::default()
}

#[test]
fn s6_1_1_session_keys_default_to_the_session_realm() {
    let j = job(true);
    // 6.2.1.1: PMIx_Get(&wildcard, PMIX_UNIV_SIZE) - a session key, registered at top level.
    assert_eq!(
        j.get(ME, W, "pmix.univ.size", q()).unwrap(),
        Value::Uint32(16)
    );
    // 6.2.1.1: #nodes in our session needs PMIX_SESSION_INFO (num.nodes defaults to the job).
    let s = Qualifiers {
        session_info: true,
        ..q()
    };
    assert_eq!(
        j.get(ME, W, "pmix.num.nodes", s.clone()).unwrap(),
        Value::Uint32(4)
    );
    assert_eq!(
        j.get(ME, W, "pmix.num.nodes", q()).unwrap(),
        Value::Uint32(2)
    );
    // 6.1.1: "the proc argument of PMIx_Get is ignored when referencing session-related information".
    assert_eq!(
        j.get(ME, TargetRank::Rank(5), "pmix.max.size", s.clone())
            .unwrap(),
        Value::Uint32(16)
    );
    // 6.2.1.1: another session, by PMIX_SESSION_ID: not this store's to answer.
    let other = Qualifiers {
        session_id: Some(12345),
        ..s.clone()
    };
    assert!(matches!(
        j.get(ME, W, "pmix.num.nodes", other),
        Err(Error::NotFound)
    ));
    let ours = Qualifiers {
        session_id: Some(7),
        ..s
    };
    assert_eq!(
        j.get(ME, W, "pmix.num.nodes", ours).unwrap(),
        Value::Uint32(4)
    );
}

#[test]
fn s6_1_2_job_keys_need_rank_wildcard() {
    let j = job(true);
    // 6.2.1.2: PMIx_Get(&wildcard, PMIX_JOB_NUM_APPS); #nodes with PMIX_JOB_INFO.
    assert_eq!(
        j.get(ME, W, "pmix.job.napps", q()).unwrap(),
        Value::Uint32(2)
    );
    let jq = Qualifiers {
        job_info: true,
        ..q()
    };
    assert_eq!(
        j.get(ME, W, "pmix.num.nodes", jq.clone()).unwrap(),
        Value::Uint32(2)
    );
    assert_eq!(j.get(ME, W, "pmix.max.size", jq).unwrap(), Value::Uint32(8));
    assert_eq!(
        j.get(ME, W, "pmix.jobid", q()).unwrap(),
        Value::String("rules.1".into())
    );
    // 6.1.2 names the job with PMIX_RANK_WILDCARD; 6.2.1.4: with a rank, the process-level value.
    assert!(matches!(
        j.get(ME, TargetRank::Rank(ME), "pmix.job.size", q()),
        Err(Error::NotFound)
    ));
    // 6.1.2 PMIX_LOCALLDR: "defaults to current node in absence of PMIX_HOSTNAME or PMIX_NODEID".
    assert_eq!(j.get(ME, W, "pmix.lldr", q()).unwrap(), Value::ProcRank(0));
    let there = Qualifiers {
        hostname: Some("node002".into()),
        ..q()
    };
    assert_eq!(
        j.get(ME, W, "pmix.lldr", there.clone()).unwrap(),
        Value::ProcRank(4)
    );
    assert_eq!(
        j.get(ME, W, "pmix.lpeers", there.clone()).unwrap(),
        Value::String("4,5,6,7".into())
    );
    assert_eq!(
        j.get(ME, W, "pmix.local.size", there).unwrap(),
        Value::Uint32(4)
    );
    assert_eq!(
        j.get(ME, W, "pmix.lpeers", q()).unwrap(),
        Value::String("0,1,2,3".into())
    );
}

#[test]
fn s6_1_3_app_keys_default_to_the_target_processes_app() {
    let j = job(true);
    // 6.2.1.3: PMIx_Get(&myproc, PMIX_APP_SIZE): our application.
    assert_eq!(
        j.get(ME, TargetRank::Rank(ME), "pmix.app.size", q())
            .unwrap(),
        Value::Uint32(6)
    );
    // ... and with rank WILDCARD: the caller's application.
    assert_eq!(j.get(7, W, "pmix.app.size", q()).unwrap(), Value::Uint32(2));
    // 6.2.1.3: #nodes of the app containing "otherproc" (rank 6, first of app 1), PMIX_APP_INFO.
    let a = Qualifiers {
        app_info: true,
        ..q()
    };
    assert_eq!(
        j.get(ME, TargetRank::Rank(6), "pmix.num.nodes", a.clone())
            .unwrap(),
        Value::Uint32(1)
    );
    // 6.2.1.3: PMIx_Get(NULL, PMIX_NUM_NODES, {PMIX_APP_INFO, PMIX_APPNUM=1}).
    let a1 = Qualifiers {
        appnum: Some(1),
        ..a.clone()
    };
    assert_eq!(
        j.get(ME, W, "pmix.num.nodes", a1.clone()).unwrap(),
        Value::Uint32(1)
    );
    assert_eq!(j.get(ME, W, "pmix.aldr", a1).unwrap(), Value::ProcRank(6));
    // 6.1.3: num.nodes defaults to the job realm without PMIX_APP_INFO.
    // (a rank's own value comes first: none; num.nodes is a job key asked with a rank)
    assert!(matches!(
        j.get(ME, TargetRank::Rank(6), "pmix.num.nodes", q()),
        Err(Error::NotFound)
    ));
    // An app that does not exist.
    let a9 = Qualifiers {
        appnum: Some(9),
        ..a
    };
    assert!(matches!(
        j.get(ME, W, "pmix.app.size", a9),
        Err(Error::NotFound)
    ));
}

#[test]
fn s6_1_4_process_keys_answer_for_the_target_process() {
    let j = job(true);
    let r = |n| TargetRank::Rank(n);
    assert_eq!(
        j.get(ME, r(ME), "pmix.lrank", q()).unwrap(),
        Value::Uint16(1)
    );
    assert_eq!(
        j.get(ME, r(5), "pmix.lrank", q()).unwrap(),
        Value::Uint16(1)
    );
    assert_eq!(
        j.get(ME, r(7), "pmix.nrank", q()).unwrap(),
        Value::Uint16(3)
    );
    assert_eq!(
        j.get(ME, r(6), "pmix.appnum", q()).unwrap(),
        Value::Uint32(1)
    );
    assert_eq!(
        j.get(ME, r(6), "pmix.apprank", q()).unwrap(),
        Value::ProcRank(0)
    );
    assert_eq!(
        j.get(ME, r(2), "pmix.grank", q()).unwrap(),
        Value::ProcRank(102)
    );
    assert_eq!(
        j.get(ME, r(3), "test.proc.int", q()).unwrap(),
        Value::Int(-7)
    );
    // 6.1.4: PMIX_PROC_INFO is "technically not required"; it gives the same answers.
    let p = Qualifiers {
        proc_info: true,
        ..q()
    };
    assert_eq!(
        j.get(ME, r(5), "pmix.lrank", p.clone()).unwrap(),
        Value::Uint16(1)
    );
    assert!(matches!(
        j.get(ME, W, "pmix.lrank", p),
        Err(Error::NotFound)
    ));
    // 6.2: an absent reserved key is NOT_FOUND at once.
    assert!(matches!(
        j.get(ME, r(5), "pmix.spawned", q()),
        Err(Error::NotFound)
    ));
    assert!(matches!(
        j.get(ME, r(99), "pmix.lrank", q()),
        Err(Error::NotFound)
    ));
}

#[test]
fn s6_1_5_node_keys_default_to_the_target_or_local_node() {
    let j = job(true);
    let r = |n| TargetRank::Rank(n);
    // 6.2.1.5: PMIx_Get(&myproc, PMIX_NODE_SIZE): our node.
    assert_eq!(
        j.get(ME, r(ME), "pmix.node.size", q()).unwrap(),
        Value::Uint32(4)
    );
    // A process's hostname and node id are those of its node (6.1.5: they correlate).
    assert_eq!(
        j.get(ME, r(5), "pmix.hname", q()).unwrap(),
        Value::String("node002".into())
    );
    assert_eq!(
        j.get(ME, r(5), "pmix.nodeid", q()).unwrap(),
        Value::Uint32(1)
    );
    // 6.1.5: "information about either the local node or the node specified by ...".
    assert_eq!(
        j.get(ME, W, "pmix.hname", q()).unwrap(),
        Value::String("node001".into())
    );
    let n = Qualifiers {
        node_info: true,
        ..q()
    };
    assert_eq!(
        j.get(ME, W, "pmix.hname", n.clone()).unwrap(),
        Value::String("node001".into())
    );
    // 6.2.1.5: #slots on another node: {PMIX_NODE_INFO, PMIX_HOSTNAME="remotehost"}.
    let remote = Qualifiers {
        hostname: Some("node002".into()),
        ..n.clone()
    };
    assert_eq!(
        j.get(ME, W, "pmix.max.size", remote.clone()).unwrap(),
        Value::Uint32(6)
    );
    // 6.2.1.5: "we don't actually need to include the PMIX_NODE_INFO attribute here".
    let bare = Qualifiers {
        hostname: Some("node002".into()),
        ..q()
    };
    assert_eq!(
        j.get(ME, W, "pmix.node.size", bare).unwrap(),
        Value::Uint32(4)
    );
    // 6.1.5: PMIX_NODEID and PMIX_HOSTNAME reference the same node interchangeably.
    let by_id = Qualifiers {
        nodeid: Some(1),
        ..n.clone()
    };
    assert_eq!(
        j.get(ME, W, "pmix.hname", by_id.clone()).unwrap(),
        Value::String("node002".into())
    );
    assert_eq!(
        j.get(ME, W, "pmix.nodeid", remote).unwrap(),
        Value::Uint32(1)
    );
    assert_eq!(
        j.get(ME, W, "pmix.local.size", by_id).unwrap(),
        Value::Uint32(4)
    );
    let unknown = Qualifiers {
        hostname: Some("node999".into()),
        ..n
    };
    assert!(matches!(
        j.get(ME, W, "pmix.hname", unknown),
        Err(Error::NotFound)
    ));
}

#[test]
fn s6_2_keys_derived_from_the_maps_alone() {
    // 17.2.3.2 makes the maps the minimum a host registers; the keys every client expects are
    // derived from them (the set OpenPMIx 4.2.2 answers from the maps alone).
    let j = job(false);
    let r = |n| TargetRank::Rank(n);
    assert_eq!(
        j.get(ME, W, "pmix.job.size", q()).unwrap(),
        Value::Uint32(8)
    );
    assert_eq!(
        j.get(ME, W, "pmix.max.size", q()).unwrap(),
        Value::Uint32(8)
    );
    assert_eq!(
        j.get(ME, W, "pmix.num.nodes", q()).unwrap(),
        Value::Uint32(2)
    );
    assert_eq!(
        j.get(ME, W, "pmix.nlist", q()).unwrap(),
        Value::String("node001,node002".into())
    );
    assert_eq!(
        j.get(ME, W, "pmix.lpeers", q()).unwrap(),
        Value::String("0,1,2,3".into())
    );
    assert_eq!(
        j.get(ME, W, "pmix.local.size", q()).unwrap(),
        Value::Uint32(4)
    );
    assert_eq!(j.get(ME, W, "pmix.lldr", q()).unwrap(), Value::ProcRank(0));
    for rank in 0..8u32 {
        assert_eq!(
            j.get(ME, r(rank), "pmix.lrank", q()).unwrap(),
            Value::Uint16((rank % 4) as u16)
        );
        assert_eq!(
            j.get(ME, r(rank), "pmix.nrank", q()).unwrap(),
            Value::Uint16((rank % 4) as u16)
        );
        assert_eq!(
            j.get(ME, r(rank), "pmix.nodeid", q()).unwrap(),
            Value::Uint32(rank / 4)
        );
        let host = if rank < 4 { "node001" } else { "node002" };
        assert_eq!(
            j.get(ME, r(rank), "pmix.hname", q()).unwrap(),
            Value::String(host.into())
        );
    }
    // Not derivable: the host did not say.
    for key in [
        "pmix.univ.size",
        "pmix.jobid",
        "pmix.appnum",
        "pmix.app.size",
    ] {
        assert!(
            matches!(
                j.get(ME, r(ME), key, q()).or(j.get(ME, W, key, q())),
                Err(Error::NotFound)
            ),
            "{key}"
        );
    }
    // The maps themselves are consumed, not stored (as OpenPMIx 4.2.2 does).
    assert!(matches!(
        j.get(ME, W, "pmix.nmap", q()),
        Err(Error::NotFound)
    ));
}

#[test]
fn malformed_registrations_are_refused_with_typed_errors() {
    let bad = |infos: Vec<Info>| jobdata::build(Some("node001"), &infos);
    assert!(matches!(
        bad(vec![info("pmix.app.arr", Value::Uint32(1))]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(
        matches!(bad(vec![array("pmix.app.arr", vec![info("pmix.app.size", Value::Uint32(1))])]), Err(Error::InvalidArgument(m)) if m.contains("PMIX_APPNUM"))
    );
    assert!(
        matches!(bad(vec![array("pmix.pdata", vec![info("pmix.lrank", Value::Uint16(1))])]), Err(Error::InvalidArgument(m)) if m.contains("PMIX_RANK"))
    );
    assert!(matches!(
        bad(vec![array(
            "pmix.node.arr",
            vec![info("pmix.node.size", Value::Uint32(1))]
        )]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        bad(vec![info("pmix.nmap", Value::Uint32(3))]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        bad(vec![info(
            "pmix.nmap",
            Value::String("pmix[node[3:1-2]".into())
        )]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        bad(vec![info("pmix.nmap", Value::String("pmix[a,b]".into())), info("pmix.pmap", Value::String("raw:0;1;2".into()))]),
        Err(Error::InvalidArgument(m)) if m.contains("2 nodes")
    ));
}

#[test]
fn s17_2_5_resources_fill_node_values_a_namespace_does_not_have() {
    let base = common::base_dir();
    let (t, _) = jobdata::build(Some("node001"), &registration(true)).unwrap();
    let mut res = jobdata::Resources::new();
    res.add("node001", &[info("test.gpus", Value::Uint32(2))])
        .unwrap();
    res.add(
        "node001",
        &[array(
            "pmix.node.arr",
            vec![
                info("pmix.hname", Value::String("node002".into())),
                info("test.gpus", Value::Uint32(8)),
                info("pmix.node.size", Value::Uint32(99)),
            ],
        )],
    )
    .unwrap();
    // A refused array changes nothing, not even the infos before the one refused.
    assert!(matches!(
        res.add(
            "node001",
            &[
                info("test.leak", Value::Uint32(1)),
                array("pmix.node.arr", vec![info("test.gpus", Value::Uint32(1))])
            ]
        ),
        Err(Error::InvalidArgument(_))
    ));
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let mut tx = w.begin();
    tx.put_table("rules", part::DATA, &t).unwrap();
    tx.put_table(jobdata::resources::NAMESPACE, part::RESOURCES, res.table())
        .unwrap();
    tx.commit().unwrap();
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let t = r.table(&pin, "rules", part::DATA).unwrap();
    let rt = r
        .table(&pin, jobdata::resources::NAMESPACE, part::RESOURCES)
        .unwrap();
    let get = |q: Qualifiers, key: &str| {
        jobdata::get(t, Some(rt), Some(ME), W, key, &q).map(|v| v.to_value())
    };
    let local = Qualifiers {
        node_info: true,
        ..q()
    };
    let remote = Qualifiers {
        node_info: true,
        hostname: Some("node002".into()),
        ..q()
    };
    assert_eq!(get(local.clone(), "test.gpus").unwrap(), Value::Uint32(2));
    assert_eq!(get(remote.clone(), "test.gpus").unwrap(), Value::Uint32(8));
    // 17.2.5: the namespace's own node values override the resources'.
    assert_eq!(get(remote, "pmix.node.size").unwrap(), Value::Uint32(4));
    assert!(matches!(
        get(local.clone(), "test.leak"),
        Err(Error::NotFound)
    ));
    // Without the resources table the namespace alone does not have them.
    assert!(matches!(
        jobdata::get(t, None, Some(ME), W, "test.gpus", &local),
        Err(Error::NotFound)
    ));
}

#[test]
fn s17_2_4_deregistration_reclaims_the_namespace() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    for ns in ["a", "b"] {
        let (t, _) = jobdata::build(Some("node001"), &registration(true)).unwrap();
        let mut tx = w.begin();
        tx.put_table(ns, part::DATA, &t).unwrap();
        tx.commit().unwrap();
    }
    let r = Reader::attach(w.path()).unwrap();
    assert_eq!(w.files().unwrap().len(), 4, "anchor, root, two tables");
    let mut tx = w.begin();
    tx.remove_namespace("a");
    tx.commit().unwrap();
    assert_eq!(w.files().unwrap().len(), 3, "a's table is unlinked");
    let pin = r.pin();
    assert!(matches!(
        r.table(&pin, "a", part::DATA),
        Err(Error::NotFound)
    ));
    let t = r.table(&pin, "b", part::DATA).unwrap();
    assert_eq!(
        jobdata::get(t, None, Some(ME), W, "pmix.job.size", &q())
            .unwrap()
            .to_value(),
        Value::Uint32(8)
    );
}
