//! Registration of a synthetic job, for profiling: prints the time of each phase.
//! `cargo run --release -p rshm-benches --example register -- 1000000`, or under
//! `valgrind --tool=callgrind target/release/examples/register 100000`.
use std::time::Instant;

fn main() {
    let ranks: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let t0 = Instant::now();
    let infos = rshm_benches::registration(ranks, 64);
    let t1 = Instant::now();
    let (t, s) = gds::jobdata::build(Some("node00000"), &infos).unwrap();
    let t2 = Instant::now();
    let bytes = t.encode(1).unwrap();
    let t3 = Instant::now();
    // RSHM_REPEAT=n: build n more times (so that a profiler sees build, not the array).
    let repeat: u32 = std::env::var("RSHM_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for _ in 0..repeat {
        std::hint::black_box(gds::jobdata::build(Some("node00000"), &infos).unwrap());
    }
    println!(
        "{} ranks, {} bytes: registration array {:.0} ms (not timed by the bench), build {:.0} ms, encode {:.0} ms",
        s.job_size,
        bytes.len(),
        (t1 - t0).as_secs_f64() * 1e3,
        (t2 - t1).as_secs_f64() * 1e3,
        (t3 - t2).as_secs_f64() * 1e3
    );
}
