//! The node realm of a registration: what the maps derive for each node, overridden key by key
//! by the node arrays in document order (a later array's over an earlier one's), for nodes of
//! the maps and nodes only arrays name, found by id or by hostname alone; except the maps' local
//! size, leader and peers, which win (as in OpenPMIx 4.2.2, `pmix_gds_hash_store_map`). The
//! local node's top-level node keys are its values too.

mod common;

use std::collections::BTreeMap;

use rshm_gds::jobdata;
use rshm_gds::{part, Info, Reader, Realm, Value, Writer};

fn info(key: &str, value: Value) -> Info {
    Info::new(key, value)
}

fn node_array(items: Vec<Info>) -> Info {
    Info::array("pmix.node.arr", items)
}

/// Every node-realm entry of `infos` registered and read back: (node, key) -> value.
fn node_realm(infos: &[Info]) -> BTreeMap<(u32, String), Value> {
    let base = common::base_dir();
    let (t, _) = jobdata::build(Some("n0"), infos).unwrap();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let mut tx = w.begin();
    tx.put_table("nodes", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let view = r.table(&pin, "nodes", part::DATA).unwrap();
    view.entries()
        .filter_map(|(realm, key, v)| match realm {
            Realm::Node(n) => Some(((n, String::from_utf8(key.to_vec()).unwrap()), v.to_value())),
            _ => None,
        })
        .collect()
}

fn s(v: &str) -> Value {
    Value::String(v.into())
}

#[test]
fn node_arrays_override_the_maps_key_by_key_later_arrays_earlier_ones_but_not_the_maps_counts() {
    let maps = vec![
        info("pmix.nmap", Value::Regex(b"pmix[n[1:0-1]]\0".to_vec())),
        info("pmix.pmap", Value::Regex(b"pmix[0,1;2-3]\0".to_vec())),
    ];
    let mut expected: BTreeMap<(u32, String), Value> = BTreeMap::new();
    for (node, host, peers, leader) in [(0u32, "n0", "0,1", 0u32), (1, "n1", "2,3", 2)] {
        for (key, v) in [
            ("pmix.hname", s(host)),
            ("pmix.nodeid", Value::Uint32(node)),
            ("pmix.local.size", Value::Uint32(2)),
            ("pmix.lldr", Value::ProcRank(leader)),
            ("pmix.lpeers", s(peers)),
        ] {
            expected.insert((node, key.into()), v);
        }
    }
    // The maps alone.
    assert_eq!(node_realm(&maps), expected);

    let mut infos = maps.clone();
    infos.extend([
        // Node 1 by id: a derived value the maps' keeps (the peers), one key added, a byte
        // object stored as its bytes.
        node_array(vec![
            info("pmix.nodeid", Value::Uint32(1)),
            info("pmix.lpeers", s("3,2")),
            info("x.slots", Value::Uint32(4)),
            info("x.card", Value::ByteObject(vec![1, 0, 2])),
        ]),
        // Node 0 by hostname alone.
        node_array(vec![
            info("pmix.hname", s("n0")),
            info("x.slots", Value::Uint32(2)),
        ]),
        // A node no map names, by id, with a hostname of its own.
        node_array(vec![
            info("pmix.nodeid", Value::Uint32(7)),
            info("pmix.hname", s("spare")),
            info("pmix.node.size", Value::Uint32(0)),
        ]),
        // A hostname no map names, alone: a node of its own, the next id after the map's.
        node_array(vec![
            info("pmix.hname", s("extra")),
            info("x.slots", Value::Uint32(1)),
        ]),
        // Node 1 again: the later array's value wins, the earlier array's other keys stay; the
        // maps' local size stays.
        node_array(vec![
            info("pmix.nodeid", Value::Uint32(1)),
            info("x.slots", Value::Uint32(5)),
            info("pmix.local.size", Value::Uint32(3)),
        ]),
    ]);
    let mut e = expected.clone();
    e.insert((1, "x.slots".into()), Value::Uint32(5));
    e.insert((1, "x.card".into()), Value::ByteObject(vec![1, 0, 2]));
    e.insert((0, "x.slots".into()), Value::Uint32(2));
    e.insert((7, "pmix.nodeid".into()), Value::Uint32(7));
    e.insert((7, "pmix.hname".into()), s("spare"));
    e.insert((7, "pmix.node.size".into()), Value::Uint32(0));
    e.insert((2, "pmix.nodeid".into()), Value::Uint32(2));
    e.insert((2, "pmix.hname".into()), s("extra"));
    e.insert((2, "x.slots".into()), Value::Uint32(1));
    assert_eq!(node_realm(&infos), e);

    // A key an array gives twice: the later element wins, as between arrays.
    let mut twice = maps;
    twice.push(node_array(vec![
        info("pmix.nodeid", Value::Uint32(0)),
        info("x.slots", Value::Uint32(1)),
        info("x.slots", Value::Uint32(9)),
    ]));
    let mut e = expected;
    e.insert((0, "x.slots".into()), Value::Uint32(9));
    assert_eq!(node_realm(&twice), e);
}

/// OpenPMIx files a top-level node key under the server's own node (`hash_cache_job_info`): the
/// local node's value, in document order with its node arrays, under the maps' local size,
/// leader (a uint32 given stays the maps' `pmix_rank_t`, as Slurm registers it) and peers.
#[test]
fn top_level_node_keys_are_the_local_nodes() {
    let mut infos = vec![
        info("pmix.nmap", Value::Regex(b"pmix[n[1:0-1]]\0".to_vec())),
        info("pmix.pmap", Value::Regex(b"pmix[0,1;2-3]\0".to_vec())),
        info("pmix.lldr", Value::Uint32(1)),
        info("pmix.local.size", Value::Uint32(9)),
        info("pmix.node.size", Value::Uint32(2)),
        info("pmix.pmem", Value::Uint64(1 << 30)),
        node_array(vec![
            info("pmix.hname", s("n0")),
            info("pmix.node.size", Value::Uint32(4)),
        ]),
    ];
    let got = node_realm(&infos);
    let at = |node: u32, key: &str| got.get(&(node, key.to_string())).cloned();
    assert_eq!(at(0, "pmix.lldr"), Some(Value::ProcRank(0)));
    assert_eq!(at(0, "pmix.local.size"), Some(Value::Uint32(2)));
    // The array comes later: its value wins.
    assert_eq!(at(0, "pmix.node.size"), Some(Value::Uint32(4)));
    assert_eq!(at(0, "pmix.pmem"), Some(Value::Uint64(1 << 30)));
    assert_eq!(at(1, "pmix.pmem"), None);
    // A top-level key after the array wins over it.
    infos.push(info("pmix.node.size", Value::Uint32(5)));
    let got = node_realm(&infos);
    assert_eq!(
        got.get(&(0, "pmix.node.size".to_string())),
        Some(&Value::Uint32(5))
    );
}

#[test]
fn a_node_array_with_a_bad_key_is_refused() {
    let maps = vec![
        info("pmix.nmap", Value::Regex(b"pmix[n[1:0-1]]\0".to_vec())),
        info("pmix.pmap", Value::Regex(b"pmix[0,1;2-3]\0".to_vec())),
    ];
    let mut bad_key = maps;
    bad_key.push(node_array(vec![
        info("pmix.nodeid", Value::Uint32(1)),
        info("", Value::Uint32(4)),
    ]));
    assert!(jobdata::build(Some("n0"), &bad_key).is_err());
}

/// A node's ranks as the process map lists them, not sorted: OpenPMIx's `store_map` keeps the
/// list as given, its first rank is the leader, a rank's local rank its place in the list (a
/// launcher that maps by core lists `0,2,1,3`).
#[test]
fn a_node_s_peers_leader_and_local_ranks_follow_the_process_map_s_order() {
    let infos = vec![
        info("pmix.nmap", Value::Regex(b"pmix[n0]\0".to_vec())),
        info("pmix.pmap", Value::Regex(b"pmix[2,0,3,1]\0".to_vec())),
    ];
    let nodes = node_realm(&infos);
    assert_eq!(nodes[&(0, "pmix.lpeers".into())], s("2,0,3,1"));
    assert_eq!(nodes[&(0, "pmix.lldr".into())], Value::ProcRank(2));

    let base = common::base_dir();
    let (t, _) = jobdata::build(Some("n0"), &infos).unwrap();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let mut tx = w.begin();
    tx.put_table("nodes", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let view = r.table(&pin, "nodes", part::DATA).unwrap();
    let get = |realm, key: &str| view.get(realm, key).map(|v| v.to_value());
    assert_eq!(get(Realm::Job, "pmix.lpeers"), Some(s("2,0,3,1")));
    assert_eq!(get(Realm::Job, "pmix.lldr"), Some(Value::ProcRank(2)));
    for (place, rank) in [2u32, 0, 3, 1].into_iter().enumerate() {
        assert_eq!(
            get(Realm::Proc(rank), "pmix.lrank"),
            Some(Value::Uint16(place as u16)),
            "rank {rank}"
        );
    }
}
