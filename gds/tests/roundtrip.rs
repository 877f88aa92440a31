//! Every storable value type goes through a published segment and comes back equal, read in
//! place from the mapping.

mod common;

use rshm_gds::{part, Error, Reader, Realm, TableBuilder, Value, Writer};

#[test]
fn every_value_type_round_trips_through_a_published_store() {
    let values = common::every_value();
    let mut t = TableBuilder::new();
    for (i, (key, v)) in values.iter().enumerate() {
        t.insert(Realm::Proc(i as u32), key, v).unwrap();
        t.insert(Realm::Job, key, v).unwrap();
    }
    let (_base, _w, r) = common::published("ns-all-types", &t);
    let pin = r.pin();
    for (i, (key, v)) in values.iter().enumerate() {
        let got = r
            .get(&pin, "ns-all-types", part::DATA, Realm::Proc(i as u32), key)
            .unwrap();
        assert_eq!(&got.to_value(), v, "proc-realm {key}");
        let got = r
            .get(&pin, "ns-all-types", part::DATA, Realm::Job, key)
            .unwrap();
        assert_eq!(&got.to_value(), v, "job-realm {key}");
        assert_eq!(got.to_value().type_code(), v.type_code());
    }
    // Zero-copy accessors point into the mapping.
    let s = r
        .get(&pin, "ns-all-types", part::DATA, Realm::Job, "string")
        .unwrap();
    assert_eq!(s.as_str(), Some("hello, shared memory"));
    let b = r
        .get(&pin, "ns-all-types", part::DATA, Realm::Job, "byte-object")
        .unwrap();
    assert_eq!(b.as_bytes().map(<[u8]>::len), Some(256));
}

#[test]
fn absent_namespace_key_and_realm_are_not_found() {
    let mut t = TableBuilder::new();
    t.insert(Realm::Proc(0), "k", &rshm_gds::Value::Uint32(1))
        .unwrap();
    let (_base, _w, r) = common::published("ns", &t);
    let pin = r.pin();
    assert!(matches!(
        r.get(&pin, "other", part::DATA, Realm::Proc(0), "k"),
        Err(Error::NotFound)
    ));
    assert!(matches!(
        r.get(&pin, "ns", part::DATA, Realm::Proc(0), "nokey"),
        Err(Error::NotFound)
    ));
    assert!(matches!(
        r.get(&pin, "ns", part::DATA, Realm::Proc(1), "k"),
        Err(Error::NotFound)
    ));
    assert!(matches!(
        r.get(&pin, "ns", part::DATA, Realm::Job, "k"),
        Err(Error::NotFound)
    ));
    assert!(matches!(
        r.get(&pin, "ns", 7, Realm::Proc(0), "k"),
        Err(Error::NotFound)
    ));
}

#[test]
fn an_empty_store_attaches_and_finds_nothing() {
    let base = common::base_dir();
    let w = Writer::create(common::opts(base.path())).unwrap();
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    assert!(matches!(
        r.get(&pin, "ns", part::DATA, Realm::Job, "k"),
        Err(Error::NotFound)
    ));
    assert_eq!(r.stats().generation, 0);
}

#[test]
fn writer_refuses_bad_arguments_with_typed_errors() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let mut t = TableBuilder::new();
    let long_key = "k".repeat(512);
    for key in ["", long_key.as_str(), "nul\0key"] {
        assert!(matches!(
            t.insert(Realm::Job, key, &rshm_gds::Value::Bool(true)),
            Err(Error::InvalidArgument(_))
        ));
    }
    // An info element outside an info array, and an array whose element has the wrong type.
    let info = rshm_gds::Value::info_array([("a".to_string(), rshm_gds::Value::Bool(true))]);
    let rshm_gds::Value::DataArray(arr) = info else {
        unreachable!()
    };
    let stray = arr.items[0].clone();
    assert!(matches!(
        t.insert(Realm::Job, "k", &stray),
        Err(Error::InvalidArgument(_))
    ));
    let mixed = rshm_gds::Value::array(
        rshm_gds::value::types::STRING,
        vec![rshm_gds::Value::Uint8(1)],
    );
    assert!(matches!(
        t.insert(Realm::Job, "k", &mixed),
        Err(Error::InvalidArgument(_))
    ));
    let mut tx = w.begin();
    let long_ns = "n".repeat(256);
    for ns in ["", long_ns.as_str()] {
        assert!(matches!(
            tx.put_table(ns, part::DATA, &t),
            Err(Error::InvalidArgument(_))
        ));
    }
    drop(tx);
    assert_eq!(
        w.files().unwrap(),
        vec!["rshm-anchor".to_string()],
        "failed puts leave no file"
    );
}

