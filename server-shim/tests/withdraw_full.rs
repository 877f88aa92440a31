//! `Server::withdraw` on a full filesystem (needs root to mount a tmpfs; without root it prints
//! `SKIPPED (not root)`, and fails under CI, as cli/tests/privileged.rs does): when the key's
//! withdrawal cannot be written, the namespace's posted table is withdrawn with a root-only
//! commit; when not even a root fits, the call fails and the store is left as it was.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use gds::jobdata::TargetRank;
use gds::modex::{self, Scope};
use gds::{part, Error, Reader, Value};
use rshm_server::server::{PostedValue, Server, ServerOptions, Withdrawn};

fn root_for(what: &str) -> bool {
    if std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0) {
        return true;
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(
        !ci,
        "CI runs the tests as root, this run is not: it cannot {what}"
    );
    eprintln!("SKIPPED (not root): needs root to {what}; nothing was checked");
    false
}

/// A tmpfs mounted for one test, unmounted on drop.
struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::Builder::new()
            .prefix("rshm-tmpfs-")
            .tempdir_in("/tmp")
            .unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tmpfs");
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: the reader's mappings are released by its epoch collector, possibly later.
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// Fill the filesystem of `dir` with a file, then free `spare` bytes of it.
fn fill(dir: &Path, spare: u64) -> std::fs::File {
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = [0u8; 4096];
    while f.write(&chunk).is_ok_and(|n| n > 0) {}
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(spare)).unwrap();
    f
}

fn get(r: &Reader, rank: u32, key: &str) -> gds::Result<Value> {
    r.refresh().unwrap();
    let pin = r.pin();
    let t = r.table(&pin, "ns", part::POSTED)?;
    modex::get(t, TargetRank::Rank(rank), key, true, None).map(|v| v.to_value())
}

#[test]
fn a_withdrawal_that_cannot_be_written_withdraws_the_posted_table_or_fails_cleanly() {
    if !root_for("mount a tmpfs") {
        return;
    }
    let fs = Tmpfs::mount("1m");
    let mut s = Server::open(ServerOptions {
        base_dir: Some(fs.0.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    let posted = |rank, key: &str, value| PostedValue {
        nspace: "ns".into(),
        rank,
        scope: Scope::Global as u8,
        key: key.into(),
        value,
    };
    // A posted table of ~300 KiB: rewriting it needs that much free space.
    s.store(&[
        posted(0, "k", Value::String("v1".into())),
        posted(1, "big", Value::ByteObject(vec![7; 300 << 10])),
    ])
    .unwrap();
    let r = Reader::attach(s.path()).unwrap();
    assert_eq!(get(&r, 0, "k").unwrap(), Value::String("v1".into()));

    // Not even a root fits: an error, and the store is as it was (the documented limit).
    let filler = fill(fs.0.path(), 0);
    let err = s.withdraw("ns", 0, "k").unwrap_err();
    assert!(matches!(err, Error::OutOfSpace), "{err}");
    assert_eq!(get(&r, 0, "k").unwrap(), Value::String("v1".into()));

    // Room for a root, not for the table: the namespace's posted table is withdrawn.
    drop(filler);
    let filler = fill(fs.0.path(), 64 << 10);
    assert_eq!(s.withdraw("ns", 0, "k").unwrap(), Withdrawn::Namespace);
    assert!(matches!(get(&r, 0, "k"), Err(Error::NotFound)));
    assert!(matches!(get(&r, 1, "big"), Err(Error::NotFound)));

    // Space again: later commits start a new table with only what came after.
    drop(filler);
    std::fs::remove_file(fs.0.path().join("filler")).unwrap();
    s.store(&[posted(2, "n", Value::String("x".into()))])
        .unwrap();
    assert_eq!(get(&r, 2, "n").unwrap(), Value::String("x".into()));
    assert!(matches!(get(&r, 0, "k"), Err(Error::NotFound)));
    assert!(matches!(get(&r, 1, "big"), Err(Error::NotFound)));
    drop(r);
    s.close().unwrap();
}
