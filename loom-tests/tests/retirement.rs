//! Loom model of docs/protocol.md's C1/C2: a client thread moves to a newer generation (builds a
//! snapshot owning a new mapping, swaps the snapshot pointer, retires the old snapshot) while
//! another thread pins, loads the current snapshot and reads through its mapping.
//!
//! This runs gds's own `SnapshotCell` on crossbeam-epoch's own code: under `--cfg gds_loom
//! --cfg crossbeam_loom` both use loom's atomics (gds/src/sync.rs), so the model checks the
//! retirement rule as the store implements it, not a re-statement of it. Each mapping's bytes are
//! a loom `UnsafeCell`: "unmapping" writes them, so a read not ordered after the build is a data
//! race, and a read of a mapping its snapshot's destructor already released is a data race (or,
//! if ordered after it, reads `UNMAPPED`). A second model shares one cell between two threads
//! and checks that the last share's drop, which destroys the cell, never unmaps under a reader.
//!
//! Run: `RUSTFLAGS="--cfg gds_loom --cfg crossbeam_loom" CARGO_TARGET_DIR=target/loom \
//!       LOOM_MAX_PREEMPTIONS=3 cargo test -p rshm-loom-tests --release`

#![cfg(gds_loom)]

use std::sync::atomic::{
    AtomicBool as PlainBool, AtomicU64 as PlainU64, AtomicUsize as PlainCount,
};

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use rshm_gds::sync::Ordering;
use rshm_gds::{CellGuard, SnapshotCell};

/// What the bytes of a released mapping read as.
const UNMAPPED: u64 = u64::MAX;

/// Stand-in for a table's mapping: written by the thread that builds the snapshot before it is
/// published, and "unmapped" (overwritten) when released.
struct Mapping {
    bytes: UnsafeCell<u64>,
    /// Bookkeeping outside the model (never used to order anything): has it been released?
    released: PlainBool,
}

// SAFETY: the bytes are only touched through `build`, `release` and `read`, whose exclusivity is
// exactly what the model checks: loom reports any two of them not ordered by happens-before.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new() -> Mapping {
        Mapping {
            bytes: UnsafeCell::new(0),
            released: PlainBool::new(false),
        }
    }

    /// Map and validate: done before the snapshot owning the mapping is published.
    fn build(&self, v: u64) {
        self.bytes.with_mut(|p| {
            // SAFETY: the mapping is not reachable from the snapshot pointer yet; loom reports a
            // data race if a reader can get to it unordered.
            unsafe { *p = v }
        });
    }

    /// munmap: any later read is a use after unmap.
    fn release(&self) {
        self.bytes.with_mut(|p| {
            // SAFETY: under the protocol no reader can still borrow the mapping; loom reports
            // a data race if one can.
            unsafe { *p = UNMAPPED }
        });
        self.released.store(true, Ordering::Relaxed);
    }

    /// A reader's access through a borrowed snapshot.
    fn read(&self) -> u64 {
        self.bytes.with(|p| {
            // SAFETY: the reader is pinned and loaded the snapshot with Acquire; loom reports a
            // data race with `build` or `release` if either ordering is missing.
            unsafe { *p }
        })
    }
}

/// A snapshot's hold on its table mapping; dropping it unmaps (in gds: the last `Arc<RoMap>`
/// of a table the next generation no longer names).
struct Table(Arc<Mapping>);

impl Drop for Table {
    fn drop(&mut self) {
        // A twin's data race panics inside a read, which loom then counts as never finished:
        // unmapping while unwinding from it would abort the test instead of failing it.
        if !std::thread::panicking() {
            self.0.release();
        }
    }
}

/// The client's snapshot: a generation and the mapping it reads through (`bytes == gen * 10`).
struct Snapshot {
    gen: u64,
    table: Table,
}

/// The ways C1/C2 are run: the real one, and each deliberate break.
#[derive(Clone, Copy)]
struct Steps {
    swap: Ordering,
    load: Ordering,
    /// Release the old mapping right at the swap instead of leaving it to the old snapshot's
    /// deferred destructor. (Freeing the snapshot itself at the swap would make the twin read
    /// freed heap memory, which loom does not track: real undefined behaviour, not a report.)
    unmap_at_swap: bool,
}

