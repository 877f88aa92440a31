//! Who may do what with a store: the writer owns every file and alone may write; the readers it
//! names are granted read access by POSIX ACLs; a reader trusts a store only when its owner is
//! whom it expects and nobody else may write it (format.md section 1).

#![forbid(unsafe_code)]

use std::os::fd::AsFd;

use rustix::fs::{Mode, XattrFlags};

use crate::error::{Error, Result};

/// The uid a reader expects the store to be owned by (the server exports it at setup_fork).
/// Unset, a reader trusts a store owned by root or by its own effective uid.
pub const ENV_STORE_OWNER: &str = "RSHM_STORE_OWNER";

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
