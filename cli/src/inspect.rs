//! Store inspection for an admin debugging a job: list, read one value, sweep dead stores.

use std::path::{Path, PathBuf};

use rshm_gds::jobdata::TargetRank;
use rshm_gds::modex::{self, Scope};
use rshm_gds::{Error, Pin, Reader, Realm};

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

pub fn dump(store: &Path, want: Option<&str>, limit: usize) -> Result<(), Fail> {
    let r = Reader::attach(store).map_err(|e| e.to_string())?;
    let pin = r.pin();
    outln!(
        "store {} generation {}",
        store.display(),
        r.stats().generation
    )?;
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
        if want.is_some_and(|want| want == ns) {
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

pub fn get(store: &Path, ns: &str, realm: &str, key: &str) -> Result<(), Fail> {
    let r = Reader::attach(store).map_err(|e| e.to_string())?;
    let pin = r.pin();
    if let Some(posted) = realm.strip_prefix("posted:") {
        return get_posted(&r, &pin, ns, posted, key);
    }
    let v = r
        .get(&pin, ns, rshm_gds::part::DATA, parse_realm(realm)?, key)
        .map_err(|e| e.to_string())?;
    outln!("{:?}", v.to_value())?;
    Ok(())
}

/// `posted:RANK[:SCOPE]`: a key a process put and committed (or a fence gathered), with the scope
/// it was put with (a later put replaces the key whatever its scope); a SCOPE given narrows the
/// search to it. `RANK` may be `undef` (the key's poster).
fn get_posted(r: &Reader, pin: &Pin<'_>, ns: &str, spec: &str, key: &str) -> Result<(), Fail> {
    let bad = || {
        format!(
            "bad realm posted:{spec}: posted:RANK[:local|remote|global], RANK a number or undef"
        )
    };
    let (rank, scope) = spec.split_once(':').unwrap_or((spec, ""));
    let target = match rank {
        "undef" => TargetRank::Undef,
        n => TargetRank::Rank(n.parse().map_err(|_| bad())?),
    };
    let scopes: &[Scope] = match scope {
        "" => &Scope::ALL,
        "local" => &[Scope::Local],
        "remote" => &[Scope::Remote],
        "global" => &[Scope::Global],
        _ => return Err(bad().into()),
    };
    let mut found = 0;
    for &s in scopes {
        // Ask as a requester the scope reaches: on the poster's node for LOCAL, off it for REMOTE.
        let local = s != Scope::Remote;
        match modex::find(r, pin, ns, target, key, |_| local, Some(s)) {
            Ok((v, _)) => {
                outln!("{:<6} {:?}", scope_text(s), v.to_value())?;
                found += 1;
            }
            Err(Error::NotFound | Error::ExistsOutsideScope) => {}
            Err(e) => return Err(e.to_string().into()),
        }
    }
    if found == 0 {
        return Err(Error::NotFound.to_string().into());
    }
    Ok(())
}

fn scope_text(s: Scope) -> &'static str {
    match s {
        Scope::Local => "local",
        Scope::Remote => "remote",
        Scope::Global => "global",
    }
}

pub fn sweep(base: Option<PathBuf>) -> Result<(), Fail> {
    let base = base.unwrap_or_else(rshm_gds::default_base_dir);
    let report = rshm_gds::sweep_dead_stores(&base).map_err(|e| e.to_string())?;
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
