//! Registration of a synthetic job, for instruction-level profiling:
//! `valgrind --tool=callgrind target/release/examples/register 100000`.
fn main() {
    let ranks: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let infos = rshm_benches::registration(ranks, 64);
    let (t, s) = gds::jobdata::build(Some("node00000"), &infos).unwrap();
    let bytes = t.encode(1).unwrap();
    println!("{} ranks, {} bytes", s.job_size, bytes.len());
}
