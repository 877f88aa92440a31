//! One client's commit into a filled store. Ids: `commit/<N>_<K>_<bytes>`.
//!
//! The store holds an N-rank local job whose N clients have each committed K byte objects of
//! `bytes`; one iteration is a client's re-commit of its K values (new contents) as one
//! `Server::commit` (one generation), the clients taking turns. N = 16 and 1024, K = 16, 200 B:
//! the per-commit cost should not grow with N (what the other clients posted before).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rshm_benches::storm;
use rshm_gds::modex::Scope;

const K: u32 = 16;
const BYTES: usize = 200;

fn commit(c: &mut Criterion) {
    let mut g = c.benchmark_group("commit");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for n in [16u32, 1024] {
        let mut s = storm::server(n, None);
        for rank in 0..n {
            storm::publish(&mut s, &storm::commit(rank, K, BYTES, 0, Scope::Global));
        }
        let mut turn = 0u32;
        g.throughput(Throughput::Bytes(storm::committed_bytes(&storm::commit(
            0,
            K,
            BYTES,
            0,
            Scope::Global,
        ))));
        g.bench_function(format!("{n}_{K}_{BYTES}"), |b| {
            b.iter_batched(
                || {
                    turn = turn.wrapping_add(1);
                    let round = (turn / n) as u8 | 1;
                    storm::commit(turn % n, K, BYTES, round, Scope::Global)
                },
                |values| storm::publish(&mut s, &values),
                BatchSize::SmallInput,
            )
        });
        s.close().unwrap();
    }
    g.finish();
}

criterion_group!(benches, commit);
criterion_main!(benches);
