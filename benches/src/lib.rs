//! Shared fixtures of the benchmarks (benches/benches/) and profiling examples (examples/).

use gds::{part, StoreOptions, TableBuilder, Writer};

pub use gds::jobdata::synthetic::{host, registration};

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
