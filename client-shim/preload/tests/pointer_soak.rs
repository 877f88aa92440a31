//! PMIX_GET_POINTER_VALUES under the preload, over many generations: an unmodified libpmix
//! client (tests/support/pointer_client.c, linked with -lpmix, started by tools/pmix-host's real
//! PMIx server with `LD_PRELOAD=librshm_client_preload.so`) makes 100,000 pointer-mode Gets while the
//! store goes through 10,000 generations: this test, as the server, registers the job through
//! server-shim and publishes new posted cards of 8 ranks each time the client reports it has read
//! the previous ones. The client never releases what pointer mode hands out (it cannot: libpmix
//! has no call for it), so what it holds must be bounded by the live data, not by the Gets or
//! generations: its mapping count (/proc/PID/maps lines) and its RSS are sampled through the run
//! and may not grow past [`MAPPINGS_GROWTH`] and [`RSS_GROWTH`] over their values once the client
//! is warm.
//!
//! The second test runs the same client through 2,000 generations with `RSHM_READER_RETIRE=off`
//! (its reader keeps every generation mapped) and requires both bounds to break: the checks can
//! fail.

#[path = "../../../gds/tests/support/pmixhost/mod.rs"]
mod pmixhost;

#[path = "../../../gds/tests/support/mappings.rs"]
mod mappings;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rshm_gds::Value;
use rshm_server::{PostedValue, Server, ServerOptions};

/// The job: tools/pmix-host's 2-node job; the client is rank 0, on node001.
const JOB: &str = "examples/job-2node.txt";
/// Ranks whose cards the client asks for, and the cards' bytes.
const RANKS: u32 = 8;
const CARD: usize = 256;

/// Generations once the client is warm (its allocator and libpmix settled): the sampled values
/// are compared with those at this generation.
const WARM: u32 = 20;

/// How much the client's mappings may grow once warm. What it maps of the store is the live
/// generation's root and tables (job data, the posted base and index, and one posted table per
/// rank that committed since the last merge: here the 8 ranks whose cards change), the tables
/// its pointer-mode values hold (one per card asked: at most the previous generation's rank
/// table, until the card is asked again), and the generations its reader retired that the
/// epoch scheme has not freed yet (two, of a root and the 8 rank tables each): about 4 tables
/// per rank asked, with slack, and none of it growing with Gets or generations.
const MAPPINGS_GROWTH: usize = 4 * RANKS as usize + 8;

/// How much the client's mappings of the store's files may grow once warm. Generations share a
/// pack (docs/format.md section 10), mapped once: what grows is the packs a client keeps, the
/// current one and, for a while, the one before (held by a retired snapshot or a pointer-mode
/// value of a card not asked since), with slack.
const STORE_GROWTH: usize = 4;

/// How much the client's RSS may grow once warm: the values it holds (one copy per card asked,
/// a few KiB), the pages of the mapped segments above (the live store is ~20 KiB), and the
/// allocator's slack.
const RSS_GROWTH: u64 = 2 << 20;

/// Build `librshm_client_preload.so` (the debug profile, as the other preload tests) with gds's test
/// knobs (`RSHM_READER_RETIRE`) and return its path.
fn preload_library() -> PathBuf {
    let root = pmixhost::repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(&root)
        .args([
            "build",
            "-q",
            "-p",
            "rshm-client-preload",
            "--lib",
            "--features",
            "rshm-gds/test-knobs",
        ])
        .status()
        .expect("cargo build");
    assert!(st.success(), "building the preload library failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"));
    target.join("debug").join("librshm_client_preload.so")
}

/// Compile tests/support/pointer_client.c against the system libpmix into `dir`.
fn pointer_client(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/pointer_client.c");
    let out = dir.join("pointer_client");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "pmix"])
        .output()
        .expect("pkg-config");
    assert!(flags.status.success(), "pkg-config pmix failed");
    let flags = String::from_utf8(flags.stdout).unwrap();
    let st = Command::new("cc")
        .args([
            "-std=c11",
            "-O1",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-o",
        ])
        .arg(&out)
        .arg(&src)
        .args(flags.split_whitespace())
        .status()
        .expect("cc");
    assert!(st.success(), "compiling {} failed", src.display());
    out
}

