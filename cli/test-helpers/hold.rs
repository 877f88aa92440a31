//! `rshm-test-helpers hold`: a writer that keeps a store alive until its stdin closes, for the sweep tests
//! (cli/tests/sweep.rs): it creates a store in `--base` (no sweep), publishes `k` = 1 in
//! namespace `ns`, prints `store PATH` and `pid PID`, then waits for end of file on stdin and
//! closes the store. Killed instead, it leaves a dead store.
//!
//! `--daemonize 1`: once the store is created, fork; the parent exits at once (without closing
//! the store) and the child, in a new session, holds the store: a server that daemonizes after
//! creating its store, whose store name carries the parent's pid.

use std::io::{Read, Write};
use std::path::PathBuf;

use rshm_gds::{part, Realm, StoreOptions, TableBuilder, Value, Writer};

pub fn hold(base: PathBuf, daemonize: u8) -> Result<(), String> {
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(base),
        sweep: false,
        ..StoreOptions::default()
    })
    .map_err(|e| e.to_string())?;
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "k", &Value::Uint32(1))
        .map_err(|e| e.to_string())?;
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t)
        .map_err(|e| e.to_string())?;
    tx.commit().map_err(|e| e.to_string())?;
    if daemonize != 0 {
        if fork()? {
            // The parent: gone without closing the store, as a daemonizing server's is.
            std::process::exit(0);
        }
        rustix::process::setsid().map_err(|e| format!("setsid: {e}"))?;
    }
    let pid = rustix::process::getpid().as_raw_nonzero();
    let mut out = std::io::stdout();
    writeln!(out, "store {}\npid {pid}", w.path().display())
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    w.close().map_err(|e| e.to_string())
}

/// fork(2): true in the parent, false in the child. The helpers' only `unsafe`.
fn fork() -> Result<bool, String> {
    // SAFETY: this process is single-threaded here (`hold` starts no thread, and a table this
    // small is written without the prefault helper), so the child may run anything; it
    // inherits the store's mappings and the lock file's descriptor, as a daemonized server does.
    match unsafe { libc::fork() } {
        -1 => Err(format!("fork: {}", std::io::Error::last_os_error())),
        0 => Ok(false),
        _ => Ok(true),
    }
}
