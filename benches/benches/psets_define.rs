//! What defining and deleting process sets costs the server (`Server::define_psets`, the body
//! of `rshm_server_define_psets`, and `define_pset` / `delete_pset`), at S = 10k, 30k and 100k
//! sets: one call defining all S, then 1 000 single defines, 1 000 deletes and 1 000 redefines
//! into the S already there, each publishing one generation (median, p99 and max of each: the
//! max is the bound that matters, every call must stay under it); and what a reader pays for a
//! Get among them: `PMIX_PSET_NAMES` of a process and `PMIX_PSET_MEMBERS` of a set, read from
//! the store's chunks (`rshm_gds::psets::read` and the answer built, as the client library does
//! before converting it to C). Each call's wall time, and its own time (the wall time less its
//! wait on the run queue: what is left when the machine is shared). Not criterion: each number is one call (or the spread of many),
//! printed. `cargo bench -p rshm-benches --bench psets_define`; with `-- --test` a smoke run at
//! S = 1k.

use std::time::{Duration, Instant};

use rshm_gds::psets;
use rshm_gds::{Info, Reader, Value};
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

/// The time this thread has waited on a run queue (ready, another process on the CPU), from
/// `/proc/thread-self/schedstat`; 0 where the kernel does not say.
fn run_delay() -> Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = s.split_whitespace().nth(1).and_then(|w| w.parse().ok());
    Duration::from_nanos(ns.unwrap_or(0))
}

/// One call's wall time and its own time: the wall time less the time it waited on the run
/// queue. On a machine shared with other work, a call's wall time is its own plus whole
/// scheduler slices (4 ms at HZ = 250) given to other processes; its own time is what it did.
#[derive(Clone, Copy)]
struct Took {
    wall: Duration,
    own: Duration,
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Took) {
    let d0 = run_delay();
    let t = Instant::now();
    let out = f();
    let wall = t.elapsed();
    let waited = run_delay().saturating_sub(d0);
    let own = wall.saturating_sub(waited);
    (out, Took { wall, own })
}

/// "median / p99 / max" of the wall times in ms, and the largest own time.
fn spread(d: &mut [Took]) -> String {
    let own = d.iter().map(|t| t.own).max().unwrap_or_default();
    d.sort_by_key(|t| t.wall);
    let pct = |p: f64| ms(d[((d.len() - 1) as f64 * p) as usize].wall);
    format!(
        "{:.3} / {:.3} / {:.3} ms (own max {:.3})",
        pct(0.5),
        pct(0.99),
        pct(1.0),
        ms(own)
    )
}

fn run(s_sets: usize, singles: usize) {
    let base = tempfile::Builder::new()
        .prefix("rshm-bench-psets-")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("base");
    let ranks = (s_sets as u32 + 2 * singles as u32 + 1) * SET_RANKS;
    let mut s = server(base.path(), ranks);
    let names: Vec<String> = (0..s_sets).map(|i| format!("set{i}")).collect();
    let members: Vec<Vec<(&str, u32)>> = (0..s_sets as u32)
        .map(|i| (0..SET_RANKS).map(|k| ("job", i * SET_RANKS + k)).collect())
        .collect();
    let sets: Vec<(&str, Vec<(&str, u32)>)> =
        names.iter().map(String::as_str).zip(members).collect();
    let ((), all) = timed(|| s.define_psets(&sets).expect("define_psets"));

    // Single calls into the S sets, one generation each.
    let block = |j: usize| -> Vec<(&str, u32)> {
        let first = (s_sets + j) as u32 * SET_RANKS;
        (0..SET_RANKS).map(|k| ("job", first + k)).collect()
    };
    let mut defines = Vec::with_capacity(singles);
    for j in 0..singles {
        let name = format!("one{j}");
        let m = block(j);
        let ((), took) = timed(|| s.define_pset(&name, &m).expect("define_pset"));
        defines.push(took);
    }
    // Deletes and redefines spread over the sets, so they leave and merge chunks everywhere.
    let stride = (s_sets / singles).max(1);
    let mut deletes = Vec::with_capacity(singles);
    for j in 0..singles {
        let name = &names[(j * stride + 1) % s_sets];
        let ((), took) = timed(|| s.delete_pset(name).expect("delete_pset"));
        deletes.push(took);
    }
    let mut redefines = Vec::with_capacity(singles);
    for j in 0..singles {
        let name = &names[(j * stride + 2) % s_sets];
        let m = block(singles + j);
        let ((), took) = timed(|| s.define_pset(name, &m).expect("redefine"));
        redefines.push(took);
    }
    let ((), batch_one) = timed(|| {
        s.define_psets(&[("batch-of-one", vec![("job", 0)])])
            .expect("define_psets of one")
    });

    // Gets, as a reader answers them from the current generation.
    let r = Reader::attach(s.path()).expect("reader");
    let gets = singles.min(s_sets);
    let mut names_get = Vec::with_capacity(gets);
    let mut members_get = Vec::with_capacity(gets);
    let mut chunks = 0;
    for j in 0..gets {
        let set = (j * stride + 3) % s_sets;
        let rank = set as u32 * SET_RANKS + 1;
        let pin = r.pin();
        let (n, took) = timed(|| {
            let ix = psets::read(&r, &pin).expect("sets");
            let v = psets::names_of(&ix, "job", rank).expect("a set of the rank");
            (std::hint::black_box(v), ix.chunks())
        });
        chunks = n.1;
        names_get.push(took);
        let (_, took) = timed(|| {
            let ix = psets::read(&r, &pin).expect("sets");
            let i = ix.find(&names[set]).expect("the set");
            std::hint::black_box(psets::members_value(&ix, i))
        });
        members_get.push(took);
    }
    println!(
        "S = {s_sets:>6}: one call defining all {:.1} ms (own {:.1}) | {singles} single \
         defines {} | deletes {} | redefines {} | define_psets of 1: {:.3} ms | {chunks} \
         chunks: Get PMIX_PSET_NAMES {} | Get PMIX_PSET_MEMBERS {}",
        ms(all.wall),
        ms(all.own),
        spread(&mut defines),
        spread(&mut deletes),
        spread(&mut redefines),
        ms(batch_one.wall),
        spread(&mut names_get),
        spread(&mut members_get),
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
