//! Mappings of segment files, atomics in mapped bytes, and unchecked reads of validated values.
//!
//! The rule every mapping here relies on (memmap2's caveat): a mapped file modified or truncated
//! by another process changes memory under Rust references. rshm's writer never writes, resizes
//! or truncates a file after it is published (format.md section 1) and files are private to the
//! store's owner (mode 0600/0640), so the mapped bytes of a published segment are immutable for
//! as long as a reader holds them. The one mutable shared word, the anchor's `root_at`, and the
//! header `state` words are only ever accessed as atomics. A pack (format.md section 10) is the
//! one file written after it is first published: the writer appends segments past its last
//! published one. So a pack is a [`PackMap`], never seen whole as bytes: only the range of one
//! published embedded segment becomes a [`RoMap`], and that range never changes again.

use std::os::fd::AsFd;
use std::ptr::NonNull;
use std::sync::{Arc, Weak};

use memmap2::{Mmap, MmapMut, MmapOptions};

use crate::error::{Error, Result};
use crate::layout::{Entry, ENTRY_RAW_BYTES, VALUE_ALIGN};
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::value::ArchivedValue;

/// A read-only view of one published segment: a whole segment file, or an embedded segment's
/// range of a pack's mapping (shared by every view of that pack in the process).
///
/// Its bytes are handed out as `&[u8]`, which is sound only because a published segment never
/// changes (module docs). The files whose words keep changing, the anchor and the packs, are a
/// [`SharedWords`] and a [`PackMap`] instead.
pub struct RoMap {
    map: Arc<Mmap>,
    off: usize,
    len: usize,
}

/// Map `len` bytes of `fd` read-only and shared (a zero-length file is refused).
fn map_ro(fd: impl AsFd, len: u64) -> Result<Mmap> {
    let len = usize::try_from(len).map_err(|_| Error::Corrupt("segment larger than memory"))?;
    if len == 0 {
        return Err(Error::Truncated {
            expected: 1,
            actual: 0,
        });
    }
    // SAFETY: the file is an rshm segment of at least `len` bytes (the caller checked its size);
    // PROT_READ means nothing in this process can write through the mapping. What may be read
    // through it, and how, is the business of the two types that own such a mapping: `RoMap`
    // (immutable published bytes) and `SharedWords` (atomics only).
    unsafe { MmapOptions::new().len(len).map(&fd.as_fd()) }
        .map_err(|e| Error::io("mmap segment", e))
}

impl RoMap {
    /// Map `len` bytes of `fd` with PROT_READ, MAP_SHARED.
    pub fn map(fd: impl AsFd, len: u64) -> Result<RoMap> {
        let map = map_ro(fd, len)?;
        let len = map.len();
        Ok(RoMap {
            map: Arc::new(map),
            off: 0,
            len,
        })
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
        let len = bytes.len();
        Ok(RoMap {
            map: Arc::new(map),
            off: 0,
            len,
        })
    }

    /// The segment's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map[self.off..self.off + self.len]
    }

    /// The atomic u32 at `off` of the segment, or `None` if out of bounds or misaligned. Only
    /// loaded: the mapping is PROT_READ.
    pub fn atomic_u32(&self, off: usize) -> Option<&AtomicU32> {
        // SAFETY: `off..off + len` lies inside the mapping (checked where the view was made),
        // which lives as long as `&self`.
        unsafe { word::<AtomicU32>(self.map.as_ptr().add(self.off), self.len, off) }
    }
}

/// A pack's mapping while something else keeps it (a snapshot's root, a table).
pub struct WeakPack(Weak<Mmap>);

impl WeakPack {
    /// The mapping, if something still keeps it.
    pub fn upgrade(&self) -> Option<PackMap> {
        self.0.upgrade().map(PackMap)
    }

