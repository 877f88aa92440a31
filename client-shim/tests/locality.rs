//! A server that turns topology on (`rshm.topology`) completes a registration's locality
//! from its cpusets, and its clients answer locality strings, relative locality (one table
//! lookup) and the topology from the store, equal to what `topo` computes from the strings.

use rshm_client::Client;
use rshm_gds::{Error, Info, Reader, Realm, Value};
use rshm_server::server::{Server, ServerOptions};
use rshm_topo::hwlocality::cpu::cpuset::CpuSet;
use rshm_topo::topology::{load, Source};

const SYNTHETIC: &str = "pack:2 core:4 pu:2";

fn pdata(rank: u32, extra: &[(&str, &str)]) -> Info {
    let mut a = vec![Info::new("pmix.rank", Value::ProcRank(rank))];
    for (k, v) in extra {
        a.push(Info::new(*k, Value::String((*v).into())));
    }
    Info::array("pmix.pdata", a)
}

fn registration() -> Vec<Info> {
    vec![
        Info::new("pmix.job.size", Value::Uint32(8)),
        pdata(0, &[("pmix.cpuset", "hwloc:0")]),
        pdata(1, &[("pmix.cpuset", "hwloc:1")]),
        pdata(2, &[("pmix.cpuset", "hwloc:8-9")]),
        // A host's own string is kept as given.
        pdata(
            3,
            &[("pmix.locstr", "SK0:CR1:HT3"), ("pmix.cpuset", "hwloc:9")],
        ),
        pdata(4, &[]),
        pdata(5, &[("pmix.cpuset", "hwloc:0-15")]),
        pdata(6, &[("pmix.cpuset", "not a cpuset")]),
        // A locality string of another type is the host's: nothing derived in its place.
        Info::array(
            "pmix.pdata",
            vec![
                Info::new("pmix.rank", Value::ProcRank(7)),
                Info::new("pmix.cpuset", Value::String("hwloc:2".into())),
                Info::new("pmix.locstr", Value::Uint32(5)),
            ],
        ),
    ]
}

fn server(base: &std::path::Path, topology: Option<Source>) -> Server {
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.into()),
        local_host: Some("node0".into()),
        topology,
        ..ServerOptions::default()
    })
    .unwrap();
    s.register_nspace("job", 8, &registration()).unwrap();
    s
}

fn locstr(r: &Reader, rank: u32) -> Option<String> {
    let pin = r.pin();
    r.get(
        &pin,
        "job",
        rshm_gds::part::DATA,
        Realm::Proc(rank),
        "pmix.locstr",
    )
    .ok()
    .and_then(|v| v.as_str().map(str::to_owned))
}

#[test]
fn locality_from_cpusets_and_relative_locality_by_rank() {
    let base = tempfile::tempdir().unwrap();
    let s = server(base.path(), Some(Source::Synthetic(SYNTHETIC.into())));
    let t = load(&Source::Synthetic(SYNTHETIC.into())).unwrap();
    let want = |ids: &[usize]| {
        let mut cs = CpuSet::new();
        for &i in ids {
            cs.set(i);
        }
        rshm_topo::locality_string(&t, &cs)
    };
    let r = Reader::attach(s.path()).unwrap();
    assert_eq!(locstr(&r, 0).as_deref(), Some("SK0:CR0:HT0:NM0"));
    assert_eq!(locstr(&r, 1), want(&[1]));
    assert_eq!(locstr(&r, 2), want(&[8, 9]));
    assert_eq!(locstr(&r, 3).as_deref(), Some("SK0:CR1:HT3"));
    assert_eq!(locstr(&r, 4), None);
    assert_eq!(locstr(&r, 5), want(&(0..16).collect::<Vec<_>>()));
    assert_eq!(locstr(&r, 6), None);
    {
        let pin = r.pin();
        let v = r.get(
            &pin,
            "job",
            rshm_gds::part::DATA,
            Realm::Proc(7),
            "pmix.locstr",
        );
        assert_eq!(v.unwrap().to_value(), Value::Uint32(5));
    }

    let c = Client::attach(Some(s.path()), Some(("job".into(), 0))).unwrap();
    let local = [0u32, 1, 2, 3, 5];
    for &a in &local {
        for &b in &local {
            let (sa, sb) = (locstr(&r, a).unwrap(), locstr(&r, b).unwrap());
            let by_strings =
                rshm_topo::relative_locality(&format!("hwloc:{sa}"), &format!("hwloc:{sb}"))
                    .unwrap();
            assert_eq!(
                c.relative_locality("job", a, b).unwrap(),
                by_strings,
                "{a} {b}"
            );
        }
    }
    // Rank 4 is not bound here; rank 6's cpuset is not one: neither has a locality here.
    assert!(matches!(
        c.relative_locality("job", 0, 4),
        Err(Error::NotFound)
    ));
    assert!(matches!(
        c.relative_locality("job", 0, 99),
        Err(Error::NotFound)
    ));
    assert!(c.relative_locality("nojob", 0, 1).is_err());

    let xml = c.with_topology_xml(str::to_owned).unwrap();
    let back = rshm_topo::from_xml(&xml).unwrap();
    let mut cs = CpuSet::new();
    cs.set(9);
    assert_eq!(rshm_topo::locality_string(&back, &cs), want(&[9]));
    assert!(!c.hwloc_topology().unwrap().is_null());
    drop((c, r));
    s.close().unwrap();
}

#[test]
fn without_topology_nothing_is_derived() {
    let base = tempfile::tempdir().unwrap();
    let s = server(base.path(), None);
    let r = Reader::attach(s.path()).unwrap();
    assert_eq!(locstr(&r, 0), None);
    assert_eq!(locstr(&r, 3).as_deref(), Some("SK0:CR1:HT3"));
    let c = Client::attach(Some(s.path()), Some(("job".into(), 0))).unwrap();
    assert!(matches!(
        c.relative_locality("job", 0, 3),
        Err(Error::NotFound)
    ));
    assert!(c.with_topology_xml(|_| ()).is_err());
    drop((c, r));
    s.close().unwrap();
}

#[test]
fn a_topology_that_does_not_load_creates_no_store() {
    let base = tempfile::tempdir().unwrap();
    let r = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        topology: Some(Source::Xml("<topology".into())),
        ..ServerOptions::default()
    });
    assert!(matches!(r, Err(Error::InvalidArgument(_))));
    assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
}
