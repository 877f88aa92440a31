//! Who may do what with a store: the writer owns every file and alone may write; the readers it
//! names are granted read access by POSIX ACLs; a reader trusts a store only when its owner is
//! whom it expects and nobody else may write it (format.md section 1).

#![forbid(unsafe_code)]

use std::os::fd::AsFd;

use rustix::fs::{Mode, OFlags, XattrFlags};

use crate::error::{Error, Result};

/// The uid a reader expects the store to be owned by (the server exports it at setup_fork).
/// Unset, a reader trusts a store owned by root or by its own effective uid.
pub const ENV_STORE_OWNER: &str = "RSHM_STORE_OWNER";

/// The id of the store a reader's server made for it (the server exports it at setup_fork,
/// beside `RSHM_STORE`): set, a reader attaches only to a store whose [`STORE_ID_NAME`] holds
/// it.
pub const ENV_STORE_ID: &str = "RSHM_STORE_ID";

/// The file holding a store's id: 32 lower-case hex digits (128 random bits), written once
/// when the store is created, read by its readers.
pub const STORE_ID_NAME: &str = "rshm-id";

/// Length of a store id in hex digits.
const STORE_ID_LEN: usize = 32;

/// Create the store's id file in the new store directory `dir` (owned by `writer_uid`), with
/// the access `own` grants set before it holds anything, and write a fresh random id to it.
pub(crate) fn write_store_id(dir: impl AsFd, own: Ownership, writer_uid: u32) -> Result<String> {
    let mut raw = [0u8; STORE_ID_LEN / 2];
    let mut filled = 0;
    while filled < raw.len() {
        filled +=
            rustix::rand::getrandom(&mut raw[filled..], rustix::rand::GetRandomFlags::empty())
                .map_err(|e| Error::io("random store id", e.into()))?;
    }
    let id: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    let fd = rustix::fs::openat(
        dir,
        STORE_ID_NAME,
        OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::WRONLY | OFlags::CLOEXEC,
        Ownership::create_mode(false),
    )
    .map_err(|e| Error::io("create the store's id file", e.into()))?;
    own.apply(&fd, false, writer_uid)?;
    let written = rustix::io::write(&fd, id.as_bytes())
        .map_err(|e| Error::io("write the store's id", e.into()))?;
    if written != id.len() {
        return Err(Error::io(
            "write the store's id",
            std::io::Error::other("short write"),
        ));
    }
    Ok(id)
}

/// A reader's check of the store it opened against `$RSHM_STORE_ID`: unset, nothing is
/// checked (`None`); set, the store's id file must hold exactly that id, else `Untrusted`.
pub(crate) fn check_store_id(dir: &super::StoreDir) -> Result<Option<String>> {
    let want = match std::env::var(ENV_STORE_ID) {
        Ok(v) if !v.is_empty() => v,
        _ => return Ok(None),
    };
    let store = dir.path().display();
    if want.len() != STORE_ID_LEN || !want.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::Untrusted(format!(
            "{ENV_STORE_ID}={want:?} is not a store id ({STORE_ID_LEN} hex digits)"
        )));
    }
    let not_made = |why: String| {
        Error::Untrusted(format!(
            "store directory {store} is not the store its server made for this client \
             ({why}; a client reads only the store whose id its server exported as \
             {ENV_STORE_ID}: this one was moved or put in its place)"
        ))
    };
    let (fd, len) = match dir.open_file(STORE_ID_NAME) {
        Ok(f) => f,
        Err(Error::NotFound) => return Err(not_made(format!("it has no {STORE_ID_NAME}"))),
        Err(e) => return Err(e),
    };
    let mut buf = [0u8; STORE_ID_LEN];
    let got = if len == STORE_ID_LEN as u64 {
        rustix::io::read(&fd, &mut buf).map_err(|e| Error::io("read the store's id", e.into()))?
    } else {
        0
    };
    if got != STORE_ID_LEN || !buf.eq_ignore_ascii_case(want.as_bytes()) {
        return Err(not_made(format!(
            "its {STORE_ID_NAME} differs from {ENV_STORE_ID}"
        )));
    }
    Ok(Some(want.to_ascii_lowercase()))
}

