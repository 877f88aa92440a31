//! The only `unsafe` code of the crate. Everything here is small and exposes a safe API whose
//! soundness this module argues for; the rest of the crate is `forbid(unsafe_code)`.
//!
//! - `map`: mappings of segment files and what is read through them (not built under
//!   `gds_loom`: loom atomics cannot live in mapped bytes).
//! - `snapshot`: the client's snapshot pointer and the retirement of old snapshots (C1/C2),
//!   built under `gds_loom` too, so loom-tests checks this very code.
//! - [`prefetch`]: a cache hint, for walks over memory the hardware prefetcher cannot follow.
//! - [`shared_u32s`]: a slice of numbers that several threads of a registration may store into.

#[cfg(not(gds_loom))]
mod map;
mod snapshot;

#[cfg(not(gds_loom))]
pub use map::*;
pub use snapshot::SnapshotCell;

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
