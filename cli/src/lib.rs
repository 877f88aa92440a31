//! The `rshm` command's subcommands and their options (clap derive: `rshm --help`,
//! `rshm SUBCOMMAND --help`); src/main.rs parses and runs them. A library so that the package's
//! tests can check the definition (and turn on the test helpers' feature, cli/Cargo.toml).

#![forbid(unsafe_code)]

mod demo;
mod inspect;
mod measure;
mod out;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// rshm: a shared-memory PMIx data store. The main job and store inspection.
#[derive(Parser)]
#[command(name = "rshm", version)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Write a synthetic job into a new store, start reader processes that attach and read
    /// random gets, and print the figures.
    Demo(demo::DemoArgs),
    /// A reader process of `rshm demo` (started by it).
    #[command(hide = true)]
    ReadWorker(demo::WorkerArgs),
    /// List the namespaces of a store, and the entries of one.
    Dump {
        /// The store's directory (e.g. /dev/shm/rshm-PID-NONCE).
        store: PathBuf,
        /// List the entries of this namespace.
        #[arg(long, value_name = "NSPACE")]
        ns: Option<String>,
        /// At most this many entries.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
    },
    /// Print one value.
    Get {
        /// The store's directory.
        store: PathBuf,
        /// The namespace.
        nspace: String,
        /// job | session:ID | app:N | node:ID | proc:RANK, or posted:RANK[:local|remote|global]
        /// for data a process put (RANK may be undef), printed with its scope.
        realm: String,
        /// The key (e.g. pmix.lrank).
        key: String,
    },
    /// Remove stores left by dead servers in BASE (default: the default base directory);
    /// prints what it removed, the live stores, and what it skipped and why.
    Sweep {
        /// The base directory to sweep.
        base: Option<PathBuf>,
    },
}

/// Runs one parsed command line: status 0, or 1 after printing `rshm: ERROR`.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Command::Demo(a) => demo::run(&a),
        Command::ReadWorker(a) => demo::worker(&a),
        Command::Dump { store, ns, limit } => inspect::dump(&store, ns.as_deref(), limit),
        Command::Get {
            store,
            nspace,
            realm,
            key,
        } => inspect::get(&store, &nspace, &realm, &key),
        Command::Sweep { base } => inspect::sweep(base),
    };
    match result {
        Ok(()) | Err(out::Fail::Closed) => ExitCode::SUCCESS,
        Err(out::Fail::Error(e)) => {
            eprintln!("rshm: {e}");
            ExitCode::FAILURE
        }
    }
}
