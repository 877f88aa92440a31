//! Hostile registrations: reserved or out-of-range ranks, job sizes no array or map backs,
//! maps that expand far beyond their text. Each is refused with a typed error or built within
//! the memory docs/jobdata.md "Limits" states: never an abort.
//!
//! A registration that would abort takes the test process with it, so each case runs in a
//! child process (this test binary, running the one test) under an address-space limit, and
//! reports what `jobdata::build` returned and the memory it took.

use rshm_gds::jobdata;
use rshm_gds::{Error, Info, Value};

#[path = "support/limits.rs"]
mod limits;

use limits::{build_report, in_child, mib, Report};

fn info(key: &str, value: Value) -> Info {
    Info::new(key, value)
}

fn proc_array(rank: u32) -> Info {
    Info::array(
        "pmix.pdata",
        vec![
            info("pmix.rank", Value::ProcRank(rank)),
            info("test.key", Value::Uint32(rank)),
        ],
    )
}

fn job_size(n: u32) -> Info {
    info("pmix.job.size", Value::Uint32(n))
}

fn regex(key: &str, text: &str) -> Info {
    info(key, Value::Regex(format!("{text}\0").into_bytes()))
}

/// The reserved rank values of the standard (3.2.3): UNDEF, WILDCARD, LOCAL_NODE, INVALID,
/// LOCAL_PEERS, PMIX_RANK_VALID itself, and values between it and them.
const RESERVED: [u32; 8] = [
    u32::MAX,
    u32::MAX - 1,
    u32::MAX - 2,
    u32::MAX - 3,
    u32::MAX - 4,
    u32::MAX - 50,
    0xffff_fff0,
    u32::MAX - 20,
];

fn assert_invalid(r: &Report, what: &str) {
    assert!(
        r.outcome.starts_with("InvalidArgument"),
        "{what}: expected InvalidArgument, got {}",
        r.outcome
    );
}

#[test]
fn reserved_ranks_are_refused() {
    let Some(reports) = in_child("reserved_ranks_are_refused", || {
        let mut out = Vec::new();
        for r in RESERVED {
            out.push(build_report(&[proc_array(r)]));
            out.push(build_report(&[job_size(8), proc_array(r)]));
        }
        out
    }) else {
        return;
    };
    for (r, pair) in RESERVED.iter().zip(reports.chunks(2)) {
        assert_invalid(&pair[0], &format!("rank {r:#x} alone"));
        assert_invalid(&pair[1], &format!("rank {r:#x} in a job of 8"));
    }
}

#[test]
fn a_rank_at_or_past_the_job_size_is_refused() {
    // Small: no child needed.
    let bad = |infos: Vec<Info>| match jobdata::build(None, &infos) {
        Err(Error::InvalidArgument(m)) => m,
        other => panic!("expected InvalidArgument, got {:?}", other.map(|(_, s)| s)),
    };
    let m = bad(vec![job_size(8), proc_array(8)]);
    assert!(m.contains("rank 8") && m.contains("8 ranks"), "{m}");
    bad(vec![job_size(8), proc_array(0), proc_array(1_000_000)]);
    // The maps give the size (8 ranks).
    bad(vec![
        regex("pmix.nmap", "pmix[n[1:0-1]]"),
        regex("pmix.pmap", "pmix[0-3;4-7]"),
        proc_array(8),
    ]);
    // A proc map's rank past the registered size, or past the ranks the map counts.
    bad(vec![
        job_size(4),
        regex("pmix.nmap", "pmix[n[1:0-1]]"),
        regex("pmix.pmap", "pmix[0-3;4-7]"),
    ]);
    bad(vec![
        regex("pmix.nmap", "pmix[n[1:0-1]]"),
        regex("pmix.pmap", "pmix[0;5]"),
    ]);
    // A job size past the valid ranks.
    bad(vec![job_size(u32::MAX)]);
    bad(vec![job_size(u32::MAX - 49)]);
    // Inside a job array too.
    bad(vec![Info::array(
        "pmix.job.arr",
        vec![job_size(2), proc_array(2)],
    )]);
    // At the edge: accepted.
    let (_, s) = jobdata::build(None, &[job_size(8), proc_array(7)]).unwrap();
    assert_eq!(s.job_size, 8);
    let (_, s) = jobdata::build(None, &[job_size(u32::MAX - 50)]).unwrap();
    assert_eq!(s.job_size, u32::MAX - 50);
}

/// A proc map whose one rank lies near the top of the valid ranks: with no job size it is
/// past the one rank the map counts; with a job size that large, it is far past the ranks the
/// map lists.
#[test]
fn a_proc_maps_far_rank_is_refused() {
    let Some(r) = in_child("a_proc_maps_far_rank_is_refused", || {
        vec![
            build_report(&[
                regex("pmix.nmap", "pmix[n[1:0]]"),
                regex("pmix.pmap", "pmix[4294967000]"),
            ]),
            build_report(&[
                job_size(4_000_000_000),
                regex("pmix.nmap", "pmix[n[1:0-1]]"),
                regex("pmix.pmap", "pmix[0;3999999999]"),
            ]),
        ]
    }) else {
        return;
    };
    assert_invalid(&r[0], "rank 4294967000 in a one-rank map");
    assert_invalid(&r[1], "rank 3999999999 in a two-rank map");
}

