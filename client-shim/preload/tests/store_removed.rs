//! Real clients whose store is removed under them (its directory deleted while they run: the
//! corpus line `rm $RSHM_STORE`). rshm's own client call says so (`PMIX_ERR_UNREACH`, never
//! `PMIX_ERROR`); the preloaded `PMIx_Get` passes such a Get on to libpmix, whose answer is
//! the one the client gets.

#[path = "../../../gds/tests/support/pmixhost/mod.rs"]
mod pmixhost;

#[path = "support/build.rs"]
mod build;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use build::{component_dir, libraries_and_client};

const JOB: &str = "examples/job-2node.txt";

/// Run pmix-host on `corpus` (written to a temp file) with `args` and `env`; `client` is put
/// before the corpus path in the client command. Returns the answer lines, sorted, without
/// put/commit/fence/rm lines. pmix-host must succeed, except with `--rshm`, whose deregistration
/// fails on the removed store (the only failure it may then report).
fn run(corpus: &str, client: &str, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
    let tool = pmixhost::build();
    let path = std::env::temp_dir().join(format!(
        "rshm-preload-removed-{}-{}.txt",
        std::process::id(),
        corpus.len()
    ));
    std::fs::write(&path, corpus).unwrap();
    let mut cmd = Command::new(tool.join("pmix-host"));
    cmd.current_dir(&tool)
        .args(["--job", JOB, "--timeout", "50", "--client-cmd"])
        .arg(format!("{client} {}", path.display()))
        .args(args)
        .envs(env.iter().copied());
    let (status, out, err) = pmixhost::run_group(cmd, Duration::from_secs(60));
    let _ = std::fs::remove_file(&path);
    let err = String::from_utf8_lossy(&err);
    let removed_under_shim = args.contains(&"--rshm")
        && err.contains("rshm deregister_nspace: ERROR")
        && !err.contains("exited with status");
    assert!(
        status.is_some_and(|s| s.success()) || removed_under_shim,
        "pmix-host failed:\n{err}"
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out)
        .lines()
        .filter(|l| {
            !l.trim().is_empty()
                && !["put:", "commit ", "fence ", "rm "]
                    .iter()
                    .any(|p| l.starts_with(p))
        })
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_direct_client_whose_store_was_removed_gets_unreachable() {
    // One client (it needs no peers): a Get it had answered before the removal is still
    // answered from its mapping; one of a file it never mapped is UNREACHABLE.
    let (server, _, client) = libraries_and_client();
    let tool = pmixhost::build();
    let direct = format!(
        "{} -d {}",
        tool.join("pmix-client").display(),
        client.display()
    );
    let corpus = "a0 * PMIX_JOB_SIZE\nrm $RSHM_STORE\na1 * PMIX_JOB_SIZE\n";
    let server = server.display().to_string();
    let got = run(
        corpus,
        &direct,
        &["--rshm", &server, "--clients", "1"],
        &[("PMIX_MCA_gds", "hash")],
    );
    assert_eq!(
        got,
        ["a0 0 SUCCESS PMIX_UINT32 8", "a1 0 SUCCESS PMIX_UINT32 8"],
        "mapped before the removal"
    );
    let corpus = "rm $RSHM_STORE\na0 * PMIX_JOB_SIZE\na1 1 PMIX_LOCAL_RANK\n";
    let got = run(
        corpus,
        &direct,
        &["--rshm", &server, "--clients", "1"],
        &[("PMIX_MCA_gds", "hash")],
    );
    assert_eq!(
        got,
        ["a0 0 UNREACHABLE - -", "a1 0 UNREACHABLE - -"],
        "nothing mapped before the removal"
    );
}

#[test]
fn a_preloaded_client_whose_store_was_removed_answers_as_libpmix() {
    // The component writes the store; the preloaded clients map its job data (a first Get),
    // then the store is removed. What they had mapped keeps answering: the job data, and the
    // posted data, which is in the pack their first Get mapped with the root: the answers are
    // those of a job without rshm.
    let (_, preload, _) = libraries_and_client();
    let component = component_dir();
    let tool = pmixhost::build();
    let client = tool.join("pmix-client").display().to_string();
    let corpus = "\
put global k v1-%r
commit
fence
a0 * PMIX_JOB_SIZE
fence nocollect
rm $RSHM_STORE
fence nocollect
b0 * PMIX_JOB_SIZE
b1 1 PMIX_LOCAL_RANK
k0 0 k
k1 1 k
k2 2 k
k3 3 k
";
    let plain = run(corpus, &client, &[], &[("PMIX_MCA_gds", "hash")]);
    let stats = tempfile::tempdir().unwrap();
    let (preload, component) = (
        preload.display().to_string(),
        component.display().to_string(),
    );
    let stats_s = stats.path().display().to_string();
    let pre = run(
        corpus,
        &client,
        &[],
        &[
            ("PMIX_MCA_gds", "rshm,hash"),
            ("PMIX_MCA_mca_base_component_path", &component),
            ("LD_PRELOAD", &preload),
            ("RSHM_PRELOAD_STATS", &stats_s),
        ],
    );
    let k = plain
        .iter()
        .filter(|l| l.starts_with('k') && l.contains(" SUCCESS PMIX_STRING \"v1-"))
        .count();
    assert_eq!(k, 16, "libpmix: {plain:#?}");
    assert_eq!(plain, pre, "preloaded answers differ from libpmix's");
    // Each client was answered from the store.
    let mut clients = 0;
    for e in std::fs::read_dir(stats.path()).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        let count = |name: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or_else(|| panic!("{name} in {text}"))
        };
        assert!(count("answered ") > 0, "{text}");
        clients += 1;
    }
    assert_eq!(clients, 4);
    assert!(Path::new(&stats_s).is_dir());
}
