//! Soak: one writer publishes generation after generation (a job table of ~4 MiB, published again
//! every [`EPOCH`] generations, and a changing posted-like table every generation) while 8 reader
//! processes Get in a loop and a ninth sleeps 50-200 ms between Gets. All along, a sampler reads
//! each reader's mappings of unlinked store files (/proc/PID/maps) and the machine's `Shmem`
//! (/proc/meminfo). What readers keep of old generations must stay bounded by the live store,
//! however many generations go by:
//!
//! - each reader maps at most [`DELETED_SEGMENTS`] unlinked segments at once, and at most twice
//!   the live store's bytes of them;
//! - tmpfs use grows by at most (1 + 2 x readers) x the live store, plus a slack: as root, the
//!   store is on a tmpfs mounted for the run alone and its use is read with statvfs (slack
//!   [`MOUNT_SLACK`]); otherwise the machine's `Shmem` is read, which other processes' shared
//!   memory adds to (slack [`SHMEM_SLACK`]).
//!
//! The second test runs the same soak with `RSHM_READER_RETIRE=off` in the readers (they keep
//! every generation they move past) and requires each of those checks to fail: they can. It
//! stops publishing once all three have (about half-way).
//!
//! The readers are this test binary run again (`RSHM_SOAK_ROLE` set), attached through
//! `RSHM_STORE`; each Get is under its own pin, as a PMIx client's is, and checked against what
//! was published (tests/support/soak_reader.rs). The writer keeps at most
//! [`soak_reader::LAG`] generations ahead of the slowest busy reader, so that on a loaded
//! 2-core machine the readers still follow (each reads well over 1,000 generations).
//! `RSHM_SOAK_GENERATIONS=N` runs the first test longer (default 10,000).

mod common;

#[path = "support/mappings.rs"]
mod mappings;

#[path = "support/soak_reader.rs"]
mod soak_reader;

#[path = "support/tmpfs.rs"]
mod tmpfs;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rshm_gds::{part, Realm, TableBuilder, Value, Writer};
use soak_reader::{BLOB, EPOCH, JOB_CARD, JOB_RANKS, POSTED_CARD, POSTED_RANKS};

/// Generations of the suite's run.
const GENERATIONS: u64 = 10_000;

/// Readers that Get in a loop; one more sleeps between Gets.
const BUSY_READERS: usize = 8;
const READERS: usize = BUSY_READERS + 1;

/// Unlinked segments one reader may map at once. A generation is a root and the tables it
/// changed (the posted table; the job table too every [`EPOCH`]). A reader maps its current
/// generation, which the writer may unlink before the reader's next Get (the sleeper's, for
/// 200 ms), the one it is moving to (which may be unlinked already), and those it retired that
/// the epoch scheme has not freed yet (two epochs: two more). 4 generations of a root and a
/// posted table, and an old and a new job table, with slack.
const DELETED_SEGMENTS: usize = 12;

/// What the rest of the machine may add to `Shmem` during a run (other processes' shared
/// memory and tmpfs files).
const SHMEM_SLACK: u64 = 128 << 20;

/// What else may use the tmpfs mounted for the run (its root directory, the progress file).
const MOUNT_SLACK: u64 = 8 << 20;

/// Where tmpfs use is read.
enum Meter {
    /// A tmpfs mounted for the run: only the store and its readers use it.
    Mount(tmpfs::Tmpfs),
    /// The machine's `Shmem` (/proc/meminfo), and the directory for the store.
    Shmem(tempfile::TempDir),
}

impl Meter {
    /// A private tmpfs when this process may mount one (root), else `Shmem`.
    fn new() -> Meter {
        match rustix::process::geteuid()
            .is_root()
            .then(|| tmpfs::Tmpfs::try_mount("2g"))
            .flatten()
        {
            Some(fs) => Meter::Mount(fs),
            None => Meter::Shmem(common::base_dir()),
        }
    }

    fn dir(&self) -> &Path {
        match self {
            Meter::Mount(fs) => fs.path(),
            Meter::Shmem(d) => d.path(),
        }
    }

    /// How to read the bytes in use (from another thread).
    fn gauge(&self) -> Gauge {
        match self {
            Meter::Mount(fs) => Gauge::Statvfs(fs.path().to_path_buf()),
            Meter::Shmem(_) => Gauge::Shmem,
        }
    }