#[test]
fn standard_proc_keys_live_in_dense_columns_and_other_types_fall_back_to_entries() {
    use rshm_gds::value::types;
    let ranks = 1000u32;
    let mut t = TableBuilder::with_ranks(ranks);
    for r in 0..ranks {
        t.insert(
            Realm::Proc(r),
            "pmix.lrank",
            &rshm_gds::Value::Uint16((r % 64) as u16),
        )
        .unwrap();
        t.insert(
            Realm::Proc(r),
            "pmix.nodeid",
            &rshm_gds::Value::Uint32(r / 64),
        )
        .unwrap();
        t.insert(
            Realm::Proc(r),
            "pmix.grank",
            &rshm_gds::Value::ProcRank(r + 5),
        )
        .unwrap();
    }
    // A host that registers a column key with another type, or the absent pattern, keeps it.
    t.insert(Realm::Proc(7), "pmix.lrank", &rshm_gds::Value::Uint32(7))
        .unwrap();
    t.insert(
        Realm::Proc(8),
        "pmix.nodeid",
        &rshm_gds::Value::Uint32(u32::MAX),
    )
    .unwrap();
    // Beyond the column range, and replaced then removed values.
    t.insert(
        Realm::Proc(ranks + 1),
        "pmix.lrank",
        &rshm_gds::Value::Uint16(1),
    )
    .unwrap();
    t.insert(Realm::Proc(9), "pmix.grank", &rshm_gds::Value::ProcRank(99))
        .unwrap();
    assert!(t.remove(Realm::Proc(10), "pmix.grank"));
    let (_base, _w, r) = common::published("cols", &t);
    let pin = r.pin();
    let get = |rank, key| {
        r.get(&pin, "cols", part::DATA, Realm::Proc(rank), key)
            .map(|v| (v.type_code(), v.to_value()))
    };
    assert_eq!(
        get(65, "pmix.lrank").unwrap(),
        (types::UINT16, rshm_gds::Value::Uint16(1))
    );
    assert_eq!(
        get(65, "pmix.nodeid").unwrap(),
        (types::UINT32, rshm_gds::Value::Uint32(1))
    );
    assert_eq!(
        get(65, "pmix.grank").unwrap(),
        (types::PROC_RANK, rshm_gds::Value::ProcRank(70))
    );
    assert_eq!(
        get(7, "pmix.lrank").unwrap(),
        (types::UINT32, rshm_gds::Value::Uint32(7))
    );
    assert_eq!(
        get(8, "pmix.nodeid").unwrap().1,
        rshm_gds::Value::Uint32(u32::MAX)
    );
    assert_eq!(
        get(ranks + 1, "pmix.lrank").unwrap().1,
        rshm_gds::Value::Uint16(1)
    );
    assert_eq!(
        get(9, "pmix.grank").unwrap().1,
        rshm_gds::Value::ProcRank(99)
    );
    assert!(matches!(get(10, "pmix.grank"), Err(Error::NotFound)));
    assert!(
        matches!(get(0, "pmix.appnum"), Err(Error::NotFound)),
        "absent column"
    );
    assert!(matches!(get(ranks + 2, "pmix.lrank"), Err(Error::NotFound)));
    // Dense: 2 + 4 + 4 bytes per rank plus a few entries.
    let table = r.table(&pin, "cols", part::DATA).unwrap();
    assert!(
        table.mapped_len() < 1000 * 10 + 4096,
        "{} bytes",
        table.mapped_len()
    );
    assert_eq!(
        table.entries().count(),
        3 * 1000 - 1 + 1,
        "every value is listed once"
    );
}

