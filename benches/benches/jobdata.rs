//! Job data at scale: registration and PMIx_Get of reserved keys through the ch. 6 rules.
//! Ids: `<op>_<keys>_<bytes>_<readers>`; M is the job size.
//!
//! - `register_full_<M>_1`: `jobdata::build` + encode of a full registration (maps, node arrays,
//!   one proc array of 8 keys per rank), M = 1k, 100k, 1M.
//! - `register_maps_<M>_1`: the same job without the proc arrays (maps and node arrays; local
//!   rank, node rank, node id and hostname derived, the app keys absent), M = 1k, 100k, 1M.
//! - `get_job_<M>_1`: `PMIx_Get(WILDCARD, PMIX_JOB_SIZE)`, pin per call.
//! - `get_proc_random_<M>_1`: a standard proc key of a random rank (lrank, nrank, nodeid,
//!   appnum, hname), pin per call.
//! - `attach_<M>_1`: `Reader::attach` alone (the store's anchor and root; the client's
//!   `rshm_client_attach`). `attach_first_get_<M>_1`: what a client pays before its first
//!   answer: the attach, mapping and validating the job table (proportional to the table), one
//!   Get. The reader's unmapping is not timed.
//!
//! Shared bytes per rank are printed on stderr (`bytes_per_rank M=...`).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use rshm_benches::{host, registration};
use rshm_gds::jobdata::{self, Qualifiers, TargetRank};
use rshm_gds::{part, Info, Reader, Writer};

use rshm_benches::PROC_KEYS as KEYS;
const PPN: u32 = 64;

fn publish(ranks: u32) -> Writer {
    let (t, _) = jobdata::build(Some(&host(0)), &registration(ranks, PPN)).unwrap();
    let w = rshm_benches::publish("bench", &t);
    let shared: u64 = w
        .files()
        .unwrap()
        .iter()
        .map(|f| std::fs::metadata(w.path().join(f)).unwrap().len())
        .sum();
    eprintln!(
        "bytes_per_rank M={ranks}: {:.1} ({shared} bytes shared)",
        shared as f64 / ranks as f64
    );
    w
}

fn register(c: &mut Criterion) {
    register_group(c, "register_full", Duration::from_secs(20), registration);
    // The same jobs registered by their maps and node arrays only (no per-rank arrays): local
    // rank, node rank, node id and hostname are derived at write time.
    register_group(
        c,
        "register_maps",
        Duration::from_secs(10),
        jobdata::synthetic::registration_maps,
    );
}

/// `jobdata::build` + encode of `make(M, PPN)` for M = 1k, 100k, 1M.
fn register_group(c: &mut Criterion, name: &str, time: Duration, make: fn(u32, u32) -> Vec<Info>) {
    let mut g = c.benchmark_group(name);
    g.sample_size(10).measurement_time(time);
    for ranks in [1_000u32, 100_000, 1_000_000] {
        g.bench_function(BenchmarkId::from_parameter(format!("{ranks}_1")), |b| {
            b.iter_batched(
                || make(ranks, PPN),
                |infos| {
                    let (t, _) = jobdata::build(Some(&host(0)), &infos).unwrap();
                    black_box(t.encode(1).unwrap());
                    infos
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn get(c: &mut Criterion) {
    let none = Qualifiers::default();
    for ranks in [1_000u32, 100_000, 1_000_000] {
        let w = publish(ranks);
        let r = Reader::attach(w.path()).unwrap();
        c.bench_function(&format!("get_job_{ranks}_1"), |b| {
            b.iter(|| {
                let pin = r.pin();
                let t = r.table(&pin, "bench", part::DATA).unwrap();
                black_box(
                    jobdata::get(
                        t,
                        None,
                        Some(1),
                        TargetRank::Wildcard,
                        black_box("pmix.job.size"),
                        &none,
                    )
                    .unwrap(),
                );
            })
        });
        c.bench_function(&format!("attach_{ranks}_1"), |b| {
            b.iter_with_large_drop(|| Reader::attach(w.path()).unwrap())
        });
        c.bench_function(&format!("attach_first_get_{ranks}_1"), |b| {
            b.iter_with_large_drop(|| {
                let r = Reader::attach(w.path()).unwrap();
                {
                    let pin = r.pin();
                    let t = r.table(&pin, "bench", part::DATA).unwrap();
                    let size = jobdata::get(
                        t,
                        None,
                        Some(1),
                        TargetRank::Wildcard,
                        "pmix.job.size",
                        &none,
                    );
                    black_box(size.unwrap());
                }
                r
            })
        });
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        c.bench_function(&format!("get_proc_random_{ranks}_1"), |b| {
            b.iter(|| {
                rshm_benches::xorshift(&mut x);
                let rank = (x % ranks as u64) as u32;
                let pin = r.pin();
                let t = r.table(&pin, "bench", part::DATA).unwrap();
                black_box(
                    jobdata::get(
                        t,
                        None,
                        Some(1),
                        TargetRank::Rank(rank),
                        KEYS[(x >> 40) as usize % 5],
                        &none,
                    )
                    .unwrap(),
                );
            })
        });
    }
}

criterion_group!(benches, get, register);
criterion_main!(benches);