const REAL: Steps = Steps {
    swap: Ordering::AcqRel,
    load: Ordering::Acquire,
    unmap_at_swap: false,
};

/// What the executions showed, summed over all of them (proves the model is not vacuous).
#[derive(Default)]
struct Seen {
    old: PlainCount,
    new: PlainCount,
    /// The reader read the old snapshot, and the model then reclaimed it (before joining).
    old_read_then_reclaimed: PlainCount,
}

fn load<'g>(cell: &'g SnapshotCell<Snapshot>, steps: Steps, guard: &'g CellGuard) -> &'g Snapshot {
    if steps.load == REAL.load {
        cell.load(guard)
    } else {
        // SAFETY: a broken twin: the data race is what loom must report.
        unsafe { cell.load_with_ordering(steps.load, guard) }
    }
}

fn replace(cell: &SnapshotCell<Snapshot>, steps: Steps, snap: Snapshot, guard: &CellGuard) {
    if steps.swap == REAL.swap {
        cell.replace(snap, guard);
    } else {
        // SAFETY: a broken twin: the data race is what loom must report.
        unsafe { cell.replace_with_ordering(snap, steps.swap, guard) }
    }
}

/// One thread reads once while the main thread moves from generation 1 to 2 and then pins again
/// until crossbeam-epoch reclaims (gds leaves that to later pins, crossbeam collects every 128;
/// `flush` asks for it now).
///
/// One reader only: with two, crossbeam-epoch's registration, pins, flushes and unregistration
/// (dozens of loom atomics per thread) did not finish in 150 s even at 1 preemption. The rule
/// checked is per pinned thread; gds/tests/generations.rs runs it with four real threads.
fn retirement_model(steps: Steps) -> std::sync::Arc<Seen> {
    let seen = std::sync::Arc::new(Seen::default());
    let seen_in_model = seen.clone();
    loom::model(move || {
        let seen = seen_in_model.clone();
        let reader_saw = std::sync::Arc::new(PlainU64::new(0));
        let old = Arc::new(Mapping::new());
        old.build(10);
        let new = Arc::new(Mapping::new());
        let cell = Arc::new(SnapshotCell::new(Snapshot {
            gen: 1,
            table: Table(old.clone()),
        }));

        let reader = {
            let cell = cell.clone();
            let (seen, reader_saw) = (seen.clone(), reader_saw.clone());
            thread::spawn(move || {
                let handle = cell.register();
                let guard = handle.pin();
                let snap = load(&cell, steps, &guard); // C2
                let v = snap.table.0.read();
                assert_ne!(v, UNMAPPED, "a reader read a mapping after it was unmapped");
                assert_eq!(
                    v,
                    snap.gen * 10,
                    "a reader saw a snapshot before its mapping"
                );
                let count = if snap.gen == 1 { &seen.old } else { &seen.new };
                count.fetch_add(1, Ordering::Relaxed);
                reader_saw.store(snap.gen, Ordering::Relaxed);
                drop(guard);
            })
        };

        let handle = cell.register();
        {
            let guard = handle.pin();
            new.build(20);
            let snap = Snapshot {
                gen: 2,
                table: Table(new.clone()),
            };
            replace(&cell, steps, snap, &guard); // C1
            if steps.unmap_at_swap {
                old.release();
            }
        }
        for _ in 0..2 {
            handle.pin().flush();
        }
        let reclaimed = old.released.load(Ordering::Relaxed);
        reader.join().unwrap();
        if reclaimed && reader_saw.load(Ordering::Relaxed) == 1 && !steps.unmap_at_swap {
            seen.old_read_then_reclaimed.fetch_add(1, Ordering::Relaxed);
        }
        drop(handle);
        drop(cell);
        assert!(
            old.released.load(Ordering::Relaxed),
            "the retired snapshot was never destroyed"
        );
    });
    seen
}

#[test]
fn retired_mappings_outlive_every_pinned_reader() {
    let seen = retirement_model(REAL);
    let count = |c: &PlainCount| c.load(Ordering::Relaxed);
    assert!(count(&seen.old) > 0, "no execution read the old snapshot");
    assert!(count(&seen.new) > 0, "no execution read the new snapshot");
    assert!(
        count(&seen.old_read_then_reclaimed) > 0,
        "no execution reclaimed an old snapshot a reader had used: the model shows nothing"
    );
}

