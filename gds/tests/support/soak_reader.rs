//! The reader processes of gds/tests/soak.rs: the test binary run again with `RSHM_SOAK_ROLE`
//! set. A reader attaches through `RSHM_STORE` and Gets until it reads the last generation,
//! checking every answer against what the writer published; a "sleeper" sleeps 50-200 ms
//! between its Gets. It prints one [`REPORT`] line.

use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use rshm_gds::{part, Reader, Realm};

/// The role of a reader process: "busy" or "sleeper".
pub const ENV_ROLE: &str = "RSHM_SOAK_ROLE";
/// The generation at which the readers stop.
pub const ENV_LAST: &str = "RSHM_SOAK_LAST";
/// A file where each reader writes the last generation it read (8 bytes at 8 x its slot):
/// the writer keeps at most [`LAG`] generations ahead of the busy readers.
pub const ENV_PROGRESS: &str = "RSHM_SOAK_PROGRESS";
/// This reader's slot in the progress file.
pub const ENV_SLOT: &str = "RSHM_SOAK_SLOT";
/// How many generations the writer may run ahead of the slowest busy reader: without a limit,
/// on a loaded machine either the writer or the readers (whichever the scheduler favours) would
/// run through the whole soak while the others wait for the CPU.
pub const LAG: u64 = 16;
/// The start of a reader's report line.
pub const REPORT: &str = "soak-reader";

/// The job table is published again every EPOCH generations: a registration replaced now and
/// then. A reader keeping every generation keeps each of these (it reads the job table every
/// round): 20 of ~4.3 MiB in 10,000 generations, beside the posted tables it happens to read.
/// (More often would cost the readers' validation of each new table: seconds in a debug build.)
pub const EPOCH: u64 = 500;
/// Ranks of the job table and its cards' bytes: ~4 MiB.
pub const JOB_RANKS: u32 = 2048;
pub const JOB_CARD: usize = 2048;
/// Ranks of the posted table and its cards' bytes, and the bytes of its job-level blob (which
/// starts with the generation): ~135 KiB a generation.
pub const POSTED_RANKS: u32 = 16;
pub const POSTED_CARD: usize = 128;
pub const BLOB: usize = 128 << 10;

/// A reader gives up after this long (the writer is gone or stuck).
const LIMIT: Duration = Duration::from_secs(600);

/// The progress file ([`ENV_PROGRESS`]).
pub struct Progress(std::fs::File);

impl Progress {
    /// Create it for `readers` (the writer's side).
    pub fn create(path: &Path, readers: usize) -> Progress {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(path)
            .expect("create the progress file");
        f.set_len(8 * readers as u64)
            .expect("size the progress file");
        Progress(f)
    }

    /// Open it from the environment (a reader's side).
    fn open() -> Progress {
        let path = std::env::var_os(ENV_PROGRESS).expect("RSHM_SOAK_PROGRESS");
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open the progress file");
        Progress(f)
    }

    fn set(&self, slot: usize, g: u64) {
        self.0
            .write_all_at(&g.to_ne_bytes(), 8 * slot as u64)
            .expect("write progress");
    }

    /// The lowest generation read by the readers of `slots`.
    pub fn min(&self, slots: std::ops::Range<usize>) -> u64 {
        let mut buf = [0u8; 8];
        slots
            .map(|i| {
                self.0
                    .read_exact_at(&mut buf, 8 * i as u64)
                    .expect("read progress");
                u64::from_ne_bytes(buf)
            })
            .min()
            .unwrap_or(u64::MAX)
    }
}

/// A card of `len` bytes that starts with `prefix` (the rest a fixed filler).
pub fn card(prefix: &str, len: usize) -> String {
    let mut s = String::with_capacity(len.max(prefix.len()));
    s.push_str(prefix);
    s.push_str(&filler()[..len.saturating_sub(prefix.len())]);
    s
}

/// Letters, enough for any card.
fn filler() -> &'static str {
    static FILLER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    FILLER.get_or_init(|| "abcdefghijklmnopqrstuvwxyz".repeat(JOB_CARD.max(POSTED_CARD) / 26 + 1))
}

/// The number a card starts with (its generation or epoch).
fn card_number(card: &str) -> u64 {
    card.split(':')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a card's number")
}

