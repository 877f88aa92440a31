//! Where stores go: a memory-backed filesystem, never a disk by default.
//!
//! A store is mapped by every client of the node and rewritten at each publication; on a disk
//! filesystem each new segment costs writeback I/O for files that live minutes. A resource
//! manager's `PMIX_SERVER_TMPDIR` is often on disk (Slurm's is `SlurmdSpoolDir/pmix.J.S`),
//! so it is taken only when it is a tmpfs.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

/// An explicit store base directory, used as given (`choose_base_dir`).
pub const ENV_DIR: &str = "RSHM_DIR";

use crate::ENV_SERVER_TMPDIR;

/// `statfs`'s `f_type` of a tmpfs (linux/magic.h).
const TMPFS_MAGIC: u32 = 0x0102_1994;

/// Whether `path` is on a tmpfs (false when it cannot be stat'ed).
pub fn is_tmpfs(path: &Path) -> bool {
    rustix::fs::statfs(path).is_ok_and(
        |s| // `f_type`'s width differs between targets; the magic fits in 32 bits.
        s.f_type as u32 == TMPFS_MAGIC,
    )
}

fn env_path(var: &str) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The base directory for a new store, first match:
/// 1. `explicit`, else `$RSHM_DIR`: as given, whatever its filesystem;
/// 2. `server_tmpdir`, else `$PMIX_SERVER_TMPDIR`, only when it is a tmpfs that another user
///    could not rearrange (owned by this process's effective uid or root, and writable by
///    others only with the sticky bit);
/// 3. `/dev/shm` when it is a directory;
/// 4. `/tmp`.
///
/// `$TMPDIR` does not choose: it names a place for a process's scratch files, often on disk.
pub fn choose_base_dir(explicit: Option<&Path>, server_tmpdir: Option<&Path>) -> PathBuf {
    if let Some(dir) = explicit
        .map(Path::to_path_buf)
        .or_else(|| env_path(ENV_DIR))
    {
        return dir;
    }
    let tmpdir = server_tmpdir
        .map(Path::to_path_buf)
        .or_else(|| env_path(ENV_SERVER_TMPDIR));
    // Passed over, not chosen to be refused: a tmpdir another user could rearrange (one a
    // resource manager gave the job's user) cannot hold the store (`super::check_base_dir`).
    if let Some(dir) = tmpdir.filter(|d| is_tmpfs(d) && super::check_base_dir(d).is_ok()) {
        return dir;
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        return shm.to_path_buf();
    }
    PathBuf::from("/tmp")
}

/// The default base directory: [`choose_base_dir`] with nothing given.
pub fn default_base_dir() -> PathBuf {
    choose_base_dir(None, None)
}
