//! kill -9 anywhere: a writer killed at random points of its publications leaves readers the
//! last complete generation, and the next writer over the same directory sweeps what it left;
//! readers killed at random points never block or corrupt the writer.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use gds::{part, Reader, Realm, StoreOptions, Writer};

const NAMESPACES: [&str; 2] = ["crash-a", "crash-b"];
const RANKS: u32 = 256;

fn rshm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rshm"))
}

/// A deterministic sequence of kill delays (no clock-seeded randomness: failures reproduce).
fn delays(n: usize) -> impl Iterator<Item = Duration> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Duration::from_micros(x % 30_000)
    })
}

fn start_writer(base: &Path) -> (Child, PathBuf) {
    let mut child = rshm()
        .args(["write-loop", "--base"])
        .arg(base)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, PathBuf::from(line.trim()))
}

/// The generation a reader sees, checking that every value of both namespaces belongs to it.
fn whole_generation(store: &Path) -> Option<u64> {
    let r = Reader::attach(store).expect("a killed writer's store still attaches");
    let pin = r.pin();
    let mut seen = None;
    for ns in NAMESPACES {
        let t = match r.table(&pin, ns, part::DATA) {
            Ok(t) => t,
            // Killed before the first commit: nothing was ever published.
            Err(gds::Error::NotFound) => return None,
            Err(e) => panic!("{ns}: {e}"),
        };
        let g = t.get(Realm::Job, "gen").and_then(|v| v.as_u64()).unwrap();
        for rank in 0..RANKS {
            let v = t.get(Realm::Proc(rank), "card").unwrap();
            assert_eq!(
                v.as_str().unwrap(),
                format!("{g}:{rank}"),
                "torn generation"
            );
        }
        // Both namespaces are published by one commit: they always agree.
        assert_eq!(
            *seen.get_or_insert(g),
            g,
            "namespaces from different generations"
        );
    }
    seen
}

#[test]
fn a_writer_killed_anywhere_leaves_the_last_whole_generation_and_is_swept() {
    const KILLS: usize = 100;
    let base = tempfile::Builder::new()
        .prefix("rshm-crash-")
        .tempdir_in("/dev/shm")
        .unwrap();
    let mut published = 0;
    for delay in delays(KILLS) {
        let (mut child, store) = start_writer(base.path());
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap(); // reaped: its pid no longer exists for the sweep
        if whole_generation(&store).is_some() {
            published += 1;
        }
    }
    assert!(
        published > KILLS / 2,
        "most kills should land after a publication ({published}/{KILLS})"
    );
    // The next writer over the same directory sweeps every dead store, files and all.
    let w = Writer::create(StoreOptions {
        base_dir: Some(base.path().to_path_buf()),
        ..StoreOptions::default()
    })
    .unwrap();
    let left: Vec<_> = std::fs::read_dir(base.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != w.path())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    eprintln!("{KILLS} writers killed, {published} had published, 0 files left");
}

#[test]
fn readers_killed_anywhere_never_block_the_writer() {
    let base = tempfile::Builder::new()
        .prefix("rshm-crash-")
        .tempdir_in("/dev/shm")
        .unwrap();
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(base.path().to_path_buf()),
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    let mut t = gds::TableBuilder::new();
    t.insert(Realm::Job, "k", &gds::Value::Uint32(1)).unwrap();
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    for delay in delays(20) {
        // A reader process busy reading the store, killed mid-read.
        let mut reader = rshm()
            .args(["read-loop"])
            .arg(w.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay / 4);
        for g in 0..5u32 {
            let mut t = gds::TableBuilder::new();
            t.insert(Realm::Job, "k", &gds::Value::Uint32(g)).unwrap();
            let mut tx = w.begin();
            tx.put_table("ns", part::DATA, &t).unwrap();
            tx.commit().unwrap();
        }
        reader.kill().unwrap();
        reader.wait().unwrap();
    }
    assert_eq!(
        w.files().unwrap().len(),
        3,
        "anchor, root, table: nothing held for dead readers"
    );
}
