//! Posted data (modex). Ids: `<op>_<keys>_<bytes>_<readers>`.
//!
//! - `publish_cards_<N>_<bytes>_1`: N processes' cards of `bytes` each, put into a `Posted` and
//!   published as one fence generation (encode + write + publish), N = 10k and 1M, 64 B.
//! - `get_card_copy_<N>_<bytes>_1` / `get_card_pointer_...`: PMIx_Get of a random process's card
//!   after the fence: copied out (an owned value) or pointed to in the mapping (zero copy),
//!   pin per call, 64 B / 512 B / 4 KiB.

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use gds::jobdata::TargetRank;
use gds::modex::{self, Posted};
use gds::{part, Reader, StoreOptions, Writer};
use rshm_benches::cards;

fn fence(w: &mut Writer, p: &Posted) {
    let mut tx = w.begin();
    tx.put_table("bench", part::POSTED, p.table()).unwrap();
    tx.commit().unwrap();
}

fn publish(c: &mut Criterion) {
    let mut g = c.benchmark_group("publish_cards");
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    for n in [10_000u32, 1_000_000] {
        let mut w = Writer::create(StoreOptions {
            sweep: false,
            ..StoreOptions::default()
        })
        .unwrap();
        let p = cards(n, 64);
        g.bench_function(format!("{n}_64_1"), |b| b.iter(|| fence(&mut w, &p)));
        // Building the batch from the fence's data (what the server does first).
        g.bench_function(format!("collect_{n}_64_1"), |b| {
            b.iter_batched(|| (), |_| black_box(cards(n, 64)), BatchSize::PerIteration)
        });
    }
    g.finish();
}

fn get(c: &mut Criterion) {
    const N: u32 = 10_000;
    for bytes in [64usize, 512, 4096] {
        let mut w = Writer::create(StoreOptions {
            sweep: false,
            ..StoreOptions::default()
        })
        .unwrap();
        fence(&mut w, &cards(N, bytes));
        let r = Reader::attach(w.path()).unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rshm_benches::xorshift(&mut x);
            (x % N as u64) as u32
        };
        c.bench_function(&format!("get_card_pointer_{N}_{bytes}_1"), |b| {
            b.iter(|| {
                let pin = r.pin();
                let t = r.table(&pin, "bench", part::POSTED).unwrap();
                let v =
                    modex::get(t, TargetRank::Rank(next()), "btl.tcp.card", false, None).unwrap();
                black_box(v.as_bytes().unwrap());
            })
        });
        c.bench_function(&format!("get_card_copy_{N}_{bytes}_1"), |b| {
            b.iter(|| {
                let pin = r.pin();
                let t = r.table(&pin, "bench", part::POSTED).unwrap();
                let v =
                    modex::get(t, TargetRank::Rank(next()), "btl.tcp.card", false, None).unwrap();
                black_box(v.as_bytes().unwrap().to_vec());
            })
        });
    }
}

criterion_group!(benches, get, publish);
criterion_main!(benches);
