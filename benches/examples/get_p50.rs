//! Job-data Get latency as a p50 over batches (robust on a shared machine: a preempted batch
//! lands in the tail, not in the median), plus the memory floor of a random rank.
//!
//! `cargo run --release -p rshm-benches --example get_p50 [-- M...]` (default M = 1000 100000
//! 1000000). Per M, per case: "p50_ns=.. p10_ns=.. p90_ns=.." of the per-call time of batches
//! of 256 calls. Cases are those of benches/jobdata.rs (`job`: PMIx_Get(WILDCARD,
//! PMIX_JOB_SIZE); `proc_random`: one of 5 standard proc keys of a random rank), a key of each
//! other realm (`session`: PMIX_UNIV_SIZE of WILDCARD; `app_own`, `node_own`: PMIX_APP_SIZE and
//! PMIX_NODE_SIZE of the caller's rank; `node_random`: PMIX_NODE_SIZE of a random rank), the random
//! rank split by key (`proc_random_lrank`: a proc column; `proc_random_hname`: the rank's node,
//! then the node's hostname), and two floors for the random rank:
//! - `floor_random_u32`: one load from a random index of an M-entry u32 array (what a proc
//!   column read is, with no Get around it);
//! - `floor_chase_64MiB`: a dependent pointer chase over 64 MiB (one cold miss per step, the
//!   latency the out-of-order core cannot hide).

use std::hint::black_box;
use std::time::Instant;

use rshm_benches::{host, registration, xorshift, PROC_KEYS};
use rshm_gds::jobdata::{self, Qualifiers, TargetRank};
use rshm_gds::{part, Reader};

const BATCH: usize = 256;
const BATCHES: usize = 4000;

fn report(name: &str, m: u32, per: impl FnOnce() -> Vec<f64>) {
    // Arguments that are not numbers select cases by substring.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a.parse::<u32>().is_err())
        .collect();
    if !only.is_empty() && !only.iter().any(|o| name.contains(o.as_str())) {
        return;
    }
    let mut per = per();
    per.sort_by(|a, b| a.total_cmp(b));
    let q = |f: f64| per[((per.len() as f64 * f) as usize).min(per.len() - 1)];
    println!(
        "{name:<22} M={m:<8} p50_ns={:>6.1} p10_ns={:>6.1} p90_ns={:>6.1}",
        q(0.5),
        q(0.1),
        q(0.9)
    );
}

fn time(mut f: impl FnMut()) -> Vec<f64> {
    for _ in 0..BATCH * 50 {
        f();
    }
    (0..BATCHES)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..BATCH {
                f();
            }
            t.elapsed().as_nanos() as f64 / BATCH as f64
        })
        .collect()
}

fn main() {
    let ms: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ms = if ms.is_empty() {
        vec![1_000, 100_000, 1_000_000]
    } else {
        ms
    };
    let none = Qualifiers::default();
    for m in ms {
        let (t, _) = jobdata::build(Some(&host(0)), &registration(m, 64)).unwrap();
        let w = rshm_benches::publish("bench", &t);
        let r = Reader::attach(w.path()).unwrap();
        let get = |rank: TargetRank, key: &str| {
            let pin = r.pin();
            let t = r.table(&pin, "bench", part::DATA).unwrap();
            black_box(jobdata::get(t, None, Some(1), rank, black_box(key), &none).unwrap());
        };
        report("job", m, || {
            time(|| get(TargetRank::Wildcard, "pmix.job.size"))
        });
        // One key of each other realm (6.1), as a rank asks for its own: a session key of rank
        // WILDCARD, its app's size, its node's size; then a random rank's node size.
        report("session", m, || {
            time(|| get(TargetRank::Wildcard, "pmix.univ.size"))
        });
        report("app_own", m, || {
            time(|| get(TargetRank::Rank(1), "pmix.app.size"))
        });
        report("node_own", m, || {
            time(|| get(TargetRank::Rank(1), "pmix.node.size"))
        });
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        report("node_random", m, || {
            time(|| {
                xorshift(&mut x);
                get(TargetRank::Rank((x % m as u64) as u32), "pmix.node.size");
            })
        });
        report("proc_random", m, || {
            time(|| {
                xorshift(&mut x);
                let rank = (x % m as u64) as u32;
                get(TargetRank::Rank(rank), PROC_KEYS[(x >> 40) as usize % 5]);
            })
        });
        for (name, key) in [
            ("proc_random_lrank", "pmix.lrank"),
            ("proc_random_hname", "pmix.hname"),
        ] {
            report(name, m, || {
                time(|| {
                    xorshift(&mut x);
                    get(TargetRank::Rank((x % m as u64) as u32), key);
                })
            });
        }
        let col: Vec<u32> = (0..m).collect();
        report("floor_random_u32", m, || {
            time(|| {
                xorshift(&mut x);
                black_box(col[(x % m as u64) as usize]);
            })
        });
    }
    // A random cyclic permutation of 64 MiB of u64 indices, one per 64-byte line.
    let lines = (64 << 20) / 64;
    let mut order: Vec<usize> = (0..lines).collect();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in (1..lines).rev() {
        xorshift(&mut x);
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let mut next = vec![0usize; lines * 8];
    for w in 0..lines {
        next[order[w] * 8] = order[(w + 1) % lines] * 8;
    }
    let mut p = 0usize;
    report("floor_chase_64MiB", 0, || {
        time(|| {
            p = next[p];
            black_box(p);
        })
    });
}
