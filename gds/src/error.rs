//! Typed errors. Every failure the store can meet on bad input, from a file or a caller, is one of
//! these; nothing on those paths panics.

#![forbid(unsafe_code)]

use std::fmt;
use std::io;

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, in terms a PMIx server or client can act on.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The file does not start with the rshm magic: not an rshm segment.
    BadMagic,
    /// The segment's format (or value format) is one this build does not read.
    Version {
        major: u16,
        minor: u16,
        value_format: u32,
    },
    /// The segment was written on a machine of the other byte order.
    ByteOrder,
    /// The segment's ready state is not set: its writer has not finished (or died writing it).
    NotReady,
    /// The store was removed (its writer closed it, or a sweep found its writer dead): a file
    /// the reader still needed is gone along with the anchor. Nothing will be published there
    /// again; what the reader mapped before stays readable.
    StoreRemoved,
    /// The file is shorter (or longer) than its header says.
    Truncated { expected: u64, actual: u64 },
    /// A structure inside the segment is inconsistent (an offset out of bounds, a bad count...).
    Corrupt(&'static str),
    /// The filesystem holding the store is full (ENOSPC, EDQUOT), or the memory to build what
    /// it would hold could not be had (a registration's buffers, allocated fallibly).
    OutOfSpace,
    /// No such namespace, key or value.
    NotFound,
    /// The key exists but was posted in a scope that excludes the requester
    /// (PMIX_ERR_EXISTS_OUTSIDE_SCOPE, standard 5.4).
    ExistsOutsideScope,
    /// The caller passed something the store cannot take.
    InvalidArgument(String),
    /// Permission denied opening or creating a store file.
    PermissionDenied,
    /// The store is not owned by whom the reader trusts (`RSHM_STORE_OWNER`, else root or the
    /// reader itself), or may be written by others than its owner: it is not read.
    Untrusted(String),
    /// Any other I/O failure, with the operation that failed.
    Io { op: &'static str, source: io::Error },
}

impl Error {
    /// Wrap an I/O error, mapping ENOSPC/EDQUOT/EACCES/EPERM to their typed variants.
    pub fn io(op: &'static str, source: io::Error) -> Self {
        match source.raw_os_error() {
            Some(code) if code == rustix_errno::ENOSPC || code == rustix_errno::EDQUOT => {
                Error::OutOfSpace
            }
            Some(code) if code == rustix_errno::EACCES || code == rustix_errno::EPERM => {
                Error::PermissionDenied
            }
            _ => Error::Io { op, source },
        }
    }

    /// True when the error says the thing asked for is absent (as opposed to broken).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound)
    }
}

/// errno values we classify. Linux values on every architecture rshm targets.
mod rustix_errno {
    pub const EPERM: i32 = 1;
    pub const EACCES: i32 = 13;
    pub const ENOSPC: i32 = 28;
    pub const EDQUOT: i32 = 122;
}

/// An empty vector with room for `n` elements, or [`Error::OutOfSpace`] if the memory cannot
/// be had: for buffers sized by what a caller sent, which must not abort the process.
#[cfg(not(gds_loom))]
pub(crate) fn try_vec<T>(n: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| Error::OutOfSpace)?;
    Ok(v)
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadMagic => write!(f, "not an rshm segment (bad magic)"),
            Error::Version { major, minor, value_format } => write!(
                f,
                "unsupported rshm format {major}.{minor} (value format {value_format}); this build reads {}.x, value format {}",
                crate::layout::FORMAT_MAJOR,
                crate::layout::VALUE_FORMAT
            ),
            Error::ByteOrder => write!(f, "rshm segment written with the other byte order"),
            Error::NotReady => write!(f, "rshm segment not ready (writer unfinished or dead)"),
            Error::StoreRemoved => write!(f, "the rshm store was removed (its server closed it or exited)"),
            Error::Truncated { expected, actual } => {
                write!(f, "rshm segment truncated: header says {expected} bytes, file has {actual}")
            }
            Error::Corrupt(what) => write!(f, "corrupt rshm segment: {what}"),
            Error::OutOfSpace => write!(f, "no space left for the rshm store (filesystem or memory)"),
            Error::NotFound => write!(f, "not found"),
            Error::ExistsOutsideScope => write!(f, "exists, but in a scope that excludes the requester"),
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::PermissionDenied => write!(f, "permission denied on the rshm store"),
            Error::Untrusted(what) => write!(f, "untrusted rshm store: {what}"),
            Error::Io { op, source } => write!(f, "{op}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
