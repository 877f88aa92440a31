//! Shared fixtures of the benchmarks (benches/benches/) and profiling examples (examples/).

#![forbid(unsafe_code)]

pub mod storm;

use rshm_gds::modex::{FenceBatch, Posted, Scope};
use rshm_gds::{part, StoreOptions, TableBuilder, Value, Writer};

pub use rshm_gds::jobdata::synthetic::{host, registration};

/// A new store (default base directory) with `table` published as namespace `ns`.
pub fn publish(ns: &str, table: &TableBuilder) -> Writer {
    let mut w = Writer::create(StoreOptions {
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    let mut tx = w.begin();
    tx.put_table(ns, part::DATA, table).unwrap();
    tx.commit().unwrap();
    w
}

/// xorshift64: a cheap deterministic generator for random ranks inside timed loops.
pub fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The standard proc keys the Get benchmarks ask for a random rank.
pub const PROC_KEYS: [&str; 5] = [
    "pmix.lrank",
    "pmix.nrank",
    "pmix.nodeid",
    "pmix.appnum",
    "pmix.hname",
];

/// A fence batch: `n` processes' cards (`btl.tcp.card`, GLOBAL) of `bytes` each.
pub fn cards(n: u32, bytes: usize) -> Posted {
    let mut p = Posted::new();
    for rank in 0..n {
        let card = Value::ByteObject(vec![rank as u8; bytes]);
        p.put(rank, Scope::Global, "btl.tcp.card", &card).unwrap();
    }
    p
}

/// The same fence as [`cards`] as a fence batch (`modex::FenceBatch`): what a server fills
/// from a collecting fence's data, in rank order.
pub fn card_batch(n: u32, bytes: usize) -> FenceBatch {
    let mut b = FenceBatch::with_capacity(n as usize, n as usize * bytes);
    let mut card = vec![0u8; bytes];
    for rank in 0..n {
        card.fill(rank as u8);
        b.put_bytes(rank, Scope::Global, "btl.tcp.card", &card)
            .unwrap();
    }
    b
}
