//! Locality strings and relative locality against libpmix's own answers: Debian's libpmix
//! 4.2.2, as a PMIx server (tools/pmix-host/locality-check.c), generates the locality string
//! of each cpuset (`PMIx_server_generate_locality_string`) and compares pairs of strings
//! (`PMIx_Get_relative_locality`), on this machine and on synthetic topologies (hwloc's
//! `HWLOC_SYNTHETIC`, which libpmix's discovery honours). Every answer must be byte-equal,
//! statuses included.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::types::ObjectType;
use hwlocality::Topology;
use rshm_topo::topology::{load, Source};
use rshm_topo::{cpulist, locality_string, relative_locality, RelativeError};

const TAKE_NEXT_OPTION: i32 = -1366;
const PMIX_ERROR: i32 = -1;

/// locality-check, built once per test process: tests run as threads of one process under
/// `cargo test`, and one building it while another runs it made that exec fail ("Text file
/// busy").
fn checker() -> &'static Path {
    static CHECKER: OnceLock<PathBuf> = OnceLock::new();
    CHECKER.get_or_init(build_checker)
}

fn build_checker() -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tools/pmix-host/locality-check.c");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("locality-check-{}", std::process::id()));
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "pmix"])
        .output()
        .expect("pkg-config");
    assert!(flags.status.success(), "pkg-config pmix (libpmix-dev)");
    let flags = String::from_utf8(flags.stdout).unwrap();
    let st = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .args(flags.split_whitespace())
        .status()
        .expect("cc");
    assert!(st.success(), "building locality-check.c");
    out
}

/// libpmix's answer lines to `queries`, with its topology from `synthetic` (None: this machine).
fn libpmix(synthetic: Option<&str>, queries: &[String]) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(checker());
    cmd.env("PMIX_MCA_gds", "hash")
        .env("TMPDIR", tmp.path())
        .env("PMIX_SERVER_TMPDIR", tmp.path())
        .env_remove("HWLOC_XMLFILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    match synthetic {
        Some(s) => cmd.env("HWLOC_SYNTHETIC", s),
        None => cmd.env_remove("HWLOC_SYNTHETIC"),
    };
    let mut child = cmd.spawn().expect("locality-check");
    let mut input = queries.join("\n");
    input.push('\n');
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "locality-check failed");
    let lines: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines.len(), queries.len(), "one answer per query");
    lines
}

/// Cpusets to try: each PU, each core's, pairs of PUs apart, each package's, runs, all.
fn cpusets(t: &Topology) -> Vec<Vec<u32>> {
    let pus: Vec<u32> = t
        .objects_with_type(ObjectType::PU)
        .map(|o| o.os_index().unwrap() as u32)
        .collect();
    let mut sets: Vec<Vec<u32>> = pus.iter().map(|&p| vec![p]).collect();
    for ty in [ObjectType::Core, ObjectType::Package] {
        for o in t.objects_with_type(ty) {
            sets.push(
                o.cpuset()
                    .unwrap()
                    .iter_set()
                    .map(|i| usize::from(i) as u32)
                    .collect(),
            );
        }
    }
    let n = pus.len();
    for i in (0..n).step_by(n.div_ceil(8).max(1)) {
        sets.push(vec![pus[i], pus[(i + n / 2 + 1) % n]]);
        sets.push(pus[i..n.min(i + 3)].to_vec());
    }
    sets.push(pus.clone());
    for s in &mut sets {
        s.sort_unstable();
        s.dedup();
    }
    sets
}

fn ours_status(r: Result<u16, RelativeError>) -> String {
    match r {
        Ok(loc) => format!("{TAKE_NEXT_OPTION} {loc:x}"),
        Err(RelativeError::NotHwloc) => format!("{TAKE_NEXT_OPTION} -"),
        Err(RelativeError::Unrecognized(loc)) => format!("{PMIX_ERROR} {loc:x}"),
    }
}

fn check(synthetic: Option<&str>) {
    let t = match synthetic {
        Some(s) => load(&Source::Synthetic(s.to_owned())).unwrap(),
        None => rshm_topo::discover().unwrap(),
    };
    let sets = cpusets(&t);
    let queries: Vec<String> = sets
        .iter()
        .map(|s| format!("L {}", cpulist::format(s.iter().copied())))
        .collect();
    let theirs = libpmix(synthetic, &queries);
    let mut strings = Vec::new();
    for (s, line) in sets.iter().zip(&theirs) {
        let mut cs = CpuSet::new();
        for &i in s {
            cs.set(i as usize);
        }
        let ours = locality_string(&t, &cs);
        assert_eq!(
            format!("0 {}", ours.as_deref().unwrap_or("(null)")),
            *line,
            "locality of cpuset {s:?} on {synthetic:?}"
        );
        strings.extend(ours);
    }
    strings.dedup();
    strings.truncate(40);
    let mut pairs: Vec<(String, String)> = Vec::new();
    for a in &strings {
        for b in &strings {
            pairs.push((format!("hwloc:{a}"), format!("hwloc:{b}")));
        }
    }
    // libpmix's own strings lack the prefix: it refuses them; odd but accepted forms too.
    let first = strings[0].clone();
    pairs.push((first.clone(), first.clone()));
    pairs.push((format!("HWLOC:{first}"), format!("hwloc:{first}")));
    pairs.push(("hwloc:CR4-".into(), "hwloc:CR9".into()));
    pairs.push(("hwloc:XX0:SK0".into(), "hwloc:XX0:SK0".into()));
    pairs.push(("hwloc:SK1".into(), "hwloc:SK0:SK1".into()));
    pairs.push(("hwloc::SK0::".into(), "hwloc:SK0".into()));
    pairs.push(("hwloc:CRjunk".into(), "hwloc:CRjunk".into()));
    let queries: Vec<String> = pairs.iter().map(|(a, b)| format!("R {a}|{b}")).collect();
    let theirs = libpmix(synthetic, &queries);
    for ((a, b), line) in pairs.iter().zip(&theirs) {
        assert_eq!(
            ours_status(relative_locality(a, b)),
            *line,
            "{a} vs {b} on {synthetic:?}"
        );
    }
}

#[test]
fn this_machine() {
    check(None);
}

#[test]
fn synthetic_two_packages_128_cores_smt2() {
    check(Some("pack:2 core:64 pu:2"));
}

#[test]
fn synthetic_caches() {
    check(Some("pack:2 l3:1 l2:2 l1:1 core:1 pu:2"));
}

#[test]
fn synthetic_numa_per_package() {
    check(Some("pack:2 numa:2 core:4 pu:2"));
}