fn get_u64(r: &Reader, ns: &str, key: &str) -> u64 {
    let pin = r.pin();
    r.get(&pin, ns, part::DATA, Realm::Job, key)
        .unwrap_or_else(|e| panic!("{ns} {key}: {e}"))
        .as_u64()
        .expect("a number")
}

fn get_card(r: &Reader, ns: &str, rank: u32) -> u64 {
    let pin = r.pin();
    let v = r
        .get(&pin, ns, part::DATA, Realm::Proc(rank), "card")
        .unwrap_or_else(|e| panic!("{ns} card of {rank}: {e}"));
    let s = v.as_str().expect("a string card");
    let n = card_number(s);
    let len = if ns == "job" { JOB_CARD } else { POSTED_CARD };
    let prefix = format!("{n}:{rank}:");
    assert!(
        s.len() == len
            && s.starts_with(&prefix)
            && s[prefix.len()..] == filler()[..len - prefix.len()],
        "{ns} card of {rank}: {s}"
    );
    n
}

fn get_blob(r: &Reader) -> u64 {
    let pin = r.pin();
    let blob = r
        .get(&pin, "posted", part::DATA, Realm::Job, "blob")
        .expect("the blob")
        .as_bytes()
        .expect("a byte object");
    assert_eq!(blob.len(), BLOB);
    let g = u64::from_le_bytes(blob[..8].try_into().unwrap());
    // Every page's first byte and the last: the whole would cost a debug build ~1 ms a Get.
    assert!(
        blob[8..].iter().step_by(4096).all(|b| *b == g as u8) && blob[BLOB - 1] == g as u8,
        "blob of {g}"
    );
    g
}

/// One round of Gets, each under its own pin as a PMIx client's Get is (a pin keeps every
/// generation it has read mapped): the generation, a posted card, the blob, the job epoch and
/// a job card, the generation again. The reader may move to a newer generation between Gets,
/// so each answer must lie between the generations read before and after it. Returns the last.
fn round(r: &Reader, i: u64) -> u64 {
    let g1 = get_u64(r, "posted", "gen");
    let gc = get_card(r, "posted", (i % u64::from(POSTED_RANKS)) as u32);
    let gb = get_blob(r);
    let e = get_u64(r, "job", "epoch");
    let ec = get_card(r, "job", (i % u64::from(JOB_RANKS)) as u32);
    let g2 = get_u64(r, "posted", "gen");
    assert!(
        g1 <= gc && gc <= gb && gb <= g2,
        "posted card of generation {gc}, blob of {gb}, between {g1} and {g2}"
    );
    assert!(
        g1 / EPOCH <= e && e <= ec && ec <= g2 / EPOCH,
        "job epoch {e} (card {ec}) between generations {g1} and {g2}"
    );
    g2
}

/// In a reader process (its role set): read until the last generation, report, and return
/// true. Elsewhere: false.
pub fn run_if_reader() -> bool {
    let Ok(role) = std::env::var(ENV_ROLE) else {
        return false;
    };
    let last: u64 = std::env::var(ENV_LAST)
        .ok()
        .and_then(|n| n.parse().ok())
        .expect("RSHM_SOAK_LAST");
    let progress = Progress::open();
    let slot: usize = std::env::var(ENV_SLOT)
        .ok()
        .and_then(|n| n.parse().ok())
        .expect("RSHM_SOAK_SLOT");
    let r = Reader::attach_from_env().expect("attach");
    let sleeper = role == "sleeper";
    let start = Instant::now();
    let (mut rounds, mut seen, mut prev) = (0u64, 0u64, 0u64);
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(std::process::id());
    loop {
        let g = round(&r, rounds);
        rounds += 1;
        if g != prev {
            seen += 1;
            prev = g;
            progress.set(slot, g);
        }
        if g == last {
            break;
        }
        assert!(start.elapsed() < LIMIT, "the last generation never came");
        if !sleeper {
            // Let the writer (and lagging readers) run: on 2 cores, 9 spinning readers would
            // otherwise take most of the time slices the writer needs.
            std::thread::yield_now();
        } else {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            std::thread::sleep(Duration::from_millis(50 + rng % 151));
        }
    }
    // After the harness's "test NAME ... ", which ends no line.
    println!(
        "\n{REPORT} {role}: {} Gets, {seen} generations seen, {:.1} s",
        rounds * 6,
        start.elapsed().as_secs_f64()
    );
    true
}
