//! The panic boundary of every exported C function: a panic never unwinds into C (which would
//! abort the process, or worse). Each `extern "C" fn` of the shims, the preload and the
//! component runs its whole body inside one of these (`abi/tests/exports.rs` checks it):
//!
//! - [`ffi_status`]: the body returns `Result<(), AbiError>`; the C caller gets its status, and
//!   the thread's [`last_error`] its message. A panic is `PMIX_ERROR`.
//! - [`ffi_ptr`]: a pointer; a panic is NULL.
//! - [`ffi_void`]: nothing; a panic is dropped.
//! - [`ffi_or`]: any other return (a count, a length): a panic returns the value given.
//!
//! After a panic, [`last_error`] says so (with the panic's message): a caught panic fails the
//! one call it happened in. Shared state a call holds across a panic must not be left unusable
//! (the server's lock does not poison; see server-shim's exports).

#![forbid(unsafe_code)]

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::types::{pmix_status_t, status::*};
use crate::AbiError;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Run an export's body that reports a status: its error becomes the status (and the thread's
/// last error message); a panic is `PMIX_ERROR`.
#[inline]
pub fn ffi_status(f: impl FnOnce() -> Result<(), AbiError>) -> pmix_status_t {
    // The status is made inside the unwind guard: what crosses it is then one int, not the
    // `Result` (whose copy, a wide load over the narrow store of its tag, stalls the hot path).
    ffi_or(PMIX_ERROR, || match f() {
        Ok(()) => PMIX_SUCCESS,
        Err(e) => {
            let status = e.status();
            set_last_error(e.to_string());
            status
        }
    })
}

/// Run an export's body that returns a pointer: a panic is NULL.
#[inline]
pub fn ffi_ptr<T>(f: impl FnOnce() -> *const T) -> *const T {
    ffi_or(core::ptr::null(), f)
}

/// Run an export's body that returns nothing: a panic ends it (and sets the last error).
#[inline]
pub fn ffi_void(f: impl FnOnce()) {
    ffi_or((), f)
}

/// Run an export's body: a panic returns `on_panic` and sets the thread's last error.
#[inline]
pub fn ffi_or<T>(on_panic: T, f: impl FnOnce() -> T) -> T {
    // AssertUnwindSafe: whatever a body shares across threads is either immutable or behind a
    // lock that stays usable after a panic; the body's own locals are dropped by the unwind.
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            set_last_error(format!(
                "internal error (panic caught at the C boundary): {what}"
            ));
            on_panic
        }
    }
}

fn set_last_error(msg: String) {
    // `try_with`: during thread teardown the slot may be gone; the message is then dropped.
    let _ = LAST_ERROR.try_with(|l| *l.borrow_mut() = msg);
}

/// The message of the calling thread's last failed call ("" if none). A successful call does
/// not clear it: read it right after a call that failed.
pub fn last_error() -> String {
    LAST_ERROR
        .try_with(|l| l.borrow().clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_fallback_and_the_last_error() {
        let quiet = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        assert_eq!(ffi_status(|| panic!("boom")), PMIX_ERROR);
        assert!(last_error().contains("panic caught"), "{}", last_error());
        assert!(last_error().ends_with("boom"), "{}", last_error());
        assert!(ffi_ptr::<u8>(|| panic!("p")).is_null());
        assert_eq!(ffi_or(7usize, || panic!("{}", 3)), 7);
        assert!(last_error().ends_with('3'), "{}", last_error());
        ffi_void(|| panic!("v"));
        std::panic::set_hook(quiet);
        assert_eq!(ffi_status(|| Ok(())), PMIX_SUCCESS);
        assert_eq!(
            ffi_status(|| Err(AbiError::BadParam("x".into()))),
            PMIX_ERR_BAD_PARAM
        );
        assert_eq!(last_error(), "bad parameter: x");
    }
}
