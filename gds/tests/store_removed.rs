//! A store whose writer closed it (files and directory removed) is reported as removed, not as
//! corrupt: a reader with nothing mapped gets `StoreRemoved`, a reader that mapped the table
//! keeps answering from its mapping, and an attach racing the close ends in a clear outcome.

mod common;

use std::sync::{Arc, Barrier};

use rshm_gds::{part, Error, Reader, Realm, TableBuilder, Value, Writer};

fn publish(w: &mut Writer, ns: &str) {
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "k", &Value::Uint32(7)).unwrap();
    let mut tx = w.begin();
    tx.put_table(ns, part::DATA, &t).unwrap();
    tx.commit().unwrap();
}

fn get(r: &Reader) -> rshm_gds::Result<Value> {
    let pin = r.pin();
    let v = r.get(&pin, "ns", part::DATA, Realm::Job, "k")?;
    Ok(v.to_value())
}

#[test]
fn a_reader_with_no_table_mapped_gets_store_removed_after_the_writer_drops() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    publish(&mut w, "ns");
    let r = Reader::attach(w.path()).unwrap();
    drop(w);
    let got = get(&r);
    assert!(matches!(got, Err(Error::StoreRemoved)), "{got:?}");
}

#[test]
fn a_reader_whose_root_is_removed_before_it_loads_it_gets_store_removed() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    // Attached at generation 0: the root published next is never loaded before the close.
    let r = Reader::attach(w.path()).unwrap();
    publish(&mut w, "ns");
    w.close().unwrap();
    let got = get(&r);
    assert!(matches!(got, Err(Error::StoreRemoved)), "{got:?}");
    assert!(matches!(r.refresh(), Err(Error::StoreRemoved)));
}

#[test]
fn a_reader_that_mapped_the_table_keeps_answering_after_the_store_is_removed() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    publish(&mut w, "ns");
    let r = Reader::attach(w.path()).unwrap();
    assert_eq!(get(&r).unwrap(), Value::Uint32(7));
    let path = w.path().to_path_buf();
    drop(w);
    assert!(!path.exists());
    assert_eq!(get(&r).unwrap(), Value::Uint32(7));
    // A namespace the (removed) store never held is still simply absent.
    let pin = r.pin();
    assert!(matches!(
        r.get(&pin, "other", part::DATA, Realm::Job, "k"),
        Err(Error::NotFound)
    ));
}

#[test]
fn a_table_deleted_from_a_live_store_is_corrupt() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    publish(&mut w, "ns");
    let r = Reader::attach(w.path()).unwrap();
    let table = w
        .files()
        .unwrap()
        .into_iter()
        .find(|f| f.starts_with("rshm-tbl-"))
        .unwrap();
    std::fs::remove_file(w.path().join(table)).unwrap();
    let got = get(&r);
    assert!(matches!(got, Err(Error::Corrupt(_))), "{got:?}");
}

#[test]
fn attach_racing_the_close_is_ok_removed_or_not_found() {
    const ROUNDS: usize = 200;
    let base = common::base_dir();
    let mut seen = [0usize; 3];
    for round in 0..ROUNDS {
        let mut w = Writer::create(common::opts(base.path())).unwrap();
        publish(&mut w, "ns");
        let path = w.path().to_path_buf();
        let start = Arc::new(Barrier::new(2));
        let reader = {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                let r = Reader::attach(&path)?;
                get(&r)
            })
        };
        start.wait();
        // A delay growing with the round moves the close across every step of the attach.
        for _ in 0..(round % 40) * 250 {
            std::hint::spin_loop();
        }
        drop(w);
        match reader.join().unwrap() {
            Ok(v) => {
                assert_eq!(v, Value::Uint32(7));
                seen[0] += 1;
            }
            Err(Error::StoreRemoved) => seen[1] += 1,
            Err(Error::NotFound) => seen[2] += 1,
            Err(e) => panic!("attach racing the close: {e:?} ({e})"),
        }
    }
    assert_eq!(seen.iter().sum::<usize>(), ROUNDS);
    eprintln!("ok {}, removed {}, not found {}", seen[0], seen[1], seen[2]);
}