    fn slack(&self) -> u64 {
        match self {
            Meter::Mount(_) => MOUNT_SLACK,
            Meter::Shmem(_) => SHMEM_SLACK,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Meter::Mount(_) => "tmpfs use (private mount)",
            Meter::Shmem(_) => "Shmem",
        }
    }
}

/// A [`Meter`]'s reading.
#[derive(Clone)]
enum Gauge {
    Statvfs(PathBuf),
    Shmem,
}

impl Gauge {
    /// Bytes in use now.
    fn used(&self) -> u64 {
        match self {
            Gauge::Statvfs(dir) => {
                let st = rustix::fs::statvfs(dir).expect("statvfs of the soak tmpfs");
                (st.f_blocks - st.f_bfree) * st.f_frsize
            }
            Gauge::Shmem => mappings::meminfo_bytes("Shmem"),
        }
    }
}

/// Tests of this file (and, through the lock file, of this binary run by nextest as separate
/// processes) take turns: one's `Shmem` would count in the other's.
fn alone() -> std::fs::File {
    let path = std::env::temp_dir().join("rshm-soak.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    f.lock().expect("lock the soak lock file");
    f
}

fn job_table(epoch: u64) -> TableBuilder {
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "epoch", &Value::Uint64(epoch))
        .unwrap();
    for r in 0..JOB_RANKS {
        let card = soak_reader::card(&format!("{epoch}:{r}:"), JOB_CARD);
        t.insert(Realm::Proc(r), "card", &Value::String(card))
            .unwrap();
    }
    t
}

fn posted_table(g: u64) -> TableBuilder {
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "gen", &Value::Uint64(g)).unwrap();
    let mut blob = vec![g as u8; BLOB];
    blob[..8].copy_from_slice(&g.to_le_bytes());
    t.insert(Realm::Job, "blob", &Value::ByteObject(blob))
        .unwrap();
    for r in 0..POSTED_RANKS {
        let card = soak_reader::card(&format!("{g}:{r}:"), POSTED_CARD);
        t.insert(Realm::Proc(r), "card", &Value::String(card))
            .unwrap();
    }
    t
}

/// Generation `g`: the posted table, and the job table at the first and every [`EPOCH`]th.
fn publish(w: &mut Writer, g: u64) {
    let mut tx = w.begin();
    if g == 1 || g.is_multiple_of(EPOCH) {
        tx.put_table("job", part::DATA, &job_table(g / EPOCH))
            .unwrap();
    }
    tx.put_table("posted", part::DATA, &posted_table(g))
        .unwrap();
    tx.commit().unwrap();
}

/// The reader processes; killed if still running when dropped (a failed run).
struct Readers(Vec<Child>);

impl Drop for Readers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The worst of every sample.
#[derive(Clone, Copy, Debug, Default)]
struct Peaks {
    samples: u64,
    /// Per reader: unlinked segments mapped at once, and their bytes.
    deleted: [usize; READERS],
    deleted_bytes: [u64; READERS],
    /// The store's files after a publication (while one is under way, the files of both
    /// generations are there).
    live_bytes: u64,
    /// tmpfs use above its value before the store was created.
    shmem_growth: u64,
    /// What else may add to it ([`Meter::slack`]).
    slack: u64,
}

impl Peaks {
    /// Each reader's mappings (None: skip them this time).
    fn sample(&mut self, pids: Option<&[u32]>, store: &Path, gauge: &Gauge, base: u64) {
        for (i, pid) in pids.unwrap_or_default().iter().enumerate() {
            if let Some(m) = mappings::mapped(*pid, store) {
                self.deleted[i] = self.deleted[i].max(m.deleted);
                self.deleted_bytes[i] = self.deleted_bytes[i].max(m.deleted_bytes);
            }
        }
        self.shmem_growth = self.shmem_growth.max(gauge.used().saturating_sub(base));
        self.samples += 1;
    }
}

/// Which bound a run broke.
#[derive(Debug, PartialEq, Eq)]
enum Broken {
    Segments,
    Bytes,
    Shmem,
}

struct Report {
    /// Generations published (fewer than asked when a run with retirement off ends early).
    generations: u64,
    secs: f64,
    peaks: Peaks,
    /// What tmpfs use was read from ([`Meter::name`]).
    meter: &'static str,
    /// Each reader's last line (Gets, generations seen).
    readers: Vec<String>,
}

