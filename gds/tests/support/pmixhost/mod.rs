//! Test support: drive `tools/pmix-host` (a PMIx server host over the system OpenPMIx 4.2.2)
//! and read its files into the crate's value model, for differential conformance tests that
//! compare OpenPMIx's `PMIx_Get` answers with ours for the same registration and queries.
//!
//! Include it from an integration test with
//! `#[path = "support/pmixhost/mod.rs"] mod pmixhost;`. Only std and `gds` are used.
//!
//! - [`build`]: `make -s -C tools/pmix-host`.
//! - [`run_job`]: run a job file + query corpus under OpenPMIx; returns the exact registration
//!   (`--dump-registration`, see [`read_registration`]) and the answer lines ([`Answer`]).
//! - [`read_corpus`]: the corpus queries as [`CorpusQuery`] (key strings + [`Qualifiers`](rshm_gds::jobdata::query::Qualifiers)).
//! - [`canonical`]: the canonical answer text of one of our values, exactly as `pmix-client`
//!   prints an OpenPMIx value (type name from `PMIx_Data_type_string`, value text from
//!   `common.c`), so answers compare as strings.
//!
//! File formats: `tools/pmix-host/README.md`. The parts: `tool` (locating and building the
//! tool), `run` (running a job), `registration` (the registration dump), `answers`
//! (pmix-client's answer lines), `corpus` (the query corpus and attribute names), `canonical`
//! (canonical value text), `names` (OpenPMIx's type and status names); everything is
//! re-exported here.

#![allow(dead_code)]

mod answers;
mod canonical;
mod corpus;
mod names;
mod registration;
mod run;
mod tool;

#[allow(unused_imports)] // each including test uses a part
pub use self::{answers::*, canonical::*, corpus::*, names::*, registration::*, run::*, tool::*};

/// `PMIX_RANK_*` special values (pmix_common.h): gds's, and those only the corpora name.
pub use rshm_gds::jobdata::query::{RANK_UNDEF, RANK_WILDCARD};
pub const RANK_LOCAL_NODE: u32 = u32::MAX - 2;
pub const RANK_INVALID: u32 = u32::MAX - 3;
pub const RANK_LOCAL_PEERS: u32 = u32::MAX - 4;
