//! Running a job: pmix-host with its clients, in their own process group, under a wall-clock
//! limit.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::{build, parse_answers, read_registration, tool_dir, Answer, Registration};

/// Wall-clock limit for one [`run_job`] (pmix-host itself is given `--timeout` 10 s less).
pub const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// A tool-directory-relative or absolute path, checked to exist and to hold no blanks (the
/// client command is split on blanks).
fn tool_path(p: &Path) -> PathBuf {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        tool_dir().join(p)
    };
    assert!(p.exists(), "{} does not exist", p.display());
    assert!(
        !p.to_string_lossy().contains([' ', '\t']),
        "{}: paths with blanks are not supported",
        p.display()
    );
    p
}

/// Run `job_file` under OpenPMIx: pmix-host registers it (dumping the registration into a temp
/// file) and starts pmix-client on `corpus_file` for every local rank. `env` is added to
/// pmix-host's environment (the clients inherit it), e.g. `[("PMIX_MCA_gds", "hash")]`.
/// Relative paths are taken relative to `tools/pmix-host` (so `"examples/job-2node.txt"`
/// works). Returns the registration and the answers sorted by (id, rank). Panics (with
/// pmix-host's stderr) if pmix-host fails or exceeds [`JOB_TIMEOUT`]; every process of the run
/// is killed before returning.
pub fn run_job(
    job_file: impl AsRef<Path>,
    corpus_file: impl AsRef<Path>,
    env: &[(&str, &str)],
) -> (Registration, Vec<Answer>) {
    run_job_with_timeout(job_file, corpus_file, env, JOB_TIMEOUT)
}

/// [`run_job`] with another wall-clock limit. pmix-host is given `--timeout` = limit - 10 s
/// (at least 1 s): a hung client is killed by pmix-host (which then fails), a hung pmix-host
/// by us (with its whole process group).
pub fn run_job_with_timeout(
    job_file: impl AsRef<Path>,
    corpus_file: impl AsRef<Path>,
    env: &[(&str, &str)],
    timeout: Duration,
) -> (Registration, Vec<Answer>) {
    run_job_with_args(job_file, corpus_file, env, &[], timeout)
}

/// [`run_job_with_timeout`] with extra pmix-host arguments (e.g. `--rshm LIB`).
pub fn run_job_with_args(
    job_file: impl AsRef<Path>,
    corpus_file: impl AsRef<Path>,
    env: &[(&str, &str)],
    args: &[&str],
    timeout: Duration,
) -> (Registration, Vec<Answer>) {
    let dir = build();
    let job = tool_path(job_file.as_ref());
    let corpus = tool_path(corpus_file.as_ref());
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let dump = std::env::temp_dir().join(format!(
        "rshm-pmixhost-{}-{}.reg",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let client_cmd = format!("{} {}", dir.join("pmix-client").display(), corpus.display());
    let host_timeout = timeout.as_secs().saturating_sub(10).max(1);

    let mut cmd = Command::new(dir.join("pmix-host"));
    cmd.current_dir(&dir)
        .arg("--job")
        .arg(&job)
        .arg("--timeout")
        .arg(host_timeout.to_string())
        .arg("--dump-registration")
        .arg(&dump)
        .arg("--client-cmd")
        .arg(&client_cmd)
        .args(args)
        .envs(env.iter().copied());
    let (status, out, err) = run_group(cmd, timeout);
    let err = String::from_utf8_lossy(&err);
    let ok = status.is_some_and(|s| s.success());
    if !ok {
        let _ = std::fs::remove_file(&dump);
        let why = match status {
            Some(s) => format!("exited with {s}"),
            None => format!("timed out after {timeout:?}"),
        };
        panic!(
            "pmix-host --job {} (corpus {}, env {env:?}) {why}; stderr:\n{err}",
            job.display(),
            corpus.display()
        );
    }
    let reg = read_registration(&dump);
    let _ = std::fs::remove_file(&dump);
    let out = String::from_utf8(out).expect("pmix-client output is not UTF-8");
    (reg, parse_answers(&out))
}

/// Run `cmd` (stdin closed) in its own process group with a wall-clock limit: the exit status
/// (None: it ran out of time), stdout and stderr. The whole group is killed at the end, so
/// stragglers (clients that outlived pmix-host, or everything on a timeout) cannot hold the
/// pipes open.
pub fn run_group(
    mut cmd: Command,
    limit: Duration,
) -> (Option<std::process::ExitStatus>, Vec<u8>, Vec<u8>) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pgid = child.id();
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stderr.read_to_end(&mut b);
        b
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for {cmd:?}: {e}"),
        }
    };
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
    if status.is_none() {
        let _ = child.wait(); // reap it (killed above)
    }
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    (status, out, err)
}
