//! The sweep removes every dead writer's store and never a live one, whatever the pid in its
//! name says (a writer in another pid namespace, one that daemonized), and goes on past what it
//! must not touch (symlinks, files, other users' directories, planted directories inside a
//! dead store), saying why. Writers are `rshm-test-helpers hold`
//! processes (cli/test-helpers/hold.rs).

mod common;
#[path = "../../gds/tests/support/users.rs"]
mod users;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use rshm_gds::StoreOptions;

fn rshm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rshm"))
}

/// The test helpers' binary (cli/test-helpers/): `hold`.
fn helpers() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rshm-test-helpers"))
}

/// A store kept by a `hold` helper. Dropping it stops the writer.
struct Held {
    /// The process spawned: the writer itself, the exited parent of a daemonized one, or the
    /// `unshare` around one.
    child: Child,
    store: PathBuf,
    /// The writer's pid as it printed it (in its own pid namespace).
    pid: i32,
    /// The writer's stdout after its two lines (end of file once it exits).
    out: BufReader<ChildStdout>,
}

impl Held {
    fn start(mut cmd: Command) -> Held {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut field = |prefix: &str| {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            line.trim()
                .strip_prefix(prefix)
                .unwrap_or_else(|| panic!("expected {prefix:?}, got {line:?}"))
                .to_owned()
        };
        let store = PathBuf::from(field("store "));
        let pid = field("pid ").parse().unwrap();
        Held {
            child,
            store,
            pid,
            out,
        }
    }

    fn name(&self) -> String {
        self.store
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    /// SIGKILL the writer (this process's child) and wait until it is gone: a dead store.
    fn kill(mut self) -> PathBuf {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        self.store.clone()
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn hold(base: &Path) -> Held {
    let mut cmd = helpers();
    cmd.args(["hold", "--base"]).arg(base);
    Held::start(cmd)
}

/// The pid in a store name `rshm-<pid>-<nonce>`.
fn name_pid(name: &str) -> Option<i32> {
    name.strip_prefix("rshm-")?.split('-').next()?.parse().ok()
}

/// Whether process `pid` of this pid namespace exists (a zombie does not count: it has closed
/// its files, and so released its lock).
fn running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

struct Sweep {
    text: String,
}

impl Sweep {
    fn run(base: &Path) -> Sweep {
        let out = rshm().arg("sweep").arg(base).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "rshm sweep failed: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Sweep { text }
    }

    fn says(&self, what: &str, path: &Path) -> bool {
        let line = format!("{what} {}", path.display());
        self.text
            .lines()
            .any(|l| l == line || l.starts_with(&format!("{line}:")))
    }

    /// The reason given for skipping `path`.
    fn skipped(&self, path: &Path) -> &str {
        let prefix = format!("skipped {}: ", path.display());
        self.text
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{} not reported skipped:\n{}", path.display(), self.text))
    }
}

/// A new writer over the base sweeps it too (`Writer::create`).
fn new_writer_sweeps(base: &Path) {
    let w = rshm_gds::Writer::create(StoreOptions {
        base_dir: Some(base.to_path_buf()),
        sweep: true,
        ..StoreOptions::default()
    })
    .unwrap();
    w.close().unwrap();
}

#[test]
fn a_live_store_of_a_writer_in_another_pid_namespace_is_never_swept() {
    if !users::root_for("create a pid namespace") {
        return;
    }
    let base = common::base("rshm-sweep-");
    // The writer's pid in its namespace: one that no process of this namespace has, so the
    // pid in the store's name points at nobody here.
    let pid = (20000..32000).find(|p| !running(*p)).unwrap();
    let mut cmd = Command::new("unshare");
    cmd.args(["--pid", "--fork", "--kill-child", "sh", "-c"])
        // `; :` keeps sh from exec'ing the helper: it forks, and the child takes the pid set.
        .arg(r#"echo $(($2 - 1)) > /proc/sys/kernel/ns_last_pid && "$0" hold --base "$1"; :"#)
        .arg(env!("CARGO_BIN_EXE_rshm-test-helpers"))
        .arg(base.path())
        .arg(pid.to_string());
    let mut held = Held::start(cmd);
    assert_eq!(held.pid, pid, "the writer's pid in its namespace");
    assert_eq!(
        name_pid(&held.name()),
        Some(pid),
        "the store is named for it"
    );
    assert!(
        !running(pid),
        "no process {pid} here: the name's pid says dead"
    );

    let sweep = Sweep::run(base.path());
    assert!(sweep.says("alive", &held.store), "{}", sweep.text);
    new_writer_sweeps(base.path());
    assert!(held.store.join("rshm-anchor").exists());

    // Closed by its writer (stdin closed): removed by it, nothing left.
    drop(held.child.stdin.take());
    assert!(held.child.wait().unwrap().success());
    assert!(!held.store.exists());
}

#[test]
fn a_store_kept_by_a_daemonized_writer_is_never_swept_and_is_once_the_daemon_dies() {
    let base = common::base("rshm-sweep-");
    let mut cmd = helpers();
    cmd.args(["hold", "--daemonize", "1", "--base"])
        .arg(base.path());
    let mut held = Held::start(cmd);
    // The parent that created the store has exited; its child holds the store (and its stdin:
    // kept open here, as `wait` would close it).
    let _stdin = held.child.stdin.take();
    assert!(held.child.wait().unwrap().success());
    let creator = name_pid(&held.name()).unwrap();
    assert_ne!(creator, held.pid);
    assert!(!running(creator), "the pid in the store's name is gone");
    assert!(running(held.pid), "the daemon runs");

    let sweep = Sweep::run(base.path());
    assert!(sweep.says("alive", &held.store), "{}", sweep.text);
    new_writer_sweeps(base.path());
    assert!(held.store.join("rshm-anchor").exists());

    // Killed: its store is dead, and swept.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(held.pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while running(held.pid) {
        assert!(Instant::now() < deadline, "the daemon did not die");
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = std::io::copy(&mut held.out, &mut std::io::sink());
    let sweep = Sweep::run(base.path());
    assert!(sweep.says("removed", &held.store), "{}", sweep.text);
    assert!(!held.store.exists());
}

#[test]
fn planted_entries_are_skipped_with_their_reason_and_every_dead_store_is_removed() {
    let base = common::base("rshm-sweep-");
    let b = base.path();
    // Elsewhere, what a symlink points at: never followed.
    let elsewhere = common::base("rshm-elsewhere-");
    std::fs::write(elsewhere.path().join("rshm-anchor"), b"not a store's").unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), b.join("rshm-x")).unwrap();
    std::fs::write(b.join("rshm-y"), b"a file").unwrap();

    // A dead store with a directory planted in it, named to come first in the sweep's order
    // (and with a pid no process has).
    let planted = hold(b).kill();
    let nonce = planted
        .to_string_lossy()
        .rsplit('-')
        .next()
        .unwrap()
        .to_owned();
    let first = b.join(format!("rshm-0999999999-{nonce}"));
    std::fs::rename(&planted, &first).unwrap();
    std::fs::create_dir(first.join("rshm-sub")).unwrap();
    std::fs::write(first.join("rshm-sub").join("rshm-anchor"), b"inside").unwrap();

    let dead: Vec<PathBuf> = (0..3).map(|_| hold(b).kill()).collect();
    let live = hold(b);

    // As root, a store of another user too.
    let others = rustix::process::geteuid().is_root().then(|| {
        let p = b.join("rshm-1-00000000deadbeef");
        std::fs::create_dir(&p).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o700)).unwrap();
        let nobody = users::NOBODY;
        rustix::fs::chown(
            &p,
            Some(rustix::fs::Uid::from_raw(nobody.uid)),
            Some(rustix::fs::Gid::from_raw(nobody.gid)),
        )
        .unwrap();
        p
    });