#[test]
fn values_replaced_again_and_again_keep_the_builder_small_and_the_latest_value() {
    let mut t = TableBuilder::new();
    // 3,000 replacements of 1 KiB values on 10 keys: the builder's arena compacts (its
    // garbage would otherwise be 3 MiB against 10 KiB of live values).
    for round in 0..300u32 {
        for k in 0..10u32 {
            let v = rshm_gds::Value::ByteObject(vec![(round + k) as u8; 1024]);
            t.insert(Realm::Proc(k), "card", &v).unwrap();
            t.insert(
                Realm::Job,
                &format!("k{k}"),
                &rshm_gds::Value::Uint32(round),
            )
            .unwrap();
        }
    }
    assert!(t.remove(Realm::Proc(9), "card"));
    let bytes = t.encode(1).unwrap();
    assert!(
        bytes.len() < 64 * 1024,
        "encoded {} bytes for 19 live values",
        bytes.len()
    );
    let (_base, _w, r) = common::published("ns", &t);
    let pin = r.pin();
    for k in 0..9u32 {
        let v = r
            .get(&pin, "ns", part::DATA, Realm::Proc(k), "card")
            .unwrap();
        assert_eq!(v.as_bytes(), Some(&vec![(299 + k) as u8; 1024][..]));
        let n = r
            .get(&pin, "ns", part::DATA, Realm::Job, &format!("k{k}"))
            .unwrap();
        assert_eq!(n.as_u64(), Some(299));
    }
    assert!(matches!(
        r.get(&pin, "ns", part::DATA, Realm::Proc(9), "card"),
        Err(Error::NotFound)
    ));
}

/// 17.2.3.2 lets a host send the per-process data as proc arrays or leave it to the maps: the
/// same job registered both ways (`synthetic::registration` and `registration_maps`) answers
/// the keys derived from the maps (local rank, node rank, node id, hostname) of every rank
/// alike; the app keys are not derived (docs/jobdata.md, as OpenPMIx 4.2.2): NOT_FOUND.
#[test]
fn a_job_registered_by_its_maps_answers_as_with_proc_arrays() {
    use rshm_gds::jobdata::{self, synthetic, Qualifiers, TargetRank};
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    // 64 ranks per node, the last node partly filled.
    let (ranks, ppn) = (5_000u32, 64u32);
    for (ns, infos) in [
        ("full", synthetic::registration(ranks, ppn)),
        ("maps", synthetic::registration_maps(ranks, ppn)),
    ] {
        let (t, summary) = jobdata::build(Some(&synthetic::host(0)), &infos).unwrap();
        assert_eq!(summary.job_size, ranks, "{ns}");
        let mut tx = w.begin();
        tx.put_table(ns, part::DATA, &t).unwrap();
        tx.commit().unwrap();
    }
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let (full, maps) = (
        r.table(&pin, "full", part::DATA).unwrap(),
        r.table(&pin, "maps", part::DATA).unwrap(),
    );
    let none = Qualifiers::default();
    let keys = [
        "pmix.lrank",
        "pmix.nrank",
        "pmix.nodeid",
        "pmix.hname",
        "pmix.appnum",
        "pmix.apprank",
        "pmix.grank",
    ];
    let mut compared = 0;
    for rank in 0..ranks {
        for key in keys {
            let a = jobdata::get(full, None, Some(0), TargetRank::Rank(rank), key, &none)
                .map(|v| v.to_value());
            let b = jobdata::get(maps, None, Some(0), TargetRank::Rank(rank), key, &none)
                .map(|v| v.to_value());
            let want = synthetic::proc_value(rank, ppn, key).unwrap();
            assert_eq!(a.as_ref().ok(), Some(&want), "full: rank {rank} {key}");
            if ["pmix.appnum", "pmix.apprank", "pmix.grank"].contains(&key) {
                assert!(
                    matches!(b, Err(rshm_gds::Error::NotFound)),
                    "maps: rank {rank} {key}: {b:?}"
                );
            } else {
                assert_eq!(b.as_ref().ok(), Some(&want), "maps: rank {rank} {key}");
            }
            compared += 1;
        }
    }
    assert_eq!(compared, ranks as usize * keys.len());
}

