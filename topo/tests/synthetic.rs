//! NUMA replica selection and the XML round trip, on synthetic hwloc topologies (this machine
//! has one NUMA domain).

use hwlocality::cpu::cpuset::CpuSet;
use topo::numa::{replica_for, replicas_wanted};
use topo::topology::{load, Source};
use topo::{from_xml, locality_string, to_xml};

fn set(ids: &[usize]) -> CpuSet {
    let mut s = CpuSet::new();
    for &i in ids {
        s.set(i);
    }
    s
}

fn synthetic(s: &str) -> hwlocality::Topology {
    load(&Source::Synthetic(s.into())).unwrap()
}

#[test]
fn replica_is_the_domain_holding_the_binding() {
    let t = synthetic("pack:2 numa:2 core:4 pu:2");
    assert_eq!(replicas_wanted(&t), 4);
    assert_eq!(replica_for(&t, &set(&[0])), Some(0));
    assert_eq!(replica_for(&t, &set(&[8, 9])), Some(1));
    assert_eq!(replica_for(&t, &set(&[31])), Some(3));
    // Straddling two domains, unbound, or bound to nothing: the primary copy.
    assert_eq!(replica_for(&t, &set(&[7, 8])), None);
    assert_eq!(replica_for(&t, &CpuSet::full()), None);
    assert_eq!(replica_for(&t, &CpuSet::new()), None);
}

#[test]
fn single_domain_has_no_replicas() {
    for s in ["pack:2 core:64 pu:2", "core:2 pu:1"] {
        let t = synthetic(s);
        assert_eq!(replicas_wanted(&t), 0, "{s}");
        assert_eq!(replica_for(&t, &set(&[1])), None, "{s}");
    }
    let here = topo::discover().unwrap();
    if replicas_wanted(&here) == 0 {
        assert_eq!(replica_for(&here, &set(&[0])), None);
    }
}

#[test]
fn xml_round_trip_keeps_locality() {
    for s in ["pack:2 core:64 pu:2", "pack:2 numa:2 l3:1 l2:2 core:1 pu:2"] {
        let t = synthetic(s);
        let xml = to_xml(&t).unwrap();
        let back = from_xml(&xml).unwrap();
        for ids in [&[0usize][..], &[3, 4], &[1, 9, 17]] {
            let cs = set(ids);
            assert_eq!(
                locality_string(&t, &cs),
                locality_string(&back, &cs),
                "{s} {ids:?}"
            );
        }
    }
    assert!(from_xml("<topology>").is_err());
    assert!(topo::raw::hwloc_topology_from_xml("not xml").is_null());
}
