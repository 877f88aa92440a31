//! Mappings of segment files, atomics in mapped bytes, and unchecked reads of validated values.
//!
//! The rule every mapping here relies on (memmap2's caveat): a mapped file modified or truncated
//! by another process changes memory under Rust references. rshm's writer never writes, resizes
//! or truncates a file after it is published (format.md section 1) and files are private to the
//! store's owner (mode 0600/0640), so the mapped bytes of a published segment are immutable for
//! as long as a reader holds them. The one mutable shared word, the anchor's `root_gen`, and the
//! header `state` words are only ever accessed as atomics.

use std::os::fd::AsFd;
use std::sync::Arc;

use memmap2::{Mmap, MmapMut, MmapOptions};

use crate::error::{Error, Result};
use crate::layout::{Entry, ENTRY_RAW_BYTES, VALUE_ALIGN};
use crate::sync::{AtomicU32, AtomicU64};
use crate::value::ArchivedValue;

/// A read-only, shared mapping of a whole published segment file.
pub struct RoMap(Mmap);

impl RoMap {
    /// Map `len` bytes of `fd` with PROT_READ, MAP_SHARED.
    pub fn map(fd: impl AsFd, len: u64) -> Result<RoMap> {
        let len = usize::try_from(len).map_err(|_| Error::Corrupt("segment larger than memory"))?;
        if len == 0 {
            return Err(Error::Truncated {
                expected: 1,
                actual: 0,
            });
        }
        // SAFETY: the file is an rshm segment that the caller checked is `len` bytes long; its
        // published bytes are never modified or truncated (module docs), so the `&[u8]` the map
        // derefs to stays valid and unchanging for the life of the mapping. PROT_READ means
        // nothing in this process can write through it.
        let map = unsafe { MmapOptions::new().len(len).map(&fd.as_fd()) }
            .map_err(|e| Error::io("mmap segment", e))?;
        Ok(RoMap(map))
    }

