//! Root-only test fixtures: a system user to act as another user (a job's user, an attacker),
//! and commands run as it. Shared by the tests of several crates (`#[path]`).
//!
//! Without root they cannot check anything. libtest has no way to report a test skipped at run
//! time, and `#[ignore]` would keep them from running in CI, so: under CI (`CI` set) a run
//! without root fails, since these tests are there to run; elsewhere each prints a
//! `SKIPPED (not root)` line and returns.

#![allow(dead_code)] // each including test uses a part

use std::ffi::OsStr;
use std::process::{Command, Output};

/// Whether the test can run: true as root. Otherwise it fails under CI and says it is skipped
/// elsewhere.
pub fn root_for(what: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(
        !ci,
        "CI runs the tests as root, this run is not: it cannot {what}"
    );
    eprintln!("SKIPPED (not root): needs root to {what}; nothing was checked");
    false
}

/// The test user's name.
pub const USER: &str = "rshm-test";

/// A uid and gid to act as.
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    pub uid: u32,
    pub gid: u32,
}

/// `nobody`: a user no store names.
pub const NOBODY: Ids = Ids {
    uid: 65534,
    gid: 65534,
};

/// The test user (created if missing, a system user without a home).
pub fn test_user() -> Ids {
    let _ = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            USER,
        ])
        .output();
    let id = |flag: &str| -> u32 {
        let out = Command::new("id").args([flag, USER]).output().unwrap();
        assert!(out.status.success(), "could not create user {USER}");
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    };
    Ids {
        uid: id("-u"),
        gid: id("-g"),
    }
}

/// `setpriv --reuid --regid --clear-groups`: `program args` run as `ids`, nothing else.
pub fn as_user(ids: Ids, program: impl AsRef<OsStr>) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.arg(format!("--reuid={}", ids.uid))
        .arg(format!("--regid={}", ids.gid))
        .arg("--clear-groups")
        .arg("--")
        .arg(program);
    cmd
}

/// `sh -c script` as `ids`; its output.
pub fn sh_as(ids: Ids, script: &str) -> Output {
    as_user(ids, "sh").args(["-c", script]).output().unwrap()
}
