//! Page faults taken ahead, on another core. The first write to a page the process never had
//! costs a fault, and on a VM much more than on bare metal (2-10 µs on the VM of
//! docs/performance.md, where the hypervisor backs the page too). A 1M-rank registration writes ~100 MB
//! of new pages, most of them on the calling thread while the other core waits for the
//! read-ahead; a [`Prefault`] thread faults them in meanwhile.
//!
//! It only ever asks the kernel to back pages ([`crate::raw::populate`]), which changes no
//! byte: whoever fills a buffer may do so at the same time, and a buffer freed before its
//! turn comes costs nothing but the wasted ask. Addresses, not references, cross threads.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use crate::raw::{populate, PAGE};

/// Bytes populated per call. A call holds the process's memory-map lock (read) throughout,
/// and a thread that maps memory meanwhile (malloc's `mmap`, `brk`) waits for it: with 256
/// KiB calls, at up to 10+ µs a page, the registration's thread spent most of 70 ms waiting.
/// Eight pages bound that wait to tens of µs, for a syscall per ~50 µs of faults.
const CHUNK: usize = 32 << 10;

/// A thread that populates the address ranges it is given, in order, each from its end
/// backwards (a buffer is usually filled from its start: the two meet in the middle).
pub(crate) struct Prefault {
    asks: Option<mpsc::Sender<(usize, usize)>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Prefault {
    /// Nothing is populated ahead: asks are dropped.
    pub fn none() -> Prefault {
        Prefault {
            asks: None,
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
        }
    }

    /// Start the thread if this process may run two at once (else the faults would be taken
    /// on the same core anyway) and it can be started.
    pub fn start() -> Prefault {
        if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
            return Prefault::none();
        }
        let (tx, rx) = mpsc::channel::<(usize, usize)>();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("rshm-prefault".into())
            .spawn(move || {
                for (addr, len) in rx {
                    // Whole pages, so that each call is CHUNK's worth of them.
                    let first = addr & !(PAGE - 1);
                    let mut end = addr.saturating_add(len);
                    while end > first {
                        // Relaxed: a hint to stop early; nothing is published through it.
                        if stopped.load(Ordering::Relaxed) {
                            return;
                        }
                        let start = (end - 1) & !(CHUNK - 1);
                        let start = start.max(first);
                        populate(start, end - start);
                        end = start;
                    }
                }
            });
        match thread {
            Ok(thread) => Prefault {
                asks: Some(tx),
                stop,
                thread: Some(thread),
            },
            Err(_) => Prefault::none(),
        }
    }

    /// Populate `len` bytes from address `addr`.
    pub fn range(&self, addr: usize, len: usize) {
        if let Some(asks) = &self.asks {
            // The thread is gone only if it was stopped: then nobody waits for this.
            let _ = asks.send((addr, len));
        }
    }

    /// Populate the whole of `v`'s allocation (its capacity, filled or not).
    pub fn vec<T>(&self, v: &Vec<T>) {
        self.range(v.as_ptr() as usize, v.capacity() * size_of::<T>());
    }
}

impl Drop for Prefault {
    /// Stop at the next chunk (what is left is faulted in by whoever writes it) and wait.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.asks = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer being filled while the thread populates it ends up with exactly what was
    /// written: populating never changes a byte.
    #[test]
    fn populating_changes_no_byte() {
        let p = Prefault::start();
        let mut v: Vec<u64> = Vec::with_capacity(4 << 20);
        p.vec(&v);
        for i in 0..v.capacity() as u64 {
            v.push(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        }
        let old = vec![7u8; 1 << 20];
        p.vec(&old);
        drop(p);
        assert!(v
            .iter()
            .enumerate()
            .all(|(i, &x)| x == (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        assert!(old.iter().all(|&b| b == 7));
    }

    /// Asking for what is not mapped (a freed buffer's old range, a null range) is harmless.
    #[test]
    fn unmapped_ranges_are_ignored() {
        let p = Prefault::start();
        p.range(0, 1 << 20);
        p.range(usize::MAX - 4096, 8192);
        let v = vec![1u8; 8 << 20];
        let (addr, len) = (v.as_ptr() as usize, v.len());
        drop(v);
        p.range(addr, len);
        drop(p);
    }
}