/// A registration's proc arrays are read ahead on several threads, a block at a time, and
/// applied in order (docs/jobdata.md "How a registration is read"): 20,000 ranks (several
/// blocks) of arrays mixing what the read-ahead takes (column values, the node's own hostname)
/// with what it leaves to the ordered walk (a column key of another type, a hostname not the
/// node's, other keys), and later arrays for some ranks, answer as applied one by one in
/// document order: the latest array wins key by key.
#[test]
fn proc_arrays_read_on_several_threads_apply_in_document_order() {
    use rshm_gds::jobdata::{self, synthetic};
    use rshm_gds::value::Info;
    let (ranks, ppn) = (20_000u32, 64u32);
    let mut infos = synthetic::registration_maps(ranks, ppn);
    for r in 0..ranks {
        let mut a = vec![
            Info::new("pmix.rank", Value::ProcRank(r)),
            Info::new("pmix.nodeid", Value::Uint32(r / ppn)),
            Info::new("pmix.apprank", Value::ProcRank(r)),
        ];
        a.push(if r % 7 == 0 {
            Info::new("pmix.lrank", Value::Uint32(r % ppn + 500))
        } else {
            Info::new("pmix.lrank", Value::Uint16((r % ppn) as u16))
        });
        let host = if r % 13 == 0 {
            "elsewhere".to_string()
        } else {
            synthetic::host(r / ppn)
        };
        a.push(Info::new("pmix.hname", Value::String(host)));
        if r % 17 == 0 {
            a.push(Info::new("test.key", Value::String(format!("v{r}"))));
        }
        infos.push(Info::array("pmix.pdata", a));
    }
    for r in (0..ranks).step_by(11) {
        let mut a = vec![
            Info::new("pmix.apprank", Value::ProcRank(r + 7)),
            Info::new("pmix.rank", Value::ProcRank(r)),
        ];
        if r % 7 == 0 {
            a.push(Info::new("pmix.lrank", Value::Uint16(1)));
        }
        infos.push(Info::array("pmix.pdata", a));
    }
    let get = registered(&infos);
    for rank in 0..ranks {
        let lrank = match (rank % 11 == 0, rank % 7 == 0) {
            (true, true) => Value::Uint16(1),
            (false, true) => Value::Uint32(rank % ppn + 500),
            _ => Value::Uint16((rank % ppn) as u16),
        };
        let apprank = if rank % 11 == 0 { rank + 7 } else { rank };
        let host = if rank % 13 == 0 {
            "elsewhere".to_string()
        } else {
            synthetic::host(rank / ppn)
        };
        assert_eq!(get(rank, "pmix.lrank").ok(), Some(lrank), "rank {rank}");
        assert_eq!(
            get(rank, "pmix.apprank").ok(),
            Some(Value::ProcRank(apprank)),
            "rank {rank}"
        );
        assert_eq!(
            get(rank, "pmix.nrank").ok(),
            Some(Value::Uint16((rank % ppn) as u16)),
            "rank {rank}"
        );
        assert_eq!(
            get(rank, "pmix.hname").ok(),
            Some(Value::String(host)),
            "rank {rank}"
        );
        match get(rank, "test.key") {
            Ok(v) => assert!(rank % 17 == 0 && v == Value::String(format!("v{rank}"))),
            Err(e) => assert!(rank % 17 != 0 && matches!(e, Error::NotFound), "{e:?}"),
        }
    }

    // A malformed proc array deep in a later block is still refused, with its own error.
    let mut bad = synthetic::registration(ranks, ppn);
    let at = bad.len() - 3_000;
    bad[at] = Info::array(
        "pmix.pdata",
        vec![Info::new("pmix.appnum", Value::Uint32(0))],
    );
    let Err(e) = jobdata::build(Some(&synthetic::host(0)), &bad) else {
        panic!("a proc array without a rank was taken");
    };
    assert!(
        matches!(&e, Error::InvalidArgument(m) if m.contains("without PMIX_RANK")),
        "{e:?}"
    );
}