impl Report {
    fn shmem_bound(&self) -> u64 {
        shmem_bound(self.peaks.live_bytes, self.peaks.slack)
    }

    /// Every bound broken, with what broke it.
    fn broken(&self) -> Vec<(Broken, String)> {
        broken(&self.peaks)
    }
}

fn shmem_bound(live_bytes: u64, slack: u64) -> u64 {
    (1 + 2 * READERS as u64) * live_bytes + slack
}

/// Whether `peaks` so far (with `live` the live store) break every bound.
fn all_broken(peaks: &Peaks, live: u64) -> bool {
    let p = Peaks {
        live_bytes: live,
        ..*peaks
    };
    let b = broken(&p);
    [Broken::Segments, Broken::Bytes, Broken::Shmem]
        .iter()
        .all(|k| b.iter().any(|(x, _)| x == k))
}

/// Every bound `p` breaks, with what broke it.
fn broken(p: &Peaks) -> Vec<(Broken, String)> {
    let mut out = Vec::new();
    for i in 0..READERS {
        if p.deleted[i] > DELETED_SEGMENTS {
            out.push((
                Broken::Segments,
                format!(
                    "reader {i} mapped {} unlinked segments (bound {DELETED_SEGMENTS})",
                    p.deleted[i]
                ),
            ));
        }
        if p.deleted_bytes[i] > 2 * p.live_bytes {
            out.push((
                Broken::Bytes,
                format!(
                    "reader {i} mapped {} B of unlinked segments (bound 2 x live {} B)",
                    p.deleted_bytes[i], p.live_bytes
                ),
            ));
        }
    }
    if p.shmem_growth > shmem_bound(p.live_bytes, p.slack) {
        out.push((
            Broken::Shmem,
            format!(
                "tmpfs use grew by {} MiB (bound {} MiB)",
                p.shmem_growth >> 20,
                shmem_bound(p.live_bytes, p.slack) >> 20
            ),
        ));
    }
    out
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let p = &self.peaks;
        writeln!(
            f,
            "{} generations in {:.1} s, {} samples; live store <= {} KiB",
            self.generations,
            self.secs,
            p.samples,
            p.live_bytes >> 10
        )?;
        writeln!(
            f,
            "unlinked segments mapped per reader (max): {:?} (bound {DELETED_SEGMENTS})",
            p.deleted
        )?;
        writeln!(
            f,
            "their KiB per reader (max): {:?} (bound {})",
            p.deleted_bytes.map(|b| b >> 10),
            (2 * p.live_bytes) >> 10
        )?;
        writeln!(
            f,
            "{} growth (peak): {} MiB (bound {} MiB)",
            self.meter,
            p.shmem_growth >> 20,
            self.shmem_bound() >> 20
        )?;
        for r in &self.readers {
            writeln!(f, "  {r}")?;
        }
        Ok(())
    }
}

