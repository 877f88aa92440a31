//! The store directory: where it lives ([`place`]), who may read it ([`access`]), whether its
//! writer lives ([`liveness`]), safe creation of its files, and sweeping the stores of dead
//! writers ([`sweep`]) (format.md section 1).
//!
//! Every open is relative to the directory's file descriptor with O_NOFOLLOW, and every create
//! is O_EXCL: a planted file or symlink at a segment path is an error, never followed
//! (CVE-2023-41915 was a chown through a symlink race). Nothing is ever chowned: the writer's
//! effective uid owns every file.

#![forbid(unsafe_code)]

pub mod access;
pub mod liveness;
pub mod place;
pub mod sweep;

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FallocateFlags, FileType, Mode, OFlags, CWD};

use crate::error::{Error, Result};
use crate::segment::ANCHOR_NAME;

use access::Trusted;
pub use access::{Ownership, ENV_STORE_ID, ENV_STORE_OWNER, STORE_ID_NAME};
pub use liveness::LOCK_NAME;
pub use place::{choose_base_dir, default_base_dir, is_tmpfs, ENV_DIR};
pub use sweep::{sweep_dead_stores, Skipped, SweepReport};

/// An open store directory.
pub struct StoreDir {
    fd: OwnedFd,
    path: PathBuf,
    owner_uid: u32,
    /// The store's id (the writer's; a reader's once checked against `$RSHM_STORE_ID`).
    id: Option<String>,
    /// The writer's lock on the lock file, held for the store's life (none for a reader).
    lock: Option<OwnedFd>,
}

fn errno(op: &'static str) -> impl FnOnce(rustix::io::Errno) -> Error {
    move |e| Error::io(op, io::Error::from(e))
}

pub(crate) fn open_base(base: &Path) -> Result<OwnedFd> {
    rustix::fs::open(base, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(errno("open store base directory"))
}

impl StoreDir {
    /// Create the store directory `name` (must start with `rshm-`) in `base`, owned by this
    /// process's effective uid, with its lock file locked and the access `own` grants. On
    /// error nothing is left behind.
    pub fn create(base: &Path, name: &str, own: Ownership) -> Result<StoreDir> {
        check_name(name)?;
        let base_fd = open_base(base)?;
        let st = rustix::fs::fstat(&base_fd).map_err(errno("stat store base directory"))?;
        access::check_base(base, &st)?;
        rustix::fs::mkdirat(&base_fd, name, Ownership::create_mode(true)).map_err(|e| {
            if e == rustix::io::Errno::EXIST {
                Error::InvalidArgument(format!("store directory {name} already exists"))
            } else {
                Error::io("create store directory", e.into())
            }
        })?;
        let opened = rustix::fs::openat(
            &base_fd,
            name,
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(errno("open store directory"));
        let fd = match opened {
            Ok(fd) => fd,
            Err(e) => {
                let _ = rustix::fs::unlinkat(&base_fd, name, AtFlags::REMOVEDIR);
                return Err(e);
            }
        };
        let setup = (|| {
            let owner_uid = rustix::fs::fstat(&fd)
                .map_err(errno("stat store directory"))?
                .st_uid;
            // Access first: it removes the default ACL the directory may have inherited, which
            // the lock file would otherwise inherit (it never has an ACL: format.md section 1).
            own.apply(&fd, true, owner_uid)?;
            let lock = liveness::create_and_hold(&fd)?;
            let id = access::write_store_id(&fd, own, owner_uid)?;
            Ok((owner_uid, lock, id))
        })();
        match setup {
            Ok((owner_uid, lock, id)) => Ok(StoreDir {
                fd,
                path: base.join(name),
                owner_uid,
                id: Some(id),
                lock: Some(lock),
            }),
            Err(e) => {
                let _ = rustix::fs::unlinkat(&fd, STORE_ID_NAME, AtFlags::empty());
                let _ = rustix::fs::unlinkat(&fd, LOCK_NAME, AtFlags::empty());
                let _ = rustix::fs::unlinkat(&base_fd, name, AtFlags::REMOVEDIR);
                Err(e)
            }
        }
    }

    /// Open an existing store directory (reader side), refusing one not owned by whom the
    /// reader trusts (`$RSHM_STORE_OWNER`, else root or itself) or writable by others
    /// ([`Error::Untrusted`]).
    pub fn open(path: &Path) -> Result<StoreDir> {
        let trusted = Trusted::from_env()?;
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
        let st = rustix::fs::fstat(&fd).map_err(errno("stat store directory"))?;
        trusted.check(&format!("store directory {}", path.display()), &st)?;
        let mut dir = StoreDir {
            fd,
            path: path.to_path_buf(),
            owner_uid: st.st_uid,
            id: None,
            lock: None,
        };
        dir.id = access::check_store_id(&dir)?;
        Ok(dir)
    }

    /// The store's id (`rshm-id`): the writer's own, or the one a reader checked against
    /// `$RSHM_STORE_ID`; `None` for a reader that was given none.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The uid owning the store (its writer's effective uid).
    pub fn owner_uid(&self) -> u32 {
        self.owner_uid
    }

    /// Create the file `name` (O_EXCL|O_NOFOLLOW, mode 0600), give it the access `own` grants
    /// before anything is written to it, and reserve `len` bytes for it, so that a full
    /// filesystem fails here and not as a SIGBUS when the mapping is written.
    pub fn create_file(&self, name: &str, len: u64, own: Ownership) -> Result<OwnedFd> {
        self.create_at(name, len, own, true)
    }

    /// Create the file `name` as [`StoreDir::create_file`] does, `len` bytes long but sparse
    /// (`ftruncate`, nothing reserved): a pack, written through its mapping only where it
    /// reserved space first (`fallocate`, 256 KiB at a time: format.md section 10).
    pub fn create_sparse_file(&self, name: &str, len: u64, own: Ownership) -> Result<OwnedFd> {
        self.create_at(name, len, own, false)
    }

    fn create_at(&self, name: &str, len: u64, own: Ownership, reserve: bool) -> Result<OwnedFd> {
        check_name(name)?;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC,
            Ownership::create_mode(false),
        )
        .map_err(|e| {
            if e == rustix::io::Errno::EXIST {
                Error::InvalidArgument(format!("{name} already exists in the store"))
            } else {
                Error::io("create segment file", e.into())
            }
        })?;
        let setup = (|| {
            own.apply(&fd, false, self.owner_uid)?;
            if reserve {
                rustix::fs::fallocate(&fd, FallocateFlags::empty(), 0, len)
                    .map_err(errno("reserve segment space"))
            } else {
                rustix::fs::ftruncate(&fd, len).map_err(errno("size pack file"))
            }
        })();
        if let Err(e) = setup {
            let _ = self.unlink(name);
            return Err(e);
        }
        Ok(fd)
    }

    /// Open the segment file `name` read-only. Refuses anything but a regular file owned by the
    /// directory's owner (a file planted by another user is never read) and writable by it
    /// alone. Returns its length.
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
        Trusted::Exactly(self.owner_uid).check(name, &st)?;
        Ok((fd, st.st_size as u64))
    }

    /// Remove the file `name`; a missing file is not an error.
    pub fn unlink(&self, name: &str) -> Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(Error::io("unlink segment file", e.into())),
        }
    }

    /// Names of the store's `rshm-` files, the lock file and the id file aside.
    pub fn list(&self) -> Result<Vec<String>> {
        let mut names = list_rshm(&self.fd)?;
        names.retain(|n| n != LOCK_NAME && n != STORE_ID_NAME);
        Ok(names)
    }

    /// Whether the directory holds an entry `name` (of any type; a symlink is not followed).
    pub fn holds(&self, name: &str) -> Result<bool> {
        exists_at(&self.fd, name)
    }

    /// Remove every `rshm-` file and then the directory itself. The anchor goes first: a reader
    /// that misses a file and then finds no anchor knows the store was removed, not damaged.
    /// The lock file goes last, so that a sweep never finds the store unlocked while it has
    /// files. The directory is removed only if its path still names it: in a base others may
    /// write, it may have been moved away and something else put in its place.
    pub fn remove_all(self) -> Result<()> {
        let mut names = self.list()?;
        names.sort_by_key(|n| n != ANCHOR_NAME);
        for name in names {
            self.unlink(&name)?;
        }
        self.unlink(STORE_ID_NAME)?;
        if self.lock.is_some() {
            self.unlink(LOCK_NAME)?;
        }
        let parent = self.path.parent().unwrap_or(Path::new("/"));
        let name = self.path.file_name().unwrap_or(OsStr::new(""));
        let parent_fd = open_base(parent)?;
        if !exists_at(&parent_fd, name)? {
            // Already gone (a sweep that found this writer dead, or someone else).
            return Ok(());
        }
        if !names_same_dir(&parent_fd, name, &self.fd) {
            return Err(Error::Io {
                op: "remove store directory",
                source: io::Error::other(format!(
                    "{} no longer names the store directory (moved or replaced): its files \
                     were removed, the emptied directory is left where it was moved",
                    self.path.display()
                )),
            });
        }
        match rustix::fs::unlinkat(&parent_fd, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(Error::io("remove store directory", e.into())),
        }
    }
}

