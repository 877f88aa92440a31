//! Where `tools/pmix-host` is, and building it (and, under the same lock discipline, the gds
//! component).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root (the workspace directory holding `gds/` and `tools/`).
pub fn repo_root() -> PathBuf {
    // The nearest ancestor of the including crate that holds tools/pmix-host.
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    while !dir.join("tools").join("pmix-host").is_dir() {
        if !dir.pop() {
            panic!("no tools/pmix-host above {}", env!("CARGO_MANIFEST_DIR"));
        }
    }
    dir
}

/// `tools/pmix-host`.
pub fn tool_dir() -> PathBuf {
    repo_root().join("tools").join("pmix-host")
}

/// Run `make -s -C dir args...` holding the lock file `lock` (in the temp dir): nextest runs
/// each test in its own process, and two makes into one output race on its temporary files.
/// Panics with make's output if the build fails.
pub fn make_locked(lock: &str, dir: &Path, args: &[String]) {
    let lock_path = std::env::temp_dir().join(lock);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap_or_else(|e| panic!("open {}: {e}", lock_path.display()));
    lock.lock()
        .unwrap_or_else(|e| panic!("lock {}: {e}", lock_path.display()));
    let out = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run make: {e}"));
    drop(lock);
    if !out.status.success() {
        panic!(
            "make -s -C {} {} failed ({}):\n{}{}",
            dir.display(),
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The lock file of the builds of `component/` (the gds component), for [`make_locked`].
pub const COMPONENT_BUILD_LOCK: &str = "rshm-component-build.lock";

/// Build pmix-host and pmix-client (`make -s -C tools/pmix-host`) and return the tool directory.
/// Panics with make's output if the build fails. Concurrent callers (test threads, test
/// binaries) are serialised with a lock file in the temp dir.
pub fn build() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = tool_dir();
            make_locked("rshm-pmix-host-build.lock", &dir, &[]);
            dir
        })
        .clone()
}
