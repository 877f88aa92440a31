//! NUMA replicas (docs/topology.md "NUMA") on a synthetic topology of two domains whose PUs are
//! this machine's CPUs 0 and 1 (`pack:2 numa:1 core:1 pu:1`): the server writes a replica of
//! the job table per domain and announces them at setup_fork; a client bound to CPU 1 reads its
//! Gets from domain 1's replica, one allowed on both CPUs reads part DATA, as does every client
//! of a single-domain node (no replicas, nothing announced). This machine has one NUMA domain:
//! what is shown is the selection, not a latency benefit.

use std::sync::Arc;

use rshm_client::client::env;
use rshm_client::Client;
use rshm_gds::jobdata::Decision;
use rshm_gds::{part, Info, Reader, Value};
use rshm_server::server::{Server, ServerOptions};
use rshm_topo::topology::Source;

fn server(base: &std::path::Path, synthetic: &str) -> Server {
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.into()),
        local_host: Some("node0".into()),
        topology: Some(Source::Synthetic(synthetic.into())),
        numa: true,
        ..ServerOptions::default()
    })
    .unwrap();
    let pdata = |r: u32| {
        Info::array(
            "pmix.pdata",
            vec![
                Info::new("pmix.rank", Value::ProcRank(r)),
                Info::new("pmix.cpuset", Value::String(format!("hwloc:{r}"))),
            ],
        )
    };
    let infos = vec![
        Info::new("pmix.job.size", Value::Uint32(2)),
        pdata(0),
        pdata(1),
    ];
    s.register_nspace("job", 2, &infos).unwrap();
    s
}

fn parts(s: &Server) -> Vec<u32> {
    let r = Reader::attach(s.path()).unwrap();
    let pin = r.pin();
    let mut p: Vec<u32> = r
        .namespaces(&pin)
        .unwrap()
        .into_iter()
        .filter(|(ns, _)| ns == "job")
        .map(|(_, p)| p)
        .collect();
    p.sort();
    p
}

fn bind_to(cpus: &[usize]) {
    let mut set = rustix::thread::CpuSet::new();
    for &c in cpus {
        set.set(c);
    }
    rustix::thread::sched_setaffinity(None, &set).unwrap();
}

/// The table a client's Get of rank 1's locality string is answered from, and the value.
fn answer(c: &Client) -> (Arc<rshm_gds::TableView>, Value) {
    let pin = c.reader().pin();
    match c.decide(&pin, "job", 1, "pmix.locstr", &rshm_abi::get::NO_DIRECTIVES) {
        Decision::Answer(v, t) => (t.clone(), v.to_value()),
        _ => panic!("not answered"),
    }
}

fn table(s: &Server, c: &Client, p: u32) -> Arc<rshm_gds::TableView> {
    let _ = s;
    let pin = c.reader().pin();
    c.reader().table_arc(&pin, "job", p).unwrap().clone()
}

#[test]
fn a_reader_bound_in_one_domain_reads_its_replica() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return; // needs CPUs 0 and 1
    }
    let base = tempfile::tempdir().unwrap();
    let s = server(base.path(), "pack:2 numa:1 core:1 pu:1");
    assert_eq!(
        parts(&s),
        vec![part::DATA, part::DATA_REPLICAS, part::DATA_REPLICAS + 1]
    );
    let envs = s.client_env("job", 1);
    assert!(
        envs.contains(&(env::NUMA_REPLICAS, "2".to_owned())),
        "{envs:?}"
    );
    // The client's environment, as setup_fork gives it (this test is its own process).
    std::env::set_var(env::NUMA_REPLICAS, "2");

    bind_to(&[1]);
    let c = Client::attach(Some(s.path()), Some(("job".into(), 1))).unwrap();
    assert_eq!(c.data_part(), part::DATA_REPLICAS + 1);
    let (t, v) = answer(&c);
    assert!(Arc::ptr_eq(&t, &table(&s, &c, part::DATA_REPLICAS + 1)));
    assert_eq!(v, Value::String("SK1:CR1:HT1:NM1".into()));
    drop(c);

    bind_to(&[0]);
    let c = Client::attach(Some(s.path()), Some(("job".into(), 0))).unwrap();
    assert_eq!(c.data_part(), part::DATA_REPLICAS);
    assert_eq!(answer(&c).1, v);
    drop(c);

    // Allowed on both domains: the primary copy.
    bind_to(&[0, 1]);
    let c = Client::attach(Some(s.path()), Some(("job".into(), 0))).unwrap();
    assert_eq!(c.data_part(), part::DATA);
    let (t, v2) = answer(&c);
    assert!(Arc::ptr_eq(&t, &table(&s, &c, part::DATA)));
    assert_eq!(v2, v);
    drop(c);

    // Nothing announced: nothing looked up, part DATA.
    std::env::remove_var(env::NUMA_REPLICAS);
    bind_to(&[1]);
    let c = Client::attach(Some(s.path()), Some(("job".into(), 1))).unwrap();
    assert_eq!(c.data_part(), part::DATA);
    drop(c);
    s.close().unwrap();
}

#[test]
fn a_single_domain_node_gets_no_replicas() {
    let base = tempfile::tempdir().unwrap();
    let s = server(base.path(), "pack:2 core:4 pu:2");
    assert_eq!(parts(&s), vec![part::DATA]);
    assert!(!s
        .client_env("job", 0)
        .iter()
        .any(|(k, _)| *k == env::NUMA_REPLICAS));
    s.close().unwrap();
}