/// A reader finds keys of up to 16 bytes in a process-local index built at map time and longer
/// ones (or all of them, in a table with more than 4,096 short keys) in the segment's: either
/// way `key_id` finds every key the table has, as itself, and no key it does not have (one byte
/// changed at every place, one byte shorter or longer).
#[test]
fn every_key_is_found_as_itself_and_no_other() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let key = |n: usize, v: usize| -> String {
        (0..n)
            .map(|i| (b'a' + ((i * 7 + v * 13 + n) % 26) as u8) as char)
            .collect()
    };
    let few: Vec<String> = (1..=24)
        .flat_map(|n| (0..5).map(move |v| key(n, v)))
        .collect();
    let many: Vec<String> = (0..5_000)
        .map(|v| format!("k{v:06}"))
        .chain(few.clone())
        .collect();
    for (ns, keys) in [("few", &few), ("many", &many)] {
        let mut t = TableBuilder::new();
        for k in keys.iter() {
            t.insert(Realm::Job, k, &Value::Uint32(k.len() as u32))
                .unwrap();
        }
        let mut tx = w.begin();
        tx.put_table(ns, part::DATA, &t).unwrap();
        tx.commit().unwrap();
    }
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    for (ns, keys) in [("few", &few), ("many", &many)] {
        let view = r.table(&pin, ns, part::DATA).unwrap();
        let set: std::collections::HashSet<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let has = |k: &[u8]| set.contains(k);
        let mut checked = 0;
        for k in keys.iter() {
            let kid = view
                .key_id(k.as_bytes())
                .unwrap_or_else(|| panic!("{ns}: {k}"));
            assert_eq!(view.key_str(kid), Some(k.as_bytes()), "{ns}: {k}");
            let mut variants: Vec<Vec<u8>> = (0..k.len())
                .map(|at| {
                    let mut b = k.as_bytes().to_vec();
                    b[at] ^= 0x20;
                    b
                })
                .collect();
            variants.push(k.as_bytes()[..k.len() - 1].to_vec());
            variants.push([k.as_bytes(), b"x"].concat());
            for v in variants.iter().filter(|v| !v.is_empty()) {
                match view.key_id(v) {
                    Some(kid) => assert_eq!(view.key_str(kid), Some(&v[..]), "{ns}: {k}"),
                    None => assert!(!has(v), "{ns}: {:?} not found", String::from_utf8_lossy(v)),
                }
                checked += 1;
            }
        }
        assert!(checked > keys.len() * 2);
    }
}

