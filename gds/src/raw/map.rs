//! Mappings of segment files, atomics in mapped bytes, and unchecked reads of validated values.
//!
//! The rule every mapping here relies on (memmap2's caveat): a mapped file modified or truncated
//! by another process changes memory under Rust references. So a file that its writer may still
//! store into is mapped raw ([`SharedMap`]: memmap2's `MmapRaw`, which never hands out a
//! reference to its interior): its words are read only as atomics, or copied word by word with
//! atomic loads. A shared slice (`&[u8]`, a [`RoMap`]) is only ever formed over the range of one
//! published segment, which its writer wrote whole before publishing it and never writes,
//! resizes or truncates again (format.md section 1, docs/protocol.md P2/P4/R3).
//!
//! That immutability is the writer's promise, and the store's files belong to the writer's user
//! (mode 0600/0640, checked on every open): a process running as that user can still change
//! published bytes, and a reader then reads values that were never written as such, or faults.
//! Readers trust the store's owner exactly as far as they trust the server itself.
//!
//! Atomic accesses to a read-only mapping are `Relaxed` loads only (the one kind Rust defines
//! on read-only memory, for words this small); the protocol orders them with fences
//! (`crate::protocol`).

use std::os::fd::{AsFd, AsRawFd};
use std::ptr::NonNull;
use std::sync::{Arc, Weak};

use memmap2::{MmapMut, MmapOptions, MmapRaw};

use crate::error::{Error, Result};
use crate::layout::{Entry, ENTRY_RAW_BYTES, VALUE_ALIGN};
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::value::ArchivedValue;

/// Map `len` bytes of `fd` read-only and shared, raw (a zero-length file is refused).
fn map_raw(fd: impl AsFd, len: u64) -> Result<MmapRaw> {
    let len = usize::try_from(len).map_err(|_| Error::Corrupt("segment larger than memory"))?;
    if len == 0 {
        return Err(Error::Truncated {
            expected: 1,
            actual: 0,
        });
    }
    MmapOptions::new()
        .len(len)
        .map_raw_read_only(fd.as_fd().as_raw_fd())
        .map_err(|e| Error::io("mmap segment", e))
}

/// A read-only, shared mapping of a file that other processes may still store into (the
/// anchor, a pack, a segment file not yet checked ready): never seen as bytes. Its words are
/// loaded as atomics or copied word by word ([`SharedMap::copy_at`]), and a published segment
/// in it becomes a [`RoMap`] of exactly that segment's range ([`SharedMap::segment`]).
#[derive(Clone)]
pub struct SharedMap(Arc<MmapRaw>);

/// A [`SharedMap`] while something else keeps it (a snapshot's root, a table).
pub struct WeakMap(Weak<MmapRaw>);

impl WeakMap {
    /// The mapping, if something still keeps it.
    pub fn upgrade(&self) -> Option<SharedMap> {
        self.0.upgrade().map(SharedMap)
    }

    /// Whether something still keeps the mapping.
    pub fn is_live(&self) -> bool {
        self.0.strong_count() > 0
    }
}

impl SharedMap {
    /// Map `len` bytes of `fd` with PROT_READ, MAP_SHARED.
    pub fn map(fd: impl AsFd, len: u64) -> Result<SharedMap> {
        map_raw(fd, len).map(|m| SharedMap(Arc::new(m)))
    }

    /// The mapping's length.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// A handle that does not keep the mapping: the process's index of the packs it maps.
    pub fn downgrade(&self) -> WeakMap {
        WeakMap(Arc::downgrade(&self.0))
    }

    /// A copy of `n` bytes at `off` (`off` and `n` multiples of 4, inside the mapping), read
    /// as Relaxed atomic u32 loads: a header, read before its segment's range is trusted.
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

    /// The atomic u32 at `off`, or `None` if out of bounds or misaligned. Loaded Relaxed only:
    /// the mapping is PROT_READ.
    pub fn atomic_u32(&self, off: usize) -> Option<&AtomicU32> {
        // SAFETY: `as_ptr` and `len` describe this mapping (MmapRaw forms no reference to it),
        // which lives as long as `&self`.
        unsafe { word::<AtomicU32>(self.0.as_ptr(), self.0.len(), off) }
    }

    /// The atomic u64 at `off`, or `None` if out of bounds or misaligned. Loaded Relaxed only.
    pub fn atomic_u64(&self, off: usize) -> Option<&AtomicU64> {
        // SAFETY: as in `atomic_u32`.
        unsafe { word::<AtomicU64>(self.0.as_ptr(), self.0.len(), off) }
    }

    /// A private, read-only copy of `bytes` in an anonymous mapping: lets untrusted segment
    /// bytes (a file under inspection, fuzz input) go through exactly the reader's checks.
    /// The copy is page-aligned like a file mapping, so alignment checks behave the same.
    pub fn copy_of(bytes: &[u8]) -> Result<SharedMap> {
        if bytes.is_empty() {
            return Err(Error::Truncated {
                expected: 1,
                actual: 0,
            });
        }
        let mut anon =
            MmapMut::map_anon(bytes.len()).map_err(|e| Error::io("map anonymous memory", e))?;
        anon[..bytes.len()].copy_from_slice(bytes);
        let map = anon
            .make_read_only()
            .map_err(|e| Error::io("mprotect copy", e))?;
        Ok(SharedMap(Arc::new(MmapRaw::from(map))))
    }

    /// The `len` bytes at `off` as the view of one published segment, `None` out of bounds.
    ///
    /// The caller hands out only the range of a segment it found ready (R3) or reached through
    /// a published root (R1): the writer wrote it whole before publishing it (P2, P4) and never
    /// writes it again (it appends past the last published byte and rotates to a new pack
    /// rather than reuse one), so the range is immutable from then on.
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

/// A read-only view of one published segment: a whole segment file, or an embedded segment's
/// range of a pack's mapping (shared by every view of that pack in the process).
///
/// Its bytes are handed out as `&[u8]`, which is sound only because a published segment never
/// changes (module docs): a `RoMap` is made only over such a range.
pub struct RoMap {
    map: Arc<MmapRaw>,
    off: usize,
    len: usize,
}

impl RoMap {
    /// Map the whole of a segment file that the caller knows is published and complete (its
    /// own writer's, read back): PROT_READ, MAP_SHARED. A file reached any other way goes
    /// through [`SharedMap`] and R3 first.
    pub fn published_file(fd: impl AsFd, len: u64) -> Result<RoMap> {
        SharedMap::map(fd, len)?
            .segment(0, len as usize)
            .ok_or(Error::Corrupt("segment length"))
    }

    /// The segment's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `off..off + len` lies inside the mapping (checked where the view was made),
        // which `self.map` keeps mapped and unmoved for as long as `&self`; the range is one
        // published segment, which nothing writes again (module docs), so a shared slice's
        // promise that its bytes do not change holds for the borrow.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(self.off), self.len) }
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
        // sized to at least `len` before mapping (a segment file reserved whole with fallocate;
        // a pack sized with ftruncate, and written only where it reserved space first), so no
        // access faults past EOF or on space the filesystem cannot back.
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
/// the caller may only load, and only `Relaxed`: Rust defines atomic loads on read-only memory
/// for those alone (and for words no larger than the target's native atomics, which u32 and u64
/// are on every 64-bit target); ordering comes from a fence after the load.
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
        // The same check rkyv runs before its own unchecked access in debug builds: `validate`
        // already passed, so this costs only test time and catches a broken invariant.
        debug_assert!(
            rkyv::access::<ArchivedValue, rkyv::rancor::Failure>(bytes).is_ok(),
            "a validated value no longer validates"
        );
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
