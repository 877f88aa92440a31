//! Registration of a synthetic job, for profiling: prints the time of each phase.
//! `cargo run --release -p rshm-benches --example register -- 1000000`, or under
//! `valgrind --tool=callgrind target/release/examples/register 100000`. `RSHM_MAPS_ONLY=1`
//! registers the same job without its per-rank proc arrays.
use std::time::Instant;

fn main() {
    let ranks: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let t0 = Instant::now();
    // RSHM_MAPS_ONLY=1: the job without its per-rank proc arrays (a host that sends maps and
    // node arrays): local rank, node rank, node id and hostname are derived from the maps.
    let maps_only = std::env::var_os("RSHM_MAPS_ONLY").is_some_and(|v| v == "1");
    let infos = if maps_only {
        rshm_gds::jobdata::synthetic::registration_maps(ranks, 64)
    } else {
        rshm_benches::registration(ranks, 64)
    };
    let t1 = Instant::now();
    let (t, s) = rshm_gds::jobdata::build(Some("node00000"), &infos).unwrap();
    let t2 = Instant::now();
    let bytes = t.encode(1).unwrap();
    let t3 = Instant::now();
    // RSHM_REPEAT=n: build n more times (so that a profiler sees build, not the array).
    let repeat: u32 = std::env::var("RSHM_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for _ in 0..repeat {
        std::hint::black_box(rshm_gds::jobdata::build(Some("node00000"), &infos).unwrap());
    }
    println!(
        "{} ranks{}, {} bytes: registration array {:.0} ms (not timed by the bench), build {:.0} ms, encode {:.0} ms",
        s.job_size,
        if maps_only { " (maps only)" } else { "" },
        bytes.len(),
        (t1 - t0).as_secs_f64() * 1e3,
        (t2 - t1).as_secs_f64() * 1e3,
        (t3 - t2).as_secs_f64() * 1e3
    );
}