/// One proc array per rank with keys besides the standard ones (what hosts add: a locality
/// string, a reincarnation count, byte objects; a hostname not the node's; a key given twice,
/// the later kept): the read-ahead archives them on its threads and the registration merges
/// them as one run (docs/jobdata.md "How a registration is read"). Every value reads back.
#[test]
fn proc_arrays_with_other_keys_merge_as_one_run() {
    use rshm_gds::jobdata::synthetic;
    use rshm_gds::value::Info;
    let (ranks, ppn) = (20_000u32, 64u32);
    let mut infos = synthetic::registration_maps(ranks, ppn);
    // Not in rank order: the run is sorted when it is built.
    for r in (0..ranks).rev() {
        let mut a = vec![
            Info::new("pmix.lrank", Value::Uint16((r % ppn) as u16)),
            Info::new("pmix.rank", Value::ProcRank(r)),
            Info::new("pmix.reinc", Value::Uint32(r % 3)),
            Info::new("pmix.locstr", Value::String(format!("L{r}"))),
        ];
        if r % 13 == 0 {
            a.push(Info::new("pmix.hname", Value::String("elsewhere".into())));
        } else {
            a.push(Info::new(
                "pmix.hname",
                Value::String(synthetic::host(r / ppn)),
            ));
        }
        if r % 19 == 0 {
            a.push(Info::new("test.card", Value::ByteObject(vec![r as u8; 40])));
        }
        if r % 23 == 0 {
            a.push(Info::new("pmix.reinc", Value::Uint32(1000 + r)));
        }
        infos.push(Info::array("pmix.pdata", a));
    }
    let get = registered(&infos);
    for rank in 0..ranks {
        let reinc = if rank % 23 == 0 {
            1000 + rank
        } else {
            rank % 3
        };
        assert_eq!(
            get(rank, "pmix.reinc").ok(),
            Some(Value::Uint32(reinc)),
            "rank {rank}"
        );
        assert_eq!(
            get(rank, "pmix.locstr").ok(),
            Some(Value::String(format!("L{rank}"))),
            "rank {rank}"
        );
        let host = if rank % 13 == 0 {
            "elsewhere".to_string()
        } else {
            synthetic::host(rank / ppn)
        };
        assert_eq!(
            get(rank, "pmix.hname").ok(),
            Some(Value::String(host)),
            "rank {rank}"
        );
        assert_eq!(
            get(rank, "pmix.lrank").ok(),
            Some(Value::Uint16((rank % ppn) as u16)),
            "rank {rank}"
        );
        match get(rank, "test.card") {
            Ok(v) => assert!(rank % 19 == 0 && v == Value::ByteObject(vec![rank as u8; 40])),
            Err(e) => assert!(rank % 19 != 0 && matches!(e, Error::NotFound), "{e:?}"),
        }
    }
}

/// `infos` registered (the store on node00000) and published as namespace "ns": PMIx_Get of
/// (rank, key) with no qualifier, as rank 0 asks it.
fn registered(infos: &[rshm_gds::value::Info]) -> impl Fn(u32, &str) -> Result<Value, Error> {
    use rshm_gds::jobdata::{self, synthetic, Qualifiers, TargetRank};
    let (t, _) = jobdata::build(Some(&synthetic::host(0)), infos).unwrap();
    let (base, w, r) = common::published("ns", &t);
    move |rank, key| {
        let _keep = (&base, &w);
        let pin = r.pin();
        let table = r.table(&pin, "ns", part::DATA)?;
        jobdata::get(
            table,
            None,
            Some(0),
            TargetRank::Rank(rank),
            key,
            &Qualifiers::default(),
        )
        .map(|v| v.to_value())
    }
}

