//! Get on a published store. Ids: `<op>_<keys>_<bytes>_<readers>`.
//!
//! - `get_job_hot_1`: a job-level key, pin per call (what a PMIx_Get does).
//! - `get_job_hot_heldpin_1`: the same with one pin held across calls (lower bound of the path).
//! - `get_proc_random_<M>_1`: a proc-level key of a random rank of an M-rank job, pin per call.
//! - `table_get_job_hot_1`: the table lookup alone (no snapshot, no pin).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use rshm_gds::{part, Reader, Realm, TableBuilder, Value, Writer};

use rshm_benches::PROC_KEYS as KEYS;

fn store(ranks: u32) -> Writer {
    let mut t = TableBuilder::with_ranks(ranks);
    t.insert(Realm::Job, "pmix.job.size", &Value::Uint32(ranks))
        .unwrap();
    for r in 0..ranks {
        for k in KEYS {
            t.insert(Realm::Proc(r), k, &Value::Uint32(r)).unwrap();
        }
    }
    rshm_benches::publish("bench", &t)
}

fn bench(c: &mut Criterion) {
    let w = store(1000);
    let r = Reader::attach(w.path()).unwrap();
    let get_job = |pin: &rshm_gds::Pin| {
        black_box(
            r.get(
                pin,
                "bench",
                part::DATA,
                Realm::Job,
                black_box("pmix.job.size"),
            )
            .unwrap(),
        );
    };
    c.bench_function("get_job_hot_1", |b| b.iter(|| get_job(&r.pin())));
    c.bench_function("get_job_hot_heldpin_1", |b| {
        let pin = r.pin();
        b.iter(|| get_job(&pin))
    });
    c.bench_function("table_get_job_hot_1", |b| {
        let pin = r.pin();
        let t = r.table(&pin, "bench", part::DATA).unwrap();
        b.iter(|| black_box(t.get(Realm::Job, black_box("pmix.job.size")).unwrap()))
    });
    c.bench_function("pin_1", |b| b.iter(|| black_box(r.pin())));
    drop(r);
    drop(w);

    let mut g = c.benchmark_group("get_proc_random");
    for ranks in [1_000u32, 100_000] {
        let w = store(ranks);
        let r = Reader::attach(w.path()).unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        g.bench_function(BenchmarkId::from_parameter(format!("{ranks}_1")), |b| {
            b.iter(|| {
                rshm_benches::xorshift(&mut x);
                let rank = (x % ranks as u64) as u32;
                let pin = r.pin();
                black_box(
                    r.get(
                        &pin,
                        "bench",
                        part::DATA,
                        Realm::Proc(rank),
                        KEYS[(x >> 40) as usize % 5],
                    )
                    .unwrap(),
                );
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