/// What tools/pmix-host registers for [`JOB`] with libpmix (`--clients 0`: no client runs).
fn registration() -> pmixhost::Registration {
    let (reg, _) = pmixhost::run_job_with_args(
        JOB,
        "examples/corpus-2node.txt",
        &[("PMIX_MCA_gds", "hash")],
        &["--clients", "0"],
        Duration::from_secs(60),
    );
    reg
}

/// Generation `g`'s cards: "G:RANK:" and filler.
fn cards(ns: &str, g: u32) -> Vec<PostedValue> {
    (0..RANKS)
        .map(|rank| {
            let mut card = format!("{g}:{rank}:");
            card.extend(std::iter::repeat_n('x', CARD - card.len()));
            PostedValue {
                nspace: ns.into(),
                rank,
                scope: rshm_gds::modex::Scope::Global as u8,
                key: "test.card".into(),
                value: Value::String(card),
            }
        })
        .collect()
}

/// pmix-host and its client; the whole process group is killed when dropped.
struct Job(Child);

impl Drop for Job {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.0.wait();
    }
}

/// The FIFO's lines, read by a thread (the test holds a writer end too, so a client that dies
/// leaves the read blocked rather than at end of file: the caller waits with a timeout).
fn fifo_lines(path: &Path) -> Receiver<String> {
    let st = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(st.success(), "mkfifo failed");
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open the FIFO");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(f).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

#[derive(Debug, Default)]
struct Run {
    generations: u32,
    gets: u64,
    secs: f64,
    /// /proc/PID/maps lines, of them the store's; RSS: at the warm point and the most after.
    warm_lines: usize,
    max_lines: usize,
    warm_store: usize,
    max_store: usize,
    warm_rss: u64,
    max_rss: u64,
    /// The store's files after a publication.
    live_bytes: u64,
    /// The preload's counts: Gets answered from the store, passed to libpmix.
    answered: u64,
    passed: u64,
}

impl Run {
    fn mappings_bounded(&self) -> bool {
        self.max_lines <= self.warm_lines + MAPPINGS_GROWTH
            && self.max_store <= self.warm_store + STORE_GROWTH
    }

    fn rss_bounded(&self) -> bool {
        self.max_rss <= self.warm_rss + RSS_GROWTH
    }
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} generations, {} pointer-mode Gets in {:.1} s (answered {}, passed {}); \
             live store {} KiB; maps lines {} at generation {WARM}, max {} (bound +{MAPPINGS_GROWTH}), \
             of the store {} -> {} (bound +{STORE_GROWTH}); RSS {} KiB -> max {} KiB (bound +{} KiB)",
            self.generations,
            self.gets,
            self.secs,
            self.answered,
            self.passed,
            self.live_bytes >> 10,
            self.warm_lines,
            self.max_lines,
            self.warm_store,
            self.max_store,
            self.warm_rss >> 10,
            self.max_rss >> 10,
            RSS_GROWTH >> 10
        )
    }
}

