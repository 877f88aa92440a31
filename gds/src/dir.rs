//! The store directory: where it lives, safe creation of its files, ownership, and sweeping the
//! stores of dead writers (format.md section 1).
//!
//! Every open is relative to the directory's file descriptor with O_NOFOLLOW, and every create
//! is O_EXCL: a planted file or symlink at a segment path is an error, never followed
//! (CVE-2023-41915 was a chown through a symlink race).

#![forbid(unsafe_code)]

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FallocateFlags, FileType, Mode, OFlags, CWD};

use crate::error::{Error, Result};
use crate::segment::ANCHOR_NAME;

/// Who owns a store's files, and their mode (PMIX_USERID / PMIX_GRPID).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ownership {
    /// Owner of the directory and files; `None` keeps the writer's effective uid.
    pub uid: Option<u32>,
    /// Group of the directory and files; when set, the group may read (0640 files, 0750 dir).
    pub gid: Option<u32>,
}

impl Ownership {
    /// The writer's own uid and no group: 0700 directory, 0600 files.
    pub const PRIVATE: Ownership = Ownership {
        uid: None,
        gid: None,
    };

    fn file_mode(&self) -> Mode {
        Mode::from_raw_mode(if self.gid.is_some() { 0o640 } else { 0o600 })
    }

    fn dir_mode(&self) -> Mode {
        Mode::from_raw_mode(if self.gid.is_some() { 0o750 } else { 0o700 })
    }

    fn apply(&self, fd: impl AsFd) -> Result<()> {
        if self.uid.is_some() || self.gid.is_some() {
            rustix::fs::fchown(
                fd,
                self.uid.map(rustix::fs::Uid::from_raw),
                self.gid.map(rustix::fs::Gid::from_raw),
            )
            .map_err(|e| Error::io("chown store file", e.into()))?;
        }
        Ok(())
    }
}

/// The base directory for stores: `$PMIX_SERVER_TMPDIR`, `$TMPDIR`, `/dev/shm`, `/tmp`.
pub fn default_base_dir() -> PathBuf {
    for var in ["PMIX_SERVER_TMPDIR", "TMPDIR"] {
        if let Some(dir) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            return PathBuf::from(dir);
        }
    }
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        return shm.to_path_buf();
    }
    PathBuf::from("/tmp")
}

/// An open store directory.
pub struct StoreDir {
    fd: OwnedFd,
    path: PathBuf,
    owner_uid: u32,
}

fn errno(op: &'static str) -> impl FnOnce(rustix::io::Errno) -> Error {
    move |e| Error::io(op, io::Error::from(e))
}

impl StoreDir {
    /// Create the store directory `name` (must start with `rshm-`) in `base`.
    pub fn create(base: &Path, name: &str, own: Ownership) -> Result<StoreDir> {
        check_name(name)?;
        let base_fd = rustix::fs::open(base, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
            .map_err(errno("open store base directory"))?;
        rustix::fs::mkdirat(&base_fd, name, own.dir_mode()).map_err(|e| {
            if e == rustix::io::Errno::EXIST {
                Error::InvalidArgument(format!("store directory {name} already exists"))
            } else {
                Error::io("create store directory", e.into())
            }
        })?;
        let fd = rustix::fs::openat(
            &base_fd,
            name,
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno("open store directory"))?;
        own.apply(&fd)?;
        // mkdir applies the umask: set the mode we mean.
        rustix::fs::fchmod(&fd, own.dir_mode()).map_err(errno("chmod store directory"))?;
        let owner_uid = rustix::fs::fstat(&fd)
            .map_err(errno("stat store directory"))?
            .st_uid;
        Ok(StoreDir {
            fd,
            path: base.join(name),
            owner_uid,
        })
    }

    /// Open an existing store directory (reader side).
    pub fn open(path: &Path) -> Result<StoreDir> {
        let fd = rustix::fs::openat(
            CWD,
            path,
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::NOENT => Error::NotFound,
            rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR => {
                Error::InvalidArgument(format!("{} is not a store directory", path.display()))
            }
            e => Error::io("open store directory", e.into()),
        })?;
        let owner_uid = rustix::fs::fstat(&fd)
            .map_err(errno("stat store directory"))?
            .st_uid;
        Ok(StoreDir {
            fd,
            path: path.to_path_buf(),
            owner_uid,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create the file `name` (O_EXCL|O_NOFOLLOW) and reserve `len` bytes for it, so that a full
    /// filesystem fails here and not as a SIGBUS when the mapping is written.
    pub fn create_file(&self, name: &str, len: u64, own: Ownership) -> Result<OwnedFd> {
        check_name(name)?;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC,
            own.file_mode(),
        )
        .map_err(|e| {
            if e == rustix::io::Errno::EXIST {
                Error::InvalidArgument(format!("{name} already exists in the store"))
            } else {
                Error::io("create segment file", e.into())
            }
        })?;
        let setup = (|| {
            own.apply(&fd)?;
            rustix::fs::fchmod(&fd, own.file_mode()).map_err(errno("chmod segment file"))?;
            rustix::fs::fallocate(&fd, FallocateFlags::empty(), 0, len)
                .map_err(errno("reserve segment space"))
        })();
        if let Err(e) = setup {
            let _ = self.unlink(name);
            return Err(e);
        }
        Ok(fd)
    }

    /// Open the segment file `name` read-only. Refuses anything but a regular file owned by the
    /// directory's owner (a file planted by another user is never read). Returns its length.
    pub fn open_file(&self, name: &str) -> Result<(OwnedFd, u64)> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            // NONBLOCK: a planted FIFO must not block the open.
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            Mode::empty(),
        )
        .map_err(|e| match e {
            rustix::io::Errno::NOENT => Error::NotFound,
            rustix::io::Errno::LOOP => Error::InvalidArgument(format!("{name} is a symlink")),
            e => Error::io("open segment file", e.into()),
        })?;
        let st = rustix::fs::fstat(&fd).map_err(errno("stat segment file"))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(Error::InvalidArgument(format!(
                "{name} is not a regular file"
            )));
        }
        if st.st_uid != self.owner_uid {
            return Err(Error::PermissionDenied);
        }
        Ok((fd, st.st_size as u64))
    }

    /// Remove the file `name`; a missing file is not an error.
    pub fn unlink(&self, name: &str) -> Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(Error::io("unlink segment file", e.into())),
        }
    }

    /// Names of the `rshm-` files in the directory.
    pub fn list(&self) -> Result<Vec<String>> {
        list_rshm(&self.fd)
    }

    /// Whether the directory holds an entry `name` (of any type; a symlink is not followed).
    pub fn holds(&self, name: &str) -> Result<bool> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(_) => Ok(true),
            Err(rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(Error::io("stat store file", e.into())),
        }
    }

    /// Remove every `rshm-` file and then the directory itself. The anchor goes first: a reader
    /// that misses a file and then finds no anchor knows the store was removed, not damaged.
    pub fn remove_all(self) -> Result<()> {
        let mut names = self.list()?;
        names.sort_by_key(|n| n != ANCHOR_NAME);
        for name in names {
            self.unlink(&name)?;
        }
        let parent = self.path.parent().unwrap_or(Path::new("/"));
        let name = self.path.file_name().unwrap_or(OsStr::new(""));
        let parent_fd =
            rustix::fs::open(parent, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(errno("open store base directory"))?;
        match rustix::fs::unlinkat(&parent_fd, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(Error::io("remove store directory", e.into())),
        }
    }
}

