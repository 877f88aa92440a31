//! The OpenPMIx 4.2 gds component (`pmix_mca_gds_rshm.so`) inside unmodified OpenPMIx 4.2.2
//! servers and clients (docs/openpmix.md):
//!
//! 1. `pmix_info` lists it;
//! 2. tools/pmix-host jobs under `PMIX_MCA_gds=rshm,hash` answer exactly as under
//!    `PMIX_MCA_gds=hash` (TIMEOUT/NOT-SUPPORTED count as NOT-FOUND, as in
//!    gds/tests/openpmix_conformance.rs), every client maps the store read-only and some of its
//!    Gets were answered from it;
//! 3. Open MPI 4.1.4's mpirun runs an MPI program (Allreduce, Sendrecv ring, Comm_split) on it;
//! 4. a client given a store it cannot use (unknown format version, none, not a store) declines
//!    rshm and completes the job on hash with the same answers.
//!
//! The component is linked by `component/Makefile` from the staticlib cargo built for this
//! test (no nested cargo); Debian's `libpmix-dev` (and for 3, `openmpi-bin libopenmpi-dev`) must
//! be installed.

#[path = "../../gds/tests/support/pmixhost/mod.rs"]
mod pmixhost;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// The staticlib cargo built with this test (same profile).
fn staticlib() -> PathBuf {
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
fn component_dir() -> PathBuf {
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

/// Run `cmd` in its own process group with a wall-clock limit; returns (success, stdout, stderr).
fn run(cmd: Command, limit: Duration) -> (bool, String, String) {
    let (status, out, err) = pmixhost::run_group(cmd, limit);
    (
        status.is_some_and(|s| s.success()),
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

/// How a pmix-host job is run.
enum Gds<'a> {
    /// `PMIX_MCA_gds=hash`.
    Hash,
    /// `PMIX_MCA_gds=rshm,hash` with the component; `RSHM_GDS_STATS` into this directory.
    Rshm(&'a Path),
}

/// Run tools/pmix-host on `job` with `corpus` + a trailing `maps` line; `wrap` is put before
/// the client command (e.g. `env RSHM_STORE=...`). Returns the output lines.
fn pmix_job(job: &str, corpus: &str, gds: Gds<'_>, wrap: &str) -> Vec<String> {
    let tool = pmixhost::build();
    let corpus_text = std::fs::read_to_string(tool.join(corpus)).unwrap();
    let name = Path::new(corpus).file_name().unwrap().to_string_lossy();
    pmix_job_text(job, &name, &corpus_text, gds, wrap)
}

/// [`pmix_job`] on a corpus given as text; `name` names its file.
fn pmix_job_text(
    job: &str,
    name: &str,
    corpus_text: &str,
    gds: Gds<'_>,
    wrap: &str,
) -> Vec<String> {
    let tool = pmixhost::build();
    // One path per corpus and test process: the client command (and so PMIX_APP_ARGV, which
    // the corpus asks for) must be the same in the runs compared.
    let c = std::env::temp_dir().join(format!("rshm-gds-{}-{name}", std::process::id()));
    std::fs::write(&c, format!("{corpus_text}\nmaps\n")).unwrap();
    let client = format!(
        "{wrap}{} {}",
        tool.join("pmix-client").display(),
        c.display()
    );
    let mut cmd = Command::new(tool.join("pmix-host"));
    cmd.current_dir(&tool)
        .args(["--job", job, "--timeout", "100", "--client-cmd", &client]);
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
    let (ok, out, err) = run(cmd, Duration::from_secs(120));
    assert!(ok, "pmix-host {job} {name} failed:\n{err}");
    out.lines().map(str::to_owned).collect()
}

/// Answer lines (everything but `maps`), normalised and sorted.
fn answers(lines: &[String]) -> Vec<String> {
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
fn maps(lines: &[String]) -> BTreeMap<u32, Vec<(String, String)>> {
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
fn stats(dir: &Path) -> (u64, u64, usize) {
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
fn server_stats(dir: &Path) -> BTreeMap<String, u64> {
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

fn diff(a: &[String], b: &[String]) -> Vec<String> {
    let (sa, sb): (std::collections::BTreeSet<_>, std::collections::BTreeSet<_>) =
        (a.iter().collect(), b.iter().collect());
    sa.symmetric_difference(&sb)
        .map(|s| {
            let side = if sa.contains(s) { "hash" } else { "rshm" };
            format!("{side}: {s}")
        })
        .collect()
}

#[test]
fn pmix_info_lists_gds_rshm() {
    let mut cmd = Command::new("pmix_info");
    cmd.env("PMIX_MCA_mca_base_component_path", component_dir());
    let (ok, out, err) = run(cmd, Duration::from_secs(60));
    assert!(ok, "pmix_info failed: {err}");
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("MCA gds: rshm (")),
        "pmix_info does not list gds rshm:\n{out}"
    );
}

fn same_answers_as_hash(job: &str) {
    for corpus in ["examples/corpus-2node.txt", "examples/corpus-realms.txt"] {
        let st = tempfile::tempdir().unwrap();
        let hash = pmix_job(job, corpus, Gds::Hash, "");
        let rshm = pmix_job(job, corpus, Gds::Rshm(st.path()), "");
        let (h, r) = (answers(&hash), answers(&rshm));
        assert!(h.len() > 100, "{job} {corpus}: only {} answers", h.len());
        let d = diff(&h, &r);
        assert!(d.is_empty(), "{job} {corpus}: answers differ:\n{d:#?}");
        let m = maps(&rshm);
        assert_eq!(m.len(), 4, "{job} {corpus}: maps of {m:?}");
        for (rank, segs) in &m {
            assert!(
                segs.iter().any(|(_, p)| p.contains("/rshm-tbl-")),
                "rank {rank} mapped no table: {segs:?}"
            );
            for (perms, path) in segs {
                assert!(
                    perms.starts_with("r-") && !perms.contains('w'),
                    "rank {rank}: {path} mapped {perms}"
                );
            }
        }
        let (answered, passed, clients) = stats(st.path());
        assert_eq!(clients, 4, "{job} {corpus}: stats files");
        assert!(
            answered > 0,
            "{job} {corpus}: nothing answered from the store"
        );
        eprintln!(
            "{job} + {corpus}: {} answers equal hash's; {answered} Gets answered from shared \
             memory, {passed} left to libpmix; 4 clients mapped the store read-only",
            h.len()
        );
        // the hash run maps nothing of ours
        assert!(maps(&hash).values().all(Vec::is_empty));
    }
}

#[test]
fn pmix_host_full_job_answers_as_hash_from_read_only_segments() {
    same_answers_as_hash("examples/job-2node.txt");
}

#[test]
fn pmix_host_minimal_job_answers_as_hash_from_read_only_segments() {
    same_answers_as_hash("examples/job-2node-minimal.txt");
}

#[test]
fn clients_that_cannot_use_the_store_complete_on_hash() {
    // A real store with its anchor's format major version set to 99.
    let base = tempfile::tempdir().unwrap();
    let w = gds::Writer::create(gds::StoreOptions {
        base_dir: Some(base.path().to_path_buf()),
        ..gds::StoreOptions::default()
    })
    .unwrap();
    let anchor = w.path().join("rshm-anchor");
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&anchor)
            .unwrap();
        f.write_all_at(&99u16.to_ne_bytes(), 8).unwrap();
    }
    assert!(matches!(
        gds::Reader::attach(w.path()),
        Err(gds::Error::Version { .. })
    ));
    let not_a_store = base.path().join("plain-file");
    std::fs::write(&not_a_store, b"not a store").unwrap();
    let missing = base.path().join("missing");

    let job = "examples/job-2node.txt";
    let corpus = "examples/corpus-2node.txt";
    let hash = answers(&pmix_job(job, corpus, Gds::Hash, ""));
    for (what, store) in [
        ("unknown format version", w.path().to_path_buf()),
        ("not a store", not_a_store),
        ("no store", missing),
    ] {
        let st = tempfile::tempdir().unwrap();
        let wrap = format!("env RSHM_STORE={} ", store.display());
        let lines = pmix_job(job, corpus, Gds::Rshm(st.path()), &wrap);
        let d = diff(&hash, &answers(&lines));
        assert!(d.is_empty(), "{what}: answers differ from hash:\n{d:#?}");
        let m = maps(&lines);
        assert_eq!(m.len(), 4);
        assert!(m.values().all(Vec::is_empty), "{what}: mapped {m:?}");
        assert_eq!(stats(st.path()).2, 0, "{what}: a client used rshm");
        eprintln!("{what}: 4 clients declined rshm and completed on hash, same answers");
    }
    drop(w);
}

#[test]
fn a_value_the_store_refuses_is_read_from_hash_not_the_older_one() {
    // Every rank commits k = "v1-<rank>", then k again as a PMIX_DATA_BUFFER, which rshm does
    // not store: the component withdraws k, and every Get reads the buffer from hash.
    let job = "examples/job-2node.txt";
    let corpus = "examples/corpus-withdraw.txt";
    let st = tempfile::tempdir().unwrap();
    let hash = answers(&pmix_job(job, corpus, Gds::Hash, ""));
    let rshm = answers(&pmix_job(job, corpus, Gds::Rshm(st.path()), ""));
    let newer: Vec<&String> = hash
        .iter()
        .filter(|l| l.starts_with("w0") && l.contains(" SUCCESS PMIX_DATA_BUFFER "))
        .collect();
    assert_eq!(newer.len(), 16, "hash's answers: {hash:#?}");
    let d = diff(&hash, &rshm);
    assert!(d.is_empty(), "answers differ:\n{d:#?}");
    // The other key (l) is still answered from the store.
    let (answered, _, clients) = stats(st.path());
    assert_eq!(clients, 4);
    assert!(answered >= 16, "{answered} Gets answered from the store");
}

#[test]
fn open_mpi_job_runs_on_rshm() {
    for tool in ["mpicc", "mpirun"] {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success()),
            "{tool} not found: apt-get install -y openmpi-bin libopenmpi-dev"
        );
    }
    let tmp = tempfile::tempdir().unwrap();
    let exe = tmp.path().join("mpi_ring");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/mpi_ring.c");
    let mut cc = Command::new("mpicc");
    cc.args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src);
    let (ok, _, err) = run(cc, Duration::from_secs(120));
    assert!(ok, "mpicc failed: {err}");

    let st = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .args([
            "-x",
            "PMIX_MCA_mca_base_component_path",
            "-x",
            "PMIX_MCA_gds",
        ])
        .args(["-x", "RSHM_GDS_STATS"])
        .arg(&exe)
        .env("PMIX_MCA_mca_base_component_path", component_dir())
        .env("PMIX_MCA_gds", "rshm,hash")
        .env("RSHM_GDS_STATS", st.path());
    let (ok, out, err) = run(cmd, Duration::from_secs(120));
    assert!(ok, "mpirun failed:\n{out}\n{err}");
    let lines: Vec<String> = out.lines().map(str::to_owned).collect();
    for check in ["allreduce", "ring", "split"] {
        let mut ranks: Vec<u32> = lines
            .iter()
            .filter(|l| l.starts_with(&format!("{check} ")))
            .map(|l| {
                assert!(l.split(' ').nth(2) == Some("ok"), "{l}");
                l.split(' ').nth(1).unwrap().parse().unwrap()
            })
            .collect();
        ranks.sort();
        assert_eq!(ranks, vec![0, 1, 2, 3], "{check}:\n{out}");
    }
    let m = maps(&lines);
    assert_eq!(m.len(), 4, "{out}");
    for (rank, segs) in &m {
        assert!(
            segs.iter().any(|(_, p)| p.contains("/rshm-tbl-")),
            "MPI rank {rank} mapped no rshm table: {segs:?}"
        );
        assert!(segs
            .iter()
            .all(|(perms, _)| perms.starts_with("r-") && !perms.contains('w')));
    }
    let (answered, passed, clients) = stats(st.path());
    assert_eq!(clients, 4);
    assert!(answered > 0);
    eprintln!(
        "mpirun -np 4: Allreduce, Sendrecv ring, Comm_split correct; {answered} Gets answered \
         from shared memory, {passed} left to libpmix"
    );
}

#[test]
fn a_commit_is_published_as_one_generation() {
    // 4 clients each put K keys (half LOCAL, half GLOBAL), commit once and fence; every client
    // then reads every key of every rank. The store must publish one generation per commit (the
    // generations beyond those of a job that commits nothing), and answer as hash does.
    const K: usize = 16;
    const CLIENTS: u64 = 4;
    let job = "examples/job-2node.txt";
    let mut commit = String::new();
    for i in 0..K {
        let scope = if i % 2 == 0 { "local" } else { "global" };
        commit.push_str(&format!("put {scope} c{i} v{i}-%r\n"));
    }
    commit.push_str("commit\nfence\n");
    for rank in 0..CLIENTS {
        for i in 0..K {
            commit.push_str(&format!("q{rank}-{i} {rank} c{i}\n"));
        }
    }
    let publications = |name: &str, corpus: &str| {
        let st = tempfile::tempdir().unwrap();
        let lines = pmix_job_text(job, name, corpus, Gds::Rshm(st.path()), "");
        (lines, server_stats(st.path()), stats(st.path()))
    };
    let (_, none, _) = publications("commit-none.txt", "fence\n");
    let (rshm, with, (answered, _, clients)) = publications("commit-k.txt", &commit);
    let (baseline, with_commits) = (none["publications"], with["publications"]);
    let hash = answers(&pmix_job_text(job, "commit-k.txt", &commit, Gds::Hash, ""));
    let rshm = answers(&rshm);
    let got: Vec<&String> = hash.iter().filter(|l| l.starts_with('q')).collect();
    assert_eq!(
        got.len(),
        (CLIENTS * CLIENTS) as usize * K,
        "hash's answers: {hash:#?}"
    );
    let d = diff(&hash, &rshm);
    assert!(d.is_empty(), "answers differ:\n{d:#?}");
    assert_eq!(clients, CLIENTS as usize);
    assert!(answered > 0, "nothing answered from the store");
    let commits = with_commits - baseline;
    eprintln!(
        "{CLIENTS} commits of {K} keys: {commits} generations ({with_commits} in all, {baseline} \
         without commits), {} bytes in {} files written for them; {answered} Gets answered from \
         the store",
        with["bytes_written"] - none["bytes_written"],
        with["files_written"] - none["files_written"],
    );
    assert_eq!(
        commits, CLIENTS,
        "generations published for {CLIENTS} commits of {K} keys"
    );
}
