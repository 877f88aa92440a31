//! Generations: readers on several threads keep reading consistent values while the writer
//! publishes hundreds of generations; old generation files are gone after each publication;
//! a reader that holds a value keeps a valid view of it after the writer moves on.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use rshm_gds::{part, Reader, Realm, TableBuilder, Value, Writer};

const RANKS: u32 = 64;
const KEYS: [&str; 4] = ["pmix.lrank", "card.a", "card.b", "gen"];

/// Every value of generation `g` encodes `g`, so a reader can tell a torn view from a whole one.
fn table_for(g: u64) -> TableBuilder {
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "gen", &Value::Uint64(g)).unwrap();
    for r in 0..RANKS {
        for k in KEYS {
            t.insert(Realm::Proc(r), k, &Value::String(format!("{g}:{r}:{k}")))
                .unwrap();
        }
    }
    t
}

fn publish(w: &mut Writer, ns: &str, g: u64) {
    let mut tx = w.begin();
    tx.put_table(ns, part::DATA, &table_for(g)).unwrap();
    tx.commit().unwrap();
}

#[test]
fn readers_see_whole_generations_while_the_writer_publishes_hundreds() {
    const GENERATIONS: u64 = 300;
    const THREADS: usize = 4;
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    publish(&mut w, "ns", 1);
    let reader = Arc::new(Reader::attach(w.path()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let (done_tx, done_rx) = mpsc::channel();
    let mut handles = Vec::new();
    for t in 0..THREADS {
        let (reader, stop, reads, done_tx) =
            (reader.clone(), stop.clone(), reads.clone(), done_tx.clone());
        handles.push(std::thread::spawn(move || {
            let mut last = 0u64;
            let mut i = t as u32;
            while !stop.load(Ordering::Relaxed) {
                let pin = reader.pin();
                // One table per pin: every value must come from the same generation.
                let table = reader.table(&pin, "ns", part::DATA).unwrap();
                let g = table
                    .get(Realm::Job, "gen")
                    .and_then(|v| v.as_u64())
                    .unwrap();
                assert!(g >= last, "generations went backwards: {last} then {g}");
                last = g;
                for _ in 0..8 {
                    i = (i * 31 + 7) % RANKS;
                    let k = KEYS[i as usize % KEYS.len()];
                    let v = table.get(Realm::Proc(i), k).unwrap();
                    assert_eq!(v.as_str().unwrap(), format!("{g}:{i}:{k}"), "torn read");
                }
                reads.fetch_add(1, Ordering::Relaxed);
            }
            done_tx.send(last).unwrap();
        }));
    }
    drop(done_tx);
    for g in 2..=GENERATIONS {
        publish(&mut w, "ns", g);
        if g % 50 == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    // Let readers catch up with the last generation, then stop them.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let pin = reader.pin();
        let g = reader
            .get(&pin, "ns", part::DATA, Realm::Job, "gen")
            .unwrap()
            .as_u64()
            .unwrap();
        if g == GENERATIONS {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "reader never reached the last generation"
        );
    }
    stop.store(true, Ordering::Relaxed);
    // Watchdog: a stuck reader fails the test instead of hanging CI.
    for _ in 0..THREADS {
        let last = done_rx
            .recv_timeout(Duration::from_secs(60))
            .expect("reader thread stuck");
        assert!(last >= 1);
    }
    for h in handles {
        h.join().unwrap();
    }
    assert!(reads.load(Ordering::Relaxed) > 0);
    let files = w.files().unwrap();
    assert_eq!(files.len(), 3, "anchor, one pack, one table: {files:?}");
}

#[test]
fn old_generation_files_are_unlinked_at_publication() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    for g in 1..=5 {
        publish(&mut w, "a", g);
        let mut tx = w.begin();
        tx.put_table("b", part::DATA, &table_for(g)).unwrap();
        tx.commit().unwrap();
        let files = w.files().unwrap();
        assert_eq!(
            files.len(),
            4,
            "anchor + the pack holding the root + 2 tables after generation {g}: {files:?}"
        );
        assert_eq!(
            files.iter().filter(|f| f.starts_with("rshm-pack-")).count(),
            1
        );
    }
    // Removing a namespace unlinks its table at the next publication.
    let mut tx = w.begin();
    tx.remove_namespace("a");
    tx.commit().unwrap();
    assert_eq!(w.files().unwrap().len(), 3);
    assert_eq!(w.namespaces(), vec!["b".to_string()]);
    let path = w.path().to_path_buf();
    w.close().unwrap();
    assert!(!path.exists(), "close removes the store directory");
}

#[test]
fn a_pinned_value_stays_valid_after_the_writer_moves_on() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    publish(&mut w, "ns", 1);
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let old = r
        .get(&pin, "ns", part::DATA, Realm::Proc(3), "card.a")
        .unwrap();
    for g in 2..=10 {
        publish(&mut w, "ns", g);
    }
    // The file behind `old` is unlinked, yet still mapped: the value reads the same.
    assert_eq!(old.as_str(), Some("1:3:card.a"));
    let new = r
        .get(&pin, "ns", part::DATA, Realm::Proc(3), "card.a")
        .unwrap();
    assert_eq!(new.as_str(), Some("10:3:card.a"));
    assert_eq!(r.stats().generation, w.root_generation());
}

#[test]
fn an_uncommitted_transaction_leaves_nothing_behind() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    publish(&mut w, "ns", 1);
    {
        let mut tx = w.begin();
        tx.put_table("ns", part::DATA, &table_for(2)).unwrap();
        tx.put_table("other", part::DATA, &table_for(2)).unwrap();
        tx.put_table("other", part::DATA, &table_for(3)).unwrap();
    }
    assert_eq!(w.files().unwrap().len(), 3);
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    assert_eq!(
        r.get(&pin, "ns", part::DATA, Realm::Job, "gen")
            .unwrap()
            .as_u64(),
        Some(1)
    );
}
