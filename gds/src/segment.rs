//! Segment files: encoding and checking the common header (format.md section 3), creating a
//! segment (reserve, map, fill, mark ready: protocol steps P1/P2) and opening one (R2/R3), as a
//! file or embedded in a pack.

#![forbid(unsafe_code)]

use std::io::IoSlice;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use crate::bytes::{u16_at, u32_at, u64_at, Encoder, Sink};
use crate::dir::{Ownership, StoreDir};
use crate::error::{Error, Result};
use crate::layout::{
    Header, Kind, BYTE_ORDER_MARK, FORMAT_MAJOR, FORMAT_MINOR, HEADER_LEN, MAGIC, STATE_OFF,
    VALUE_FORMAT,
};
use crate::prefault::Prefault;
use crate::protocol;
use crate::raw::{RoMap, RwMap, SharedMap};

/// Append a common header (state BUILDING) to an empty encoder.
pub fn encode_header(enc: &mut Encoder, kind: Kind, generation: u64, total_len: u64) {
    debug_assert!(enc.buf.is_empty());
    enc.bytes(&header_bytes(kind, generation, total_len));
}

/// A common header (state BUILDING), as bytes: no buffer allocated (a commit's table).
pub fn header_bytes(kind: Kind, generation: u64, total_len: u64) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    let fields: [&[u8]; 12] = [
        &MAGIC,
        &FORMAT_MAJOR.to_ne_bytes(),
        &FORMAT_MINOR.to_ne_bytes(),
        &BYTE_ORDER_MARK.to_ne_bytes(),
        &(kind as u32).to_ne_bytes(),
        &protocol::STATE_BUILDING.to_ne_bytes(),
        &generation.to_ne_bytes(),
        &total_len.to_ne_bytes(),
        &(HEADER_LEN as u32).to_ne_bytes(),
        &VALUE_FORMAT.to_ne_bytes(),
        &(rustix::process::getpid().as_raw_nonzero().get() as u32).to_ne_bytes(),
        &rustix::process::geteuid().as_raw().to_ne_bytes(),
    ];
    let mut at = 0;
    for f in fields {
        h[at..at + f.len()].copy_from_slice(f);
        at += f.len();
    }
    // The last 8 bytes are reserved: zero.
    debug_assert_eq!(at + 8, HEADER_LEN);
    h
}

/// Check the header of the segment of `len` bytes at `off` of `map` against format.md
/// section 3, on a copy read word by word, its state word last (R3); then, and only then, the
/// range becomes a view of its bytes.
pub fn check_segment(
    map: &SharedMap,
    off: usize,
    len: usize,
    kind: Kind,
) -> Result<(RoMap, Header)> {
    let copy = map
        .copy_at(off, HEADER_LEN.min(len) & !3)
        .ok_or(Error::Corrupt("segment header"))?;
    let header = check_fields(&copy, len as u64, kind)?;
    check_ready(map.atomic_u32(off + STATE_OFF))?;
    let view = map.segment(off, len).ok_or(Error::Truncated {
        expected: (off + len) as u64,
        actual: map.len() as u64,
    })?;
    Ok((view, header))
}

