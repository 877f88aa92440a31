//! A snapshot pointer that readers load lock-free while one thread replaces it; a replaced
//! snapshot is dropped only after every thread that could still see it has unpinned
//! (crossbeam-epoch). Protocol steps C1/C2 of docs/protocol.md.
//!
//! Each cell has an epoch collector of its own: only pins of this cell hold back the retirement
//! of its snapshots, so a long pin on one store (or a thread parked while pinned) never keeps
//! another store's old generations mapped. A thread pins through a [`CellHandle`], its
//! registration with the cell's collector, which it keeps and reuses (`crate::pins`).
//!
//! The epoch scheme and the atomics come from [`crate::sync`], so under `--cfg gds_loom` this
//! code runs unchanged on loom (loom-tests/tests/retirement.rs).

use crate::sync::epoch::{Atomic, Collector, Guard, LocalHandle, Owned};
use crate::sync::Ordering;

/// C2's ordering: pairs with [`SWAP`], so a reader sees the snapshot it loads complete.
const LOAD: Ordering = Ordering::Acquire;
/// C1's ordering: Release publishes the new snapshot (and everything it owns) to C2's Acquire.
const SWAP: Ordering = Ordering::AcqRel;

/// A snapshot pointer: see the module docs.
pub struct SnapshotCell<T: Send + Sync + 'static> {
    ptr: Atomic<T>,
    /// Retires this cell's snapshots, and no one else's.
    collector: Collector,
}

/// A thread's registration with one cell's collector (not `Send`: it belongs to its thread).
pub struct CellHandle(LocalHandle);

/// A pinned thread of one cell: what [`SnapshotCell::load`] and [`SnapshotCell::replace`] take.
pub struct CellGuard(Guard);

impl CellHandle {
    /// Pin the thread: snapshots loaded under the guard stay alive until it is dropped.
    #[inline]
    pub fn pin(&self) -> CellGuard {
        CellGuard(self.0.pin())
    }
}

impl CellGuard {
    /// Hand this thread's retired snapshots to the collector and let it try to advance (the
    /// loom models' way to ask for a collection now).
    #[cfg(gds_loom)]
    pub fn flush(&self) {
        self.0.flush();
    }
}

