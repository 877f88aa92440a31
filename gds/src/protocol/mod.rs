//! The publication protocol: every ordering-relevant atomic operation of the store, one function
//! per numbered step of docs/protocol.md. Nothing else in the crate orders memory between the
//! writer and readers, so this is what loom-tests model-checks.
//!
//! Readers map the shared words read-only, where Rust defines only `Relaxed` atomic loads: each
//! reader step is a Relaxed load followed by `fence(Acquire)`, which synchronizes with the
//! writer's Release store exactly as an Acquire load would (and compiles to the same code on
//! x86-64).
//!
//! The writer never loads a word it publishes (it keeps private copies of its counters), which
//! also keeps loom from silently skipping interleavings (tokio-rs/loom#392).

#![forbid(unsafe_code)]

use crate::sync::{fence, AtomicU32, AtomicU64, Ordering};

/// The header `state` value of a finished segment (format.md section 3).
pub const STATE_READY: u32 = 0x5944_4552;
/// The header `state` value of a segment still being written.
pub const STATE_BUILDING: u32 = 0;

/// P2 (writer): every byte of the segment has been written; make the segment ready.
///
/// Release: a reader that observes `STATE_READY` and then fences with Acquire (R3) also observes every byte
/// written before this store.
pub fn mark_ready(state: &AtomicU32) {
    state.store(STATE_READY, Ordering::Release);
}

/// R3 (reader): is the segment complete? Pairs with P2 (Relaxed load, then Acquire fence).
pub fn is_ready(state: &AtomicU32) -> bool {
    let ready = state.load(Ordering::Relaxed) == STATE_READY;
    fence(Ordering::Acquire);
    ready
}

/// P4 (writer): make root generation `gen` the store's current one.
///
/// Release: a reader that loads `gen` and then fences with Acquire (R1) observes the root file and every table
/// it names complete (P2 of those files happened before this store in the writer's order).
pub fn publish_root(root_gen: &AtomicU64, gen: u64) {
    root_gen.store(gen, Ordering::Release);
}

/// P6 (writer): withdraw data classes for good: store `mask`, every class bit withdrawn so
/// far (the writer's private copy: bits are only added), in the anchor's `withdrawn` word.
/// For when tables can be neither published nor removed by a commit (the store's directory
/// removed, a full filesystem), so that readers stop answering older values of those classes.
#[inline]
pub fn withdraw(withdrawn: &AtomicU64, mask: u64) {
    withdrawn.store(mask, Ordering::Release);
}

/// R5 (reader): the mask of data classes withdrawn for good (P6). Pairs with P6.
#[inline]
pub fn withdrawn(withdrawn: &AtomicU64) -> u64 {
    let mask = withdrawn.load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    mask
}

/// R1 (reader): the current root generation (0: nothing published yet). Pairs with P4
/// (Relaxed load, then Acquire fence).
#[inline]
pub fn current_root(root_gen: &AtomicU64) -> u64 {
    let at = root_gen.load(Ordering::Relaxed);
    fence(Ordering::Acquire);
    at
}
