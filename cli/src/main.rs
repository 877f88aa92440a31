//! `rshm`: the main job (a synthetic PMIx job through a real store, read by separate
//! processes) and tools to inspect a store. The commands are in src/lib.rs.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    rshm_cli::run(rshm_cli::Cli::parse())
}
