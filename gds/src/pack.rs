//! The writer's side of a pack (format.md section 10): one file that small segments (posted
//! tables, the index, roots) are appended to, each with its own header and `state` word, so
//! that publishing a commit creates, reserves, maps and unlinks no file, and makes no system
//! call.
//!
//! The writer maps the whole pack read-write once and writes segments through the mapping:
//! a shared file mapping is not copy-on-write, so a server that forks its clients while they
//! commit pays no page copy for it, and an append is a copy, not a `pwrite`. The file is sized
//! with `ftruncate` and stays sparse past what is backed: space is reserved (`fallocate`) and
//! the mapping's pages populated ahead of the tail in steps of [`BACK_STEP`], so a full
//! filesystem is `OutOfSpace` from `fallocate`, never a SIGBUS on a store.

#![forbid(unsafe_code)]

use std::os::fd::OwnedFd;

use rustix::fs::FallocateFlags;

use crate::bytes::Encoder;
use crate::dir::{Ownership, StoreDir};
use crate::error::{Error, Result};
use crate::layout::{Kind, HEADER_LEN, MAX_PACK_SEQ, PACK_ALIGN, STATE_OFF};
use crate::protocol;
use crate::raw::{populate, RwMap};
use crate::segment::{encode_header, pack_name};

/// The smallest pack: a store of a few small tables stays one page table of tmpfs, and a
/// reader maps no more than this of an old pack.
pub const PACK_MIN: u64 = 1 << 20;

/// Largest offset a place can hold (32 bits of 16-byte units).
const PACK_MAX: u64 = 1 << 36;

/// Space is reserved and populated this far ahead of the tail at a time: one `fallocate` and
/// one `madvise` per 64 pages appended, not a fault (or a system call) per segment.
pub const BACK_STEP: u64 = 256 << 10;

/// An open pack: its file, the writer's mapping of it, where the next segment goes and how far
/// its space is reserved.
pub struct Pack {
    seq: u32,
    fd: OwnedFd,
    map: RwMap,
    cap: u64,
    tail: u64,
    /// Bytes from the start reserved with `fallocate` (and populated in the mapping).
    backed: u64,
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
            let map = RwMap::map(&fd, cap)?;
            let mut pack = Pack {
                seq,
                fd,
                map,
                cap,
                tail: 0,
                backed: 0,
            };
            let mut enc = Encoder::default();
            encode_header(&mut enc, Kind::Pack, u64::from(seq), cap);
            pack.back(HEADER_LEN as u64)?;
            pack.map.bytes_mut()[..HEADER_LEN].copy_from_slice(&enc.buf);
            let state = pack
                .map
                .atomic_u32(STATE_OFF)
                .ok_or(Error::Corrupt("state word"))?;
            protocol::mark_ready(state);
            pack.tail = HEADER_LEN as u64;
            Ok(pack)
        })();
        if made.is_err() {
            let _ = dir.unlink(&name);
        }
        made
    }

    /// Reserve the file's space up to `end` (in steps of [`BACK_STEP`]) and populate the
    /// mapping's pages there: stores up to `end` then neither fault nor meet a full filesystem.
    fn back(&mut self, end: u64) -> Result<()> {
        if end <= self.backed {
            return Ok(());
        }
        let to = end
            .max(self.backed + BACK_STEP)
            .next_multiple_of(BACK_STEP)
            .min(self.cap);
        if end > to {
            return Err(Error::InvalidArgument(
                "segment does not fit the pack".into(),
            ));
        }
        rustix::fs::fallocate(
            &self.fd,
            FallocateFlags::KEEP_SIZE,
            self.backed,
            to - self.backed,
        )
        .map_err(|e| Error::io("reserve pack space", e.into()))?;
        let (base, _) = self.map.range();
        populate(base + self.backed as usize, (to - self.backed) as usize);
        self.backed = to;
        Ok(())
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

    /// Append a segment of `len` bytes that `fill` writes into the mapping (its header in
    /// state BUILDING), then mark it ready (P1p, P2). `fill` also gets the pack's bytes before
    /// the segment (published segments among them, never written again: a root is patched
    /// from the one before). Returns the segment's offset. On error the tail does not move.
    pub fn append(
        &mut self,
        len: usize,
        fill: impl FnOnce(&[u8], &mut [u8]) -> Result<()>,
    ) -> Result<u64> {
        if len < HEADER_LEN || !self.fits(len as u64) {
            return Err(Error::InvalidArgument(
                "segment does not fit the pack".into(),
            ));
        }
        let off = self.tail.next_multiple_of(PACK_ALIGN as u64);
        self.back(off + len as u64)?;
        let (before, after) = self.map.bytes_mut().split_at_mut(off as usize);
        fill(before, &mut after[..len])?;
        let state = self
            .map
            .atomic_u32(off as usize + STATE_OFF)
            .ok_or(Error::Corrupt("state word"))?;
        protocol::mark_ready(state);
        self.tail = off + len as u64;
        Ok(off)
    }

    /// The published segment of `len` bytes at `off` (for a copy into a new pack).
    pub fn segment(&mut self, off: u64, len: usize) -> Result<&[u8]> {
        let end = off.checked_add(len as u64).filter(|&e| e <= self.tail);
        let end = end.ok_or(Error::Corrupt("segment past the pack's tail"))?;
        Ok(&self.map.bytes_mut()[off as usize..end as usize])
    }
}
