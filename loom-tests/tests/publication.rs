//! Loom models of docs/protocol.md's publication steps, each with a deliberately broken twin
//! (`#[should_panic(expected = ..)]`, naming the failure loom must report) that proves loom
//! explored the interleaving the real one must survive. Segment bytes are modelled with loom's
//! `UnsafeCell`, so a read that is not ordered after the write is reported as a data race
//! ("Causality violation"), or the model's own assertion fails.
//!
//! Run: `RUSTFLAGS="--cfg gds_loom --cfg crossbeam_loom" CARGO_TARGET_DIR=target/loom \
//!       LOOM_MAX_PREEMPTIONS=3 cargo test -p rshm-loom-tests --release`

#![cfg(gds_loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use rshm_gds::protocol;
use rshm_gds::sync::{AtomicU32, AtomicU64, Ordering};

/// A segment as the protocol sees it: bytes written before publication, and its `state` word.
struct Segment {
    bytes: UnsafeCell<u64>,
    state: AtomicU32,
}

impl Segment {
    fn new() -> Segment {
        Segment {
            bytes: UnsafeCell::new(0),
            state: AtomicU32::new(protocol::STATE_BUILDING),
        }
    }

    /// P1: fill the unpublished segment.
    fn fill(&self, v: u64) {
        self.bytes.with_mut(|p| {
            // SAFETY: P1 runs before the segment is reachable: no reader can hold a reference.
            unsafe { *p = v }
        });
    }

    /// Reader side: the bytes, only after R3 said the segment is ready.
    fn read(&self) -> u64 {
        self.bytes.with(|p| {
            // SAFETY: called only after an Acquire that pairs with the writer's Release; loom
            // reports a data race here if that ordering is missing.
            unsafe { *p }
        })
    }
}

/// P2 broken: the ready state stored Relaxed.
fn mark_ready_relaxed(state: &AtomicU32) {
    state.store(protocol::STATE_READY, Ordering::Relaxed);
}

/// R3 broken: the ready state loaded Relaxed.
fn is_ready_relaxed(state: &AtomicU32) -> bool {
    state.load(Ordering::Relaxed) == protocol::STATE_READY
}

/// R1 broken: the root generation loaded Relaxed.
fn current_root_relaxed(word: &AtomicU64) -> u64 {
    word.load(Ordering::Relaxed)
}

/// P4 broken: the root generation published Relaxed.
fn publish_root_relaxed(word: &AtomicU64, gen: u64) {
    word.store(gen, Ordering::Relaxed);
}

fn segment_model(mark: fn(&AtomicU32), ready: fn(&AtomicU32) -> bool) {
    loom::model(move || {
        let seg = Arc::new(Segment::new());
        let writer = {
            let seg = seg.clone();
            thread::spawn(move || {
                seg.fill(0xfeed);
                mark(&seg.state);
            })
        };
        if ready(&seg.state) {
            assert_eq!(seg.read(), 0xfeed, "a ready segment showed unwritten bytes");
        }
        writer.join().unwrap();
    });
}

#[test]
fn ready_state_publishes_the_segment_bytes() {
    segment_model(protocol::mark_ready, protocol::is_ready);
}

#[test]
#[should_panic(expected = "Causality violation: Concurrent read and write accesses")]
fn broken_twin_relaxed_ready_store_is_caught() {
    segment_model(mark_ready_relaxed, protocol::is_ready);
}

#[test]
#[should_panic(expected = "Causality violation: Concurrent read and write accesses")]
fn broken_twin_relaxed_ready_load_is_caught() {
    segment_model(protocol::mark_ready, is_ready_relaxed);
}

