//! Locality under Open MPI 4.1.4's mpirun against libpmix's own answers: the same job
//! (tools/pmix-host/locality-client: each local peer's PMIX_LOCALITY_STRING and PMIX_CPUSET,
//! `PMIx_Get_relative_locality` of every pair, `PMIx_Load_topology`) runs once on hash alone,
//! once with the component writing the store with topology on (`gds_rshm_topology`) and the
//! clients preloaded with librshm_client_preload.so: every line must be equal and every Get answered
//! by the store. NUMA replicas are asked for too (`gds_rshm_numa`): this node has one domain,
//! so they change nothing. Bound by core, by hardware thread (4 ranks on this machine's 2), and unbound.

mod support;

use std::process::Command;
use std::time::Duration;

use support::*;

fn job(bind: &[&str], rshm: Option<&std::path::Path>) -> Vec<String> {
    let client = pmixhost::build().join("locality-client");
    let mut cmd = Command::new("mpirun");
    cmd.arg("--allow-run-as-root")
        .args(bind)
        .env_remove("HWLOC_SYNTHETIC");
    if let Some(dir) = rshm {
        cmd.args([
            "-x",
            "PMIX_MCA_mca_base_component_path",
            "-x",
            "PMIX_MCA_gds",
        ])
        .args(["-x", "PMIX_MCA_gds_rshm_topology", "-x", "LD_PRELOAD"])
        .args(["-x", "RSHM_PRELOAD_STATS"])
        .env("PMIX_MCA_mca_base_component_path", component_dir())
        .env("PMIX_MCA_gds", "rshm,hash")
        .env("PMIX_MCA_gds_rshm_topology", "1")
        .env("LD_PRELOAD", preload_library())
        .env("RSHM_PRELOAD_STATS", dir);
    } else {
        cmd.env("PMIX_MCA_gds", "hash");
    }
    cmd.arg(&client);
    let (ok, out, err) = run(cmd, Duration::from_secs(120));
    assert!(ok, "mpirun {bind:?} failed:\n{out}\n{err}");
    let mut lines: Vec<String> = out.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// `all_answered`: whether every Get is the store's (an unbound rank's absent PMIX_CPUSET is
/// passed to libpmix, which answers NOT_FOUND as it does alone).
fn check(bind: &[&str], ranks: usize, all_answered: bool) {
    let plain = job(bind, None);
    let dir = tempfile::tempdir().unwrap();
    let ours = job(bind, Some(dir.path()));
    // Each rank: each peer's string and cpuset, the topology, and for bound peers every pair
    // in two forms.
    let pairs = if plain.iter().any(|l| l.contains(" rel ")) {
        ranks * ranks * 2
    } else {
        0
    };
    assert_eq!(plain.len(), ranks * (2 * ranks + 1 + pairs), "{plain:#?}");
    assert_eq!(
        plain, ours,
        "mpirun {bind:?}: libpmix's answers vs the store's"
    );
    let (answered, passed, clients) = stats(dir.path());
    assert_eq!(clients, ranks);
    if all_answered {
        assert_eq!(passed, 0, "every Get answered by the store");
        assert!(answered >= (2 * ranks * ranks) as u64);
    } else {
        assert!(answered >= (ranks * ranks) as u64);
    }
}

#[test]
fn bind_to_core() {
    check(&["--bind-to", "core", "-np", "2"], 2, true);
}

#[test]
fn bind_to_hwthread_oversubscribed() {
    check(
        &[
            "--bind-to",
            "hwthread:overload-allowed",
            "--oversubscribe",
            "-np",
            "4",
        ],
        4,
        true,
    );
}

#[test]
fn unbound() {
    check(&["--bind-to", "none", "-np", "2"], 2, false);
}
