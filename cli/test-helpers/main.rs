//! `rshm-test-helpers`: processes the CLI's tests start and kill (a store held until stdin
//! closes, a writer and a reader to kill mid-operation). Not part of the admin command: built
//! only with the `test-helpers` feature, which the package's tests turn on for themselves
//! (cli/Cargo.toml); packages ship `rshm` alone.

#![deny(unsafe_code)]

// The one module allowed `unsafe` (its fork); every other module is covered by the deny.
#[allow(unsafe_code)]
mod hold;
mod torture;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Test helpers of rshm's CLI tests (cli/tests/).
#[derive(Parser)]
#[command(name = "rshm-test-helpers")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a store in BASE, print `store PATH` and `pid PID`, keep it until stdin closes
    /// (cli/tests/sweep.rs).
    Hold {
        #[arg(long, value_name = "DIR")]
        base: PathBuf,
        /// 1: fork once the store exists; the child, in a new session, holds it.
        #[arg(long, default_value_t = 0)]
        daemonize: u8,
    },
    /// Publish generation after generation until killed (cli/tests/crash.rs).
    WriteLoop {
        #[arg(long, value_name = "DIR")]
        base: PathBuf,
        /// Stop after this many generations.
        #[arg(long, default_value_t = u64::MAX)]
        gens: u64,
    },
    /// Read in a loop until killed; `--hold 1`: keep one pin until a line on stdin
    /// (cli/tests/crash.rs).
    ReadLoop {
        store: PathBuf,
        #[arg(long, default_value_t = 0)]
        hold: u32,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Hold { base, daemonize } => hold::hold(base, daemonize),
        Command::WriteLoop { base, gens } => torture::write_loop(base, gens),
        Command::ReadLoop { store, hold } => torture::read_loop(store, hold),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rshm-test-helpers: {e}");
            ExitCode::FAILURE
        }
    }
}