/// A high rank with no job size: the job is that large, but only one rank is described, and
/// the registration takes memory for that one.
#[test]
fn a_high_rank_alone_is_kept_sparse() {
    let Some(r) = in_child("a_high_rank_alone_is_kept_sparse", || {
        vec![
            build_report(&[proc_array(0x7fff_ffff)]),
            build_report(&[proc_array(u32::MAX - 51)]),
        ]
    }) else {
        return;
    };
    assert_eq!(r[0].outcome, "Ok job_size=2147483648");
    assert_eq!(r[1].outcome, format!("Ok job_size={}", u32::MAX - 50));
    for r in &r {
        r.assert_within_factor("one high rank");
        assert!(r.peak < 64 << 20, "{} MiB for one rank", mib(r.peak));
    }
}

/// PMIX_JOB_SIZE alone: nothing per rank is described, nothing per rank is allocated.
#[test]
fn a_job_size_alone_allocates_nothing_per_rank() {
    let sizes = [1_000_000_000u32, 4_000_000_000, u32::MAX - 50];
    let Some(r) = in_child("a_job_size_alone_allocates_nothing_per_rank", || {
        sizes
            .iter()
            .map(|&n| build_report(&[job_size(n)]))
            .collect()
    }) else {
        return;
    };
    for (n, r) in sizes.iter().zip(&r) {
        assert_eq!(r.outcome, format!("Ok job_size={n}"));
        r.assert_within_factor("a job size alone");
        assert!(r.peak < 16 << 20, "{} MiB for a job size", mib(r.peak));
    }
}

/// A few proc arrays of a 4e9-rank job: a few ranks' memory.
#[test]
fn a_few_ranks_of_a_huge_job_take_a_few_ranks_memory() {
    let Some(r) = in_child("a_few_ranks_of_a_huge_job_take_a_few_ranks_memory", || {
        let mut infos = vec![job_size(4_000_000_000)];
        infos.extend((0..100).map(|i| proc_array(i * 39_999_999)));
        vec![build_report(&infos)]
    }) else {
        return;
    };
    assert_eq!(r[0].outcome, "Ok job_size=4000000000");
    assert!(r[0].peak < 16 << 20, "{} MiB for 100 ranks", mib(r[0].peak));
}

/// A 22-byte node map naming 2^24 nodes is refused before anything is expanded; one at the
/// documented node cap builds within the factor.
#[test]
fn node_maps_are_bounded() {
    let Some(r) = in_child("node_maps_are_bounded", || {
        vec![
            build_report(&[regex("pmix.nmap", "pmix[n[1:0-16777215]]")]),
            build_report(&[regex("pmix.nmap", "pmix[n[1:0-1048576]]")]),
            build_report(&[regex("pmix.nmap", "pmix[n[1:0-262143]]")]),
        ]
    }) else {
        return;
    };
    assert_invalid(&r[0], "2^24 nodes");
    assert_invalid(&r[1], "2^20 + 1 nodes");
    assert_eq!(r[2].outcome, "Ok job_size=0");
    r[2].assert_within_factor("2^18 nodes");
}

/// A data array's elements cost the store the bytes docs/jobdata.md "Limits" states (each an
/// archived value), and the registration stays within the factor.
#[test]
fn data_arrays_cost_the_documented_bytes_an_element() {
    const N: u32 = 1_000_000;
    let Some(r) = in_child("data_arrays_cost_the_documented_bytes_an_element", || {
        let items = (0..N).map(Value::Uint32).collect();
        vec![build_report(&[info(
            "test.array",
            Value::array(rshm_gds::value::types::UINT32, items),
        )])]
    }) else {
        return;
    };
    assert_eq!(r[0].outcome, "Ok job_size=0");
    r[0].assert_within_factor("a data array");
    let per_element = r[0].store as f64 / N as f64;
    assert!(per_element <= 48.01, "{per_element} bytes an element");
}

/// Registrations of the usual shapes, at sizes a test builds in seconds: the documented factor
/// holds for them too (its K is set from these).
#[test]
fn usual_registrations_stay_within_the_factor() {
    let Some(r) = in_child("usual_registrations_stay_within_the_factor", || {
        use rshm_gds::jobdata::synthetic;
        vec![
            build_report(&synthetic::registration(20_000, 16)),
            build_report(&synthetic::registration_maps(200_000, 64)),
        ]
    }) else {
        return;
    };
    for r in &r {
        assert!(r.outcome.starts_with("Ok"), "{}", r.outcome);
        eprintln!(
            "{} MiB at the peak, store {} MiB",
            mib(r.peak),
            mib(r.store)
        );
        r.assert_within_factor("a synthetic registration");
    }
}

/// 2^22 ranks from a proc map of 1.7 kB, all far past the ranks it counts (in a 4e9-rank
/// job): each would be an entry per derived key. Refused; the same map from rank 0 builds
/// within the factor.
#[test]
fn a_proc_maps_far_ranges_are_refused() {
    let Some(r) = in_child("a_proc_maps_far_ranges_are_refused", || {
        // 64 nodes of 65,535 ranks (a node's most) from `from`, after one of rank 0.
        let map = |from: u64| {
            let nodes: Vec<String> = (0..64u64)
                .map(|n| format!("{}-{}", from + n * 65_535, from + n * 65_535 + 65_534))
                .collect();
            regex("pmix.pmap", &format!("pmix[0;{}]", nodes.join(";")))
        };
        let nodes = regex("pmix.nmap", "pmix[n[1:0-64]]");
        vec![
            build_report(&[job_size(4_000_000_000), nodes.clone(), map(3_000_000_000)]),
            build_report(&[job_size(4_000_000_000), nodes, map(1)]),
        ]
    }) else {
        return;
    };
    assert_invalid(&r[0], "2^22 far ranks");
    assert_eq!(r[1].outcome, "Ok job_size=4000000000");
    eprintln!(
        "{} MiB at the peak, store {} MiB",
        mib(r[1].peak),
        mib(r[1].store)
    );
    r[1].assert_within_factor("2^22 ranks from 0");
}
