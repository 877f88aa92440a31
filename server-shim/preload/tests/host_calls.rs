//! The server preload in an unmodified host over Debian's real libpmix 4.2.2 (tests/c/
//! host_calls.c): the host's calls get libpmix's own statuses with and without the preload;
//! with it, setup_fork hands a client the store only for a namespace the store holds (not one
//! whose registration it refused, re-registered so, deregistered or unknown), replacing a stale
//! RSHM_STORE and keeping the host's own entries; PMIX_USERID / PMIX_GRPID from
//! PMIx_server_init become the store's readers; finalize leaves nothing in the base directory.
//! A host that forks while another of its threads is inside the preload (tests/c/fork_exit.c)
//! has a child that can exit without exec, and can exit itself.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Build the preload (this test's profile) and return its path.
fn preload() -> PathBuf {
    let root = repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "-q", "-p", "rshm-server-preload", "--lib"])
        .status()
        .expect("cargo build");
    assert!(st.success(), "building the server preload failed");
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
        .join("debug/librshm_server_preload.so")
}

fn pkg_config(arg: &str) -> Vec<String> {
    let out = Command::new("pkg-config")
        .args([arg, "pmix"])
        .output()
        .expect("pkg-config");
    assert!(out.status.success(), "pkg-config {arg} pmix failed");
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// Compile `tests/c/NAME.c` against libpmix into `dir`.
fn build_host(dir: &Path, name: &str) -> PathBuf {
    let exe = dir.join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/c/{name}.c"));
    let st = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(pkg_config("--cflags"))
        .args(pkg_config("--libs"))
        .status()
        .expect("cc");
    assert!(st.success(), "compiling {name}.c failed");
    exe
}

fn run(exe: &Path, base: &Path, preload: Option<&Path>) -> (Vec<String>, String) {
    let mut cmd = Command::new(exe);
    cmd.arg(base)
        .args(["1234", "5678"])
        .env("PMIX_MCA_gds", "hash")
        .env("RSHM_DIR", base)
        .env("RSHM_PRELOAD_VERBOSE", "1")
        .env_remove("LD_PRELOAD");
    if let Some(p) = preload {
        cmd.env("LD_PRELOAD", p);
    }
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run host_calls");
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    assert!(status.success(), "host_calls failed: {status}\n{stderr}");
    let lines = String::from_utf8(stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_owned)
        .collect();
    (lines, stderr)
}

#[test]
fn the_host_gets_libpmix_statuses_and_its_clients_the_store_of_registered_namespaces() {
    let preload = preload();
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = build_host(dir.path(), "host_calls");
    let base = dir.path().join("base");
    std::fs::create_dir(&base).expect("base dir");

    let (plain, _) = run(&exe, &base, None);
    let (pre, log) = run(&exe, &base, Some(&preload));

    // The store's path, from the one client handed it.
    let store = pre
        .iter()
        .find_map(|l| {
            l.split(' ')
                .find_map(|w| w.strip_prefix("RSHM_STORE="))
                .filter(|p| *p != "stale")
        })
        .unwrap_or_else(|| panic!("no client was handed the store: {pre:#?}\n{log}"))
        .to_owned();
    assert!(
        Path::new(&store).parent() == Some(base.as_path()),
        "store {store} not in RSHM_DIR {}",
        base.display()
    );
    // The store's id, handed beside its path.
    let id = pre
        .iter()
        .find_map(|l| l.split(' ').find_map(|w| w.strip_prefix("RSHM_STORE_ID=")))
        .unwrap_or_else(|| panic!("no client was handed the store's id: {pre:#?}\n{log}"))
        .to_owned();
    // This process's effective uid: the owner of the directory it just made.
    let euid = std::fs::metadata(&base).expect("base dir").uid();
    let stale = "SUCCESS A=1 RSHM_STORE=stale";
    let handed = |ns: &str, rank: u32| {
        format!(
            "SUCCESS A=1 RSHM_NSPACE={ns} RSHM_RANK={rank} RSHM_STORE={store} \
             RSHM_STORE_ID={id} RSHM_STORE_OWNER={euid}"
        )
    };
    let expect = |with_store: bool| -> Vec<String> {
        [
            "init SUCCESS",
            "register good SUCCESS",
            "register refused SUCCESS",
            &format!(
                "env good 1 {}",
                if with_store {
                    handed("good", 1)
                } else {
                    stale.into()
                }
            ),
            &format!("env refused 0 {stale}"),
            &format!("env unknown 0 {stale}"),
            "register good SUCCESS",
            &format!("env good 0 {stale}"),
            "register again SUCCESS",
            "deregister again",
            &format!("env again 0 {stale}"),
            // Debian's libpmix makes these maps of 3000 nodes (OpenPMIx 5.0.11 makes zlib
            // "blob:" ones: server-shim/preload/tests/jobs/run.sh runs this host over it).
            "register big SUCCESS pmix[ raw:0",
            &format!(
                "env big 0 {}",
                if with_store {
                    handed("big", 0)
                } else {
                    stale.into()
                }
            ),
            "finalize SUCCESS store-dir-entries 0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    assert_eq!(plain, expect(false), "without the preload");
    assert_eq!(pre, expect(true), "with the preload; its log:\n{log}");
    assert!(
        log.contains("readable by uid 1234 gid 5678"),
        "PMIX_USERID / PMIX_GRPID did not reach the store:\n{log}"
    );
    assert!(
        log.contains("refused left to libpmix") && log.contains("good left to libpmix"),
        "refused registrations not logged:\n{log}"
    );
    assert!(!Path::new(&store).exists(), "the store outlived finalize");
}

/// The preload's exit hook never waits for its lock: a child forked while another thread of
/// the host held it (blocked in the preload, writing its log line to a full pipe) exits, and so
/// does the host, that thread still blocked.
#[test]
fn a_host_forked_while_a_thread_is_inside_the_preload_exits_and_so_does_its_child() {
    let preload = preload();
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = build_host(dir.path(), "fork_exit");
    let base = dir.path().join("base");
    std::fs::create_dir(&base).expect("base dir");
    let mut host = Command::new(&exe)
        .env("PMIX_MCA_gds", "hash")
        .env("RSHM_DIR", &base)
        .env("RSHM_MCA_server_preload_verbose", "1")
        .env("LD_PRELOAD", &preload)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run fork_exit");
    // The child's wait is bounded inside (10 s); the host's own exit is bounded here.
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = host.try_wait().expect("wait") {
            break Some(st);
        }
        if Instant::now() > deadline {
            host.kill().expect("kill");
            host.wait().expect("wait");
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    host.stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .expect("stdout");
    let status = status.unwrap_or_else(|| panic!("the host hung at exit:\n{out}"));
    assert_eq!(
        out, "init SUCCESS\nchild exited 0\n",
        "the child (or the host) did not exit ({status})"
    );
    assert!(status.success(), "host: {status}\n{out}");
}
