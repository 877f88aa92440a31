//! Random registrations: job sizes, maps, proc arrays and their ranks, nesting, drawn mostly
//! from the edges (reserved ranks, sizes no map backs, maps that expand far). Whatever the
//! input, `jobdata::build` returns a status, never aborts, and takes memory within the factor
//! docs/jobdata.md "Limits" states. The cases run in one child process under an address-space
//! limit (an abort would take the test process with it).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use rshm_gds::value::types;
use rshm_gds::{Info, Value};

#[path = "support/limits.rs"]
mod limits;

use limits::{build_report, in_child, mib, Report, FACTOR_K, FACTOR_MIB};

const CASES: u32 = 64;

fn info(key: &str, value: Value) -> Info {
    Info::new(key, value)
}

/// Ranks: small ones mostly, any u32, and the reserved values and their neighbours.
fn rank() -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => 0u32..64,
        1 => any::<u32>(),
        1 => (u32::MAX - 60)..=u32::MAX,
    ]
}

fn job_size() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0u32..80,
        1 => any::<u32>(),
        1 => (u32::MAX - 60)..=u32::MAX,
        1 => Just(4_000_000_000),
    ]
}

/// A node map: a short list, or a group whose range may pass the node cap (2^20).
fn node_map() -> impl Strategy<Value = String> {
    let len = prop_oneof![4 => 0u64..32, 1 => 0u64..(1 << 17), 1 => (1u64 << 20)..(1 << 34)];
    prop_oneof![
        (1usize..6).prop_map(|n| (0..n)
            .map(|i| format!("h{i}"))
            .collect::<Vec<_>>()
            .join(",")),
        (0u64..64, len).prop_map(|(lo, len)| format!("pmix[h[1:{lo}-{}]]", lo + len)),
    ]
}

/// A proc map of 1-3 nodes, each a few ranks or ranges, some ranges past the rank cap (2^24).
fn proc_map() -> impl Strategy<Value = String> {
    let item = prop_oneof![
        4 => rank().prop_map(|r| r.to_string()),
        2 => (rank(), 0u32..64).prop_map(|(r, n)| format!("{r}-{}", r.saturating_add(n))),
        1 => (0u32..4, 0u32..(1 << 18)).prop_map(|(a, n)| format!("{a}-{}", a + n)),
        1 => (0u32..4, (1u32 << 24)..(1 << 30)).prop_map(|(a, n)| format!("{a}-{}", a + n)),
    ];
    let node = prop::collection::vec(item, 1..3).prop_map(|v| v.join(","));
    prop::collection::vec(node, 1..4).prop_map(|v| format!("pmix[{}]", v.join(";")))
}

/// An element of a proc array beside its rank: column keys of their type or another, a
/// hostname, a repeated rank, a data array.
fn proc_elem() -> impl Strategy<Value = Info> {
    prop_oneof![
        (0u16..8).prop_map(|v| info("pmix.lrank", Value::Uint16(v))),
        any::<u32>().prop_map(|v| info("pmix.nodeid", Value::Uint32(v))),
        any::<u32>().prop_map(|v| info("pmix.lrank", Value::Uint32(v))),
        Just(info("pmix.hname", Value::String("h0".into()))),
        rank().prop_map(|r| info("pmix.rank", Value::ProcRank(r))),
        (0u32..3000).prop_map(|n| info(
            "test.array",
            Value::array(types::UINT32, (0..n).map(Value::Uint32).collect())
        )),
    ]
}

fn proc_array() -> impl Strategy<Value = Info> {
    (rank(), prop::collection::vec(proc_elem(), 0..4)).prop_map(|(r, elems)| {
        let mut items = vec![info("pmix.rank", Value::ProcRank(r))];
        items.extend(elems);
        Info::array("pmix.pdata", items)
    })
}

/// The proc arrays: a few random ones, or thousands of consecutive ranks (read on several
/// threads).
fn proc_arrays() -> impl Strategy<Value = Vec<Info>> {
    prop_oneof![
        4 => prop::collection::vec(proc_array(), 0..12),
        1 => (0u32..4, 4000u32..9000).prop_map(|(from, n)| {
            (from..from + n)
                .map(|r| Info::array("pmix.pdata", vec![info("pmix.rank", Value::ProcRank(r))]))
                .collect()
        }),
    ]
}