/// Two generations: the writer builds table + root for gen 1, publishes, then does it again
/// for gen 2 into fresh segments; a reader that sees a generation must see its files complete
/// (the root is ready, its table is ready, both hold that generation's bytes), and never a
/// generation older than one it saw before.
fn generation_model(publish: fn(&AtomicU64, u64), current: fn(&AtomicU64) -> u64) {
    loom::model(move || {
        let anchor = Arc::new(AtomicU64::new(0));
        let gens: Arc<[(Segment, Segment); 2]> = Arc::new([
            (Segment::new(), Segment::new()),
            (Segment::new(), Segment::new()),
        ]);
        let writer = {
            let (anchor, gens) = (anchor.clone(), gens.clone());
            thread::spawn(move || {
                for (i, (table, root)) in gens.iter().enumerate() {
                    let gen = i as u64 + 1;
                    table.fill(gen * 10); // P1 (table)
                    protocol::mark_ready(&table.state); // P2 (table)
                    root.fill(gen * 100); // P3: the root names the table
                    protocol::mark_ready(&root.state); // P2 (root)
                    publish(&anchor, gen); // P4
                }
            })
        };
        let mut last = 0;
        for _ in 0..2 {
            let gen = current(&anchor); // R1
            assert!(gen >= last, "generation went backwards");
            last = gen;
            if gen == 0 {
                continue;
            }
            let (table, root) = &gens[gen as usize - 1];
            assert!(protocol::is_ready(&root.state), "published root not ready"); // R3
            assert_eq!(root.read(), gen * 100);
            assert!(
                protocol::is_ready(&table.state),
                "table of a published root not ready"
            );
            assert_eq!(table.read(), gen * 10);
        }
        writer.join().unwrap();
    });
}

#[test]
fn root_publication_exposes_complete_generations() {
    generation_model(protocol::publish_root, protocol::current_root);
}

/// With P4 Relaxed, R3's Acquire still keeps every byte read ordered, but a reader can load a
/// generation whose root it then finds not ready (in the store: a spurious `NotReady`).
#[test]
#[should_panic(expected = "published root not ready")]
fn broken_twin_relaxed_root_publication_is_caught() {
    generation_model(publish_root_relaxed, protocol::current_root);
}

/// The same with R1 Relaxed.
#[test]
#[should_panic(expected = "published root not ready")]
fn broken_twin_relaxed_root_load_is_caught() {
    generation_model(protocol::publish_root, current_root_relaxed);
}

/// The store directory's entry naming generation 1's root file: created by the writer (P3's
/// `O_EXCL` create) before it fills, readies (P2) and publishes (P4) the root; 0 = no such file.
struct Entry(UnsafeCell<u64>);

impl Entry {
    fn create(&self, gen: u64) {
        self.0.with_mut(|p| {
            // SAFETY: the writer creates the entry before P4; loom reports a data race if a
            // reader can look it up unordered.
            unsafe { *p = gen }
        });
    }

    fn lookup(&self) -> u64 {
        self.0.with(|p| {
            // SAFETY: R2 runs after R1's Acquire; loom reports a data race if that is missing.
            unsafe { *p }
        })
    }
}

/// What only R1 orders: R2 finds the root file through the generation R1 loaded, before there is
/// a file whose state R3 could check, so R3's Acquire comes too late for the lookup. (In the
/// store the lookup is `openat`, which the kernel orders as well; the model shows that the
/// protocol does not lean on that: anything reached through the generation number alone is
/// ordered by R1 pairing with P4.)
fn lookup_model(current: fn(&AtomicU64) -> u64) {
    loom::model(move || {
        let anchor = Arc::new(AtomicU64::new(0));
        let entry = Arc::new(Entry(UnsafeCell::new(0)));
        let root = Arc::new(Segment::new());
        let writer = {
            let (anchor, entry, root) = (anchor.clone(), entry.clone(), root.clone());
            thread::spawn(move || {
                entry.create(1); // P3: the root file exists
                root.fill(100); // P3: its bytes
                protocol::mark_ready(&root.state); // P2 (root)
                protocol::publish_root(&anchor, 1); // P4
            })
        };
        if current(&anchor) == 1 {
            // R1 saw generation 1
            assert_eq!(entry.lookup(), 1, "a published root's file is missing"); // R2
            assert!(protocol::is_ready(&root.state), "published root not ready"); // R3
            assert_eq!(root.read(), 100);
        }
        writer.join().unwrap();
    });
}

#[test]
fn a_published_generation_names_an_existing_root() {
    lookup_model(protocol::current_root);
}

#[test]
#[should_panic(expected = "Causality violation: Concurrent read and write accesses")]
fn broken_twin_relaxed_root_load_races_the_lookup() {
    lookup_model(current_root_relaxed);
}