/// Run the soak as test `name` (its readers run the same test in their role); None in a reader.
///
/// With `retire` false, the run ends early (the writer publishes the last generation at once)
/// when every bound is broken: the rest of the run would only show it more.
fn soak(name: &str, generations: u64, retire: bool) -> Option<Report> {
    if soak_reader::run_if_reader() {
        return None;
    }
    let _alone = alone();
    let meter = Meter::new();
    let gauge = meter.gauge();
    let shmem_base = gauge.used();
    let mut w = Writer::create(common::opts(meter.dir())).unwrap();
    publish(&mut w, 1);
    let store: PathBuf = w.path().to_path_buf();
    let progress_path = meter.dir().join("progress");
    let progress = soak_reader::Progress::create(&progress_path, READERS);
    let exe = std::env::current_exe().expect("the test binary");
    let mut readers = Readers(Vec::new());
    for i in 0..READERS {
        let role = if i < BUSY_READERS { "busy" } else { "sleeper" };
        let mut cmd = Command::new(&exe);
        cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(soak_reader::ENV_ROLE, role)
            .env(soak_reader::ENV_SLOT, i.to_string())
            .env(soak_reader::ENV_PROGRESS, &progress_path)
            .env(soak_reader::ENV_LAST, generations.to_string())
            .env(rshm_gds::ENV_STORE, &store)
            .env_remove(rshm_gds::ENV_READER_RETIRE)
            .stdout(Stdio::piped());
        if !retire {
            cmd.env(rshm_gds::ENV_READER_RETIRE, "off");
        }
        readers.0.push(cmd.spawn().expect("spawning a reader"));
    }
    let pids: Vec<u32> = readers.0.iter().map(Child::id).collect();
    // Every reader attached (maps the store) before the writer moves on.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pids
        .iter()
        .all(|p| mappings::mapped(*p, &store).is_some_and(|m| m.store > 0))
    {
        assert!(Instant::now() < deadline, "the readers did not attach");
        std::thread::sleep(Duration::from_millis(5));
    }

    let peaks = Arc::new(Mutex::new(Peaks {
        slack: meter.slack(),
        ..Peaks::default()
    }));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (peaks, stop, pids, store) = (peaks.clone(), stop.clone(), pids.clone(), store.clone());
        let gauge = gauge.clone();
        std::thread::spawn(move || {
            let mut maps_due = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let maps = (t >= maps_due).then_some(pids.as_slice());
                let mut p = *peaks.lock().unwrap();
                p.sample(maps, &store, &gauge, shmem_base);
                *peaks.lock().unwrap() = p;
                if maps.is_some() {
                    // Reading a process's maps holds its mmap lock: a reader keeping every
                    // generation (thousands of mappings) would spend its time waiting for us.
                    maps_due = Instant::now() + Duration::from_millis(10).max(10 * t.elapsed());
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
    let start = Instant::now();
    let mut live = mappings::store_bytes(&store);
    let (mut last, mut published) = (1, 1);
    while last < generations {
        let mut checked = Instant::now();
        while progress.min(0..BUSY_READERS) + soak_reader::LAG < last {
            // A reader that failed (its panic is on stderr) would never catch up.
            if checked.elapsed() > Duration::from_millis(50) {
                checked = Instant::now();
                for (i, c) in readers.0.iter_mut().enumerate() {
                    if let Some(st) = c.try_wait().expect("wait for a reader") {
                        panic!("reader {i} ended ({st}) before generation {last}");
                    }
                }
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        let g = if !retire && last.is_multiple_of(64) && all_broken(&peaks.lock().unwrap(), live) {
            generations
        } else {
            last + 1
        };
        publish(&mut w, g);
        published += 1;
        last = g;
        if g.is_multiple_of(64) || g.is_multiple_of(EPOCH) {
            live = live.max(mappings::store_bytes(&store));
        }
    }
    let secs = start.elapsed().as_secs_f64();
    // The readers end once they read the last generation.
    let mut lines = Vec::new();
    for (i, c) in std::mem::take(&mut readers.0).into_iter().enumerate() {
        let out = c.wait_with_output().expect("a reader's output");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "reader {i} failed ({}):\n{text}",
            out.status
        );
        let line = text
            .lines()
            .find(|l| l.starts_with(soak_reader::REPORT))
            .unwrap_or_else(|| panic!("reader {i} reported nothing:\n{text}"));
        lines.push(format!("reader {i}: {line}"));
    }
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let mut peaks = std::mem::take(&mut *peaks.lock().unwrap());
    peaks.live_bytes = live;
    drop(w);
    Some(Report {
        generations: published,
        secs,
        peaks,
        meter: meter.name(),
        readers: lines,
    })
}

fn generations() -> u64 {
    std::env::var("RSHM_SOAK_GENERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(GENERATIONS)
}

#[test]
fn readers_keep_old_generations_bounded_through_a_soak() {
    let name = "readers_keep_old_generations_bounded_through_a_soak";
    let Some(report) = soak(name, generations(), true) else {
        return;
    };
    eprintln!("{report}");
    let broken = report.broken();
    assert!(broken.is_empty(), "{broken:#?}\n{report}");
}

#[test]
fn the_soak_bounds_fail_when_readers_keep_every_generation() {
    let name = "the_soak_bounds_fail_when_readers_keep_every_generation";
    let Some(report) = soak(name, GENERATIONS, false) else {
        return;
    };
    eprintln!("{report}");
    let broken = report.broken();
    for kind in [Broken::Segments, Broken::Bytes, Broken::Shmem] {
        assert!(
            broken.iter().any(|(k, _)| *k == kind),
            "with retirement off, no {kind:?} bound broke:\n{report}"
        );
    }
}
