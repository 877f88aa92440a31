//! Loom model of publication through a pack (docs/protocol.md P1p, P2, P3, P4 / R1, R2, R3;
//! format.md section 10): generations share one pack; the writer appends each generation's
//! table and root past the last published segment (a transaction that is dropped leaves bytes
//! that the next one writes over), while a reader follows `root_at` to a root and the table it
//! names, in slots of the same pack. Its broken twin rewinds the tail into a published
//! segment, which the model reports as a data race: the rule that nothing published is written
//! again is what keeps a pack's readers safe.
//!
//! Run as publication.rs says.

#![cfg(gds_loom)]

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use rshm_gds::layout::{pack_place, place_in_pack};
use rshm_gds::protocol;
use rshm_gds::sync::{AtomicU32, AtomicU64};

/// An embedded segment's slot of the pack: its bytes and its `state` word.
struct Slot {
    bytes: UnsafeCell<u64>,
    state: AtomicU32,
}

/// Slots are 64 bytes apart, as embedded segments are (`PACK_ALIGN`).
const SLOT: u64 = 64;
const SLOTS: usize = 4;
const PACK: u32 = 1;

struct Pack([Slot; SLOTS]);

impl Pack {
    fn new() -> Pack {
        Pack(std::array::from_fn(|_| Slot {
            bytes: UnsafeCell::new(0),
            state: AtomicU32::new(protocol::STATE_BUILDING),
        }))
    }

    /// P1p + P2: append `v` at slot `i` (the writer's tail) and mark it ready. A slot written
    /// again (after a rewind) starts BUILDING, as the copy's `pwrite` of its header does.
    fn append(&self, i: usize, v: u64) -> u64 {
        let s = &self.0[i];
        s.state
            .store(protocol::STATE_BUILDING, rshm_gds::sync::Ordering::Relaxed);
        s.bytes.with_mut(|p| {
            // SAFETY: slot `i` lies past every published segment (the model's broken twin
            // breaks this, and loom reports the race).
            unsafe { *p = v }
        });
        protocol::mark_ready(&s.state);
        pack_place(PACK, i as u64 * SLOT + SLOT)
    }

    /// R2 + R3: the segment at `place`, ready, and its bytes.
    fn read(&self, place: u64) -> u64 {
        let (seq, off) = place_in_pack(place).expect("a place in a pack");
        assert_eq!(seq, PACK);
        let s = &self.0[(off / SLOT - 1) as usize];
        assert!(protocol::is_ready(&s.state), "published segment not ready");
        s.bytes.with(|p| {
            // SAFETY: reached through a published root (R1's Acquire pairs with P4).
            unsafe { *p }
        })
    }
}

/// Generation 1: table in slot 0, root (naming it) in slot 1, published. Then a transaction
/// that is dropped writes slot 2 and rewinds to `rewind_to`; generation 2 appends its table and
/// root from there and is published.
fn pack_model(rewind_to: usize) {
    loom::model(move || {
        let anchor = Arc::new(AtomicU64::new(0));
        let pack = Arc::new(Pack::new());
        let writer = {
            let (anchor, pack) = (anchor.clone(), pack.clone());
            thread::spawn(move || {
                let t1 = pack.append(0, 10);
                let r1 = pack.append(1, t1);
                protocol::publish_root(&anchor, r1); // P4
                pack.append(2, 0xdead); // a dropped transaction's bytes
                let t2 = pack.append(rewind_to, 20);
                let r2 = pack.append(rewind_to + 1, t2);
                protocol::publish_root(&anchor, r2); // P4
            })
        };
        let root_at = protocol::current_root(&anchor); // R1
        if root_at != 0 {
            let table_at = pack.read(root_at);
            let v = pack.read(table_at);
            assert!(
                v == 10 || v == 20,
                "a root named a table it did not publish"
            );
        }
        writer.join().unwrap();
    });
}

#[test]
fn appending_past_the_published_root_keeps_readers_whole() {
    pack_model(2);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn broken_twin_tail_rewound_into_a_published_root_is_caught() {
    pack_model(1);
}