/// Run the client through `generations` generations; `retire: false` sets
/// `RSHM_READER_RETIRE=off` in it.
fn run(generations: u32, retire: bool) -> Run {
    let preload = preload_library();
    let host_dir = pmixhost::build();
    let tmp = tempfile::tempdir().expect("tempdir");
    let client = pointer_client(tmp.path());
    let reg = registration();
    let base = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let mut server = Server::open(ServerOptions {
        base_dir: Some(base.path().to_path_buf()),
        local_host: Some(reg.local_host.clone()),
        ..ServerOptions::default()
    })
    .expect("open the store");
    server
        .register_nspace(&reg.nspace, reg.nlocalprocs as i32, &reg.infos)
        .expect("register the job");
    server.store(&cards(&reg.nspace, 1)).expect("publish");
    let store = server.path().to_path_buf();
    let stats = tmp.path().join("stats");
    std::fs::create_dir(&stats).unwrap();
    let fifo = tmp.path().join("fifo");
    let lines = fifo_lines(&fifo);

    let mut cmd = Command::new(host_dir.join("pmix-host"));
    cmd.current_dir(&host_dir)
        .args([
            "--job",
            JOB,
            "--clients",
            "1",
            "--timeout",
            "1000",
            "--client-cmd",
        ])
        .arg(format!(
            "{} {} {generations} {RANKS}",
            client.display(),
            fifo.display()
        ))
        .env("PMIX_MCA_gds", "hash")
        .env("LD_PRELOAD", &preload)
        .env(rshm_gds::ENV_STORE, &store)
        .env("RSHM_PRELOAD_STATS", &stats)
        .env_remove(rshm_gds::ENV_READER_RETIRE)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if !retire {
        cmd.env(rshm_gds::ENV_READER_RETIRE, "off");
    }
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut job = Job(cmd.spawn().expect("start pmix-host"));
    let mut stderr = job.0.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let mut next = || -> String {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            match lines.recv_timeout(Duration::from_millis(200)) {
                Ok(l) => return l,
                Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => {
                    if let Ok(Some(st)) = job.0.try_wait() {
                        panic!("pmix-host ended ({st}) before the client was done");
                    }
                }
                Err(e) => panic!("no word from the client: {e}"),
            }
        }
    };

    let pid: u32 = next()
        .strip_prefix("pid ")
        .and_then(|p| p.parse().ok())
        .expect("the client's pid");
    let mut r = Run {
        generations,
        ..Run::default()
    };
    let start = Instant::now();
    for g in 1..=generations {
        let line = next();
        let mut words = line.split(' ');
        assert_eq!(words.next(), Some("seen"), "{line}");
        assert_eq!(words.next(), Some(g.to_string().as_str()), "{line}");
        // The client now waits for g + 1 (Getting all along): sample it. (After the last it
        // finalizes and exits.)
        if g < generations && (g.is_multiple_of(10) || g == WARM) {
            let m = mappings::mapped(pid, &store).expect("the client's maps");
            let rss = mappings::status_bytes(pid, "VmRSS").expect("the client's RSS");
            if g == WARM {
                (r.warm_lines, r.warm_store, r.warm_rss) = (m.lines, m.store, rss);
            }
            if g >= WARM {
                r.max_lines = r.max_lines.max(m.lines);
                r.max_store = r.max_store.max(m.store);
                r.max_rss = r.max_rss.max(rss);
            }
        }
        if g < generations {
            server.store(&cards(&reg.nspace, g + 1)).expect("publish");
            if g.is_multiple_of(100) {
                r.live_bytes = r.live_bytes.max(mappings::store_bytes(&store));
            }
        }
    }
    let done = next();
    r.gets = done
        .strip_prefix("done ")
        .and_then(|n| n.parse().ok())
        .expect("the client's Get count");
    r.secs = start.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = job.0.try_wait().expect("wait for pmix-host") {
            break st;
        }
        assert!(Instant::now() < deadline, "pmix-host did not end");
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = stderr.join().unwrap_or_default();
    assert!(status.success(), "pmix-host failed ({status}):\n{stderr}");
    // The client's own counts (libpmix's calls of PMIx_Get during init count too).
    let text = std::fs::read_to_string(stats.join(pid.to_string())).expect("the client's stats");
    let count = |what: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(what)?.trim().parse().ok())
            .expect("a count")
    };
    (r.answered, r.passed) = (count("answered "), count("passed "));
    r
}

#[test]
fn pointer_mode_memory_stays_bounded_by_live_data_through_10k_generations() {
    let r = run(10_000, true);
    eprintln!("{r}");
    assert!(r.gets >= 100_000, "only {} Gets", r.gets);
    assert!(
        r.answered >= r.gets && r.passed == 0,
        "not every Get was answered by the store: {r}"
    );
    assert!(r.mappings_bounded(), "the client's mappings grew: {r}");
    assert!(r.rss_bounded(), "the client's RSS grew: {r}");
}

#[test]
fn pointer_mode_mapping_bound_fails_when_the_client_keeps_every_generation() {
    let r = run(2_000, false);
    eprintln!("{r}");
    assert!(
        r.answered >= r.gets && r.passed == 0,
        "not every Get was answered by the store: {r}"
    );
    assert!(
        !r.mappings_bounded(),
        "with retirement off the mapping bound still held: {r}"
    );
    assert!(
        !r.rss_bounded(),
        "with retirement off the RSS bound still held: {r}"
    );
}
