//! Mutated segment bytes into every reader check and lookup: never a panic, never an
//! out-of-bounds read (the process would crash), always a typed error or an answer.
//!
//! `RSHM_FUZZ_CASES` sets the number of cases (default 100,000). Cases are deterministic: a
//! failure prints its case number and mutations, and `RSHM_FUZZ_FROM=<n>` starts there.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use rshm_gds::check;
use rshm_gds::jobdata::{self, synthetic};
use rshm_gds::{Realm, TableBuilder, Value};

use common::Rng;

#[derive(Debug, Clone, Copy)]
enum Mutation {
    FlipBit(usize, u8),
    Byte(usize, u8),
    U32(usize, u32),
    U64(usize, u64),
    Truncate(usize),
    Extend(usize),
}

fn apply(bytes: &mut Vec<u8>, m: Mutation) {
    let put = |b: &mut Vec<u8>, off: usize, v: &[u8]| {
        if off + v.len() <= b.len() {
            b[off..off + v.len()].copy_from_slice(v);
        }
    };
    match m {
        Mutation::FlipBit(off, bit) => bytes[off] ^= 1 << bit,
        Mutation::Byte(off, v) => bytes[off] = v,
        Mutation::U32(off, v) => put(bytes, off, &v.to_ne_bytes()),
        Mutation::U64(off, v) => put(bytes, off, &v.to_ne_bytes()),
        Mutation::Truncate(n) => bytes.truncate(n),
        Mutation::Extend(n) => bytes.resize(bytes.len() + n, 0xa5),
    }
}

/// A mutation biased toward what breaks readers: header and index words, boundary values.
fn mutation(rng: &mut Rng, len: usize) -> Mutation {
    // Offsets: half in the first 256 bytes (headers, region offsets), half anywhere.
    let off = if rng.next().is_multiple_of(2) {
        rng.below(256.min(len))
    } else {
        rng.below(len)
    };
    let interesting = [
        0u64,
        1,
        7,
        8,
        15,
        16,
        63,
        64,
        len as u64 - 1,
        len as u64,
        len as u64 + 8,
        u32::MAX as u64,
        u64::MAX,
        1 << 31,
        1 << 40,
    ];
    match rng.below(6) {
        0 => Mutation::FlipBit(off, rng.below(8) as u8),
        1 => Mutation::Byte(off, rng.next() as u8),
        2 => Mutation::U32(off & !3, interesting[rng.below(interesting.len())] as u32),
        3 => Mutation::U64(off & !7, interesting[rng.below(interesting.len())]),
        4 => Mutation::Truncate(rng.below(len)),
        _ => Mutation::Extend(1 + rng.below(64)),
    }
}

#[test]
fn mutated_segments_never_panic_and_give_typed_errors_or_values() {
    let cases: u64 = std::env::var("RSHM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let from: u64 = std::env::var("RSHM_FUZZ_FROM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);

    // Corpus: every value type, proc columns, a job-data table, an empty table; their roots.
    let mut all_types = TableBuilder::with_ranks(8);
    for (i, (key, v)) in common::every_value().iter().enumerate() {
        all_types
            .insert(Realm::Proc(i as u32 % 16), key, v)
            .unwrap();
    }
    all_types
        .insert(Realm::Proc(3), "pmix.lrank", &Value::Uint16(3))
        .unwrap();
    let (job, _) =
        jobdata::build(Some(&synthetic::host(0)), &synthetic::registration(128, 16)).unwrap();
    let corpus: Vec<(Vec<u8>, Vec<u8>)> = [all_types, job, TableBuilder::new()]
        .iter()
        .map(|t| check::encode_store("fuzz-ns", t).unwrap())
        .collect();
    let probes: Vec<(Realm, &str)> = common::every_value()
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (Realm::Proc(i as u32 % 16), *k))
        .chain([
            (Realm::Proc(3), "pmix.lrank"),
            (Realm::Job, "pmix.job.size"),
            (Realm::Node(1), "pmix.hname"),
        ])
        .collect();
    for (t, r) in &corpus {
        assert!(
            check::table_bytes(t, &probes).is_ok(),
            "the unmutated corpus must read"
        );
        assert_eq!(check::root_bytes(r, &["fuzz-ns"]).unwrap(), 2);
    }

    let (mut errors, mut values) = (0u64, 0u64);
    for case in from..from + cases {
        let mut rng = Rng(case.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (table, root) = &corpus[rng.below(corpus.len())];
        let is_root = rng.next().is_multiple_of(8);
        let mut bytes = if is_root { root.clone() } else { table.clone() };
        let muts: Vec<Mutation> = (0..1 + rng.below(6))
            .map(|_| {
                let m = mutation(&mut rng, bytes.len().max(1));
                if !bytes.is_empty() {
                    apply(&mut bytes, m);
                }
                m
            })
            .collect();
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            if is_root {
                check::root_bytes(&bytes, &["fuzz-ns", "other"])
            } else {
                check::table_bytes(&bytes, &probes)
            }
        }));
        match outcome {
            Ok(Ok(n)) => values += n as u64,
            Ok(Err(_)) => errors += 1,
            Err(_) => panic!("case {case} panicked; mutations {muts:?} (RSHM_FUZZ_FROM={case} RSHM_FUZZ_CASES=1)"),
        }
    }
    eprintln!("{cases} fuzz cases: {errors} typed errors, {values} values read, 0 panics");
    assert!(errors > cases / 10, "mutations should mostly be caught");
}
