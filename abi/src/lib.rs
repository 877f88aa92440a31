//! The PMIx standard's C ABI for rshm's shims: `#[repr(C)]` mirrors of `pmix_common.h`'s structs
//! ([`types`]), the conversions between C values and `gds` values ([`c`]: the only `unsafe` in
//! this crate), the status mapping, and PMIx_Get's qualifiers read from a `pmix_info_t` array.
//!
//! `server-shim` and `client-shim` export the C functions; this crate holds what both need,
//! with the panic boundary every export runs inside ([`boundary`]) and the environment names a
//! server hands its clients ([`env`](mod@env)).
//!
//! Every function that follows a pointer it cannot check (a `pmix_value_t`'s union, an info
//! array's values) is an `unsafe fn` whose `# Safety` says what the C caller promises: the
//! mirrors' fields are public, so a reference to a mirror proves nothing about its pointers.

#![deny(unsafe_code)]

pub mod boundary;
#[allow(unsafe_code)]
pub mod c;
pub mod env;
pub mod get;
pub mod types;
pub mod verbose;

pub use boundary::{ffi_or, ffi_ptr, ffi_status, ffi_void, last_error};

use types::{pmix_status_t, status::*};

/// Why a C call failed; [`AbiError::status`] is what the C caller sees.
#[derive(Debug)]
pub enum AbiError {
    /// NULL, unterminated, oversized or inconsistent arguments (`PMIX_ERR_BAD_PARAM`).
    BadParam(String),
    /// A type or directive this build does not handle (`PMIX_ERR_NOT_SUPPORTED`).
    NotSupported(String),
    /// malloc failed (`PMIX_ERR_NOMEM`).
    NoMem,
    /// What the call would create exists already (`PMIX_ERR_EXISTS`).
    Exists(String),
    /// No client is attached: `rshm_client_attach` was not called, or failed, or the client
    /// detached (`PMIX_ERR_INIT`).
    NotAttached,
    /// An answer larger than the bound the API sets for it (`PMIX_ERR_OUT_OF_RESOURCE`):
    /// refused before anything is allocated.
    TooLarge(String),
    /// The store's own error.
    Store(rshm_gds::Error),
}

impl From<rshm_gds::Error> for AbiError {
    fn from(e: rshm_gds::Error) -> Self {
        AbiError::Store(e)
    }
}

impl std::fmt::Display for AbiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AbiError::BadParam(s) => write!(f, "bad parameter: {s}"),
            AbiError::NotSupported(s) => write!(f, "not supported: {s}"),
            AbiError::NoMem => write!(f, "out of memory"),
            AbiError::Exists(s) => write!(f, "exists: {s}"),
            AbiError::NotAttached => write!(
                f,
                "not attached to an rshm store (rshm_client_attach first, or it failed)"
            ),
            AbiError::TooLarge(s) => write!(f, "answer too large: {s}"),
            AbiError::Store(e) => write!(f, "{e}"),
        }
    }
}

impl AbiError {
    /// The standard's status for this error.
    pub fn status(&self) -> pmix_status_t {
        match self {
            AbiError::BadParam(_) => PMIX_ERR_BAD_PARAM,
            AbiError::NotSupported(_) => PMIX_ERR_NOT_SUPPORTED,
            AbiError::NoMem => PMIX_ERR_NOMEM,
            AbiError::Exists(_) => PMIX_ERR_EXISTS,
            AbiError::NotAttached => PMIX_ERR_INIT,
            AbiError::TooLarge(_) => PMIX_ERR_OUT_OF_RESOURCE,
            AbiError::Store(e) => store_status(e),
        }
    }
}

/// The status of a store error (docs/ffi.md has the table).
pub fn store_status(e: &rshm_gds::Error) -> pmix_status_t {
    use rshm_gds::Error as E;
    match e {
        E::NotFound => PMIX_ERR_NOT_FOUND,
        E::ExistsOutsideScope => PMIX_ERR_EXISTS_OUTSIDE_SCOPE,
        E::InvalidArgument(_) => PMIX_ERR_BAD_PARAM,
        E::PermissionDenied | E::Untrusted(_) => PMIX_ERR_NO_PERMISSIONS,
        E::OutOfSpace => PMIX_ERR_OUT_OF_RESOURCE,
        // The server closed the store: like a server that can no longer be reached.
        E::StoreRemoved => PMIX_ERR_UNREACH,
        E::Version { .. } | E::BadMagic | E::ByteOrder | E::NotReady => PMIX_ERR_INIT,
        _ => PMIX_ERROR,
    }
}
