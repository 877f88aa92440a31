//! `rshm`: the main job (a synthetic PMIx job through a real store, read by separate
//! processes) and tools to inspect a store.

#![deny(unsafe_code)]

mod args;
mod demo;
// The one module allowed `unsafe` (its fork); every other module is covered by the deny.
#[allow(unsafe_code)]
mod hold;
mod inspect;
mod measure;
mod out;
mod torture;

use std::process::ExitCode;

const USAGE: &str = "\
usage:
  rshm demo [--ranks N] [--readers R] [--gets G] [--base DIR]
      write a synthetic job (default 100000 ranks) into a new store, start R reader processes
      (default 8) that attach and read G random gets each (default 200000), print the figures
  rshm dump STORE [--ns NSPACE] [--limit N]
      list the namespaces of a store, and the entries of one
  rshm get STORE NSPACE REALM KEY
      print one value; REALM is job | session:ID | app:N | node:ID | proc:RANK, or
      posted:RANK[:local|remote|global] for data a process put (RANK may be undef), printed
      with its scope
  rshm sweep [BASE]
      remove stores left by dead servers in BASE (default: the default base directory);
      prints what it removed, the live stores, and what it skipped and why
  rshm hold --base DIR [--daemonize 1]
      test helper: create a store, print its path, keep it until stdin closes (--daemonize:
      fork first; the child holds it) (cli/tests/sweep.rs)
  rshm write-loop --base DIR | rshm read-loop STORE [--hold 1]
      test helpers: publish (read) until killed; --hold: keep one pin until a line on stdin
      (cli/tests/crash.rs)
";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = match argv.first().map(String::as_str) {
        Some("demo") => demo::run(&argv[1..]),
        Some("read-worker") => demo::worker(&argv[1..]),
        Some("dump") => inspect::dump(&argv[1..]),
        Some("get") => inspect::get(&argv[1..]),
        Some("sweep") => inspect::sweep(&argv[1..]),
        Some("hold") => hold::hold(&argv[1..]).map_err(out::Fail::from),
        Some("write-loop") => torture::write_loop(&argv[1..]).map_err(out::Fail::from),
        Some("read-loop") => torture::read_loop(&argv[1..]).map_err(out::Fail::from),
        Some("-h" | "--help" | "help") => out::line(format_args!("{}", USAGE.trim_end())),
        _ => {
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) | Err(out::Fail::Closed) => ExitCode::SUCCESS,
        Err(out::Fail::Error(e)) => {
            eprintln!("rshm: {e}");
            ExitCode::FAILURE
        }
    }
}