/// A registration as drawn: its parts, nested in `depth` job (or session) arrays.
#[derive(Clone, Debug)]
struct Registration {
    size: Option<u32>,
    node_map: Option<String>,
    proc_map: Option<String>,
    procs: Vec<Info>,
    depth: usize,
    session: bool,
}

impl Registration {
    /// The size and the maps, unnested.
    fn maps(&self, size: bool, nodes: bool, procs: bool) -> Vec<Info> {
        let mut infos = Vec::new();
        if let Some(n) = self.size.filter(|_| size) {
            infos.push(info("pmix.job.size", Value::Uint32(n)));
        }
        if let Some(m) = self.node_map.as_ref().filter(|_| nodes) {
            infos.push(info("pmix.nmap", Value::Regex(m.clone().into_bytes())));
        }
        if let Some(m) = self.proc_map.as_ref().filter(|_| procs) {
            infos.push(info("pmix.pmap", Value::Regex(m.clone().into_bytes())));
        }
        infos
    }

    fn infos(&self) -> Vec<Info> {
        let mut infos = self.maps(true, true, true);
        infos.extend(self.procs.iter().cloned());
        let key = if self.session {
            "pmix.ssn.arr"
        } else {
            "pmix.job.arr"
        };
        for _ in 0..self.depth {
            infos = vec![Info::array(key, infos)];
        }
        infos
    }

    /// The parts that may be built before a refusal: each map alone, the maps together, with
    /// the size.
    fn parts(&self) -> [Vec<Info>; 4] {
        [
            self.maps(false, true, false),
            self.maps(false, false, true),
            self.maps(false, true, true),
            self.maps(true, true, true),
        ]
    }
}

fn registration() -> impl Strategy<Value = Registration> {
    let depth = prop_oneof![4 => Just(0usize), 1 => 1usize..40];
    (
        prop::option::of(job_size()),
        prop::option::of(node_map()),
        prop::option::of(proc_map()),
        proc_arrays(),
        depth,
        any::<bool>(),
    )
        .prop_map(
            |(size, node_map, proc_map, procs, depth, session)| Registration {
                size,
                node_map,
                proc_map,
                procs,
                depth,
                session,
            },
        )
}

/// The memory a registration may take: the documented factor of its store, or for one that
/// is refused, of the largest store its maps (expanded before what refers to them is
/// checked) make alone.
fn allowed(reg: &Registration, r: &Report) -> u64 {
    let store = if r.outcome.starts_with("Ok") {
        r.store
    } else {
        reg.parts()
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| build_report(p).store)
            .max()
            .unwrap_or(0)
    };
    FACTOR_K * store + (FACTOR_MIB << 20)
}

#[test]
fn any_registration_gets_a_status_within_the_factor() {
    let Some(reports) = in_child("any_registration_gets_a_status_within_the_factor", || {
        let mut runner = TestRunner::new(Config {
            cases: CASES,
            failure_persistence: None,
            ..Config::default()
        });
        let reports = std::cell::RefCell::new(Vec::new());
        let run = runner.run(&registration(), |reg| {
            let r = build_report(&reg.infos());
            let allowed = allowed(&reg, &r);
            prop_assert!(
                r.peak <= allowed,
                "{} MiB at the peak, {} MiB allowed ({FACTOR_K} x store + {FACTOR_MIB} MiB): \
                 {}",
                mib(r.peak),
                mib(allowed),
                r.outcome
            );
            reports.borrow_mut().push(r);
            Ok(())
        });
        if let Err(e) = run {
            panic!("{e}");
        }
        reports.into_inner()
    }) else {
        return;
    };
    // Every case reported (none aborted the child), each a success or a typed refusal.
    assert!(reports.len() >= CASES as usize, "{} reports", reports.len());
    let ok = |r: &Report| r.outcome.starts_with("Ok");
    for r in &reports {
        assert!(
            ok(r) || r.outcome.starts_with("InvalidArgument") || r.outcome == "OutOfSpace",
            "{}",
            r.outcome
        );
    }
    // Both kinds drawn: the strategy reaches past the edges and stays inside them.
    assert!(reports.iter().any(ok) && !reports.iter().all(ok));
}
