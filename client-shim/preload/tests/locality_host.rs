//! Locality against libpmix's own answers, through real PMIx clients: tools/pmix-host runs
//! examples/job-locality.txt (ranks registered with PMIX_CPUSET only) over Debian's libpmix
//! 4.2.2 twice. Once plain, the host adding the PMIX_LOCALITY_STRING that libpmix generates
//! (`PMIx_server_generate_locality_string`, as PRRTE registers it); once with the store
//! written by server-shim with topology on (`rshm.topology`: it derives the strings itself)
//! and the clients preloaded with librshm_client_preload.so. tools/pmix-host/locality-client prints
//! each local peer's locality string and cpuset, `PMIx_Get_relative_locality` of every pair
//! (strings as stored and with the `hwloc:` prefix, statuses included) and what
//! `PMIx_Load_topology` gives; both runs must print the same lines, and the second's Gets must
//! all have been answered by the store. On this machine and on synthetic topologies (hwloc's
//! `HWLOC_SYNTHETIC`, honoured by libpmix and by the store's server alike).

#[path = "../../../gds/tests/support/pmixhost/mod.rs"]
mod pmixhost;

#[path = "support/build.rs"]
mod build;

use std::process::Command;
use std::time::Duration;

fn run(synthetic: Option<&str>, rshm: bool) -> (Vec<String>, String) {
    let dir = pmixhost::build();
    let (server, preload) = build::libraries();
    let stats = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(dir.join("pmix-host"));
    cmd.current_dir(&dir)
        .arg("--job")
        .arg(dir.join("examples/job-locality.txt"))
        .arg("--timeout")
        .arg("50")
        .arg("--client-cmd")
        .arg(dir.join("locality-client"))
        .env("PMIX_MCA_gds", "hash")
        .env_remove("HWLOC_XMLFILE");
    match synthetic {
        Some(s) => cmd.env("HWLOC_SYNTHETIC", s),
        None => cmd.env_remove("HWLOC_SYNTHETIC"),
    };
    if rshm {
        cmd.arg("--rshm")
            .arg(&server)
            .env("PMIX_HOST_RSHM_TOPOLOGY", "1")
            .env("LD_PRELOAD", &preload)
            .env("RSHM_PRELOAD_STATS", stats.path());
    } else {
        cmd.env("PMIX_HOST_GEN_LOCALITY", "1");
    }
    let (status, out, err) = pmixhost::run_group(cmd, Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "pmix-host failed: {}",
        String::from_utf8_lossy(&err)
    );
    let mut lines: Vec<String> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    let mut counts = String::new();
    for e in std::fs::read_dir(stats.path()).unwrap() {
        counts.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    (lines, counts)
}

fn check(synthetic: Option<&str>) {
    let (plain, _) = run(synthetic, false);
    let (ours, counts) = run(synthetic, true);
    // 4 clients: 4 peers' string and cpuset, 16 pairs in 2 forms, the topology.
    assert_eq!(plain.len(), 4 * (8 + 32 + 1), "{plain:#?}");
    assert!(
        plain.iter().any(|l| l.contains(" hwloc -1366 4")),
        "no locality computed"
    );
    assert_eq!(
        plain, ours,
        "libpmix's answers vs the store's on {synthetic:?}"
    );
    assert_eq!(counts.matches("passed 0").count(), 4, "{counts}");
    assert_eq!(counts.matches("answered 13").count(), 4, "{counts}");
}

#[test]
fn this_machine() {
    check(None);
}

#[test]
fn synthetic_two_packages_128_cores_smt2() {
    check(Some("pack:2 core:64 pu:2"));
}
