//! `librshm_pmi2.so`: the PMI-2 client API (`include/pmi2.h`) over PMIx, for MPI libraries and
//! programs that speak PMI-2. What must reach the server (puts, fences, publishing, spawning,
//! connecting, aborting) goes through the PMIx client API of Debian's libpmix, linked; what
//! the server's rshm store can answer (job and node attributes, KVS values after a fence, node
//! attributes local peers committed, the process mapping) is read from shared memory, and the
//! rest from libpmix's PMIx_Get: the same answers either way. docs/pmi2.md has every call.
//!
//! - `codes`, `check`: the return codes, limits and argument checks of pmi2.h;
//! - `state`: PMI2_Init/Finalize and the read path (store first, then libpmix);
//! - `ops`: the calls over the state;
//! - `ffi`: the C ABI and the PMIx calls, the crate's only `unsafe`.

#![deny(unsafe_code)]

pub mod check;
pub mod codes;
#[allow(unsafe_code, non_snake_case, non_camel_case_types)]
mod ffi;
pub mod ops;
pub mod state;