/// A writer's check of the base directory it is about to create its store in: owned by this
/// process's effective uid or root, and writable by nobody else unless sticky. Another user
/// who may rename entries of the base could move the store away and put another (another job's
/// store of the same owner) at its path.
pub(crate) fn check_base(base: &std::path::Path, st: &rustix::fs::Stat) -> Result<()> {
    const RULE: &str = "a store's base directory must belong to the server's user or root, and \
                        others may write it only when it has the sticky bit";
    let me = rustix::process::geteuid().as_raw();
    if st.st_uid != me && st.st_uid != 0 {
        return Err(Error::Untrusted(format!(
            "store base directory {} is owned by uid {}, neither this server's uid {me} nor \
             root: its owner could rename another store over this one ({RULE})",
            base.display(),
            st.st_uid
        )));
    }
    let mode = st.st_mode & 0o7777;
    if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        return Err(Error::Untrusted(format!(
            "store base directory {} is writable by others than its owner without the sticky \
             bit (mode {mode:04o}): they could rename another store over this one ({RULE})",
            base.display()
        )));
    }
    Ok(())
}

/// Who besides the writer may read a store (PMIX_USERID / PMIX_GRPID). The directory and files
/// are always owned by the writer's effective uid and writable by it alone: the readers named
/// here get read access through POSIX ACL entries, never ownership (an owner could truncate a
/// mapped file under the writer, or rewrite what other readers trust).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ownership {
    /// A user granted read access (an ACL `user:` entry); none needed for the writer's own uid.
    pub reader_uid: Option<u32>,
    /// A group granted read access (an ACL `group:` entry).
    pub reader_gid: Option<u32>,
}

impl Ownership {
    /// Nobody but the writer: 0700 directory, 0600 files, no ACL.
    pub const PRIVATE: Ownership = Ownership {
        reader_uid: None,
        reader_gid: None,
    };

    /// The named reader uid, unless it is the writer's own (which needs no entry).
    fn other_uid(&self, writer_uid: u32) -> Option<u32> {
        self.reader_uid.filter(|u| *u != writer_uid)
    }

    fn needs_acl(&self, writer_uid: u32) -> bool {
        self.other_uid(writer_uid).is_some() || self.reader_gid.is_some()
    }

    /// The mode a new file or directory is created with: the owner's bits only, so that nobody
    /// else can open it before its ACL is set.
    pub(crate) fn create_mode(dir: bool) -> Mode {
        Mode::from_raw_mode(if dir { 0o700 } else { 0o600 })
    }

    /// Give the new file or directory `fd` (owned by `writer_uid`) its final access: the
    /// owner's bits, and read (and search, for a directory) for the named readers. Any ACL it
    /// inherited from a default ACL is replaced. A filesystem without ACLs fails here when
    /// readers are named, with an error saying so.
    pub(crate) fn apply(&self, fd: impl AsFd, dir: bool, writer_uid: u32) -> Result<()> {
        let fd = fd.as_fd();
        if dir {
            // Files made in the store get exactly the access set here, not the base's defaults.
            match rustix::fs::fremovexattr(fd, ACL_DEFAULT) {
                Ok(()) | Err(rustix::io::Errno::NODATA | rustix::io::Errno::OPNOTSUPP) => {}
                Err(e) => return Err(Error::io("remove the store's default ACL", e.into())),
            }
        }
        if self.needs_acl(writer_uid) {
            let acl = encode_acl(dir, self.other_uid(writer_uid), self.reader_gid);
            return rustix::fs::fsetxattr(fd, ACL_ACCESS, &acl, XattrFlags::empty()).map_err(|e| {
                match e {
                    rustix::io::Errno::OPNOTSUPP => Error::InvalidArgument(
                        "the store's filesystem does not support POSIX ACLs, needed to let \
                         another user read the store (mount it with ACLs, or use a tmpfs)"
                            .into(),
                    ),
                    e => Error::io("set the store's ACL", e.into()),
                }
            });
        }
        match rustix::fs::fremovexattr(fd, ACL_ACCESS) {
            Ok(()) | Err(rustix::io::Errno::NODATA | rustix::io::Errno::OPNOTSUPP) => {}
            Err(e) => return Err(Error::io("remove an inherited ACL", e.into())),
        }
        // The umask, or an inherited ACL, may have left less or more than we mean.
        rustix::fs::fchmod(fd, Ownership::create_mode(dir))
            .map_err(|e| Error::io("chmod store file", e.into()))
    }
}

const ACL_ACCESS: &str = "system.posix_acl_access";
const ACL_DEFAULT: &str = "system.posix_acl_default";