/// Check every header field but the state of `bytes` (a copy of the header, read with atomic
/// loads) of a segment of `actual` bytes. For a segment reached through a published root the
/// fields are final; for one reached any other way they may be read before its writer wrote
/// them, and then at worst fail a check: R3's fence is what makes the rest visible.
fn check_fields(bytes: &[u8], actual: u64, kind: Kind) -> Result<Header> {
    if bytes.len() < HEADER_LEN {
        return Err(Error::Truncated {
            expected: HEADER_LEN as u64,
            actual,
        });
    }
    if bytes[..8] != MAGIC {
        return Err(Error::BadMagic);
    }
    let field = |off| u32_at(bytes, off).unwrap_or(0);
    let field64 = |off| u64_at(bytes, off).unwrap_or(0);
    let h = Header {
        magic: MAGIC,
        format_major: u16_at(bytes, 8).unwrap_or(0),
        format_minor: u16_at(bytes, 10).unwrap_or(0),
        byte_order: field(12),
        kind: field(16),
        state: 0,
        generation: field64(24),
        total_len: field64(32),
        header_len: field(40),
        value_format: field(44),
        writer_pid: field(48),
        writer_uid: field(52),
        reserved: 0,
    };
    if h.byte_order != BYTE_ORDER_MARK {
        return Err(Error::ByteOrder);
    }
    if h.format_major != FORMAT_MAJOR || h.value_format != VALUE_FORMAT {
        return Err(Error::Version {
            major: h.format_major,
            minor: h.format_minor,
            value_format: h.value_format,
        });
    }
    if h.kind != kind as u32 {
        return Err(Error::Corrupt("segment of another kind"));
    }
    if h.header_len as usize != HEADER_LEN {
        return Err(Error::Corrupt("header length"));
    }
    if h.total_len != actual {
        return Err(Error::Truncated {
            expected: h.total_len,
            actual,
        });
    }
    Ok(h)
}

/// Create segment file `name` holding `contents` (whose header says BUILDING), then mark it
/// ready. Protocol P1 (reserve + fill an unreachable file) and P2 (Release the ready state).
/// On any error the file is removed: nothing partial is left for anyone to find.
pub fn create(dir: &StoreDir, name: &str, contents: &[u8], own: Ownership) -> Result<RwMap> {
    let len = contents.len() as u64;
    let fd = dir.create_file(name, len, own)?;
    let result = (|| {
        let mut map = RwMap::map(&fd, len)?;
        map.bytes_mut().copy_from_slice(contents);
        let state = map
            .atomic_u32(STATE_OFF)
            .ok_or(Error::Corrupt("state word"))?;
        protocol::mark_ready(state);
        Ok(map)
    })();
    if result.is_err() {
        let _ = dir.unlink(name);
    }
    result
}

/// A new segment file being filled with positioned writes (`pwrite`): the kernel copies into
/// the file's pages directly, with none of a mapping's per-page faults, and skips zeroing a
/// page it writes whole (docs/modex.md "Encoded straight into the file").
pub struct FileSink<'f> {
    fd: &'f OwnedFd,
    /// Where the segment starts in the file (a pack's embedded segment) and its length.
    base: usize,
    len: usize,
}

impl<'f> FileSink<'f> {
    /// The sink of the `len` bytes at `base` of `fd`.
    pub fn at(fd: &'f OwnedFd, base: usize, len: usize) -> FileSink<'f> {
        FileSink { fd, base, len }
    }

    fn check(&self, off: usize, n: usize) -> Result<()> {
        match off.checked_add(n) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(Error::InvalidArgument(
                "write past the segment's end".into(),
            )),
        }
    }
}

impl Sink for FileSink<'_> {
    fn write_at(&mut self, off: usize, bytes: &[u8]) -> Result<()> {
        self.check(off, bytes.len())?;
        let mut done = 0;
        while done < bytes.len() {
            match rustix::io::pwrite(self.fd, &bytes[done..], (self.base + off + done) as u64) {
                Ok(0) => return Err(Error::OutOfSpace),
                Ok(n) => done += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::NOSPC) => return Err(Error::OutOfSpace),
                Err(e) => return Err(Error::io("write segment", e.into())),
            }
        }
        Ok(())
    }

    fn write_all_at(&mut self, off: usize, bufs: &[&[u8]]) -> Result<()> {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        self.check(off, total)?;
        let slices: Vec<IoSlice<'_>> = bufs.iter().map(|b| IoSlice::new(b)).collect();
        let done = match rustix::io::pwritev(self.fd, &slices, (self.base + off) as u64) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => 0,
            Err(rustix::io::Errno::NOSPC) => return Err(Error::OutOfSpace),
            Err(e) => return Err(Error::io("write segment", e.into())),
        };
        // Short or interrupted: finish piece by piece.
        let (mut skip, mut at) = (done, off + done);
        for b in bufs {
            if skip >= b.len() {
                skip -= b.len();
                continue;
            }
            self.write_at(at, &b[skip..])?;
            at += b.len() - skip;
            skip = 0;
        }
        Ok(())
    }
}

