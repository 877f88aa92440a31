//! What defining and deleting process sets costs the server (`Server::define_psets`, the body
//! of `rshm_server_define_psets`, and `define_pset` / `delete_pset`), at S = 10k, 30k and 100k
//! sets: one call defining all S, then single defines and deletes into the S already there,
//! each publishing one generation. Not criterion: each number is one call (or the spread of
//! many), printed. `cargo bench -p rshm-benches --bench psets_define`; with `-- --test` a smoke
//! run at S = 1k.

use std::time::{Duration, Instant};

use gds::Info;
use gds::Value;
use rshm_server::server::{Server, ServerOptions};

/// Ranks per set, consecutive and disjoint from the other sets'.
const SET_RANKS: u32 = 8;

fn server(base: &std::path::Path, ranks: u32) -> Server {
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.into()),
        ..ServerOptions::default()
    })
    .expect("server");
    s.register_nspace(
        "job",
        0,
        &[Info::new("pmix.job.size", Value::Uint32(ranks))],
    )
    .expect("register");
    s
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn run(s_sets: usize, singles: usize) {
    let base = tempfile::Builder::new()
        .prefix("rshm-bench-psets-")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("base");
    let ranks = (s_sets as u32 + singles as u32 + 1) * SET_RANKS;
    let mut s = server(base.path(), ranks);
    let names: Vec<String> = (0..s_sets).map(|i| format!("set{i}")).collect();
    let members: Vec<Vec<(&str, u32)>> = (0..s_sets as u32)
        .map(|i| (0..SET_RANKS).map(|k| ("job", i * SET_RANKS + k)).collect())
        .collect();
    let sets: Vec<(&str, Vec<(&str, u32)>)> =
        names.iter().map(String::as_str).zip(members).collect();
    let t = Instant::now();
    s.define_psets(&sets).expect("define_psets");
    let all = t.elapsed();

    // Single defines into the S sets, one generation each (a merge among them).
    let mut each = Vec::with_capacity(singles);
    for j in 0..singles as u32 {
        let first = (s_sets as u32 + j) * SET_RANKS;
        let m: Vec<(&str, u32)> = (0..SET_RANKS).map(|k| ("job", first + k)).collect();
        let name = format!("one{j}");
        let t = Instant::now();
        s.define_pset(&name, &m).expect("define_pset");
        each.push(t.elapsed());
    }
    let t = Instant::now();
    s.define_psets(&[("batch-of-one", vec![("job", 0)])])
        .expect("define_psets of one");
    let batch_one = t.elapsed();
    let t = Instant::now();
    s.delete_pset("set1").expect("delete_pset");
    let delete = t.elapsed();
    each.sort();
    let pct = |p: f64| ms(each[((each.len() - 1) as f64 * p) as usize]);
    println!(
        "S = {s_sets:>6}: one call defining all {:>8.1} ms | then {singles} single defines: \
         median {:.3} ms, p99 {:.3} ms, max {:.1} ms (a merge of the whole index) | \
         define_psets of 1: {:.3} ms | delete: {:.3} ms",
        ms(all),
        pct(0.5),
        pct(0.99),
        pct(1.0),
        ms(batch_one),
        ms(delete),
    );
    s.close().expect("close");
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test" || a == "--quick");
    if quick {
        run(1_000, 100);
        return;
    }
    for s_sets in [10_000, 30_000, 100_000] {
        run(s_sets, 1_000);
    }
}
