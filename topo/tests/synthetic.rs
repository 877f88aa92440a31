//! NUMA replica selection and the XML round trip, on synthetic hwloc topologies (this machine
//! has one NUMA domain).

use hwlocality::cpu::cpuset::CpuSet;
use rshm_topo::numa::{replica_for, replicas_wanted};
use rshm_topo::topology::{load, Source};
use rshm_topo::{from_xml, locality_string, to_xml};

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
    let here = rshm_topo::discover().unwrap();
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
    assert!(rshm_topo::raw::hwloc_topology_from_xml("not xml").is_null());
}

#[test]
fn domain_map_answers_without_hwloc() {
    use rshm_topo::numa::{domain_map, domain_of, MAX_REPLICAS};
    let t = synthetic("pack:2 numa:2 core:4 pu:2");
    let map = domain_map(&t).unwrap();
    assert_eq!(domain_of(&map, [0]), Some(0));
    assert_eq!(domain_of(&map, [8, 9, 15]), Some(1));
    assert_eq!(domain_of(&map, [31]), Some(3));
    // Spanning domains, beyond the node's PUs, or nothing at all: the primary copy.
    assert_eq!(domain_of(&map, [7, 8]), None);
    assert_eq!(domain_of(&map, [32]), None);
    assert_eq!(domain_of(&map, []), None);
    // It agrees with replica_for, which needs the topology.
    for pu in 0..32 {
        assert_eq!(
            domain_of(&map, [pu]),
            replica_for(&t, &set(&[pu])),
            "PU {pu}"
        );
    }
    for cut in 0..map.len() {
        let _ = domain_of(&map[..cut], [0, 1]);
    }
    let mut bad = map.clone();
    bad[12] = 200;
    assert_eq!(domain_of(&bad, [0]), None);
    // One domain, or more than the store replicates: no map.
    assert!(domain_map(&synthetic("pack:2 core:64 pu:2")).is_none());
    let many = format!("numa:{} core:1 pu:1", MAX_REPLICAS + 1);
    assert!(domain_map(&synthetic(&many)).is_none());
}

#[test]
fn memory_binding_takes_on_this_machine_only() {
    use rshm_topo::numa::with_memory_on;
    let here = rshm_topo::discover().unwrap();
    // This machine's first domain (hwloc always has one NUMA node); a synthetic topology is
    // not this machine's, so hwloc refuses to bind with it and the work runs unbound.
    let (v, bound) = with_memory_on(&here, 0, || vec![1u8; 1 << 20].len());
    assert_eq!(v, 1 << 20);
    if replicas_wanted(&here) == 0 {
        // A single-domain node never asks: bound or not, nothing depends on it.
        let _ = bound;
    }
    let syn = synthetic("pack:2 numa:2 core:4 pu:2");
    let (_, bound) = with_memory_on(&syn, 1, || ());
    assert!(!bound);
    let (_, bound) = with_memory_on(&syn, 99, || ());
    assert!(!bound);
}
