//! The writer's side of a pack (format.md section 10): one file that small segments (posted
//! tables, the index, roots) are appended to, each with its own header and `state` word, so
//! that publishing a commit creates, reserves, maps and unlinks no file.
//!
//! The file is sized with `ftruncate` and left sparse: every byte goes in with `pwrite`, which
//! reports a full filesystem as `OutOfSpace` (a mapping would take a SIGBUS). The writer maps
//! the whole pack read-write once, only for the `state` words (P2), each in a page its `pwrite`
//! has already allocated.

#![forbid(unsafe_code)]

use std::os::fd::OwnedFd;

use crate::bytes::{Encoder, Sink};
use crate::dir::{Ownership, StoreDir};
use crate::error::{Error, Result};
use crate::layout::{Kind, HEADER_LEN, MAX_PACK_SEQ, PACK_ALIGN, STATE_OFF};
use crate::protocol;
use crate::raw::RwMap;
use crate::segment::{encode_header, pack_name, FileSink};

/// The smallest pack: a store of a few small tables stays one page table of tmpfs, and a
/// reader maps no more than this of an old pack.
pub const PACK_MIN: u64 = 1 << 20;

/// Largest offset a place can hold (32 bits of 16-byte units).
const PACK_MAX: u64 = 1 << 36;

/// An open pack: its file, the writer's mapping of it and where the next segment goes.
pub struct Pack {
    seq: u32,
    fd: OwnedFd,
    map: RwMap,
    cap: u64,
    tail: u64,
}

impl Pack {
    /// Create pack `seq` of `cap` bytes (rounded up to whole pages), its header written and
    /// marked ready. On error nothing is left in the directory.
    pub fn create(dir: &StoreDir, seq: u32, cap: u64, own: Ownership) -> Result<Pack> {
        if seq == 0 || seq > MAX_PACK_SEQ {
            return Err(Error::InvalidArgument("pack numbers exhausted".into()));
        }
        let cap = cap.max(PACK_MIN).next_multiple_of(4096);
        if cap > PACK_MAX {
            return Err(Error::InvalidArgument(
                "segment too large for a pack".into(),
            ));
        }
        let name = pack_name(seq);
        let fd = dir.create_sparse_file(&name, cap, own)?;
        let made = (|| {
            let mut enc = Encoder::default();
            encode_header(&mut enc, Kind::Pack, u64::from(seq), cap);
            FileSink::at(&fd, 0, HEADER_LEN).write_at(0, &enc.buf)?;
            let map = RwMap::map(&fd, cap)?;
            let state = map
                .atomic_u32(STATE_OFF)
                .ok_or(Error::Corrupt("state word"))?;
            protocol::mark_ready(state);
            Ok(map)
        })();
        match made {
            Ok(map) => Ok(Pack {
                seq,
                fd,
                map,
                cap,
                tail: HEADER_LEN as u64,
            }),
            Err(e) => {
                let _ = dir.unlink(&name);
                Err(e)
            }
        }
    }

    pub fn seq(&self) -> u32 {
        self.seq
    }

    pub fn capacity(&self) -> u64 {
        self.cap
    }

    /// Where the next segment goes.
    pub fn tail(&self) -> u64 {
        self.tail
    }

    /// Forget everything appended from `tail` on (a transaction that was not published: its
    /// bytes stay, unreachable, and are written over).
    pub fn rewind(&mut self, tail: u64) {
        debug_assert!(tail <= self.tail);
        self.tail = tail.max(HEADER_LEN as u64);
    }

    /// Whether a segment of `len` bytes fits.
    pub fn fits(&self, len: u64) -> bool {
        self.tail.next_multiple_of(PACK_ALIGN as u64) + len <= self.cap
    }

    /// Append a segment of `len` bytes that `fill` writes (its header in state BUILDING),
    /// then mark it ready (P1, P2). Returns its offset. On error the tail does not move.
    pub fn append(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut FileSink<'_>) -> Result<()>,
    ) -> Result<u64> {
        if len < HEADER_LEN || !self.fits(len as u64) {
            return Err(Error::InvalidArgument(
                "segment does not fit the pack".into(),
            ));
        }
        let off = self.tail.next_multiple_of(PACK_ALIGN as u64);
        fill(&mut FileSink::at(&self.fd, off as usize, len))?;
        let state = self
            .map
            .atomic_u32(off as usize + STATE_OFF)
            .ok_or(Error::Corrupt("state word"))?;
        protocol::mark_ready(state);
        self.tail = off + len as u64;
        Ok(off)
    }

    /// Read back the published segment of `len` bytes at `off` (for a copy into a new pack),
    /// its state reset to BUILDING.
    pub fn read_segment(&self, off: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        let mut done = 0;
        while done < len {
            match rustix::io::pread(&self.fd, &mut buf[done..], off + done as u64) {
                Ok(0) => return Err(Error::Corrupt("pack shorter than its segment")),
                Ok(n) => done += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(Error::io("read pack", e.into())),
            }
        }
        buf[STATE_OFF..STATE_OFF + 4].copy_from_slice(&protocol::STATE_BUILDING.to_ne_bytes());
        Ok(buf)
    }
}
