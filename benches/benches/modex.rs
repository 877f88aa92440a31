//! Posted data (modex). Ids: `<op>_<keys>_<bytes>_<readers>`.
//!
//! - `publish_cards/<N>_<bytes>_1`: N processes' cards of `bytes` each, put into a `Posted` and
//!   published as one fence generation (encode + write + publish), N = 10k and 1M, 64 B;
//!   `publish_cards/collect_<N>_<bytes>_1`: building that `Posted` with `put`.
//! - `fence_batch/...`: the fence-batch path (`FenceBatch` + `Posted::apply`), each iteration
//!   a namespace's first fence (a fresh `Posted`) replacing the previous iteration's table:
//!   `build_<N>_<bytes>_1` fills the batch (`put_bytes` of every card); `publish_<N>_<bytes>_1`
//!   applies a built batch and publishes it (apply + encode into the new file + commit);
//!   `build_publish_<N>_<bytes>_1` is both, end to end. 1M x 64 B, and 10k x 64 KiB (reported
//!   as bytes/s of cards).
//! - `get_card_copy_<N>_<bytes>_1` / `get_card_static_...` / `get_card_pointer_...`: PMIx_Get of
//!   a random process's card after the fence, in PMIx's three return modes: copied out (a new
//!   owned value: the default), copied into storage the caller owns and reuses
//!   (PMIX_GET_STATIC_VALUES: no allocation) or pointed to in the mapping
//!   (PMIX_GET_POINTER_VALUES: zero copy); pin per call, 64 B / 512 B / 4 KiB.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rshm_benches::{card_batch, cards};
use rshm_gds::jobdata::TargetRank;
use rshm_gds::modex::{self, FenceBatch, Posted};
use rshm_gds::{part, Reader, StoreOptions, Writer};

fn fence(w: &mut Writer, p: &Posted) {
    let mut tx = w.begin();
    tx.put_table_packable("bench", part::POSTED, p.table())
        .unwrap();
    tx.commit().unwrap();
}

fn store() -> Writer {
    Writer::create(StoreOptions {
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap()
}

fn publish(c: &mut Criterion) {
    let mut g = c.benchmark_group("publish_cards");
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    for n in [10_000u32, 1_000_000] {
        let mut w = store();
        let p = cards(n, 64);
        g.bench_function(format!("{n}_64_1"), |b| b.iter(|| fence(&mut w, &p)));
        // Building the batch from the fence's data (what the server does first).
        g.bench_function(format!("collect_{n}_64_1"), |b| {
            b.iter_batched(|| (), |_| black_box(cards(n, 64)), BatchSize::PerIteration)
        });
    }
    g.finish();
}

/// Apply `batch` to a namespace's fresh posted data and publish it. Returns the posted data,
/// so that criterion frees it (tens of MiB) outside the timed routine.
fn apply_publish(w: &mut Writer, batch: FenceBatch) -> Posted {
    let mut p = Posted::new();
    p.apply(batch).unwrap();
    fence(w, &p);
    p
}

fn fence_batch(c: &mut Criterion) {
    let mut g = c.benchmark_group("fence_batch");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for (n, bytes) in [(1_000_000u32, 64usize), (10_000, 65_536)] {
        g.throughput(Throughput::Bytes(n as u64 * bytes as u64));
        let mut w = store();
        g.bench_function(format!("build_{n}_{bytes}_1"), |b| {
            b.iter_batched(
                || (),
                |_| black_box(card_batch(n, bytes)),
                BatchSize::PerIteration,
            )
        });
        g.bench_function(format!("publish_{n}_{bytes}_1"), |b| {
            b.iter_batched(
                || card_batch(n, bytes),
                |batch| apply_publish(&mut w, batch),
                BatchSize::PerIteration,
            )
        });
        g.bench_function(format!("build_publish_{n}_{bytes}_1"), |b| {
            b.iter_batched(
                || (),
                |_| apply_publish(&mut w, card_batch(n, bytes)),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn get(c: &mut Criterion) {
    const N: u32 = 10_000;
    for bytes in [64usize, 512, 4096] {
        let mut w = store();
        fence(&mut w, &cards(N, bytes));
        let r = Reader::attach(w.path()).unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rshm_benches::xorshift(&mut x);
            (x % N as u64) as u32
        };
        // The three return modes differ only in what they do with the card's bytes.
        c.bench_function(&format!("get_card_pointer_{N}_{bytes}_1"), |b| {
            b.iter(|| with_card(&r, next(), |card| black_box(card).len()))
        });
        c.bench_function(&format!("get_card_copy_{N}_{bytes}_1"), |b| {
            b.iter(|| with_card(&r, next(), |card| black_box(card.to_vec()).len()))
        });
        let mut mine = Vec::with_capacity(bytes);
        c.bench_function(&format!("get_card_static_{N}_{bytes}_1"), |b| {
            b.iter(|| {
                with_card(&r, next(), |card| {
                    mine.clear();
                    mine.extend_from_slice(card);
                    black_box(&mine).len()
                })
            })
        });
    }
}

/// PMIx_Get of `rank`'s card (pin per call), handed to `f` as the bytes in the mapping.
fn with_card(r: &Reader, rank: u32, f: impl FnOnce(&[u8]) -> usize) -> usize {
    let pin = r.pin();
    let t = r.table(&pin, "bench", part::POSTED).unwrap();
    let v = modex::get(t, TargetRank::Rank(rank), "btl.tcp.card", false, None).unwrap();
    f(v.as_bytes().unwrap())
}

criterion_group!(benches, get, publish, fence_batch);
criterion_main!(benches);
