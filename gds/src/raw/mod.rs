//! The only `unsafe` code of the crate. Everything here is small and exposes a safe API whose
//! soundness this module argues for; the rest of the crate is `forbid(unsafe_code)`.
//!
//! - `map`: mappings of segment files and what is read through them (not built under
//!   `gds_loom`: loom atomics cannot live in mapped bytes).
//! - `snapshot`: the client's snapshot pointer and the retirement of old snapshots (C1/C2),
//!   built under `gds_loom` too, so loom-tests checks this very code.
//! - [`prefetch`]: a cache hint, for walks over memory the hardware prefetcher cannot follow.
//! - [`shared_u32s`]: a slice of numbers that several threads of a registration may store into.
//! - [`populate`]: back a range of this process's memory with pages now (`crate::prefault`).

#[cfg(not(gds_loom))]
mod map;
mod snapshot;

#[cfg(not(gds_loom))]
pub use map::*;
pub use snapshot::{CellGuard, CellHandle, SnapshotCell};

/// Ask for the cache line holding `p`: a hint, for a registration's walk over a million
/// separately allocated proc arrays. Any address is fine, dangling included.
#[inline]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing architecturally and never faults, whatever the address;
    // SSE, which it belongs to, is part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// `s` as atomics, for the threads of a registration's read-ahead to store proc column values
/// into at once (two proc arrays may name the same rank: plain stores would race). Relaxed
/// stores compile to plain ones; the scope that joins the threads orders them before the
/// caller reads `s` again.
#[cfg(not(gds_loom))]
#[inline]
pub fn shared_u32s(s: &mut [u32]) -> &[crate::sync::AtomicU32] {
    // SAFETY: AtomicU32 has the same size, alignment and bit validity as u32 (its documented
    // representation); the exclusive borrow of `s` lasts as long as the returned shared one, so
    // nothing reads or writes the numbers but through these atomics meanwhile.
    unsafe { &*(s as *mut [u32] as *const [crate::sync::AtomicU32]) }
}

/// The page size [`populate`] works in: x86_64's, and the common aarch64 one (a kernel with
/// larger pages refuses unaligned ranges, and nothing is populated ahead).
#[cfg(not(gds_loom))]
pub const PAGE: usize = 4096;

/// Have the kernel back the pages holding `len` bytes from address `addr` now, as a first write
/// to each would (`MADV_POPULATE_WRITE`, Linux 5.14), without changing what they hold: the page
/// faults of a large new buffer taken on the thread that calls this instead of the one that
/// fills it (`crate::prefault`). Any range is fine: what is not mapped writable, or a kernel
/// without the advice, is left as it is.
#[cfg(not(gds_loom))]
pub fn populate(addr: usize, len: usize) {
    if len == 0 {
        return;
    }
    let start = addr & !(PAGE - 1);
    let end = addr.saturating_add(len).saturating_add(PAGE - 1) & !(PAGE - 1);
    if end <= start {
        return;
    }
    // SAFETY: MADV_POPULATE_WRITE only faults pages in (allocating, or breaking copy-on-write
    // with a copy of the same bytes); it never changes the contents of any page, so no memory
    // that Rust code reads or writes, on this thread or another, sees a different value. An
    // address range that is unmapped or not writable fails (ENOMEM, EFAULT) and is ignored; the
    // pointer is never dereferenced here.
    let _ = unsafe {
        rustix::mm::madvise(
            start as *mut core::ffi::c_void,
            end - start,
            rustix::mm::Advice::LinuxPopulateWrite,
        )
    };
}
