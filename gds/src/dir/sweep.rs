//! Removing the stores of dead writers from a base directory. The base may hold anything
//! (other users' stores, planted symlinks, files and directories): each entry that cannot or
//! must not be removed is skipped with its reason, and the sweep goes on.

#![forbid(unsafe_code)]

use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::liveness::{self, Liveness, LOCK_NAME};
use super::{list_all, list_rshm, names_same_dir, open_base};
use crate::error::Result;
use crate::segment::ANCHOR_NAME;

/// A store directory (or what stands under a store's name) left in place, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

/// What [`sweep_dead_stores`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// The base directory swept.
    pub base: PathBuf,
    /// Store directories removed (their writer is gone).
    pub removed: Vec<PathBuf>,
    /// Store directories left alone because their writer is alive.
    pub alive: Vec<PathBuf>,
    /// Entries left alone that are not ours to judge or could not be removed, with the reason.
    pub skipped: Vec<Skipped>,
}

/// Remove the store directories in `base` whose writer is gone.
///
/// An entry named `rshm-*` is a candidate when it is a directory (not a symlink) owned by the
/// calling effective uid. Its writer is alive while the store's lock file is locked
/// ([`liveness`]); a store without a lock file (written by an older rshm) is judged by the pid
/// in its name `rshm-<pid>-<nonce>`, and only once it is older than
/// [`liveness::NO_LOCK_GRACE`]. Only the regular `rshm-` files of a dead store are removed,
/// then the directory; anything else inside is never followed nor recursed into, and keeps
/// the directory (reported as skipped). Fails only when `base` cannot be read.
pub fn sweep_dead_stores(base: &Path) -> Result<SweepReport> {
    let base_fd = open_base(base)?;
    let me = rustix::process::geteuid().as_raw();
    let mut report = SweepReport {
        base: base.to_path_buf(),
        ..SweepReport::default()
    };
    for name in list_rshm(&base_fd)? {
        let path = base.join(&name);
        match judge(&base_fd, &name, me) {
            Verdict::Alive => report.alive.push(path),
            Verdict::Skip(reason) => report.skipped.push(Skipped { path, reason }),
            Verdict::Dead(dir, _lock) => match remove_store(&base_fd, &name, &dir) {
                Ok(()) => report.removed.push(path),
                Err(reason) => report.skipped.push(Skipped { path, reason }),
            },
        }
    }
    Ok(report)
}

enum Verdict {
    Alive,
    /// The store's directory, and the lock this sweep now holds (none for a lockless store).
    Dead(OwnedFd, Option<OwnedFd>),
    Skip(String),
}

fn judge(base: &OwnedFd, name: &str, me: u32) -> Verdict {
    let st = match rustix::fs::statat(base, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(e) => return Verdict::Skip(format!("cannot stat: {e}")),
    };
    match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => {}
        FileType::Symlink => return Verdict::Skip("a symlink, not a store directory".into()),
        _ => return Verdict::Skip("not a directory".into()),
    }
    let dir = match rustix::fs::openat(
        base,
        name,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) => return Verdict::Skip(format!("cannot open: {e}")),
    };
    let owner = match rustix::fs::fstat(&dir) {
        Ok(st) => st.st_uid,
        Err(e) => return Verdict::Skip(format!("cannot stat: {e}")),
    };
    if owner != me {
        return Verdict::Skip(format!("owned by uid {owner}, not this user ({me})"));
    }
    match liveness::probe(&dir) {
        Liveness::Alive => Verdict::Alive,
        Liveness::Dead(lock) => Verdict::Dead(dir, Some(lock)),
        Liveness::Unusable(why) => Verdict::Skip(why),
        Liveness::NoLock => match liveness::writer_pid_from_name(name) {
            None => Verdict::Skip("no lock file, and no writer pid in its name".into()),
            Some(_) if !liveness::older_than_grace(&dir) => Verdict::Skip(format!(
                "no lock file yet, and younger than {} s",
                liveness::NO_LOCK_GRACE.as_secs()
            )),
            Some(pid) if liveness::process_alive(pid) => Verdict::Alive,
            Some(_) => Verdict::Dead(dir, None),
        },
    }
}

/// Remove a dead store's regular `rshm-` files (the anchor first, the lock file last), then
/// its directory. Returns why the directory stays.
fn remove_store(base: &OwnedFd, name: &str, dir: &OwnedFd) -> Result<(), String> {
    let mut names = list_all(dir).map_err(|e| format!("cannot list: {e}"))?;
    names.sort_by_key(|n| (n != ANCHOR_NAME, n == LOCK_NAME));
    let mut left = Vec::new();
    for entry in names {
        if !entry.starts_with("rshm-") {
            left.push(format!("{entry} (not an rshm file)"));
        } else if let Err(why) = unlink_regular(dir, &entry) {
            left.push(format!("{entry} ({why})"));
        }
    }
    if !names_same_dir(base, name, dir) {
        return Err("replaced while it was being removed".into());
    }
    match rustix::fs::unlinkat(base, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) if left.is_empty() => Err(format!("cannot remove the directory: {e}")),
        Err(e) => Err(format!(
            "cannot remove the directory ({e}): it holds {}",
            left.join(", ")
        )),
    }
}

/// Unlink `name` from `dir` if it is a regular file; anything else is left.
fn unlink_regular(dir: impl AsFd, name: &str) -> Result<(), String> {
    let dir = dir.as_fd();
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| format!("cannot stat: {e}"))?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => return Err("a directory, not removed".into()),
        FileType::Symlink => return Err("a symlink, not removed".into()),
        _ => return Err("not a regular file, not removed".into()),
    }
    // A directory swapped in since the stat fails here (EISDIR): unlinkat never recurses.
    match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(format!("cannot unlink: {e}")),
    }
}
