//! This thread's registrations with the readers' snapshot cells: a pin of a reader reuses the
//! thread's registration with that reader's collector, made on its first pin.
//!
//! A registration keeps its collector (and the snapshots waiting in it) alive, so the entries
//! of readers that are gone are dropped the next time this thread registers with another one,
//! and all of them when the thread ends.

#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::sync::{Arc, Weak};

use crate::raw::{CellGuard, CellHandle, SnapshotCell};

/// A reader's identity for this cache: alive while the reader is.
pub type Owner = Arc<()>;

thread_local! {
    /// The newest registration first: a process reads one store nearly always.
    static HANDLES: RefCell<Vec<(Weak<()>, CellHandle)>> = const { RefCell::new(Vec::new()) };
}

/// Pin the calling thread on `cell`, whose reader `owner` identifies.
#[inline]
pub fn pin<T: Send + Sync + 'static>(owner: &Owner, cell: &SnapshotCell<T>) -> CellGuard {
    let cached = HANDLES.try_with(|handles| {
        let mut handles = handles.try_borrow_mut().ok()?;
        if let Some((_, h)) = handles
            .iter()
            .find(|(o, _)| std::ptr::eq(o.as_ptr(), Arc::as_ptr(owner)))
        {
            return Some(h.pin());
        }
        // Registrations with readers that are gone, and so their collectors, go first.
        handles.retain(|(o, _)| o.strong_count() > 0);
        let h = cell.register();
        let guard = h.pin();
        handles.insert(0, (Arc::downgrade(owner), h));
        Some(guard)
    });
    match cached {
        Ok(Some(guard)) => guard,
        // The thread is ending (its locals are being destroyed), or a destructor run by the
        // cache itself pins: a registration for this pin alone (the guard outlives it safely).
        _ => cell.register().pin(),
    }
}
