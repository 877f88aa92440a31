//! What the component's tests share: building `pmix_mca_gds_rshm.so`, running tools/pmix-host
//! jobs under `PMIX_MCA_gds=hash` and `rshm,hash`, and reading their answers, mappings and
//! `RSHM_GDS_STATS` counters; a tmpfs for tests that need a small filesystem, and a system user
//! to run clients as (root only).

#![allow(dead_code)]

#[path = "../../../gds/tests/support/pmixhost/mod.rs"]
pub mod pmixhost;
#[path = "../../../gds/tests/support/tmpfs.rs"]
pub mod tmpfs;
#[path = "../../../gds/tests/support/users.rs"]
pub mod users;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

/// The staticlib cargo built with this test (same profile).
pub fn staticlib() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    let profile = deps.parent().expect("profile dir").to_path_buf();
    let mut cands: Vec<PathBuf> = vec![profile.join("librshm_component.a")];
    if let Ok(rd) = std::fs::read_dir(&deps) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("librshm_component-") && n.ends_with(".a") {
                cands.push(e.path());
            }
        }
    }
    cands
        .into_iter()
        .filter(|p| p.exists())
        .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .expect("librshm_component.a not built (crate-type staticlib)")
}

/// Build `pmix_mca_gds_rshm.so` into `target/<profile>/gds-component-test/` with the Makefile
/// (serialised across test processes by a lock file) and return that directory.
pub fn component_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let a = staticlib();
        let out = a
            .ancestors()
            .find(|p| p.join("deps").is_dir())
            .expect("profile dir")
            .join("gds-component-test");
        pmixhost::make_locked(
            pmixhost::COMPONENT_BUILD_LOCK,
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &[
                format!("RSHM_A={}", a.display()),
                format!("OUT={}", out.display()),
            ],
        );
        assert!(out.join("pmix_mca_gds_rshm.so").exists());
        out
    })
    .clone()
}

/// Build `librshm_client_preload.so` (cargo, debug profile, the test's target dir) once and return it.
pub fn preload_library() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let root = pmixhost::repo_root();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let st = Command::new(cargo)
            .current_dir(&root)
            .args(["build", "-q", "-p", "rshm-client-preload", "--lib"])
            .status()
            .expect("cargo build");
        assert!(st.success(), "building rshm-preload failed");
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .map(|p| if p.is_absolute() { p } else { root.join(p) })
            .unwrap_or_else(|| root.join("target"));
        let lib = target.join("debug").join("librshm_client_preload.so");
        assert!(lib.exists(), "{} not built", lib.display());
        lib
    })
    .clone()
}

