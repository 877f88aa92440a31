//! A root server for another user's job, as Slurm's slurmstepd is, with the server preload
//! instead of the gds component: tools/pmix-host runs as root over the real libpmix 4.2.2 with
//! the job's user named in `PMIx_server_init`'s info (`PMIX_USERID` / `PMIX_GRPID`, from
//! `PMIX_HOST_JOB_UID` / `PMIX_HOST_JOB_GID`) and both preloads; its clients run as that user (a
//! system user made for the tests). The preload hands the user's store to that user: the
//! clients attach (as the user), answer Gets from it through read-only mappings, and their
//! answers are libpmix's but for the documented differences.
//!
//! Root only (it creates a user and changes uid); it prints why it skipped otherwise.

#[path = "../../../gds/tests/support/pmixhost/mod.rs"]
mod pmixhost;

#[path = "../../../gds/tests/support/users.rs"]
mod users;

#[path = "../../../gds/tests/support/differences.rs"]
mod differences;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const JOB: &str = "examples/job-2node.txt";

/// Build both preloads (this test's profile); their paths (server, client).
fn preloads() -> (PathBuf, PathBuf) {
    let root = pmixhost::repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(&root)
        .args([
            "build",
            "-q",
            "-p",
            "rshm-server-preload",
            "-p",
            "rshm-client-preload",
        ])
        .arg("--lib")
        .status()
        .expect("cargo build");
    assert!(st.success(), "building the preloads failed");
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
        .join("debug");
    (
        dir.join("librshm_server_preload.so"),
        dir.join("librshm_client_preload.so"),
    )
}

/// Copy `from` to `dir/name` with `mode`: where the job's user can reach it.
fn put(dir: &Path, name: &str, from: &Path, mode: u32) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(from, &to).expect("copy");
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode)).expect("chmod");
    to
}

/// pmix-host as root for the user's job; with `preloads` (server, client) in its environment
/// (its clients inherit it). Returns stdout and stderr.
fn run_job(stage: &Path, ids: users::Ids, preloads: Option<(&Path, &Path)>) -> (String, String) {
    let tool = pmixhost::build();
    let client = format!(
        "setpriv --reuid={} --regid={} --clear-groups {} {}",
        ids.uid,
        ids.gid,
        stage.join("pmix-client").display(),
        stage.join("corpus.txt").display()
    );
    let mut cmd = Command::new(tool.join("pmix-host"));
    cmd.current_dir(stage)
        .arg("--job")
        .arg(tool.join(JOB))
        .args(["--timeout", "100", "--client-cmd", &client])
        .env("PMIX_MCA_gds", "hash")
        .env("PMIX_HOST_JOB_UID", ids.uid.to_string())
        .env("PMIX_HOST_JOB_GID", ids.gid.to_string())
        .env_remove("LD_PRELOAD");
    if let Some((server, client)) = preloads {
        cmd.env(
            "LD_PRELOAD",
            format!("{}:{}", server.display(), client.display()),
        )
        .env("RSHM_PRELOAD_VERBOSE", "1")
        .env("RSHM_PRELOAD_STATS", stage.join("stats"));
    }
    let out = cmd.output().expect("pmix-host");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "pmix-host failed:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

/// As preload_conformance.rs: statuses of a Get the host has to wait for count as NOT-FOUND.
fn normalize(a: &pmixhost::Answer) -> (&str, &str, &str) {
    match a.status.as_str() {
        "NOT-SUPPORTED" | "TIMEOUT" | "NOT-FOUND" => ("NOT-FOUND", "-", "-"),
        s => (s, &a.type_name, &a.value),
    }
}

#[test]
fn a_root_host_s_preloaded_store_is_read_by_the_job_s_user() {
    if !users::root_for("create a user and run clients as it") {
        return;
    }
    let ids = users::test_user();
    let (server_so, client_so) = preloads();
    let stage = tempfile::Builder::new()
        .prefix("job-user-")
        .tempdir_in("/tmp")
        .expect("tempdir");
    let dir = stage.path();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let server = put(dir, "server-preload.so", &server_so, 0o644);
    let client = put(dir, "client-preload.so", &client_so, 0o644);
    put(
        dir,
        "pmix-client",
        &pmixhost::build().join("pmix-client"),
        0o755,
    );
    let corpus = std::fs::read_to_string(pmixhost::build().join("examples/corpus-2node.txt"))
        .expect("corpus");
    std::fs::write(dir.join("corpus.txt"), format!("{corpus}\nmaps\n")).expect("corpus");
    std::fs::create_dir(dir.join("stats")).expect("stats dir");
    std::fs::set_permissions(dir.join("stats"), std::fs::Permissions::from_mode(0o777))
        .expect("chmod");

    let (plain, _) = run_job(dir, ids, None);
    let (pre, err) = run_job(dir, ids, Some((&server, &client)));

    // The store was made for the user.
    assert!(
        err.contains(&format!(
            "owner uid 0, readable by uid {} gid {}",
            ids.uid, ids.gid
        )),
        "the store does not name the job's user:\n{err}"
    );
    // Every client, as the user, answered Gets from the store.
    let mut clients = 0;
    for e in std::fs::read_dir(dir.join("stats")).expect("stats") {
        let text = std::fs::read_to_string(e.expect("entry").path()).expect("stats file");
        let answered: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("answered "))
            .and_then(|n| n.parse().ok())
            .expect("answered line");
        assert!(
            answered > 0,
            "a client answered nothing from the store: {text}"
        );
        clients += 1;
    }
    assert_eq!(clients, 4, "client counters");
    // Through read-only mappings of the store's tables.
    let maps: Vec<&str> = pre.lines().filter(|l| l.starts_with("maps ")).collect();
    for rank in 0..4 {
        let mine: Vec<&&str> = maps
            .iter()
            .filter(|l| l.split(' ').nth(1) == Some(&rank.to_string()))
            .collect();
        assert!(
            mine.iter().any(|l| l.contains("/rshm-tbl-")),
            "rank {rank} mapped no table: {maps:#?}"
        );
        for l in mine {
            assert!(
                l.split(' ').nth(2).is_some_and(|p| p.starts_with("r--")),
                "{l}"
            );
        }
    }
    // The answers are libpmix's but for the documented differences.
    let known: BTreeSet<&str> = differences::FULL
        .iter()
        .map(|(id, _)| *id)
        .chain(differences::NODE_IDENTITY.iter().copied())
        .collect();
    let answers = |text: &str| -> BTreeMap<(String, u32), pmixhost::Answer> {
        let text: String = text
            .lines()
            .filter(|l| !l.starts_with("maps "))
            .map(|l| format!("{l}\n"))
            .collect();
        pmixhost::parse_answers(&text)
            .into_iter()
            .map(|a| ((a.id.clone(), a.rank), a))
            .collect()
    };
    let (plain, pre) = (answers(&plain), answers(&pre));
    assert_eq!(
        plain.keys().collect::<Vec<_>>(),
        pre.keys().collect::<Vec<_>>()
    );
    let differ: Vec<String> = plain
        .iter()
        .filter(|(k, a)| !known.contains(k.0.as_str()) && normalize(a) != normalize(&pre[*k]))
        .map(|(k, a)| {
            format!(
                "{} rank {}: libpmix {a:?} / preloaded {:?}",
                k.0, k.1, pre[k]
            )
        })
        .collect();
    assert!(differ.is_empty(), "answers differ: {differ:#?}");
    eprintln!(
        "4 clients as uid {}: answered from the root host's preloaded store, {} answers equal \
         or documented",
        ids.uid,
        plain.len()
    );
}