/// Refuse a base directory another user could rearrange (owned by neither this process's
/// effective uid nor root, or writable by others without the sticky bit): checked before a
/// writer sweeps or creates anything in it.
pub fn check_base_dir(base: &Path) -> Result<()> {
    let base_fd = open_base(base)?;
    let st = rustix::fs::fstat(&base_fd).map_err(errno("stat store base directory"))?;
    access::check_base(base, &st)
}

/// Whether `dir` holds an entry `name` (of any type; a symlink is not followed).
fn exists_at(dir: impl AsFd, name: impl rustix::path::Arg) -> Result<bool> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(_) => Ok(true),
        Err(rustix::io::Errno::NOENT) => Ok(false),
        Err(e) => Err(Error::io("stat store entry", e.into())),
    }
}

/// Whether `name` in `parent` is the directory `dir` (same device and inode; not following a
/// symlink). A missing `name` is not: there is nothing to remove.
pub(crate) fn names_same_dir(
    parent: impl AsFd,
    name: impl rustix::path::Arg,
    dir: impl AsFd,
) -> bool {
    let (Ok(at), Ok(fd)) = (
        rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW),
        rustix::fs::fstat(dir),
    ) else {
        return false;
    };
    (at.st_dev, at.st_ino) == (fd.st_dev, fd.st_ino)
}

/// Names of the entries of directory `fd` (all of them but `.` and `..`), sorted.
pub(crate) fn list_all(fd: impl AsFd) -> Result<Vec<String>> {
    let dup = rustix::io::dup(fd.as_fd()).map_err(errno("dup directory"))?;
    let mut dir = rustix::fs::Dir::read_from(&dup).map_err(errno("read directory"))?;
    dir.rewind();
    let mut names = Vec::new();
    for entry in dir.by_ref() {
        let entry = entry.map_err(errno("read directory"))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Names of the `rshm-` entries of directory `fd` (UTF-8 ones: every name rshm makes), sorted.
pub(crate) fn list_rshm(fd: impl AsFd) -> Result<Vec<String>> {
    let mut names = list_all(fd)?;
    names.retain(|n| n.starts_with("rshm-") && !n.contains('\u{FFFD}'));
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