    /// A private, read-only copy of `bytes` in an anonymous mapping: lets untrusted segment
    /// bytes (a file under inspection, fuzz input) go through exactly the reader's checks.
    /// The copy is page-aligned like a file mapping, so alignment checks behave the same.
    pub fn copy_of(bytes: &[u8]) -> Result<RoMap> {
        let mut anon = MmapMut::map_anon(bytes.len().max(1))
            .map_err(|e| Error::io("map anonymous memory", e))?;
        anon[..bytes.len()].copy_from_slice(bytes);
        let map = anon
            .make_read_only()
            .map_err(|e| Error::io("mprotect copy", e))?;
        if bytes.is_empty() {
            return Err(Error::Truncated {
                expected: 1,
                actual: 0,
            });
        }
        Ok(RoMap(map))
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// A read-write, shared mapping of a segment the writer is building (or of the anchor).
pub struct RwMap(MmapMut);

impl RwMap {
    /// Map `len` bytes of `fd` with PROT_READ|PROT_WRITE, MAP_SHARED.
    pub fn map(fd: impl AsFd, len: u64) -> Result<RwMap> {
        let len =
            usize::try_from(len).map_err(|_| Error::InvalidArgument("segment too large".into()))?;
        // SAFETY: only the store's single writer maps its files writable, and it only writes
        // bytes no reader can see yet (unpublished) or words it accesses atomically; the file was
        // sized (fallocate) to at least `len` before mapping, so no access faults past EOF.
        let map = unsafe { MmapOptions::new().len(len).map_mut(&fd.as_fd()) }
            .map_err(|e| Error::io("mmap segment for writing", e))?;
        Ok(RwMap(map))
    }

    /// The mapped bytes, for filling an unpublished segment.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }

    /// The mapped bytes, read-only.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// The atomic u32 at `off` of `bytes` (a mapping), or `None` if out of bounds or misaligned.
pub fn atomic_u32(bytes: &[u8], off: usize) -> Option<&AtomicU32> {
    let end = off.checked_add(4)?;
    let word = bytes.get(off..end)?;
    let ptr = word.as_ptr();
    if !(ptr as usize).is_multiple_of(core::mem::align_of::<AtomicU32>()) {
        return None;
    }
    // SAFETY: `ptr` points to 4 in-bounds, suitably aligned bytes that live as long as `bytes`.
    // AtomicU32 has the size and bit validity of u32, every bit pattern is valid, and shared
    // words of a segment are only ever accessed atomically by every process (module docs). A
    // plain atomic load is a plain load on the architectures rshm supports, so it is valid on
    // a PROT_READ mapping; readers never store through it.
    Some(unsafe { &*(ptr as *const AtomicU32) })
}

/// The atomic u64 at `off` of `bytes` (a mapping), or `None` if out of bounds or misaligned.
pub fn atomic_u64(bytes: &[u8], off: usize) -> Option<&AtomicU64> {
    let end = off.checked_add(8)?;
    let word = bytes.get(off..end)?;
    let ptr = word.as_ptr();
    if !(ptr as usize).is_multiple_of(core::mem::align_of::<AtomicU64>()) {
        return None;
    }
    // SAFETY: as in `atomic_u32`, for 8 aligned in-bounds bytes.
    Some(unsafe { &*(ptr as *const AtomicU64) })
}

/// A stored value as read from a validated table.
pub enum Stored<'a> {
    /// An rkyv archive of a `Value`.
    Archived(&'a ArchivedValue),
    /// A byte object stored raw (`ENTRY_RAW_BYTES`).
    Bytes(&'a [u8]),
}

/// The values of a table, validated once with rkyv's bytecheck; reads after that are unchecked.
///
/// Holds the mapping, so the values it hands out live as long as it does.
pub struct ValidatedValues {
    /// Keeps the mapping alive (and unmapped only when the last reader of it is gone).
    _map: Arc<RoMap>,
    /// The mapping's bytes, cached: every lookup reads them, and going through the `Arc`, the
    /// `RoMap` and the `Mmap` each time is a chain of dependent loads on the hot path.
    ptr: *const u8,
    len: usize,
    entries_off: usize,
    entry_count: usize,
}

// SAFETY: the raw pointer only caches the address of `_map`'s bytes, which `_map` (an `Arc` of a
// read-only mapping that never moves or changes) keeps alive; sharing or sending it is exactly
// as safe as sharing or sending the `Arc<RoMap>` itself, which is Send + Sync.
unsafe impl Send for ValidatedValues {}
// SAFETY: as above; all access through the pointer is read-only.
unsafe impl Sync for ValidatedValues {}

impl ValidatedValues {
    /// Validate the value of every one of the `entry_count` Entry records at `entries_off`.
    /// The caller has checked that the entry region lies inside the mapping.
    pub fn validate(map: Arc<RoMap>, entries_off: usize, entry_count: usize) -> Result<Self> {
        let (ptr, len) = (map.bytes().as_ptr(), map.bytes().len());
        let this = ValidatedValues {
            _map: map,
            ptr,
            len,
            entries_off,
            entry_count,
        };
        for i in 0..entry_count {
            let (raw, bytes) = this
                .value_bytes(i)
                .ok_or(Error::Corrupt("value out of bounds"))?;
            if !raw {
                rkyv::access::<ArchivedValue, rkyv::rancor::Failure>(bytes)
                    .map_err(|_| Error::Corrupt("value fails validation"))?;
            }
        }
        Ok(this)
    }

    /// Entry `i`'s value bytes, if its offset and length are sane, and whether they are raw
    /// (`ENTRY_RAW_BYTES`) rather than an archive.
    #[inline(always)]
    fn value_bytes(&self, i: usize) -> Option<(bool, &[u8])> {
        if i >= self.entry_count {
            return None;
        }
        let rec = self
            .entries_off
            .checked_add(i.checked_mul(size_of::<Entry>())?)?;
        let bytes = self.bytes();
        let len = crate::bytes::u32_at(bytes, rec + core::mem::offset_of!(Entry, value_len))?;
        let off = crate::bytes::u64_at(bytes, rec + core::mem::offset_of!(Entry, value_off))?;
        let flags = crate::bytes::u16_at(bytes, rec + core::mem::offset_of!(Entry, flags))?;
        let raw = flags & ENTRY_RAW_BYTES != 0;
        let off = usize::try_from(off).ok()?;
        if off % VALUE_ALIGN != 0 || (len == 0 && !raw) {
            return None;
        }
        Some((raw, bytes.get(off..off.checked_add(len as usize)?)?))
    }

    /// The value of entry `i` (`None` only for `i` out of range). Inlined: a get's answer
    /// then stays in registers on its way to the caller.
    #[inline(always)]
    pub fn value(&self, i: usize) -> Option<Stored<'_>> {
        let (raw, bytes) = self.value_bytes(i)?;
        if raw {
            return Some(Stored::Bytes(bytes));
        }
        // SAFETY: `validate` ran rkyv's full bytecheck over exactly these bytes (the entry
        // record, its flags and the value bytes are in the same immutable mapping, so reading
        // them again yields the same range and kind), and the range is 16-aligned inside a
        // page-aligned mapping.
        Some(Stored::Archived(unsafe {
            rkyv::access_unchecked::<ArchivedValue>(bytes)
        }))
    }

    /// The mapped bytes the values live in.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr`/`len` were taken from `self._map`'s bytes, which stay mapped, unmoved and
        // unchanged for as long as `self` holds the `Arc` (the module's immutability rule).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}