/// Proc columns of every shape read back as written, whichever form the writer chose (plain,
/// or blocks of lines and stored values: format.md "Blocked columns"); a job laid out by the
/// maps takes the blocked form, a fraction of the plain one.
#[test]
fn proc_columns_of_any_shape_read_back_and_line_shaped_ones_are_stored_small() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut random = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // (name, rank count, value of rank r or None: absent)
    type Shape = (String, u32, Box<dyn Fn(u32) -> Option<u32>>);
    let mut shapes: Vec<Shape> = Vec::new();
    for ppn in [1u32, 7, 32, 48, 64, 1000] {
        shapes.push((
            format!("local ranks, {ppn} per node"),
            1003,
            Box::new(move |r| Some(r % ppn)),
        ));
        shapes.push((
            format!("node ids, {ppn} per node"),
            1003,
            Box::new(move |r| Some(r / ppn)),
        ));
    }
    shapes.push((
        "cyclic over 13 nodes".into(),
        1000,
        Box::new(|r| Some(r % 13)),
    ));
    shapes.push((
        "counting down, wrapping".into(),
        999,
        Box::new(|r| Some(5u32.wrapping_sub(r) & 0x7fff)),
    ));
    shapes.push((
        "a hole every 37 ranks".into(),
        1000,
        Box::new(|r| (r % 37 != 0).then_some(r)),
    ));
    shapes.push((
        "steps of 2^31 are not lines".into(),
        64,
        Box::new(|r| Some((r & 1) << 15)),
    ));
    let values: Vec<u32> = (0..1000).map(|_| (random() % 60000) as u32).collect();
    shapes.push((
        "random".into(),
        1000,
        Box::new(move |r| Some(values[r as usize])),
    ));
    shapes.push(("one rank".into(), 1, Box::new(|_| Some(9))));

    for (name, ranks, value) in &shapes {
        let mut t = TableBuilder::with_ranks(*ranks);
        t.block_columns_above(0);
        for r in 0..*ranks {
            if let Some(v) = value(r) {
                t.insert(Realm::Proc(r), "pmix.lrank", &Value::Uint16(v as u16))
                    .unwrap();
                t.insert(Realm::Proc(r), "pmix.nodeid", &Value::Uint32(v))
                    .unwrap();
                t.insert(
                    Realm::Proc(r),
                    "pmix.grank",
                    &Value::ProcRank(v.wrapping_mul(3)),
                )
                .unwrap();
            }
        }
        let (_base, _w, r) = common::published("cols", &t);
        let pin = r.pin();
        let get = |rank, key| {
            r.get(&pin, "cols", part::DATA, Realm::Proc(rank), key)
                .map(|v| v.to_value())
        };
        for rank in 0..*ranks + 40 {
            let want = (rank < *ranks).then(|| value(rank)).flatten();
            let got = (
                get(rank, "pmix.lrank"),
                get(rank, "pmix.nodeid"),
                get(rank, "pmix.grank"),
            );
            match want {
                Some(v) => assert_eq!(
                    (got.0.unwrap(), got.1.unwrap(), got.2.unwrap()),
                    (
                        Value::Uint16(v as u16),
                        Value::Uint32(v),
                        Value::ProcRank(v.wrapping_mul(3))
                    ),
                    "{name}: rank {rank}"
                ),
                None => assert!(
                    matches!(
                        got,
                        (
                            Err(Error::NotFound),
                            Err(Error::NotFound),
                            Err(Error::NotFound)
                        )
                    ),
                    "{name}: rank {rank}: {got:?}"
                ),
            }
        }
        // 10 bytes per rank plain; from 32 ranks per node the three columns are two pieces of
        // lines per block (16 bytes per 32 ranks each).
        if name.ends_with(", 48 per node") || name.ends_with(", 64 per node") {
            let len = r.table(&pin, "cols", part::DATA).unwrap().mapped_len();
            assert!(len < 4096 + 3 * 600, "{name}: {len} bytes");
        }
    }
}

#[test]
fn a_builder_keeps_proc_columns_of_up_to_64_kib_plain_and_blocks_larger_ones() {
    // pmix.lrank is a 2-byte column: 32,768 ranks are 64 KiB plain, the largest kept plain.
    for (ranks, blocked) in [(32_768u32, false), (32_769, true)] {
        let mut t = TableBuilder::with_ranks(ranks);
        for r in 0..ranks {
            t.insert(
                Realm::Proc(r),
                "pmix.lrank",
                &Value::Uint16((r % 64) as u16),
            )
            .unwrap();
        }
        let (_base, _w, r) = common::published("cols", &t);
        let pin = r.pin();
        for rank in [0, 63, 64, 1000, ranks - 1] {
            assert_eq!(
                r.get(&pin, "cols", part::DATA, Realm::Proc(rank), "pmix.lrank")
                    .unwrap()
                    .to_value(),
                Value::Uint16((rank % 64) as u16),
                "{ranks} ranks: rank {rank}"
            );
        }
        // Blocked: 16 bytes per 32 ranks, ~16 KiB; plain: 64 KiB and more.
        let t = r.table(&pin, "cols", part::DATA).unwrap();
        let len = t.mapped_len();
        assert_eq!(len < 32 * 1024, blocked, "{ranks} ranks: {len} bytes");
        let shapes: Vec<_> = t.column_shapes().collect();
        assert_eq!(shapes.len(), 1);
        assert_eq!(shapes[0].key, "pmix.lrank");
        assert_eq!(
            shapes[0].blocks,
            blocked.then_some(((ranks as usize).div_ceil(32), 0)),
            "{ranks} ranks"
        );
    }
}
