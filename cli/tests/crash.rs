//! kill -9 anywhere: a writer killed at random points of its publications leaves readers the
//! last complete generation, and the next writer over the same directory sweeps what it left;
//! readers killed at random points, or stopped while holding a pin, never block or corrupt the
//! writer.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rshm_gds::{part, Reader, Realm, StoreOptions, Writer};

const NAMESPACES: [&str; 2] = ["crash-a", "crash-b"];
const RANKS: u32 = 256;

/// The test helpers' binary (cli/test-helpers/): `write-loop`, `read-loop`.
fn helpers() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rshm-test-helpers"))
}

/// A deterministic pseudo-random sequence (no clock-seeded randomness: failures reproduce).
fn xorshift(n: usize) -> impl Iterator<Item = u64> {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    (0..n).map(move |_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    })
}

/// Delays of 0-30 ms.
fn delays(n: usize) -> impl Iterator<Item = Duration> {
    xorshift(n).map(|x| Duration::from_micros(x % 30_000))
}

/// Where to kill a writer: once it has reported generation `after` committed (0: as soon as
/// its store exists, maybe before any commit), and `delay` (0-3 ms) later, so that the kill
/// lands anywhere in the publications that follow. Counted in the writer's progress, not in
/// time: a loaded machine changes where in a commit a kill lands, never what is checked.
fn kill_points(n: usize) -> impl Iterator<Item = (u64, Duration)> {
    xorshift(n).map(|x| (x % 4, Duration::from_micros((x >> 8) % 3_000)))
}

/// A `write-loop` helper process, its store, and its stdout after the store's path.
fn start_writer(base: &Path) -> (Child, PathBuf, BufReader<ChildStdout>) {
    let mut child = helpers()
        .args(["write-loop", "--base"])
        .arg(base)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    (child, PathBuf::from(line.trim()), out)
}

/// A `committed G` line's G: write-loop prints it only after `commit` of G has returned.
fn committed(line: &str) -> Option<u64> {
    line.trim().strip_prefix("committed ")?.parse().ok()
}

/// Read the writer's lines until it reports generation `g` committed (at once for 0).
fn wait_committed(out: &mut BufReader<ChildStdout>, g: u64) -> Option<u64> {
    let mut last = None;
    while last.unwrap_or(0) < g {
        let mut line = String::new();
        let n = out.read_line(&mut line).unwrap();
        assert!(n > 0, "the writer ended before committing generation {g}");
        last = committed(&line).or(last);
    }
    last
}

/// The last generation a (dead) write-loop reported committed after what was read already.
/// Reads its stdout to the end.
fn last_committed(out: BufReader<ChildStdout>) -> Option<u64> {
    out.lines()
        .map(|l| l.unwrap())
        .filter_map(|l| committed(&l))
        .last()
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
            Err(rshm_gds::Error::NotFound) => return None,
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
    let base = common::base("rshm-crash-");
    let mut published = 0;
    for (after, delay) in kill_points(KILLS) {
        let (mut child, store, mut out) = start_writer(base.path());
        let reported = wait_committed(&mut out, after);
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap(); // reaped: its pid no longer exists for the sweep
        let committed = last_committed(out).or(reported);
        let seen = whole_generation(&store);
        // The generation the writer was committing when killed may or may not have been
        // published (P4 happens inside commit, before it returns), nothing older may be lost:
        // in particular not the generation it reported before the kill.
        match committed {
            Some(c) => {
                published += 1;
                assert!(
                    seen.is_some_and(|g| g >= after && (g == c || g == c + 1)),
                    "generation {c} was committed ({after} before the kill), a reader sees {seen:?}"
                );
            }
            None => assert!(
                seen.is_none() || seen == Some(1),
                "nothing was committed, a reader sees {seen:?}"
            ),
        }
    }
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
    eprintln!("{KILLS} writers killed, {published} after a commit returned, 0 files left");
}

#[test]
fn readers_killed_mid_read_leave_the_writer_nothing_to_keep() {
    let (_base, mut w) = common::store("rshm-crash-");
    let mut t = rshm_gds::TableBuilder::new();
    t.insert(Realm::Job, "k", &rshm_gds::Value::Uint32(1))
        .unwrap();
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    for delay in delays(20) {
        // A reader process busy reading the store, killed mid-read.
        let mut reader = helpers()
            .args(["read-loop"])
            .arg(w.path())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay / 4);
        for g in 0..5u32 {
            let mut t = rshm_gds::TableBuilder::new();
            t.insert(Realm::Job, "k", &rshm_gds::Value::Uint32(g))
                .unwrap();
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

/// A child process killed and reaped however the test ends (a stopped one too: SIGKILL ends it).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn signal(child: &Child, sig: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, sig).unwrap();
}

/// A reader process holding a pin on generation 0 and stopped (SIGSTOP: it can make no progress
/// and release nothing) while the writer commits generation after generation. A writer that
/// waited for readers would stall at its first commit; one that kept files for them would grow.
/// Then the reader, continued, still reads its generation through the same pin.
#[test]
fn a_stopped_reader_holding_a_pin_never_blocks_the_writer() {
    const GENERATIONS: u32 = 200;
    let (_base, mut w) = common::store("rshm-crash-");
    let commit = |w: &mut Writer, k: u32| {
        let mut t = rshm_gds::TableBuilder::new();
        t.insert(Realm::Job, "k", &rshm_gds::Value::Uint32(k))
            .unwrap();
        let mut tx = w.begin();
        tx.put_table("ns", part::DATA, &t).unwrap();
        tx.commit().unwrap();
    };
    commit(&mut w, 0);
    let mut held = Reaped(
        helpers()
            .args(["read-loop", "--hold", "1"])
            .arg(w.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut out = BufReader::new(held.0.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "pinned 0");
    signal(&held.0, rustix::process::Signal::STOP);

    // The writer runs on its own thread so that a stalled writer fails the test instead of
    // hanging it; the bound that matters is in operations: all GENERATIONS commits happen while
    // the reader performs none.
    let (tx, rx) = mpsc::channel();
    let store = w.path().to_path_buf();
    let writer = std::thread::spawn(move || {
        for k in 1..=GENERATIONS {
            commit(&mut w, k);
            // A send fails only once the test has failed and stopped listening.
            if tx.send(w.files().unwrap().len()).is_err() {
                break;
            }
        }
        w
    });
    for k in 1..=GENERATIONS {
        let files = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!("the writer stalled at commit {k} while a stopped reader held a pin")
            });
        assert_eq!(
            files, 3,
            "commit {k}: anchor, root, table; nothing kept for the reader"
        );
    }
    let w = writer.join().unwrap();
    let r = Reader::attach(&store).unwrap();
    let pin = r.pin();
    let k = r.get(&pin, "ns", part::DATA, Realm::Job, "k").unwrap();
    assert_eq!(k.as_u64(), Some(u64::from(GENERATIONS)));

    signal(&held.0, rustix::process::Signal::CONT);
    held.0.stdin.take().unwrap().write_all(b"\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    assert_eq!(
        line.trim(),
        "still 0",
        "the held view changed under its pin"
    );
    assert!(held.0.wait().unwrap().success());
    drop(w);
}
