//! Store inspection for an admin debugging a job: list, read one value, sweep dead stores.

use std::path::{Path, PathBuf};

use gds::{Reader, Realm};

use crate::args::Args;
use crate::out::{outln, Fail};

/// Parse `job`, `session:ID`, `app:N`, `node:ID`, `proc:RANK`.
pub fn parse_realm(s: &str) -> Result<Realm, String> {
    let (kind, id) = s.split_once(':').unwrap_or((s, ""));
    let id = || {
        id.parse::<u32>()
            .map_err(|_| format!("bad realm {s:?}: need a number after ':'"))
    };
    Ok(match kind {
        "job" => Realm::Job,
        "session" => Realm::Session(id()?),
        "app" => Realm::App(id()?),
        "node" => Realm::Node(id()?),
        "proc" => Realm::Proc(id()?),
        "meta" => Realm::Meta,
        _ => {
            return Err(format!(
                "bad realm {s:?}: job | session:ID | app:N | node:ID | proc:RANK"
            ))
        }
    })
}

fn realm_text(r: Realm) -> String {
    match r {
        Realm::Job => "job".into(),
        Realm::Session(i) => format!("session:{i}"),
        Realm::App(i) => format!("app:{i}"),
        Realm::Node(i) => format!("node:{i}"),
        Realm::Proc(i) => format!("proc:{i}"),
        Realm::Meta => "meta".into(),
        Realm::Posted { rank, scope } => format!("posted:{rank}:scope{scope}"),
    }
}

pub fn dump(argv: &[String]) -> Result<(), Fail> {
    let a = Args::parse(argv, &["ns", "limit"])?;
    let store = a.positional.first().ok_or("dump needs a store directory")?;
    let limit: usize = a.get("limit", 50)?;
    let r = Reader::attach(Path::new(store)).map_err(|e| e.to_string())?;
    let pin = r.pin();
    outln!("store {store} generation {}", r.stats().generation)?;
    for (ns, part) in r.namespaces(&pin).map_err(|e| e.to_string())? {
        let t = r.table(&pin, &ns, part).map_err(|e| e.to_string())?;
        outln!(
            "namespace {ns} part {part}: {} entries, {} bytes",
            t.len(),
            t.mapped_len()
        )?;
        for c in t.column_shapes() {
            let form = match c.blocks {
                None => "plain".to_string(),
                Some((blocks, stored)) => {
                    format!("{blocks} blocks of 32 ranks, {stored} stored as values")
                }
            };
            outln!(
                "  column {:<12} {} ranks x {} B: {} bytes, {form}",
                c.key,
                t.rank_count(),
                c.width,
                c.bytes
            )?;
        }
        if a.opt("ns").is_some_and(|want| want == ns) {
            for (realm, key, v) in t.entries().take(limit) {
                outln!(
                    "  {:<12} {:<24} {:?}",
                    realm_text(realm),
                    String::from_utf8_lossy(key),
                    v.to_value()
                )?;
            }
        }
    }
    Ok(())
}

pub fn get(argv: &[String]) -> Result<(), Fail> {
    let a = Args::parse(argv, &[])?;
    let [store, ns, realm, key] = a.positional.as_slice() else {
        return Err("get needs STORE NSPACE REALM KEY".into());
    };
    let r = Reader::attach(Path::new(store)).map_err(|e| e.to_string())?;
    let pin = r.pin();
    let v = r
        .get(&pin, ns, gds::part::DATA, parse_realm(realm)?, key)
        .map_err(|e| e.to_string())?;
    outln!("{:?}", v.to_value())?;
    Ok(())
}

pub fn sweep(argv: &[String]) -> Result<(), Fail> {
    let a = Args::parse(argv, &[])?;
    let base = a
        .positional
        .first()
        .map(PathBuf::from)
        .unwrap_or_else(gds::default_base_dir);
    let report = gds::sweep_dead_stores(&base).map_err(|e| e.to_string())?;
    outln!("swept {}", report.base.display())?;
    for p in &report.removed {
        outln!("removed {}", p.display())?;
    }
    for p in &report.alive {
        outln!("alive {}", p.display())?;
    }
    for s in &report.skipped {
        outln!("skipped {}: {}", s.path.display(), s.reason)?;
    }
    outln!(
        "{} removed, {} alive, {} skipped",
        report.removed.len(),
        report.alive.len(),
        report.skipped.len()
    )?;
    Ok(())
}
