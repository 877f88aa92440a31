//! The node topology and locality from the store (docs/topology.md). Ids:
//!
//! - `topology_load/<machine|synthetic>/<how>`: an hwloc topology in hand, from hwloc's own
//!   discovery (`discover`; for the synthetic node, hwloc building it from its description),
//!   from an hwloc XML document in memory (`xml_import`), and from the store (`store`: a
//!   client reads the XML the server published, in place, and imports it). The synthetic node
//!   is `pack:2 core:64 pu:2` (2 packages, 128 cores, SMT 2).
//! - `relative_locality_256/<how>`: the relative locality of all 65 536 ordered pairs of 256
//!   ranks of the synthetic node, each bound to its own PU (256 distinct locality strings):
//!   `table` (one pin, the namespace's table validated once, then one lookup per pair),
//!   `table_per_call` (`Client::relative_locality` per pair: pin, table, validation, lookup:
//!   what `rshm_client_relative_locality` does), `parse_strings` (`rshm_topo::relative_locality` of
//!   the two strings per pair, libpmix's algorithm without hwloc: what the interposed
//!   `PMIx_Get_relative_locality` does). Printed beside them: libpmix 4.2.2's own
//!   `PMIx_Get_relative_locality` over the same pairs (tools/pmix-host/locality-check.c).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rshm_client::Client;
use rshm_gds::{Info, Value};
use rshm_server::server::{Server, ServerOptions};
use rshm_topo::topology::{load, Source};

const SYNTHETIC: &str = "pack:2 core:64 pu:2";
const RANKS: u32 = 256;

fn server(base: &std::path::Path, source: Source) -> Server {
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.into()),
        local_host: Some("node0".into()),
        topology: Some(source),
        ..ServerOptions::default()
    })
    .unwrap();
    let mut infos = vec![Info::new("pmix.job.size", Value::Uint32(RANKS))];
    for r in 0..RANKS {
        infos.push(Info::array(
            "pmix.pdata",
            vec![
                Info::new("pmix.rank", Value::ProcRank(r)),
                Info::new("pmix.cpuset", Value::String(format!("hwloc:{r}"))),
            ],
        ));
    }
    s.register_nspace("job", RANKS as i32, &infos).unwrap();
    s
}

fn topology_load(c: &mut Criterion) {
    let mut g = c.benchmark_group("topology_load");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    for (name, source) in [
        ("machine", Source::Discover),
        ("synthetic", Source::Synthetic(SYNTHETIC.into())),
    ] {
        let base = tempfile::tempdir().unwrap();
        let s = server(base.path(), source.clone());
        let client = Client::attach(Some(s.path()), Some(("job".into(), 0))).unwrap();
        let xml = client.with_topology_xml(str::to_owned).unwrap();
        eprintln!("topology_load/{name}: XML {} bytes", xml.len());
        g.bench_function(BenchmarkId::new(name, "discover"), |b| {
            b.iter(|| load(&source).unwrap())
        });
        g.bench_function(BenchmarkId::new(name, "xml_import"), |b| {
            b.iter(|| rshm_topo::from_xml(&xml).unwrap())
        });
        g.bench_function(BenchmarkId::new(name, "store"), |b| {
            b.iter(|| {
                client
                    .with_topology_xml(|x| rshm_topo::from_xml(x).unwrap())
                    .unwrap()
            })
        });
        drop(client);
        s.close().unwrap();
    }
    g.finish();
}

fn relative_locality(c: &mut Criterion) {
    let base = tempfile::tempdir().unwrap();
    let s = server(base.path(), Source::Synthetic(SYNTHETIC.into()));
    let client = Client::attach(Some(s.path()), Some(("job".into(), 0))).unwrap();
    let strings: Vec<String> = client
        .with_locality_table("job", |t| {
            (0..RANKS)
                .map(|r| format!("hwloc:{}", t.string_of(r).unwrap()))
                .collect()
        })
        .unwrap();
    // The three ways agree before they are timed.
    let mut sum = [0u64; 3];
    client
        .with_locality_table("job", |t| {
            for a in 0..RANKS {
                for b in 0..RANKS {
                    sum[0] += t.lookup(a, b).unwrap() as u64;
                    sum[1] += client.relative_locality("job", a, b).unwrap() as u64;
                    sum[2] +=
                        rshm_topo::relative_locality(&strings[a as usize], &strings[b as usize])
                            .unwrap() as u64;
                }
            }
        })
        .unwrap();
    assert!(sum[0] == sum[1] && sum[1] == sum[2], "{sum:?}");

    let mut g = c.benchmark_group("relative_locality_256");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements((RANKS * RANKS) as u64));
    g.bench_function("table", |b| {
        b.iter(|| {
            client
                .with_locality_table("job", |t| {
                    let mut acc = 0u32;
                    for a in 0..RANKS {
                        for b in 0..RANKS {
                            acc = acc.wrapping_add(t.lookup(a, b).unwrap_or(0) as u32);
                        }
                    }
                    acc
                })
                .unwrap()
        })
    });
    g.bench_function("table_per_call", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for a in 0..RANKS {
                for b in 0..RANKS {
                    acc = acc.wrapping_add(client.relative_locality("job", a, b).unwrap() as u32);
                }
            }
            acc
        })
    });
    g.bench_function("parse_strings", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for x in &strings {
                for y in &strings {
                    acc = acc.wrapping_add(rshm_topo::relative_locality(x, y).unwrap() as u32);
                }
            }
            acc
        })
    });
    g.finish();
    match libpmix_relative_ns(&strings) {
        Some(ns) => eprintln!(
            "relative_locality_256/libpmix: {ns:.1} ns per pair ({:.2} ms for all {} pairs)",
            ns * (RANKS * RANKS) as f64 / 1e6,
            RANKS * RANKS
        ),
        None => eprintln!("relative_locality_256/libpmix: not measured (no cc or libpmix-dev)"),
    }
    drop(client);
    s.close().unwrap();
}

/// libpmix's `PMIx_Get_relative_locality` per pair of `strings` (ns), timed by
/// tools/pmix-host/locality-check.c over every ordered pair; None when it cannot be built.
fn libpmix_relative_ns(strings: &[String]) -> Option<f64> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = tempfile::tempdir().ok()?;
    let exe = dir.path().join("locality-check");
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tools/pmix-host/locality-check.c");
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "pmix"])
        .output()
        .ok()?;
    let flags = String::from_utf8(flags.stdout).ok()?;
    let built = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(flags.split_whitespace())
        .status()
        .ok()?;
    if !built.success() {
        return None;
    }
    let mut child = Command::new(&exe)
        .env("PMIX_MCA_gds", "hash")
        .env("TMPDIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let mut input: String = strings.iter().map(|s| format!("S {s}\n")).collect();
    input.push_str("A\n");
    child.stdin.take()?.write_all(input.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    String::from_utf8(out.stdout)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

criterion_group!(benches, topology_load, relative_locality);
criterion_main!(benches);
