//! The host's node ids are what every Get sees, whatever the store's own node numbering: Open
//! MPI's mpirun on a node that holds no ranks numbers it 0 and the compute nodes 1..3 (the
//! ranks' PMIX_NODEID and the top-level one of the server's node), while its node map lists the
//! compute nodes alone (tools/pmix-host/examples/recorded/ompi-3node-rankless.reg).

mod common;

use rshm_gds::jobdata::{self, Qualifiers, TargetRank};
use rshm_gds::{part, Info, Reader, Value, Writer};

/// node1..node3 with ranks 0,1 / 2,3 / 4,5; the host numbers them 1..3; the store is node1's.
fn registration() -> Vec<Info> {
    let mut v = vec![
        Info::new("pmix.nmap", Value::Regex(b"pmix[node[1:1-3]]\0".to_vec())),
        Info::new("pmix.pmap", Value::Regex(b"pmix[0,1;2,3;4,5]\0".to_vec())),
        Info::new("pmix.job.size", Value::Uint32(6)),
        Info::new("pmix.nodeid", Value::Uint32(1)),
    ];
    for r in 0..6u32 {
        v.push(Info::array(
            "pmix.pdata",
            vec![
                Info::new("pmix.rank", Value::ProcRank(r)),
                Info::new("pmix.nodeid", Value::Uint32(r / 2 + 1)),
            ],
        ));
    }
    v
}

struct Job {
    _base: tempfile::TempDir,
    _w: Writer,
    r: Reader,
}

fn job() -> Job {
    let base = common::base_dir();
    let (t, _) = jobdata::build(Some("node1"), &registration()).unwrap();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let mut tx = w.begin();
    tx.put_table("ids", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    let r = Reader::attach(w.path()).unwrap();
    Job {
        _base: base,
        _w: w,
        r,
    }
}

impl Job {
    /// The answer of rank 0's Get, the same by the shortcut and by the rules alone.
    fn get(&self, rank: TargetRank, key: &str, q: Qualifiers) -> Option<Value> {
        let pin = self.r.pin();
        let t = self.r.table(&pin, "ids", part::DATA).unwrap();
        let got = jobdata::get(t, None, Some(0), rank, key, &q).ok();
        let rules = jobdata::get_by_rules_only(t, Some(0), rank, key, &q).ok();
        let (got, rules) = (got.map(|v| v.to_value()), rules.map(|v| v.to_value()));
        assert_eq!(got, rules, "{rank:?} {key} {q:?}");
        got
    }
}

fn by_host(h: &str) -> Qualifiers {
    Qualifiers {
        node_info: true,
        hostname: Some(h.into()),
        ..Qualifiers::default()
    }
}

fn by_id(id: u32) -> Qualifiers {
    Qualifiers {
        node_info: true,
        nodeid: Some(id),
        ..Qualifiers::default()
    }
}

const W: TargetRank = TargetRank::Wildcard;
const ID: &str = "pmix.nodeid";

#[test]
fn a_nodes_id_is_the_hosts_by_rank_by_name_and_for_the_local_node() {
    let j = job();
    let u = |n: u32| Some(Value::Uint32(n));
    assert_eq!(j.get(W, ID, Qualifiers::default()), u(1));
    for (host, id) in [("node1", 1), ("node2", 2), ("node3", 3)] {
        assert_eq!(j.get(W, ID, by_host(host)), u(id), "{host}");
        assert_eq!(j.get(W, ID, by_id(id)), u(id), "{host}");
    }
    for r in 0..6 {
        assert_eq!(
            j.get(TargetRank::Rank(r), ID, Qualifiers::default()),
            u(r / 2 + 1)
        );
    }
}

#[test]
fn a_node_asked_by_the_hosts_id_is_that_node() {
    let j = job();
    let s = |v: &str| Some(Value::String(v.into()));
    for (id, host, peers) in [
        (1, "node1", "0,1"),
        (2, "node2", "2,3"),
        (3, "node3", "4,5"),
    ] {
        assert_eq!(j.get(W, "pmix.hname", by_id(id)), s(host), "{id}");
        assert_eq!(j.get(W, "pmix.lpeers", by_id(id)), s(peers), "{id}");
    }
    // No node has the store's index 0 as the host's id.
    assert_eq!(j.get(W, "pmix.hname", by_id(0)), None);
    assert_eq!(j.get(W, "pmix.lpeers", by_id(4)), None);
}

#[test]
fn a_ranks_node_values_are_its_nodes() {
    let j = job();
    for r in 0..6u32 {
        let peers = format!("{},{}", r / 2 * 2, r / 2 * 2 + 1);
        let q = Qualifiers {
            node_info: true,
            ..Qualifiers::default()
        };
        assert_eq!(
            j.get(TargetRank::Rank(r), "pmix.lpeers", q),
            Some(Value::String(peers)),
            "rank {r}"
        );
    }
}