    let sweep = Sweep::run(b);
    assert!(
        sweep.text.contains(&format!("swept {}", b.display())),
        "{}",
        sweep.text
    );
    for d in &dead {
        assert!(sweep.says("removed", d), "{}", sweep.text);
        assert!(!d.exists(), "{}", d.display());
    }
    assert!(sweep.says("alive", &live.store), "{}", sweep.text);
    assert!(live.store.join("rshm-anchor").exists());

    assert!(sweep.skipped(&b.join("rshm-x")).contains("symlink"));
    assert!(elsewhere.path().join("rshm-anchor").exists());
    assert!(b.join("rshm-x").symlink_metadata().unwrap().is_symlink());
    assert!(sweep.skipped(&b.join("rshm-y")).contains("not a directory"));
    assert!(b.join("rshm-y").exists());
    let why = sweep.skipped(&first);
    assert!(
        why.contains("rshm-sub") && why.contains("directory"),
        "{why}"
    );
    assert!(
        !first.join("rshm-anchor").exists(),
        "its own files are removed"
    );
    assert!(
        first.join("rshm-sub").join("rshm-anchor").exists(),
        "never recursed into"
    );
    if let Some(p) = &others {
        assert!(sweep.skipped(p).contains("owned by uid"), "{}", sweep.text);
        assert!(p.exists());
    }
    assert!(
        sweep.text.contains(&format!(
            "{} removed, 1 alive, {} skipped",
            dead.len(),
            3 + usize::from(others.is_some())
        )),
        "{}",
        sweep.text
    );
    drop(live);
}