/// Create segment file `name` of `len` bytes whose contents `fill` writes into the new file
/// (all zero until written), then mark it ready: P1 and P2 like [`create`], without a buffer
/// holding the whole segment and without mapping more than the header's page (for P2's store).
pub fn create_streamed(
    dir: &StoreDir,
    name: &str,
    len: usize,
    own: Ownership,
    fill: impl FnOnce(&mut FileSink<'_>) -> Result<()>,
) -> Result<()> {
    let fd = dir.create_file(name, len as u64, own)?;
    let result = (|| {
        // A large file's pages are new memory: faulted in through a mapping on another core
        // from the end while `fill` writes from the start (the mapping outlives the thread).
        // Only a help: a mapping that cannot be made is done without.
        let ahead = if len >= PREFAULT_MIN {
            RwMap::map(&fd, len as u64).ok()
        } else {
            None
        };
        let prefault = match &ahead {
            Some(map) => {
                let p = Prefault::start();
                let (addr, _) = map.range();
                p.range(addr, len);
                p
            }
            None => Prefault::none(),
        };
        fill(&mut FileSink::at(&fd, 0, len))?;
        drop(prefault);
        drop(ahead);
        // P2 through a mapping of the header only: the Release store orders every write
        // above (made by this thread's own syscalls) before the state readers Acquire.
        let map = RwMap::map(&fd, len.min(HEADER_PAGE) as u64)?;
        let state = map
            .atomic_u32(STATE_OFF)
            .ok_or(Error::Corrupt("state word"))?;
        protocol::mark_ready(state);
        Ok(())
    })();
    if result.is_err() {
        let _ = dir.unlink(name);
    }
    result
}

/// Streamed segments this large have their pages faulted in ahead of the writes.
const PREFAULT_MIN: usize = 4 << 20;

/// How much of a streamed segment is mapped to mark it ready.
const HEADER_PAGE: usize = 4096;

/// Open segment file `name` (R2), refusing one too short to hold a header: its descriptor and
/// size.
fn open_sized(dir: &StoreDir, name: &str) -> Result<(OwnedFd, u64)> {
    let (fd, size) = dir.open_file(name)?;
    if size < HEADER_LEN as u64 {
        return Err(Error::Truncated {
            expected: HEADER_LEN as u64,
            actual: size,
        });
    }
    Ok((fd, size))
}

/// R3 on a mapped state word: the segment is ready, or `NotReady`.
fn check_ready(state: Option<&crate::sync::AtomicU32>) -> Result<()> {
    let state = state.ok_or(Error::Corrupt("state word"))?;
    if !protocol::is_ready(state) {
        return Err(Error::NotReady);
    }
    Ok(())
}

/// Open and map segment file `name`, checking its header. Protocol R2/R3.
pub fn open(dir: &StoreDir, name: &str, kind: Kind) -> Result<(Arc<RoMap>, Header)> {
    let (fd, size) = open_sized(dir, name)?;
    let len = usize::try_from(size).map_err(|_| Error::Corrupt("segment larger than memory"))?;
    let (view, header) = check_segment(&SharedMap::map(&fd, size)?, 0, len, kind)?;
    Ok((Arc::new(view), header))
}

/// Open and map the anchor, whose `root_gen` the writer keeps storing to: its header is
/// checked on a copy read word by word, and its state word last (R3).
pub fn open_anchor(dir: &StoreDir) -> Result<SharedMap> {
    let (fd, size) = open_sized(dir, ANCHOR_NAME)?;
    let map = SharedMap::map(&fd, size)?;
    let header = map
        .copy_at(0, HEADER_LEN)
        .ok_or(Error::Corrupt("anchor header"))?;
    check_fields(&header, size, Kind::Anchor)?;
    check_ready(map.atomic_u32(STATE_OFF))?;
    Ok(map)
}

/// Open and map pack `seq` (R2), checking its header (R3).
pub fn open_pack(dir: &StoreDir, seq: u32) -> Result<SharedMap> {
    let (fd, size) = open_sized(dir, &pack_name(seq))?;
    let map = SharedMap::map(&fd, size)?;
    let header = map
        .copy_at(0, HEADER_LEN)
        .ok_or(Error::Corrupt("pack header"))?;
    check_fields(&header, size, Kind::Pack)?;
    check_ready(map.atomic_u32(STATE_OFF))?;
    Ok(map)
}

/// The embedded segment at `off` of `pack`, of `kind`, checked as a file is (R3): its header
/// is read as a copy first, for its length, then the range it claims becomes the segment.
pub fn open_embedded(pack: &SharedMap, off: u64, kind: Kind) -> Result<(Arc<RoMap>, Header)> {
    let off = usize::try_from(off).map_err(|_| Error::Corrupt("place out of the pack"))?;
    let header = pack
        .copy_at(off, HEADER_LEN)
        .ok_or(Error::Corrupt("place out of the pack"))?;
    if header[..8] != MAGIC {
        return Err(Error::BadMagic);
    }
    let len = u64_at(&header, 32)
        .and_then(|l| usize::try_from(l).ok())
        .filter(|&l| l >= HEADER_LEN)
        .ok_or(Error::Corrupt("embedded segment length"))?;
    if off.checked_add(len).is_none_or(|end| end > pack.len()) {
        return Err(Error::Truncated {
            expected: off as u64 + len as u64,
            actual: pack.len() as u64,
        });
    }
    let (view, header) = check_segment(pack, off, len, kind)?;
    Ok((Arc::new(view), header))
}

/// File name of pack `seq`.
pub fn pack_name(seq: u32) -> String {
    format!("rshm-pack-{seq:08x}")
}

/// File name of table (`nsid`, `part`) generation `gen`.
pub fn table_name(nsid: u32, part: u32, gen: u64) -> String {
    format!("rshm-tbl-{nsid:08x}-{part:08x}-{gen:016x}")
}

/// File name of the anchor.
pub const ANCHOR_NAME: &str = "rshm-anchor";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bytes::Sink;

    /// A segment large enough to be faulted in through a mapping while it is written holds
    /// exactly what was written: the pages the mapping faults in first are not zeroed again,
    /// nor the written ones changed.
    #[test]
    fn prefaulted_streamed_segment_holds_what_was_written() {
        let base =
            tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
        let dir = StoreDir::create(base.path(), "rshm-prefault-test", Ownership::PRIVATE).unwrap();
        let len = 3 * PREFAULT_MIN + 123;
        let byte = |i: usize| (i.wrapping_mul(2_654_435_761) >> 7) as u8 | 1;
        create_streamed(&dir, "rshm-tbl-big", len, Ownership::PRIVATE, |file| {
            let mut off = 0;
            while off < len {
                // Never zero, so a page zeroed after its write shows.
                let n = (len - off).min(65_536);
                let part: Vec<u8> = (off..off + n).map(byte).collect();
                file.write_at(off, &part)?;
                off += n;
            }
            Ok(())
        })
        .unwrap();
        let (fd, size) = dir.open_file("rshm-tbl-big").unwrap();
        assert_eq!(size, len as u64);
        let map = RoMap::published_file(&fd, size).unwrap();
        let bytes = map.bytes();
        // The header's state word was set ready after the writes: skip that word.
        let bad = (0..len)
            .filter(|&i| !(STATE_OFF..STATE_OFF + 4).contains(&i))
            .find(|&i| bytes[i] != byte(i));
        assert_eq!(bad, None);
    }
}
