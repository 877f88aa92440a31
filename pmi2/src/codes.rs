//! The PMI-2 return codes and limits of `include/pmi2.h`, and the error every call returns.

#![forbid(unsafe_code)]

use std::fmt;

pub const PMI2_SUCCESS: i32 = 0;
pub const PMI2_FAIL: i32 = -1;
pub const PMI2_ERR_INIT: i32 = 1;
pub const PMI2_ERR_NOMEM: i32 = 2;
pub const PMI2_ERR_INVALID_ARG: i32 = 3;
pub const PMI2_ERR_INVALID_KEY: i32 = 4;
pub const PMI2_ERR_INVALID_KEY_LENGTH: i32 = 5;
pub const PMI2_ERR_INVALID_VAL: i32 = 6;
pub const PMI2_ERR_INVALID_VAL_LENGTH: i32 = 7;
pub const PMI2_ERR_INVALID_LENGTH: i32 = 8;
pub const PMI2_ERR_OTHER: i32 = 14;

/// `PMI2_MAX_KEYLEN`: a key's buffer, its NUL included (a key has at most 63 bytes).
pub const MAX_KEYLEN: usize = 64;
/// `PMI2_MAX_VALLEN`: a KVS value's buffer, its NUL included.
pub const MAX_VALLEN: usize = 1024;
/// `PMI2_MAX_ATTRVALUE`: a node or job attribute's buffer, its NUL included.
pub const MAX_ATTRVALUE: usize = 1024;
/// `PMI2_ID_NULL`: no source rank known.
pub const ID_NULL: i32 = -1;
/// The longest abort message passed on (the rest is cut: the process is aborting regardless).
pub const MAX_MSG: usize = 4096;

/// A failed call: its PMI2 code and why (kept as the thread's last error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pmi2Error {
    pub code: i32,
    pub why: String,
}

impl Pmi2Error {
    pub fn new(code: i32, why: impl Into<String>) -> Self {
        Pmi2Error {
            code,
            why: why.into(),
        }
    }

    /// A failed PMIx call: which, and its status.
    pub fn pmix(call: &str, status: i32) -> Self {
        let code = match status {
            -31 => PMI2_ERR_INIT,        // PMIX_ERR_INIT
            -32 | -29 => PMI2_ERR_NOMEM, // PMIX_ERR_NOMEM, OUT_OF_RESOURCE
            -27 => PMI2_ERR_INVALID_ARG, // PMIX_ERR_BAD_PARAM
            _ => PMI2_ERR_OTHER,
        };
        Pmi2Error::new(code, format!("{call} returned PMIx status {status}"))
    }
}

impl fmt::Display for Pmi2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PMI2 error {}: {}", self.code, self.why)
    }
}

pub type Result<T> = std::result::Result<T, Pmi2Error>;
