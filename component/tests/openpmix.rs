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

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::*;

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
    let w = rshm_gds::Writer::create(rshm_gds::StoreOptions {
        base_dir: Some(base.path().to_path_buf()),
        ..rshm_gds::StoreOptions::default()
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
        rshm_gds::Reader::attach(w.path()),
        Err(rshm_gds::Error::Version { .. })
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
fn a_client_declines_a_store_not_owned_by_the_uid_its_server_named() {
    // The server's real store, but the clients are told another owner (RSHM_STORE_OWNER, set
    // at setup_fork, replaced in the client command): they refuse it (PMIX_ERR_NO_PERMISSIONS),
    // say why with gds_rshm_verbose, and complete the job on hash.
    let job = "examples/job-2node.txt";
    let corpus = "examples/corpus-2node.txt";
    let hash = answers(&pmix_job(job, corpus, Gds::Hash, ""));
    let st = tempfile::tempdir().unwrap();
    let owner = std::fs::metadata(st.path()).map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid()
    });
    let wrap = format!("env {}={} ", rshm_abi::env::STORE_OWNER, owner.unwrap() ^ 1);
    let text = std::fs::read_to_string(pmixhost::build().join(corpus)).unwrap();
    let corpora = [format!("{text}\nmaps\n")];
    let verbose = [("PMIX_MCA_gds_rshm_verbose", "1")];
    let (ok, lines, err) = pmix_job_run(
        job,
        "corpus-2node.txt",
        &corpora,
        Gds::Rshm(st.path()),
        &wrap,
        &verbose,
    );
    assert!(ok, "job failed:\n{err}");
    let d = diff(&hash, &answers(&lines));
    assert!(d.is_empty(), "answers differ from hash:\n{d:#?}");
    assert!(
        maps(&lines).values().all(Vec::is_empty),
        "a client mapped the store"
    );
    assert_eq!(stats(st.path()).2, 0, "a client used rshm");
    let declined: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("rshm: client declines the store, hash serves: "))
        .collect();
    assert_eq!(declined.len(), 4, "{err}");
    for l in declined {
        assert!(
            l.contains("NO-PERMISSIONS") && l.contains("untrusted"),
            "{l}"
        );
    }
}

#[test]
fn clients_told_gds_hash_do_not_use_the_servers_store() {
    // rshm off for one job's clients (docs/deploy.md): the server runs rshm,hash, its clients
    // PMIX_MCA_gds=hash; they answer as hash and never map the store.
    let job = "examples/job-2node.txt";
    let corpus = "examples/corpus-2node.txt";
    let hash = answers(&pmix_job(job, corpus, Gds::Hash, ""));
    let st = tempfile::tempdir().unwrap();
    let lines = pmix_job(job, corpus, Gds::Rshm(st.path()), "env PMIX_MCA_gds=hash ");
    let d = diff(&hash, &answers(&lines));
    assert!(d.is_empty(), "answers differ from hash:\n{d:#?}");
    let m = maps(&lines);
    assert_eq!(m.len(), 4);
    assert!(
        m.values().all(Vec::is_empty),
        "a client mapped the store: {m:?}"
    );
    assert_eq!(stats(st.path()).2, 0, "a client used rshm");
    assert!(
        server_stats(st.path())["publications"] > 0,
        "the server had no store"
    );
}

#[test]
fn a_value_the_store_refuses_is_read_from_hash_not_the_older_one() {
    // Every rank commits k = "v1-<rank>", then k again as a PMIX_PROC_STATS, which rshm does not
    // store: the component withdraws k, and every Get of k reads it from hash.
    let job = "examples/job-2node.txt";
    let corpus = "examples/corpus-withdraw.txt";
    let st = tempfile::tempdir().unwrap();
    let hash = answers(&pmix_job(job, corpus, Gds::Hash, ""));
    let rshm = answers(&pmix_job(job, corpus, Gds::Rshm(st.path()), ""));
    let of_k = |a: &[String]| -> Vec<String> {
        a.iter().filter(|l| l.starts_with("w0")).cloned().collect()
    };
    let newer = of_k(&hash)
        .iter()
        .filter(|l| l.contains(" SUCCESS PMIX_PROC_STATS "))
        .count();
    assert_eq!(newer, 16, "hash's answers: {hash:#?}");
    let d = diff(&of_k(&hash), &of_k(&rshm));
    assert!(d.is_empty(), "answers differ:\n{d:#?}");
    // The other key (l) is still in the store, for every rank. (OpenPMIx 4.2.2's own store
    // answers a peer's l NOT-FOUND here: it cannot send a rank's data once it holds process
    // statistics.)
    let l: Vec<&String> = rshm.iter().filter(|l| l.starts_with("w1")).collect();
    assert_eq!(l.len(), 16);
    for line in l {
        let f: Vec<&str> = line.split(' ').collect();
        let owner = &f[0][2..];
        assert_eq!(
            &f[2..],
            ["SUCCESS", "PMIX_STRING", &format!("\"v1-{owner}\"")],
            "{line}"
        );
    }
    let (answered, _, clients) = stats(st.path());
    assert_eq!(clients, 4);
    assert!(answered >= 12, "{answered} Gets answered from the store");
}

#[test]
fn a_posted_data_buffer_is_served_from_the_store() {
    // Every rank commits k = "v1-<rank>", then k again as a PMIX_DATA_BUFFER. Every rank reads
    // every rank's k: the data buffer, under hash and under rshm alike, and the store answers
    // the 12 reads of a peer's k itself (a rank's own data buffer is libpmix's to answer: see
    // own_lossy in component/src/exports.rs).
    let job = "examples/job-2node.txt";
    let corpus = "examples/corpus-databuffer.txt";
    let hash = answers(&pmix_job(job, corpus, Gds::Hash, ""));
    let st = tempfile::tempdir().unwrap();
    let rshm = answers(&pmix_job(job, corpus, Gds::Rshm(st.path()), ""));
    let buffers = hash
        .iter()
        .filter(|l| l.starts_with("w0") && l.contains(" SUCCESS PMIX_DATA_BUFFER "))
        .count();
    assert_eq!(buffers, 16, "hash's answers: {hash:#?}");
    let d = diff(&hash, &rshm);
    assert!(d.is_empty(), "answers differ:\n{d:#?}");
    // The same job without the reads: the difference in Gets answered from the store is the
    // reads of k (a withdrawn k would add none).
    let text = std::fs::read_to_string(pmixhost::build().join(corpus)).unwrap();
    let setup: String = text
        .lines()
        .filter(|l| !l.starts_with('w'))
        .map(|l| format!("{l}\n"))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let setup_corpus = dir.path().join("corpus-databuffer-setup.txt");
    std::fs::write(&setup_corpus, setup).unwrap();
    let st0 = tempfile::tempdir().unwrap();
    pmix_job(
        job,
        setup_corpus.to_str().unwrap(),
        Gds::Rshm(st0.path()),
        "",
    );
    let (with_reads, _, clients) = stats(st.path());
    let (without, _, clients0) = stats(st0.path());
    assert_eq!((clients, clients0), (4, 4));
    assert_eq!(
        with_reads - without,
        12,
        "Gets answered from the store: {with_reads} with the reads of k, {without} without"
    );
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
