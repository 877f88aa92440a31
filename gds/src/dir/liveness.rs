//! Whether a store's writer is alive: the writer holds an exclusive `flock` on the store's lock
//! file for as long as it lives (format.md section 1). A lock needs no pid: it follows the
//! open file wherever it goes (a daemonized child that inherited it, a writer in another pid
//! namespace) and the kernel drops it when the last process holding it exits, however it dies.

#![forbid(unsafe_code)]

use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, SystemTime};

use rustix::fs::{FileType, FlockOperation, Mode, OFlags};

use crate::error::{Error, Result};

/// The lock file's name in a store directory. Mode 0600 and no ACL: a reader cannot open it,
/// so only the writer (and the owner's sweep) can hold its lock.
pub const LOCK_NAME: &str = "rshm-lock";

/// A store without a lock file is judged by its name's pid only once it is older than this: a
/// younger one may be a writer caught between its mkdir and its lock.
pub const NO_LOCK_GRACE: Duration = Duration::from_secs(60);

/// Create the lock file in the new store directory `dir` and take its lock; the returned
/// descriptor holds it (close-on-exec, so an exec'd program does not keep a store alive; a
/// forked child does).
pub(crate) fn create_and_hold(dir: impl AsFd) -> Result<OwnedFd> {
    let fd = rustix::fs::openat(
        dir,
        LOCK_NAME,
        OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| Error::io("create the store's lock file", e.into()))?;
    rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive)
        .map_err(|e| Error::io("lock the store's lock file", e.into()))?;
    Ok(fd)
}

/// What a look at a store directory says of its writer.
#[derive(Debug)]
pub(crate) enum Liveness {
    /// The lock is held: the writer (or a process that inherited it) is alive.
    Alive,
    /// Nobody holds the lock; the returned descriptor now holds it, so no writer can be using
    /// the store while it is removed.
    Dead(OwnedFd),
    /// No lock file (a store of an older rshm, or one not yet locked).
    NoLock,
    /// The lock file is not something to take a lock on.
    Unusable(String),
}

/// Try the lock of the store directory `dir` (which the caller owns).
pub(crate) fn probe(dir: impl AsFd) -> Liveness {
    let fd = match rustix::fs::openat(
        dir,
        LOCK_NAME,
        // NONBLOCK: a planted FIFO must not block the open.
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Liveness::NoLock,
        Err(e) => return Liveness::Unusable(format!("cannot open {LOCK_NAME}: {e}")),
    };
    match rustix::fs::fstat(&fd) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {}
        Ok(_) => return Liveness::Unusable(format!("{LOCK_NAME} is not a regular file")),
        Err(e) => return Liveness::Unusable(format!("cannot stat {LOCK_NAME}: {e}")),
    }
    match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Liveness::Dead(fd),
        Err(rustix::io::Errno::WOULDBLOCK) => Liveness::Alive,
        Err(e) => Liveness::Unusable(format!("cannot lock {LOCK_NAME}: {e}")),
    }
}

/// Whether the store directory `dir` was last changed more than [`NO_LOCK_GRACE`] ago.
pub(crate) fn older_than_grace(dir: impl AsFd) -> bool {
    let Ok(st) = rustix::fs::fstat(dir) else {
        return false;
    };
    let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(st.st_mtime.max(0) as u64);
    SystemTime::now()
        .duration_since(mtime)
        .is_ok_and(|age| age > NO_LOCK_GRACE)
}

/// The writer pid encoded in a default store name `rshm-<pid>-<nonce>`: the liveness rule of
/// stores without a lock file (meaningless across pid namespaces; see [`NO_LOCK_GRACE`]).
pub fn writer_pid_from_name(name: &str) -> Option<i32> {
    let rest = name.strip_prefix("rshm-")?;
    let (pid, nonce) = rest.split_once('-')?;
    if nonce.len() != 16 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    pid.parse().ok().filter(|p| *p > 0)
}

/// Whether process `pid` exists (in this pid namespace).
pub(crate) fn process_alive(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        Some(p) => !matches!(
            rustix::process::test_kill_process(p),
            Err(rustix::io::Errno::SRCH)
        ),
        None => false,
    }
}
