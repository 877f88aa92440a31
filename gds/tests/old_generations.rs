//! A reader lets old generations go: however many generations the writer publishes, the
//! segments a reader keeps mapped after they were unlinked stay bounded by a few generations,
//! whether the reading thread keeps calling Get or stops.

mod common;

#[path = "support/mappings.rs"]
mod mappings;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rshm_gds::{part, Reader, Realm, TableBuilder, Value, Writer};

/// Unlinked segments (two per generation: root and table) a reader may still map: alone in its
/// process a reader holds 4 (the epoch scheme frees a retired snapshot two epochs later), with
/// slack. Without the retirement's flush it is every generation published (hundreds).
const BOUND: usize = 8;

/// The epoch is process-wide: a thread of another test, pinned and descheduled on a loaded
/// machine, holds back every reclamation meanwhile. The tests of this file take turns (nextest
/// runs each in its own process anyway).
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn table_for(g: u64) -> TableBuilder {
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "gen", &Value::Uint64(g)).unwrap();
    for r in 0..64 {
        t.insert(Realm::Proc(r), "card", &Value::String(format!("{g}:{r}")))
            .unwrap();
    }
    t
}

fn publish(w: &mut Writer, g: u64) {
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &table_for(g)).unwrap();
    tx.commit().unwrap();
}

fn read_gen(r: &Reader) -> u64 {
    let pin = r.pin();
    r.get(&pin, "ns", part::DATA, Realm::Job, "gen")
        .unwrap()
        .as_u64()
        .unwrap()
}

#[test]
fn a_reader_that_reads_after_every_publication_maps_a_bounded_number_of_old_generations() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    publish(&mut w, 1);
    let r = Reader::attach(w.path()).unwrap();
    let mut worst = 0;
    for g in 2..=400 {
        publish(&mut w, g);
        assert_eq!(read_gen(&r), g);
        worst = worst.max(mappings::deleted_mappings(w.path()));
    }
    assert!(
        worst <= BOUND,
        "{worst} unlinked segments mapped at once (bound {BOUND})"
    );
}

#[test]
fn a_reader_thread_that_stops_reading_lets_its_old_generations_go_when_another_reads() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    publish(&mut w, 1);
    let r = Arc::new(Reader::attach(w.path()).unwrap());
    // A thread that reads a few generations, then sleeps until told to stop: what it retired
    // sits in its own epoch bag unless the reader hands it to the collector.
    let stop = Arc::new(AtomicBool::new(false));
    let (read_tx, read_rx) = std::sync::mpsc::channel::<u64>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let sleeper = {
        let (r, stop) = (r.clone(), stop.clone());
        std::thread::spawn(move || {
            while go_rx.recv().is_ok() {
                read_tx.send(read_gen(&r)).unwrap();
            }
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        })
    };
    for g in 2..=40 {
        publish(&mut w, g);
        go_tx.send(()).unwrap();
        assert_eq!(read_rx.recv().unwrap(), g);
    }
    drop(go_tx);
    // The sleeper no longer reads; this thread does, for many more generations.
    let mut worst = 0;
    for g in 41..=300 {
        publish(&mut w, g);
        assert_eq!(read_gen(&r), g);
        worst = worst.max(mappings::deleted_mappings(w.path()));
    }
    stop.store(true, Ordering::Relaxed);
    sleeper.join().unwrap();
    assert!(
        worst <= BOUND,
        "{worst} unlinked segments mapped at once (bound {BOUND})"
    );
}