#[test]
#[should_panic(expected = "Causality violation")]
fn broken_twin_unmap_at_swap_is_caught() {
    retirement_model(Steps {
        unmap_at_swap: true,
        ..REAL
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn broken_twin_relaxed_snapshot_swap_is_caught() {
    retirement_model(Steps {
        swap: Ordering::Relaxed,
        ..REAL
    });
}

#[test]
#[should_panic(expected = "Causality violation")]
fn broken_twin_relaxed_snapshot_load_is_caught() {
    retirement_model(Steps {
        load: Ordering::Relaxed,
        ..REAL
    });
}

/// What the shared-reader executions showed, summed over all of them.
#[derive(Default)]
struct Drops {
    /// The thread that read dropped the last share: it destroyed the cell (and the snapshot).
    by_reading_thread: PlainCount,
    /// The other thread did, after the reading thread's read: only the `Arc`'s counting orders
    /// that read before the unmap.
    by_other_thread: PlainCount,
}

/// A `Reader` shared by two threads (gds: the cell inside an `Arc`'d `Reader`): one pins, loads
/// and reads, unpins and drops its share, while the other drops its share, possibly while the
/// first is still pinned. The snapshot cell goes with the last share, and its current snapshot
/// (unmapping its table) with it. A pin borrows the cell it loads from, so no thread can drop a
/// share it still reads through: the model checks that this pattern never reads an unmapped
/// table. (The cell has moved to generation 2 before the threads start, so generation 1 waits in
/// crossbeam-epoch meanwhile; `retirement_model` checks the move itself.)
///
/// `drop_unmaps`: the broken twin, where dropping a share unmaps the current table at once (as if
/// the cell were destroyed with a pin out).
fn shared_reader_model(drop_unmaps: bool) -> std::sync::Arc<Drops> {
    let drops = std::sync::Arc::new(Drops::default());
    let drops_in_model = drops.clone();
    loom::model(move || {
        let drops = drops_in_model.clone();
        let old = Arc::new(Mapping::new());
        old.build(10);
        let new = Arc::new(Mapping::new());
        let cell = Arc::new(SnapshotCell::new(Snapshot {
            gen: 1,
            table: Table(old.clone()),
        }));
        let handle = cell.register();
        new.build(20);
        cell.replace(
            Snapshot {
                gen: 2,
                table: Table(new.clone()),
            },
            &handle.pin(),
        ); // C1

        let reader = {
            let cell = cell.clone();
            let drops = drops.clone();
            thread::spawn(move || {
                let handle = cell.register();
                let guard = handle.pin();
                let snap = cell.load(&guard); // C2
                let v = snap.table.0.read();
                assert_ne!(v, UNMAPPED, "a reader read a mapping after it was unmapped");
                assert_eq!(v, 20, "a reader saw a snapshot before its mapping");
                drop(guard);
                if Arc::strong_count(&cell) == 1 {
                    drops.by_reading_thread.fetch_add(1, Ordering::Relaxed);
                }
                drop(cell);
            })
        };

        if drop_unmaps {
            new.release();
        }
        drop(cell);
        if !drop_unmaps && new.released.load(Ordering::Relaxed) {
            drops.by_other_thread.fetch_add(1, Ordering::Relaxed);
        }
        reader.join().unwrap();
        drop(handle);
        assert!(
            old.released.load(Ordering::Relaxed) && new.released.load(Ordering::Relaxed),
            "a snapshot was never destroyed"
        );
    });
    drops
}

#[test]
fn a_reader_shared_by_threads_goes_with_its_last_share() {
    let drops = shared_reader_model(false);
    let count = |c: &PlainCount| c.load(Ordering::Relaxed);
    assert!(
        count(&drops.by_reading_thread) > 0,
        "no execution left the last drop to the thread that read"
    );
    assert!(
        count(&drops.by_other_thread) > 0,
        "no execution left the last drop to the other thread"
    );
}

#[test]
#[should_panic(expected = "Causality violation")]
fn broken_twin_unmap_at_a_share_drop_is_caught() {
    shared_reader_model(true);
}
