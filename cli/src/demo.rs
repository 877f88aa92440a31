//! The main job: write a synthetic PMIx job into a new store, start reader processes that
//! attach and read it, and print what it cost. Every value a reader checks is compared with
//! what the writer wrote; a mismatch fails the job.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use rshm_gds::jobdata::{self, synthetic, Qualifiers, TargetRank};
use rshm_gds::{part, Reader, StoreOptions, Value, Writer};

use crate::measure::{bytes, percentile, status_kb};
use crate::out::{outln, Fail};

const NSPACE: &str = "rshm-demo";
/// Processes per node of the synthetic job.
const PPN: u32 = 64;
/// The per-rank keys a client asks (PMIx reserved key strings).
const PROC_KEYS: [&str; 5] = [
    "pmix.lrank",
    "pmix.nrank",
    "pmix.nodeid",
    "pmix.appnum",
    "pmix.hname",
];
/// Gets timed per clock reading: the clock costs ~20 ns, as much as a get.
const BATCH: usize = 32;

/// What a get of `key` for `rank` must return.
fn proc_value(rank: u32, key: &str) -> Value {
    synthetic::proc_value(rank, PPN, key).unwrap_or(Value::Undef)
}

/// `rshm demo`'s options.
#[derive(clap::Args)]
pub struct DemoArgs {
    /// Ranks of the synthetic job.
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    ranks: u32,
    /// Reader processes.
    #[arg(long, value_name = "R", default_value_t = 8)]
    readers: usize,
    /// Random gets per reader.
    #[arg(long, value_name = "G", default_value_t = 200_000)]
    gets: usize,
    /// Base directory of the new store (default: the default base directory).
    #[arg(long, value_name = "DIR")]
    base: Option<PathBuf>,
}

