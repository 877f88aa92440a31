//! The component's MCA parameters, registered the OpenPMIx way (`pmix_info` lists them, and
//! `PMIX_MCA_gds_rshm_*` sets them): `gds_rshm_dir` places the store (before `$RSHM_DIR`), and
//! `gds_rshm_verbose` logs where the store went and why a client declined it.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use support::*;

const JOB: &str = "examples/job-2node.txt";

/// `pmix_info --param gds rshm --level 9` with the component: what it says of gds/rshm's
/// parameters as one line of text (the "MCA gds rshm:" column dropped, whitespace collapsed).
fn pmix_info(env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new("pmix_info");
    cmd.args(["--param", "gds", "rshm", "--level", "9"])
        .env("PMIX_MCA_mca_base_component_path", component_dir())
        .envs(env.iter().copied());
    let (ok, out, err) = run(cmd, Duration::from_secs(60));
    assert!(ok, "pmix_info failed:\n{out}\n{err}");
    // A parameter's lines: the first after its "MCA <framework> <component>:" column, the
    // wrapped rest below it with that column blank.
    let mut ours = false;
    let mut words: Vec<&str> = Vec::new();
    for line in out.lines() {
        let text = match line.split_once("MCA ") {
            Some((_, rest)) => {
                ours = rest.starts_with("gds rshm:");
                rest.split_once(':').map_or("", |(_, t)| t)
            }
            None => line,
        };
        if ours {
            words.extend(text.split_whitespace());
        }
    }
    words.join(" ")
}

#[test]
fn pmix_info_lists_both_parameters_and_their_values() {
    let text = pmix_info(&[]);
    for expected in [
        "\"gds_rshm_dir\" (current value: \"\", data source: default, type: string)",
        "\"gds_rshm_verbose\" (current value: \"0\", data source: default, type: int)",
    ] {
        assert!(text.contains(expected), "no {expected} in:\n{text}");
    }
    let text = pmix_info(&[
        ("PMIX_MCA_gds_rshm_dir", "/some/dir"),
        ("PMIX_MCA_gds_rshm_verbose", "3"),
    ]);
    for expected in [
        "\"gds_rshm_dir\" (current value: \"/some/dir\", data source: environment",
        "\"gds_rshm_verbose\" (current value: \"3\", data source: environment",
    ] {
        assert!(text.contains(expected), "no {expected} in:\n{text}");
    }
}

/// A job of four clients reading one job-data key, with `env` added; returns the server's
/// verbose line about its store and the paths the clients mapped.
fn where_is_the_store(env: &[(&str, &str)]) -> (String, Vec<String>) {
    let st = tempfile::tempdir().unwrap();
    let corpus = ["a0 * PMIX_JOB_SIZE\nmaps\n".to_owned()];
    let mut all = vec![("PMIX_MCA_gds_rshm_verbose", "1")];
    all.extend_from_slice(env);
    let (ok, lines, err) = pmix_job_run(JOB, "where.txt", &corpus, Gds::Rshm(st.path()), "", &all);
    assert!(ok, "job failed:\n{err}");
    let said: Vec<&str> = err.lines().filter(|l| l.contains("rshm: store ")).collect();
    assert_eq!(said.len(), 1, "the server's verbose lines:\n{err}");
    let mapped: Vec<String> = maps(&lines)
        .into_values()
        .flatten()
        .map(|(_, path)| path)
        .collect();
    assert!(
        !mapped.is_empty(),
        "no client mapped the store:\n{lines:#?}"
    );
    (said[0].to_owned(), mapped)
}