    /// Whether something still keeps the mapping.
    pub fn is_live(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// A read-only, shared mapping of a pack (format.md section 10): the writer keeps appending
/// segments to it and storing their `state` words, so it is never seen as bytes; its words
/// are read as atomics, and a published embedded segment is handed out as a [`RoMap`] of its
/// range ([`PackMap::segment`]).
pub struct PackMap(Arc<Mmap>);

impl PackMap {
    /// Map `len` bytes of `fd` with PROT_READ, MAP_SHARED.
    pub fn map(fd: impl AsFd, len: u64) -> Result<PackMap> {
        map_ro(fd, len).map(|m| PackMap(Arc::new(m)))
    }

    /// The mapping's length.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// A handle that does not keep the mapping: the process's index of the packs it maps.
    pub fn downgrade(&self) -> WeakPack {
        WeakPack(Arc::downgrade(&self.0))
    }

    /// A copy of `n` bytes at `off` (`off` and `n` multiples of 4, inside the mapping), read
    /// as Relaxed atomic u32 loads: the header of an embedded segment, read before its range
    /// is trusted.
    pub fn copy_at(&self, off: usize, n: usize) -> Option<Vec<u8>> {
        if !off.is_multiple_of(4) || !n.is_multiple_of(4) || off.checked_add(n)? > self.len() {
            return None;
        }
        let mut out = Vec::with_capacity(n);
        for at in (off..off + n).step_by(4) {
            out.extend_from_slice(&self.atomic_u32(at)?.load(Ordering::Relaxed).to_ne_bytes());
        }
        Some(out)
    }

    /// The atomic u32 at `off`, or `None` if out of bounds or misaligned. Only loaded.
    pub fn atomic_u32(&self, off: usize) -> Option<&AtomicU32> {
        // SAFETY: `as_ptr` and `len` describe this mapping, which lives as long as `&self`.
        unsafe { word::<AtomicU32>(self.0.as_ptr(), self.0.len(), off) }
    }

    /// The `len` bytes at `off` as the view of one embedded segment, `None` out of bounds.
    ///
    /// The caller hands out only the range of a segment it reached through a published root
    /// (docs/protocol.md R1): the writer wrote it whole before publishing it (P2, P4) and never
    /// writes it again (it appends past the last published byte and rotates to a new pack
    /// rather than reuse one), so the range is immutable from then on, as a published file is.
    pub fn segment(&self, off: usize, len: usize) -> Option<RoMap> {
        if len == 0 || off.checked_add(len)? > self.len() {
            return None;
        }
        Some(RoMap {
            map: self.0.clone(),
            off,
            len,
        })
    }
}

/// A read-only mapping of a file whose words other processes keep storing to (the anchor): it
/// is never seen as `&[u8]`, only as atomics, and its header is read as a copy.
pub struct SharedWords(Mmap);

impl SharedWords {
    /// Map `len` bytes of `fd` with PROT_READ, MAP_SHARED.
    pub fn map(fd: impl AsFd, len: u64) -> Result<SharedWords> {
        map_ro(fd, len).map(SharedWords)
    }

    /// The mapping's length.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// A copy of the first `n` bytes (at most the mapping), read as Relaxed atomic u32 loads:
    /// no word is read by a plain load while another process may store to it.
    pub fn copy_prefix(&self, n: usize) -> Vec<u8> {
        let n = n.min(self.len()) & !3;
        (0..n)
            .step_by(4)
            .filter_map(|off| self.atomic_u32(off))
            .flat_map(|w| w.load(Ordering::Relaxed).to_ne_bytes())
            .collect()
    }

    /// The atomic u32 at `off`, or `None` if out of bounds or misaligned. Only loaded.
    pub fn atomic_u32(&self, off: usize) -> Option<&AtomicU32> {
        // SAFETY: `as_ptr` and `len` describe this mapping, which lives as long as `&self`.
        unsafe { word::<AtomicU32>(self.0.as_ptr(), self.0.len(), off) }
    }

    /// The atomic u64 at `off`, or `None` if out of bounds or misaligned. Only loaded.
    pub fn atomic_u64(&self, off: usize) -> Option<&AtomicU64> {
        // SAFETY: as in `atomic_u32`.
        unsafe { word::<AtomicU64>(self.0.as_ptr(), self.0.len(), off) }
    }
}

/// A read-write, shared mapping of a segment the writer is building (or of the anchor).
///
/// Words that readers may load while this process stores to them are reached only through
/// [`RwMap::atomic_u32`] / [`RwMap::atomic_u64`], whose atomics come from the mapping's mutable
/// base pointer, never from a `&[u8]`.
pub struct RwMap {
    map: MmapMut,
    /// The mapping's base, taken from `MmapMut::as_mut_ptr` once: the provenance atomic
    /// stores go through.
    base: NonNull<u8>,
}

// SAFETY: `base` only caches `map`'s address (the mapping never moves); `RwMap` is otherwise an
// `MmapMut`, which is Send + Sync, and shared access through `base` is atomic only.
unsafe impl Send for RwMap {}
// SAFETY: as above.
unsafe impl Sync for RwMap {}

impl RwMap {
    /// Map `len` bytes of `fd` with PROT_READ|PROT_WRITE, MAP_SHARED.
    pub fn map(fd: impl AsFd, len: u64) -> Result<RwMap> {
        let len =
            usize::try_from(len).map_err(|_| Error::InvalidArgument("segment too large".into()))?;
        // SAFETY: only the store's single writer maps its files writable, and it only writes
        // bytes no reader can see yet (unpublished) or words it accesses atomically; the file was
        // sized (fallocate) to at least `len` before mapping, so no access faults past EOF.
        let mut map = unsafe { MmapOptions::new().len(len).map_mut(&fd.as_fd()) }
            .map_err(|e| Error::io("mmap segment for writing", e))?;
        let base = NonNull::new(map.as_mut_ptr()).ok_or(Error::Corrupt("null mapping"))?;
        Ok(RwMap { map, base })
    }

    /// The mapped bytes, for filling an unpublished segment (the exclusive borrow means no
    /// atomic handed out earlier is still in use).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }

    /// The mapping's address and length, for hints that never dereference it (prefault).
    pub fn range(&self) -> (usize, usize) {
        (self.base.as_ptr() as usize, self.map.len())
    }

    /// The atomic u32 at `off`, or `None` if out of bounds or misaligned.
    pub fn atomic_u32(&self, off: usize) -> Option<&AtomicU32> {
        // SAFETY: `base` and the length describe this writable mapping, alive as long as `&self`.
        unsafe { word::<AtomicU32>(self.base.as_ptr(), self.map.len(), off) }
    }

    /// The atomic u64 at `off`, or `None` if out of bounds or misaligned.
    pub fn atomic_u64(&self, off: usize) -> Option<&AtomicU64> {
        // SAFETY: as in `atomic_u32`.
        unsafe { word::<AtomicU64>(self.base.as_ptr(), self.map.len(), off) }
    }
}

/// An atomic word of a mapping: `A` (AtomicU32 or AtomicU64) at `off` of the `len` bytes at
/// `base`, or `None` if it is not wholly inside or not aligned.
///
/// # Safety
/// `base` must be the start of a live mapping of `len` bytes that outlives `'a`, and every
/// process accesses the words reached this way only atomically. Through a PROT_READ mapping
/// the caller may only load (atomic loads of up to 16 bytes are allowed on read-only memory).
unsafe fn word<'a, A>(base: *const u8, len: usize, off: usize) -> Option<&'a A> {
    let size = core::mem::size_of::<A>();
    if off.checked_add(size)? > len {
        return None;
    }
    let addr = (base as usize).checked_add(off)?;
    if !addr.is_multiple_of(core::mem::align_of::<A>()) {
        return None;
    }
    // SAFETY: in bounds (checked above) of a mapping that outlives 'a (the caller's
    // guarantee), aligned for `A` (checked), and `A` is an atomic integer, for which every bit
    // pattern is valid; the pointer keeps `base`'s provenance (a writable mapping's mutable
    // pointer where stores happen), and shared access is atomic only (the caller's guarantee).
    Some(unsafe { &*base.add(off).cast::<A>() })
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
        // segment that starts page-aligned (a file) or at a multiple of 16 of a page-aligned
        // pack mapping (a place counts in 16-byte units).
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
