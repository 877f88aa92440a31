//! Where publishing a fence of 1M 64-byte cards spends its time (wall clock, one run):
//! `cargo run --release -p rshm-benches --example publish`.
use std::time::Instant;

use gds::{part, StoreOptions, Writer};

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let t = Instant::now();
    let p = rshm_benches::cards(n, 64);
    println!("put       {:>8.1} ms", t.elapsed().as_secs_f64() * 1e3);
    let t = Instant::now();
    let bytes = p.table().encode(1).unwrap();
    println!(
        "encode    {:>8.1} ms ({} MiB)",
        t.elapsed().as_secs_f64() * 1e3,
        bytes.len() >> 20
    );
    let mut w = Writer::create(StoreOptions {
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    let t = Instant::now();
    let mut tx = w.begin();
    tx.put_table("bench", part::POSTED, p.table()).unwrap();
    tx.commit().unwrap();
    println!(
        "publish   {:>8.1} ms (encode + create + copy + commit)",
        t.elapsed().as_secs_f64() * 1e3
    );
}