/// The kernel's ACL xattr format (linux/posix_acl_xattr.h): a version word, then entries
/// `{tag u16, perm u16, id u32}`, little-endian, sorted by tag then id.
const ACL_VERSION: u32 = 2;
const TAG_USER_OBJ: u16 = 0x01;
const TAG_USER: u16 = 0x02;
const TAG_GROUP_OBJ: u16 = 0x04;
const TAG_GROUP: u16 = 0x08;
const TAG_MASK: u16 = 0x10;
const TAG_OTHER: u16 = 0x20;
const NO_ID: u32 = u32::MAX;
const R: u16 = 4;
const W: u16 = 2;
const X: u16 = 1;

/// The access ACL of a store directory (`dir`) or file: owner rwx / rw-, each named reader
/// r-x / r--, the owning group and others nothing; the mask (= the mode's group bits) grants
/// no write, so no entry but the owner's can.
fn encode_acl(dir: bool, uid: Option<u32>, gid: Option<u32>) -> Vec<u8> {
    let x = if dir { X } else { 0 };
    let mut entries = vec![(TAG_USER_OBJ, R | W | x, NO_ID)];
    if let Some(u) = uid {
        entries.push((TAG_USER, R | x, u));
    }
    entries.push((TAG_GROUP_OBJ, 0, NO_ID));
    if let Some(g) = gid {
        entries.push((TAG_GROUP, R | x, g));
    }
    entries.push((TAG_MASK, R | x, NO_ID));
    entries.push((TAG_OTHER, 0, NO_ID));
    let mut out = Vec::with_capacity(4 + 8 * entries.len());
    out.extend_from_slice(&ACL_VERSION.to_le_bytes());
    for (tag, perm, id) in entries {
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&perm.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
    }
    out
}

/// Whom a reader trusts to own a store: `$RSHM_STORE_OWNER`, else root or itself.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Trusted {
    Exactly(u32),
    RootOrSelf(u32),
}

impl Trusted {
    pub(crate) fn from_env() -> Result<Trusted> {
        match std::env::var(ENV_STORE_OWNER) {
            Ok(v) if !v.is_empty() => v
                .trim()
                .parse()
                .map(Trusted::Exactly)
                .map_err(|_| Error::Untrusted(format!("{ENV_STORE_OWNER}={v:?} is not a uid"))),
            _ => Ok(Trusted::RootOrSelf(rustix::process::geteuid().as_raw())),
        }
    }

    fn accepts(&self, uid: u32) -> bool {
        match *self {
            Trusted::Exactly(u) => uid == u,
            Trusted::RootOrSelf(me) => uid == 0 || uid == me,
        }
    }

    fn describe(&self) -> String {
        match *self {
            Trusted::Exactly(u) => format!("uid {u} ({ENV_STORE_OWNER})"),
            Trusted::RootOrSelf(me) => format!("root or uid {me} (this process)"),
        }
    }

    /// Check a store directory's or file's owner and mode. Write access for anyone but the
    /// owner shows in the mode's group or other bits: with an ACL, the group bits are its mask,
    /// which bounds every named entry and the owning group.
    pub(crate) fn check(&self, what: &str, st: &rustix::fs::Stat) -> Result<()> {
        if !self.accepts(st.st_uid) {
            return Err(Error::Untrusted(format!(
                "{what} is owned by uid {}, not {}",
                st.st_uid,
                self.describe()
            )));
        }
        let mode = st.st_mode & 0o7777;
        if mode & 0o022 != 0 {
            return Err(Error::Untrusted(format!(
                "{what} is writable by others than its owner (mode {mode:04o})"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_bytes_sorted_and_masked() {
        let acl = encode_acl(false, Some(1000), Some(100));
        let words: Vec<(u16, u16, u32)> = acl[4..]
            .chunks(8)
            .map(|c| {
                (
                    u16::from_le_bytes([c[0], c[1]]),
                    u16::from_le_bytes([c[2], c[3]]),
                    u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
                )
            })
            .collect();
        assert_eq!(&acl[..4], &2u32.to_le_bytes());
        assert_eq!(
            words,
            vec![
                (TAG_USER_OBJ, 6, NO_ID),
                (TAG_USER, 4, 1000),
                (TAG_GROUP_OBJ, 0, NO_ID),
                (TAG_GROUP, 4, 100),
                (TAG_MASK, 4, NO_ID),
                (TAG_OTHER, 0, NO_ID),
            ]
        );
        let dir = encode_acl(true, Some(7), None);
        assert_eq!(dir.len(), 4 + 8 * 5);
        assert_eq!(u16::from_le_bytes([dir[6], dir[7]]), 7, "owner rwx");
    }
}
