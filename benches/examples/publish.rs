//! Where publishing a fence's cards as one generation spends its time (wall clock, one run):
//! `cargo run --release -p rshm-benches --example publish [N] [BYTES] [batch]` (default 1M x
//! 64 B; `batch`: the fence-batch path only).
//!
//! Two paths: `put` (`Posted::put` of every card, then publish the table) and the fence-batch
//! path (`FenceBatch::put_bytes` of every card, `Posted::apply`, publish). "publish" is
//! `put_table` + `commit`: the table encoded straight into the new file's mapping, the root, the
//! anchor store. Each path gets a fresh store and a fresh namespace (its first fence); the
//! second fence (every card replaced: the merge path) is timed too.
use std::time::Instant;

use rshm_gds::modex::Posted;
use rshm_gds::{part, StoreOptions, Writer};

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn store() -> Writer {
    Writer::create(StoreOptions {
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap()
}

fn publish(w: &mut Writer, p: &Posted) -> f64 {
    let t = Instant::now();
    let mut tx = w.begin();
    tx.put_table_packable("bench", part::POSTED, p.table())
        .unwrap();
    tx.commit().unwrap();
    ms(t)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u32 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let bytes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(64);
    let batch_only = args.next().is_some_and(|a| a == "batch");
    let gb = n as f64 * bytes as f64 / 1e9;
    println!("{n} cards x {bytes} B ({:.1} MB of cards)", gb * 1e3);

    // Reference path: Posted::put of every card.
    if !batch_only && n <= 1_000_000 && bytes <= 4096 {
        let t = Instant::now();
        let p = rshm_benches::cards(n, bytes);
        let put = ms(t);
        let t = Instant::now();
        let enc = p.table().encode(1).unwrap();
        let encode = ms(t);
        drop(enc);
        let mut w = store();
        let publish = publish(&mut w, &p);
        println!(
            "put path:    put {put:8.1} ms | encode to a Vec {encode:6.1} ms | publish {publish:6.1} ms"
        );
    }

    // Fence-batch path.
    let mut w = store();
    let mut p = Posted::new();
    for fence in 1..=2 {
        let t = Instant::now();
        let b = rshm_benches::card_batch(n, bytes);
        let build = ms(t);
        let t = Instant::now();
        p.apply(b).unwrap();
        let apply = ms(t);
        let publish = publish(&mut w, &p);
        let total = build + apply + publish;
        println!(
            "fence {fence}:     build {build:6.1} ms | apply {apply:6.1} ms | publish {publish:6.1} ms | \
             apply+publish {:6.1} ms ({:.2} GB/s) | build+apply+publish {total:6.1} ms ({:.2} GB/s)",
            apply + publish,
            gb / ((apply + publish) / 1e3),
            gb / (total / 1e3)
        );
    }
}
