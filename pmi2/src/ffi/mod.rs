//! The crate's only `unsafe`: the PMI2 C ABI (`exports`) and the PMIx calls it makes (`pmix`).

pub mod exports;
pub mod pmix;