fn list_rshm(fd: &OwnedFd) -> Result<Vec<String>> {
    let dup = rustix::io::dup(fd).map_err(errno("dup directory"))?;
    let mut dir = rustix::fs::Dir::read_from(&dup).map_err(errno("read directory"))?;
    dir.rewind();
    let mut names = Vec::new();
    for entry in dir.by_ref() {
        let entry = entry.map_err(errno("read directory"))?;
        let name = entry.file_name().to_bytes();
        if name.starts_with(b"rshm-") {
            if let Ok(name) = std::str::from_utf8(name) {
                names.push(name.to_owned());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// A store or file name: `rshm-` then [A-Za-z0-9._-], no slash, at most 200 bytes.
pub fn check_name(name: &str) -> Result<()> {
    let ok = name.starts_with("rshm-")
        && name.len() <= 200
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "bad store name {name:?}: rshm-[A-Za-z0-9._-]*"
        )))
    }
}

/// What [`sweep_dead_stores`] found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// Store directories removed (their writer is gone).
    pub removed: Vec<PathBuf>,
    /// Store directories left alone because their writer is alive.
    pub alive: usize,
    /// Store directories skipped because they are not ours (other owner) or not ours to judge.
    pub skipped: usize,
}

/// Remove the store directories in `base` whose writer process is gone.
///
/// Only directories named `rshm-<pid>-<nonce>`, owned by the calling user, whose `<pid>` no
/// longer exists, are removed, and only their `rshm-` files. A reused pid keeps a dead store
/// alive until that process exits too (conservative: never removes a live store).
pub fn sweep_dead_stores(base: &Path) -> Result<SweepReport> {
    let base_fd = rustix::fs::open(base, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(errno("open store base directory"))?;
    let me = rustix::process::geteuid().as_raw();
    let mut report = SweepReport::default();
    for name in list_rshm(&base_fd)? {
        let Some(pid) = writer_pid_from_name(&name) else {
            continue;
        };
        let Ok(fd) = rustix::fs::openat(
            &base_fd,
            name.as_str(),
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) else {
            report.skipped += 1;
            continue;
        };
        let owner = rustix::fs::fstat(&fd)
            .map_err(errno("stat store directory"))?
            .st_uid;
        if owner != me && me != 0 {
            report.skipped += 1;
            continue;
        }
        if process_alive(pid) {
            report.alive += 1;
            continue;
        }
        let dir = StoreDir {
            fd,
            path: base.join(&name),
            owner_uid: owner,
        };
        let path = dir.path.clone();
        dir.remove_all()?;
        report.removed.push(path);
    }
    Ok(report)
}

/// The writer pid encoded in a default store name `rshm-<pid>-<nonce>`.
pub fn writer_pid_from_name(name: &str) -> Option<i32> {
    let rest = name.strip_prefix("rshm-")?;
    let (pid, nonce) = rest.split_once('-')?;
    if nonce.len() != 16 || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    pid.parse().ok().filter(|p| *p > 0)
}

fn process_alive(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        Some(p) => !matches!(
            rustix::process::test_kill_process(p),
            Err(rustix::io::Errno::SRCH)
        ),
        None => false,
    }
}

/// A default store name for this process: `rshm-<pid>-<16 hex digits>`.
pub fn fresh_store_name() -> String {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let stack = &t as *const _ as usize;
    let nonce = xxhash_rust::xxh3::xxh3_64(
        &[
            t.to_ne_bytes().as_slice(),
            &stack.to_ne_bytes(),
            &pid.to_ne_bytes(),
        ]
        .concat(),
    );
    format!("rshm-{pid}-{nonce:016x}")
}
