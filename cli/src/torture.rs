//! `rshm write-loop`: a writer that publishes generation after generation until killed, for the
//! crash tests (cli/tests/crash.rs). Every generation g writes two namespaces whose every value
//! encodes g, so a reader can tell a whole generation from a torn one.

use std::io::Write;
use std::path::PathBuf;

use gds::{part, Realm, StoreOptions, TableBuilder, Value, Writer};

use crate::args::Args;

/// Namespaces written each generation.
pub const NAMESPACES: [&str; 2] = ["crash-a", "crash-b"];
/// Ranks per namespace.
pub const RANKS: u32 = 256;

pub fn write_loop(argv: &[String]) -> Result<(), String> {
    let a = Args::parse(argv, &["base", "gens"])?;
    let base = PathBuf::from(a.opt("base").ok_or("--base is required")?);
    let gens: u64 = a.get("gens", u64::MAX)?;
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(base),
        sweep: false,
        ..StoreOptions::default()
    })
    .map_err(|e| e.to_string())?;
    println!("{}", w.path().display());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    for g in 1..=gens {
        let mut tx = w.begin();
        for ns in NAMESPACES {
            let mut t = TableBuilder::with_ranks(RANKS);
            t.insert(Realm::Job, "gen", &Value::Uint64(g))
                .map_err(|e| e.to_string())?;
            for r in 0..RANKS {
                t.insert(Realm::Proc(r), "card", &Value::String(format!("{g}:{r}")))
                    .map_err(|e| e.to_string())?;
            }
            tx.put_table(ns, part::DATA, &t)
                .map_err(|e| e.to_string())?;
        }
        tx.commit().map_err(|e| e.to_string())?;
    }
    // Killed before this in the tests; a normal end removes the store.
    w.close().map_err(|e| e.to_string())
}

/// `rshm read-loop STORE`: get the job key `k` of namespace `ns` in a loop (for at most 30 s),
/// to be killed mid-read by the crash tests.
pub fn read_loop(argv: &[String]) -> Result<(), String> {
    let a = Args::parse(argv, &[])?;
    let store = PathBuf::from(
        a.positional
            .first()
            .ok_or("read-loop needs a store directory")?,
    );
    let r = gds::Reader::attach(&store).map_err(|e| e.to_string())?;
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut n = 0u64;
    while std::time::Instant::now() < end {
        let pin = r.pin();
        if let Ok(v) = r.get(&pin, "ns", part::DATA, Realm::Job, "k") {
            n += v.as_u64().unwrap_or(0);
        }
    }
    println!("{n}");
    Ok(())
}