/// Run `cmd` in its own process group with a wall-clock limit; returns (success, stdout, stderr).
pub fn run(cmd: Command, limit: Duration) -> (bool, String, String) {
    let (status, out, err) = pmixhost::run_group(cmd, limit);
    (
        status.is_some_and(|s| s.success()),
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// How a pmix-host job is run.
pub enum Gds<'a> {
    /// `PMIX_MCA_gds=hash`.
    Hash,
    /// `PMIX_MCA_gds=rshm,hash` with the component; `RSHM_GDS_STATS` into this directory.
    Rshm(&'a Path),
}

/// Run tools/pmix-host on `job` with `corpus` + a trailing `maps` line; `wrap` is put before
/// the client command (e.g. `env RSHM_STORE=...`). Returns the output lines.
pub fn pmix_job(job: &str, corpus: &str, gds: Gds<'_>, wrap: &str) -> Vec<String> {
    let tool = pmixhost::build();
    let corpus_text = std::fs::read_to_string(tool.join(corpus)).unwrap();
    let name = Path::new(corpus).file_name().unwrap().to_string_lossy();
    pmix_job_text(job, &name, &corpus_text, gds, wrap)
}

/// [`pmix_job`] on a corpus given as text; `name` names its file.
pub fn pmix_job_text(
    job: &str,
    name: &str,
    corpus_text: &str,
    gds: Gds<'_>,
    wrap: &str,
) -> Vec<String> {
    let corpus = [format!("{corpus_text}\nmaps\n")];
    let (ok, lines, err) = pmix_job_run(job, name, &corpus, gds, wrap, &[]);
    assert!(ok, "pmix-host {job} {name} failed:\n{err}");
    lines
}

/// Run tools/pmix-host on `job`: one corpus for every client, or one per rank (`corpora[r]`
/// for rank r), taken as written (no `maps` added); `env` is added to the host's environment
/// (and so its clients'). Returns whether the host succeeded, its output lines and its stderr.
pub fn pmix_job_run(
    job: &str,
    name: &str,
    corpora: &[String],
    gds: Gds<'_>,
    wrap: &str,
    env: &[(&str, &str)],
) -> (bool, Vec<String>, String) {
    pmix_host_run(&["--job", job], name, corpora, gds, wrap, env)
}

/// [`pmix_job_run`] with the job given by pmix-host arguments (`--job FILE` or
/// `--replay-registration DUMP`).
pub fn pmix_host_run(
    job: &[&str],
    name: &str,
    corpora: &[String],
    gds: Gds<'_>,
    wrap: &str,
    env: &[(&str, &str)],
) -> (bool, Vec<String>, String) {
    let tool = pmixhost::build();
    // One path per corpus, test process and thread: the client command (and so PMIX_APP_ARGV,
    // which the corpus asks for) must be the same in the runs a test compares (made on its
    // thread), and two tests of one process (plain `cargo test`) must not remove each other's.
    let thread: String = format!("{:?}", std::thread::current().id())
        .chars()
        .filter(char::is_ascii_digit)
        .collect();
    let c = std::env::temp_dir().join(format!("rshm-gds-{}-{thread}-{name}", std::process::id()));
    let files = match corpora {
        [_] => vec![c.clone()],
        _ => (0..corpora.len())
            .map(|rank| PathBuf::from(format!("{}-{rank}", c.display())))
            .collect(),
    };
    let _written = RemoveOnDrop(files.clone());
    for (file, text) in files.iter().zip(corpora) {
        std::fs::write(file, text).unwrap();
    }
    let arg = match corpora {
        [_] => c.display().to_string(),
        // pmix-host puts the rank in place of %r
        _ => format!("{}-%r", c.display()),
    };
    let client = format!("{wrap}{} {arg}", tool.join("pmix-client").display());
    let mut cmd = Command::new(tool.join("pmix-host"));
    cmd.current_dir(&tool)
        .args(job)
        .args(["--timeout", "100", "--client-cmd", &client]);
    match gds {
        Gds::Hash => {
            cmd.env("PMIX_MCA_gds", "hash");
        }
        Gds::Rshm(stats) => {
            cmd.env("PMIX_MCA_gds", "rshm,hash")
                .env("PMIX_MCA_mca_base_component_path", component_dir())
                .env("RSHM_GDS_STATS", stats);
        }
    }
    cmd.envs(env.iter().copied());
    let (ok, out, err) = run(cmd, Duration::from_secs(120));
    (ok, out.lines().map(str::to_owned).collect(), err)
}

/// Files removed when dropped (a test's corpus files, also when it panics).
struct RemoveOnDrop(Vec<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Answer lines (everything but `maps`), normalised and sorted.
pub fn answers(lines: &[String]) -> Vec<String> {
    let mut v: Vec<String> = lines
        .iter()
        .filter(|l| !l.starts_with("maps ") && !l.trim().is_empty())
        .map(|l| {
            l.replace(" NOT-SUPPORTED - -", " NOT-FOUND - -")
                .replace(" TIMEOUT - -", " NOT-FOUND - -")
        })
        .collect();
    v.sort();
    v
}

/// rank -> the `maps` lines of that client.
pub fn maps(lines: &[String]) -> BTreeMap<u32, Vec<(String, String)>> {
    let mut m: BTreeMap<u32, Vec<(String, String)>> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.starts_with("maps ")) {
        let f: Vec<&str> = l.splitn(4, ' ').collect();
        let rank: u32 = f[1].parse().unwrap();
        let e = m.entry(rank).or_default();
        if f[2] != "none" {
            e.push((f[2].to_owned(), f[3].to_owned()));
        }
    }
    m
}

/// (answered, passed) summed over the clients' `RSHM_GDS_STATS` files, and how many files.
pub fn stats(dir: &Path) -> (u64, u64, usize) {
    let (mut a, mut p, mut n) = (0, 0, 0);
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("server-") {
            continue;
        }
        n += 1;
        for l in std::fs::read_to_string(e.path()).unwrap().lines() {
            let (k, v) = l.split_once(' ').unwrap();
            let v: u64 = v.parse().unwrap();
            match k {
                "answered" => a += v,
                "passed" => p += v,
                _ => {}
            }
        }
    }
    (a, p, n)
}

/// The server's `RSHM_GDS_STATS` file (`server-<pid>`): its store's counters by name.
pub fn server_stats(dir: &Path) -> BTreeMap<String, u64> {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("server-")
        })
        .collect();
    assert_eq!(files.len(), 1, "server stats files in {}", dir.display());
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_owned(), v.parse().unwrap())
        })
        .collect()
}

pub fn diff(a: &[String], b: &[String]) -> Vec<String> {
    let (sa, sb): (std::collections::BTreeSet<_>, std::collections::BTreeSet<_>) =
        (a.iter().collect(), b.iter().collect());
    sa.symmetric_difference(&sb)
        .map(|s| {
            let side = if sa.contains(s) { "hash" } else { "rshm" };
            format!("{side}: {s}")
        })
        .collect()
}