/// A reader's options (`rshm read-worker`, started by `rshm demo`).
#[derive(clap::Args)]
pub struct WorkerArgs {
    #[arg(long)]
    store: PathBuf,
    #[arg(long, default_value_t = 0)]
    ranks: u32,
    #[arg(long, default_value_t = 100_000)]
    gets: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(a: &DemoArgs) -> Result<(), Fail> {
    let (ranks, readers, gets) = (a.ranks, a.readers, a.gets);
    if ranks == 0 || readers == 0 {
        return Err("--ranks and --readers must be at least 1".into());
    }
    let opts = StoreOptions {
        base_dir: a.base.clone(),
        ..StoreOptions::default()
    };
    outln!("rshm demo: {ranks} ranks ({} per-rank keys, {PPN} per node), {readers} reader processes, {gets} gets each, on {} cores",
        PROC_KEYS.len(), std::thread::available_parallelism().map_or(1, |n| n.get()))?;

    let infos = synthetic::registration(ranks, PPN);
    let t0 = Instant::now();
    let (table, summary) =
        jobdata::build(Some(&synthetic::host(0)), &infos).map_err(|e| e.to_string())?;
    let t_build = t0.elapsed();
    drop(infos);
    if summary.job_size != ranks {
        return Err(format!(
            "registration gave job size {}, expected {ranks}",
            summary.job_size
        )
        .into());
    }
    let mut w = Writer::create(opts).map_err(|e| e.to_string())?;
    let t1 = Instant::now();
    let mut tx = w.begin();
    tx.put_table(NSPACE, part::DATA, &table)
        .map_err(|e| e.to_string())?;
    tx.commit().map_err(|e| e.to_string())?;
    let t_publish = t1.elapsed();
    let shared: u64 = w
        .files()
        .map_err(|e| e.to_string())?
        .iter()
        .filter_map(|f| std::fs::metadata(w.path().join(f)).ok())
        .map(|m| m.len())
        .sum();
    outln!("store      {}", w.path().display())?;
    outln!(
        "register   registration array -> realms, derived keys, columns {:.1} ms + encode/publish {:.1} ms",
        t_build.as_secs_f64() * 1e3,
        t_publish.as_secs_f64() * 1e3
    )?;
    outln!(
        "shared     {} in {} files, {:.1} B/rank",
        bytes(shared),
        w.files().map_err(|e| e.to_string())?.len(),
        shared as f64 / ranks as f64
    )?;

    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let children: Vec<_> = (0..readers)
        .map(|i| {
            Command::new(&exe)
                .args(["read-worker", "--store"])
                .arg(w.path())
                .args([
                    "--ranks",
                    &ranks.to_string(),
                    "--gets",
                    &gets.to_string(),
                    "--seed",
                    &(i + 1).to_string(),
                ])
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| format!("spawn reader: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for c in children {
        let out = c.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("a reader failed: {}", out.status).into());
        }
        rows.push(WorkerResult::parse(&String::from_utf8_lossy(&out.stdout))?);
    }
    outln!(
        "{:>6} {:>10} {:>13} {:>13} {:>13} {:>13} {:>10}",
        "reader",
        "attach µs",
        "1st get µs",
        "proc p50 ns",
        "proc p99 ns",
        "job p50 ns",
        "anon KiB"
    )?;
    for (i, r) in rows.iter().enumerate() {
        outln!(
            "{:>6} {:>10.1} {:>13.1} {:>13.1} {:>13.1} {:>13.1} {:>10}",
            i,
            r.attach_us,
            r.first_get_us,
            r.proc_p50,
            r.proc_p99,
            r.job_p50,
            r.anon_kb
        )?;
    }
    let med = |f: fn(&WorkerResult) -> f64| {
        let mut v: Vec<f64> = rows.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        percentile(&v, 50.0)
    };
    outln!("median     attach {:.1} µs, first get {:.1} µs (maps + validates the table), proc get p50 {:.1} ns / p99 {:.1} ns, job get p50 {:.1} ns, reader private (RssAnon) {:.0} KiB",
        med(|r| r.attach_us), med(|r| r.first_get_us), med(|r| r.proc_p50), med(|r| r.proc_p99), med(|r| r.job_p50), med(|r| r.anon_kb as f64))?;
    outln!(
        "checked    {} values against the writer's, all equal",
        rows.iter().map(|r| r.checked).sum::<u64>()
    )?;
    let path = w.path().to_path_buf();
    w.close().map_err(|e| e.to_string())?;
    if path.exists() {
        return Err(format!("store {} left behind", path.display()).into());
    }
    outln!("cleanup    store removed")?;
    Ok(())
}

struct WorkerResult {
    attach_us: f64,
    first_get_us: f64,
    proc_p50: f64,
    proc_p99: f64,
    job_p50: f64,
    anon_kb: u64,
    checked: u64,
}

impl WorkerResult {
    fn parse(out: &str) -> Result<WorkerResult, String> {
        let line = out
            .lines()
            .find(|l| l.starts_with("RESULT "))
            .ok_or("reader printed no RESULT")?;
        let field = |name: &str| -> Result<f64, String> {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                .and_then(|v| v.parse().ok())
                .ok_or(format!("RESULT lacks {name}"))
        };
        Ok(WorkerResult {
            attach_us: field("attach_us")?,
            first_get_us: field("first_get_us")?,
            proc_p50: field("proc_p50_ns")?,
            proc_p99: field("proc_p99_ns")?,
            job_p50: field("job_p50_ns")?,
            anon_kb: field("anon_kb")? as u64,
            checked: field("checked")? as u64,
        })
    }
}

/// xorshift64*: a fast deterministic generator for random ranks.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A reader process: attach, check, time gets, print one RESULT line.
pub fn worker(a: &WorkerArgs) -> Result<(), Fail> {
    let (store, ranks, gets) = (&a.store, a.ranks, a.gets);
    let mut rng = Rng(a.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);

    let t = Instant::now();
    let r = Reader::attach(store).map_err(|e| e.to_string())?;
    let attach_us = t.elapsed().as_secs_f64() * 1e6;
    let err = |e: rshm_gds::Error| e.to_string();
    // This reader plays a client of the job: its own rank, for "my node"/"my app" defaults.
    let me = (rng.0 % ranks.max(1) as u64) as u32;
    let none = Qualifiers::default();
    // PMIx_Get(proc, key) with no qualifiers, by the rules of standard ch. 6.
    let get = |pin: &rshm_gds::Pin, rank: TargetRank, key: &str| -> Result<Value, String> {
        let t = r.table(pin, NSPACE, part::DATA).map_err(err)?;
        jobdata::get(t, None, Some(me), rank, key, &none)
            .map(|v| v.to_value())
            .map_err(err)
    };
    let t = Instant::now();
    get(&r.pin(), TargetRank::Wildcard, "pmix.job.size")?;
    let first_get_us = t.elapsed().as_secs_f64() * 1e6;

    // Correctness: a sample of values against the writer's derivation.
    let mut checked = 0u64;
    {
        let pin = r.pin();
        let size = get(&pin, TargetRank::Wildcard, "pmix.job.size")?;
        if size != Value::Uint32(ranks) {
            return Err(format!("pmix.job.size is {size:?}, expected {ranks}").into());
        }
        for _ in 0..10_000 {
            let rank = (rng.next() % ranks as u64) as u32;
            let key = PROC_KEYS[(rng.next() % PROC_KEYS.len() as u64) as usize];
            let v = get(&pin, TargetRank::Rank(rank), key)?;
            if v != proc_value(rank, key) {
                return Err(format!("rank {rank} {key}: read {v:?}").into());
            }
            checked += 1;
        }
    }

    // Timing: one pin per get, as a PMIx_Get call would do.
    let time = |rng: &mut Rng, job: bool| -> Result<Vec<f64>, String> {
        let mut samples = Vec::with_capacity(gets / BATCH);
        for _ in 0..gets / BATCH {
            let picks: [(u32, usize); BATCH] = std::array::from_fn(|_| {
                (
                    (rng.next() % ranks as u64) as u32,
                    (rng.next() % PROC_KEYS.len() as u64) as usize,
                )
            });
            let t = Instant::now();
            for (rank, k) in picks {
                let pin = r.pin();
                let t = r.table(&pin, NSPACE, part::DATA).map_err(err)?;
                let v = if job {
                    jobdata::get(
                        t,
                        None,
                        Some(me),
                        TargetRank::Wildcard,
                        "pmix.job.size",
                        &none,
                    )
                } else {
                    jobdata::get(
                        t,
                        None,
                        Some(me),
                        TargetRank::Rank(rank),
                        PROC_KEYS[k],
                        &none,
                    )
                };
                std::hint::black_box(v.map_err(err)?);
            }
            samples.push(t.elapsed().as_nanos() as f64 / BATCH as f64);
        }
        samples.sort_by(f64::total_cmp);
        Ok(samples)
    };
    let proc = time(&mut rng, false)?;
    let job = time(&mut rng, true)?;
    outln!(
        "RESULT attach_us={attach_us:.1} first_get_us={first_get_us:.1} proc_p50_ns={:.1} proc_p99_ns={:.1} job_p50_ns={:.1} anon_kb={} checked={checked}",
        percentile(&proc, 50.0),
        percentile(&proc, 99.0),
        percentile(&job, 50.0),
        status_kb("RssAnon").unwrap_or(0),
    )?;
    Ok(())
}
