//! The scale harness's modules (benches/src/bin/scale.rs is its `main`).

pub mod args;
pub mod build;
pub mod cell;
pub mod json;
pub mod meta;
pub mod plots;
pub mod report;
pub mod run;
pub mod sets;
pub mod storm;