impl<T: Send + Sync + 'static> SnapshotCell<T> {
    pub fn new(value: T) -> Self {
        SnapshotCell {
            ptr: Atomic::new(value),
            collector: Collector::new(),
        }
    }

    /// Register the calling thread with this cell's collector (done once per thread and kept).
    pub fn register(&self) -> CellHandle {
        CellHandle(self.collector.register())
    }

    /// The guard's epoch scheme must be this cell's, or retirement would not wait for it: a
    /// guard of another cell is a caller's bug, refused here rather than left to corrupt.
    #[inline]
    fn check(&self, guard: &CellGuard) {
        assert!(
            guard.0.collector() == Some(&self.collector),
            "a snapshot cell was used with another cell's pin"
        );
    }

    /// C2 (reader): the current snapshot, valid while `guard` is pinned and the cell is
    /// borrowed: the cell's drop frees its snapshot at once, so the answer may not outlive it.
    #[inline]
    pub fn load<'g>(&'g self, guard: &'g CellGuard) -> &'g T {
        self.check(guard);
        // SAFETY: LOAD is the ordering C2 needs (Acquire, pairing with SWAP's Release), and the
        // guard pins this cell's collector (checked).
        unsafe { self.load_ordered(LOAD, &guard.0) }
    }

    /// C1 (the thread moving to a newer generation): publish `value` and retire the old one.
    pub fn replace(&self, value: T, guard: &CellGuard) {
        self.check(guard);
        // SAFETY: SWAP is the ordering C1 needs (Release, pairing with LOAD's Acquire), and the
        // guard pins this cell's collector (checked).
        unsafe { self.replace_ordered(value, SWAP, &guard.0) }
    }

    /// C1 without the retirement: publish `value` and never free the snapshot it replaces, nor
    /// what that snapshot keeps mapped. A leak on purpose, for `RSHM_READER_RETIRE=off` only
    /// (docs/testing.md): it shows that the tests bounding what a reader keeps mapped can fail.
    /// Only with the `test-knobs` feature.
    #[cfg(feature = "test-knobs")]
    pub fn replace_leaking(&self, value: T, guard: &CellGuard) {
        self.check(guard);
        // The old pointer is dropped as a `Shared`, which frees nothing.
        let _leaked = self.ptr.swap(Owned::new(value), SWAP, &guard.0);
    }

    /// C2 with the load ordering `order`.
    ///
    /// # Safety
    /// `order` must be Acquire or stronger: with a weaker one, the snapshot's contents may be
    /// read before the replacing thread's writes to them are visible (a data race). `guard`
    /// must pin this cell's collector.
    unsafe fn load_ordered<'g>(&'g self, order: Ordering, guard: &'g Guard) -> &'g T {
        let shared = self.ptr.load(order, guard);
        // SAFETY: the pointer is never null (set in `new`, replaced only by non-null values).
        // The pointee is destroyed either through `defer_destroy` on this cell's collector,
        // after every guard of it (the caller's among them) pinned when it was unlinked has
        // been dropped, or by the cell's `Drop`, which needs `&mut self` and
        // so cannot run while `&'g self` is borrowed: it outlives `'g` both ways. The caller guarantees `order`
        // makes the pointee's initialization visible.
        unsafe { shared.deref() }
    }

    /// C1 with the swap ordering `order`.
    ///
    /// # Safety
    /// `order` must be Release or stronger, for the reason given on `load_ordered`; `guard`
    /// must pin this cell's collector.
    unsafe fn replace_ordered(&self, value: T, order: Ordering, guard: &Guard) {
        let old = self.ptr.swap(Owned::new(value), order, guard);
        // SAFETY: `old` is now unreachable from `self`; threads that loaded it before the swap
        // hold guards of this cell's collector (the only ones `load` accepts), and
        // crossbeam-epoch runs the destructor only after they are all unpinned.
        unsafe { guard.defer_destroy(old) };
        // Hand the retired snapshot to the cell's collector now and let it try to advance the
        // epoch: left in this thread's bag, it waits until the bag fills (dozens of
        // generations, each keeping unlinked segments mapped) or forever if this thread stops.
        guard.flush();
    }

    /// Loom's broken twins only: [`SnapshotCell::load`] with the ordering `order`.
    ///
    /// # Safety
    /// As for `load_ordered`: a load weaker than Acquire is a data race, which is what the
    /// twins that call this exist to show loom catching.
    #[cfg(gds_loom)]
    pub unsafe fn load_with_ordering<'g>(&'g self, order: Ordering, guard: &'g CellGuard) -> &'g T {
        self.check(guard);
        // SAFETY: forwarded to the caller.
        unsafe { self.load_ordered(order, &guard.0) }
    }

    /// Loom's broken twins only: [`SnapshotCell::replace`] with the ordering `order`.
    ///
    /// # Safety
    /// As for `replace_ordered`.
    #[cfg(gds_loom)]
    pub unsafe fn replace_with_ordering(&self, value: T, order: Ordering, guard: &CellGuard) {
        self.check(guard);
        // SAFETY: forwarded to the caller.
        unsafe { self.replace_ordered(value, order, &guard.0) }
    }
}

impl<T: Send + Sync + 'static> Drop for SnapshotCell<T> {
    fn drop(&mut self) {
        // SAFETY: `&mut self` means no thread can load the pointer any more, and no guard
        // obtained through `load` outlives the cell's borrow; the pointer is non-null and owned.
        unsafe {
            let guard = crate::sync::epoch::unprotected();
            drop(self.ptr.load(Ordering::Relaxed, guard).into_owned());
        }
    }
}
