//! `rshm-test-helpers write-loop`: a writer that publishes generation after generation until killed, for the
//! crash tests (cli/tests/crash.rs). Every generation g writes two namespaces whose every value
//! encodes g, so a reader can tell a whole generation from a torn one. It prints the store's path
//! first, then `committed G` once `commit` of generation G (the `gen` its tables hold) has returned: the test's evidence of
//! what was published before the kill.
//!
//! `rshm-test-helpers read-loop`: a reader to kill mid-read, or (`--hold`) one that keeps a pin out.

use std::io::Write;
use std::path::PathBuf;

use rshm_gds::{part, Realm, StoreOptions, TableBuilder, Value, Writer};

/// Namespaces written each generation.
pub const NAMESPACES: [&str; 2] = ["crash-a", "crash-b"];
/// Ranks per namespace.
pub const RANKS: u32 = 256;

pub fn write_loop(base: PathBuf, gens: u64) -> Result<(), String> {
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
        println!("committed {g}");
        std::io::stdout().flush().map_err(|e| e.to_string())?;
    }
    // Killed before this in the tests; a normal end removes the store.
    w.close().map_err(|e| e.to_string())
}

/// `read-loop STORE`: get the job key `k` of namespace `ns` in a loop (for at most 30 s),
/// to be killed mid-read by the crash tests.
///
/// `read-loop STORE --hold 1`: pin, borrow the table of `ns` and print its `k` as `pinned K`;
/// keep that pin until a line arrives on stdin, then read `k` again through the same borrowed
/// table and print `still K`: a reader that holds its view for as long as the test wants (and
/// can be stopped meanwhile). (A new get through the pin would move to the newest generation.)
pub fn read_loop(store: PathBuf, hold: u32) -> Result<(), String> {
    let r = rshm_gds::Reader::attach(&store).map_err(|e| e.to_string())?;
    let k = |pin: &rshm_gds::Pin| {
        r.get(pin, "ns", part::DATA, Realm::Job, "k")
            .map(|v| v.as_u64().unwrap_or(0))
            .map_err(|e| e.to_string())
    };
    if hold != 0 {
        let pin = r.pin();
        let table = r.table(&pin, "ns", part::DATA).map_err(|e| e.to_string())?;
        let held_k = || table.get(Realm::Job, "k").and_then(|v| v.as_u64());
        println!("pinned {}", held_k().ok_or("no k")?);
        std::io::stdout().flush().map_err(|e| e.to_string())?;
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        println!("still {}", held_k().ok_or("no k")?);
        return Ok(());
    }
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut n = 0u64;
    while std::time::Instant::now() < end {
        let pin = r.pin();
        n += k(&pin).unwrap_or(0);
    }
    println!("{n}");
    Ok(())
}