fn check_placed(said: &str, mapped: &[String], base: &Path) {
    let fs = if rshm_gds::is_tmpfs(base) {
        "(tmpfs)"
    } else {
        "(NOT tmpfs)"
    };
    let expected = format!("rshm: store {}/rshm-", base.display());
    assert!(
        said.contains(&expected),
        "{said}: not in {}",
        base.display()
    );
    assert!(said.contains(fs), "{said}: not {fs}");
    let owner = format!(
        "owner uid {}, readable by uid - gid -",
        rustix::process::geteuid().as_raw()
    );
    assert!(said.ends_with(&owner), "{said}");
    for path in mapped {
        assert!(
            path.starts_with(&format!("{}/rshm-", base.display())),
            "{path}"
        );
    }
}

#[test]
fn gds_rshm_dir_places_the_store_before_rshm_dir_and_verbose_says_where() {
    // /tmp is a disk here, /dev/shm a tmpfs: the log says which.
    let by_param = tempfile::tempdir().unwrap();
    let by_env = tempfile::tempdir_in("/dev/shm").unwrap();
    let (param, env) = (
        by_param.path().display().to_string(),
        by_env.path().display().to_string(),
    );
    let (said, mapped) =
        where_is_the_store(&[("PMIX_MCA_gds_rshm_dir", &param), ("RSHM_DIR", &env)]);
    check_placed(&said, &mapped, by_param.path());
    eprintln!("{said}");
    let (said, mapped) = where_is_the_store(&[("RSHM_DIR", &env)]);
    check_placed(&said, &mapped, by_env.path());
    eprintln!("{said}");
}

#[test]
fn a_gds_rshm_dir_the_server_cannot_use_leaves_the_job_to_hash() {
    // A directory that does not exist: the store cannot be created; the server says so, tells
    // no client about a store, and every answer is hash's.
    let job = "examples/job-2node.txt";
    let corpus = "examples/corpus-2node.txt";
    let hash = answers(&pmix_job(job, corpus, Gds::Hash, ""));
    let missing = tempfile::tempdir().unwrap().path().join("missing");
    let st = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(pmixhost::build().join(corpus)).unwrap();
    let corpora = [format!("{text}\nmaps\n")];
    let env = [
        ("PMIX_MCA_gds_rshm_dir", missing.to_str().unwrap()),
        ("PMIX_MCA_gds_rshm_verbose", "1"),
    ];
    let (ok, lines, err) = pmix_job_run(
        job,
        "corpus-2node.txt",
        &corpora,
        Gds::Rshm(st.path()),
        "",
        &env,
    );
    assert!(ok, "job failed:\n{err}");
    assert!(
        err.lines()
            .any(|l| l.contains("rshm: cannot open the store: ")),
        "no reason given:\n{err}"
    );
    assert!(!missing.exists(), "the directory was created");
    let d = diff(&hash, &answers(&lines));
    assert!(d.is_empty(), "answers differ from hash:\n{d:#?}");
    assert!(maps(&lines).values().all(Vec::is_empty));
    assert_eq!(stats(st.path()).2, 0, "a client used rshm");
}

/// `gds_rshm_verbose=2` adds each process's counters on stderr at finalize (the server's store
/// work, a client's Gets answered from the store); level 1 does not print them.
#[test]
fn verbose_level_2_prints_the_counters_at_finalize() {
    let run_at = |level: &str| {
        let st = tempfile::tempdir().unwrap();
        let corpus = ["a0 * PMIX_JOB_SIZE\n".to_owned()];
        let env = [("PMIX_MCA_gds_rshm_verbose", level)];
        let (ok, _, err) = pmix_job_run(JOB, "stats.txt", &corpus, Gds::Rshm(st.path()), "", &env);
        assert!(ok, "job failed:\n{err}");
        err
    };
    let err = run_at("2");
    let server = err
        .lines()
        .filter(|l| l.contains("rshm: server stats: publications "))
        .count();
    assert_eq!(server, 1, "the server's counters:\n{err}");
    assert!(
        err.lines()
            .any(|l| l.contains("rshm: client stats: answered ")),
        "no client's counters:\n{err}"
    );
    let err = run_at("1");
    assert!(!err.contains(" stats: "), "counters at level 1:\n{err}");
}
