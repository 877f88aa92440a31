//! Tests that need root (CI runs as root): a full filesystem, and another user.
//!
//! Without root they cannot check anything. libtest has no way to report a test skipped at run
//! time, and `#[ignore]` would keep them from running in CI unless its test command changed, so:
//! under CI (`CI` set, as CI services do) a run without root fails, since these tests are there
//! to run; elsewhere each prints a `SKIPPED (not root)` line and returns, and
//! .config/nextest.toml shows that output even though the test passes.

#[path = "../../gds/tests/support/tmpfs.rs"]
mod tmpfs;
#[path = "../../gds/tests/support/users.rs"]
mod users;

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use rshm_gds::jobdata::TargetRank;
use rshm_gds::modex;
use rshm_gds::{part, Error, Ownership, Reader, Realm, StoreOptions, TableBuilder, Value, Writer};
use tmpfs::Tmpfs;
use users::{root_for, test_user, USER};

fn opts(base: &Path) -> StoreOptions {
    StoreOptions {
        base_dir: Some(base.to_path_buf()),
        sweep: false,
        ..StoreOptions::default()
    }
}

fn table(values: usize, bytes: usize) -> TableBuilder {
    let mut t = TableBuilder::new();
    for r in 0..values as u32 {
        t.insert(
            Realm::Proc(r),
            "card",
            &Value::ByteObject(vec![r as u8; bytes]),
        )
        .unwrap();
    }
    t
}

#[test]
fn a_full_filesystem_is_a_clean_out_of_space_error_and_publishes_nothing_partial() {
    if !root_for("mount a tmpfs") {
        return;
    }
    let fs = Tmpfs::mount("512k");
    let mut w = Writer::create(opts(fs.path())).unwrap();
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &table(16, 64)).unwrap();
    tx.commit().unwrap();
    let before = w.files().unwrap();
    // 2 MiB of cards into a 512 KiB filesystem.
    let mut tx = w.begin();
    let err = tx
        .put_table("ns", part::DATA, &table(1024, 2048))
        .unwrap_err();
    assert!(matches!(err, Error::OutOfSpace), "{err}");
    drop(tx);
    assert_eq!(w.files().unwrap(), before, "nothing partial left behind");
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let v = r
        .get(&pin, "ns", part::DATA, Realm::Proc(3), "card")
        .unwrap();
    assert_eq!(
        v.as_bytes(),
        Some(&[3u8; 64][..]),
        "the last complete generation is intact"
    );
    // Space freed again: publishing works.
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &table(16, 128)).unwrap();
    tx.commit().unwrap();
}

/// A server's write that fails (the filesystem is full) changes nothing: the values of the
/// failed call are neither kept for a later call to publish nor in the way of one, and a
/// registration of resources that fails is forgotten the same way.
#[test]
fn a_failed_store_is_forgotten_not_published_by_the_next_one() {
    use rshm_server::{PostedValue, Server, ServerOptions};
    if !root_for("mount a tmpfs") {
        return;
    }
    let fs = Tmpfs::mount("1m");
    let mut s = Server::open(ServerOptions {
        base_dir: Some(fs.path().to_path_buf()),
        ..ServerOptions::default()
    })
    .unwrap();
    let posted = |rank: u32, key: &str, value: Value| PostedValue {
        nspace: "ns".into(),
        rank,
        scope: 3,
        key: key.into(),
        value,
    };
    s.store(&[posted(0, "small", Value::String("v1".into()))])
        .unwrap();
    // 2 MiB into a 1 MiB filesystem: refused, whole.
    let err = s
        .store(&[posted(1, "big", Value::ByteObject(vec![7; 2 << 20]))])
        .unwrap_err();
    assert!(matches!(err, Error::OutOfSpace), "{err}");
    // The next small store is not dragged down by the refused one.
    s.store(&[posted(0, "small", Value::String("v2".into()))])
        .unwrap();
    // Room again: still only what succeeded is there.
    let ok = Command::new("mount")
        .args(["-o", "remount,size=64m"])
        .arg(fs.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "remount tmpfs");
    s.store(&[posted(2, "other", Value::Uint32(3))]).unwrap();
    let r = Reader::attach(s.path()).unwrap();
    let pin = r.pin();
    let get = |rank: u32, key: &str| {
        modex::find(&r, &pin, "ns", TargetRank::Rank(rank), key, |_| true, None)
            .map(|(v, _)| v.to_value())
    };
    assert_eq!(get(0, "small").unwrap(), Value::String("v2".into()));
    assert_eq!(get(2, "other").unwrap(), Value::Uint32(3));
    assert!(
        matches!(get(1, "big"), Err(Error::NotFound)),
        "a refused value was published by a later store"
    );
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

fn posted_get(r: &Reader, rank: u32, key: &str) -> rshm_gds::Result<Value> {
    r.refresh().unwrap();
    let pin = r.pin();
    modex::find(r, &pin, "ns", TargetRank::Rank(rank), key, |_| true, None)
        .map(|(v, _)| v.to_value())
}

/// `Server::withdraw` on a full filesystem: when the key's withdrawal cannot be written, the
/// namespace's posted table is withdrawn with a root-only commit; when not even a root fits,
/// the store's posted data is withdrawn for good.
#[test]
fn a_withdrawal_that_cannot_be_written_withdraws_the_posted_table_or_all_posted_data() {
    if !root_for("mount a tmpfs") {
        return;
    }
    let fs = Tmpfs::mount("1m");
    let mut s = Server::open(ServerOptions {
        base_dir: Some(fs.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    use rshm_server::server::{PostedValue, Server, ServerOptions, Withdrawn};
    let posted = |rank, key: &str, value| PostedValue {
        nspace: "ns".into(),
        rank,
        scope: rshm_gds::modex::Scope::Global as u8,
        key: key.into(),
        value,
    };
    // Rank 0's posted table of ~300 KiB: rewriting it needs that much free space.
    s.store(&[
        posted(0, "k", Value::String("v1".into())),
        posted(0, "big", Value::ByteObject(vec![7; 300 << 10])),
    ])
    .unwrap();
    let r = Reader::attach(s.path()).unwrap();
    assert_eq!(posted_get(&r, 0, "k").unwrap(), Value::String("v1".into()));

    // Room for a root, not for the table: the namespace's posted table is withdrawn.
    let filler = fill(fs.path(), 64 << 10);
    assert_eq!(s.withdraw("ns", 0, "k").unwrap(), Withdrawn::Namespace);
    assert!(matches!(posted_get(&r, 0, "k"), Err(Error::NotFound)));
    assert!(matches!(posted_get(&r, 0, "big"), Err(Error::NotFound)));

    // Space again: later commits start a new table with only what came after.
    drop(filler);
    std::fs::remove_file(fs.path().join("filler")).unwrap();
    s.store(&[posted(2, "n", Value::String("x".into()))])
        .unwrap();
    assert_eq!(posted_get(&r, 2, "n").unwrap(), Value::String("x".into()));
    assert!(matches!(posted_get(&r, 0, "k"), Err(Error::NotFound)));
    assert!(matches!(posted_get(&r, 0, "big"), Err(Error::NotFound)));

    // Not even a root fits: the store's posted data is withdrawn for good (its bit of the
    // anchor's `withdrawn` mask): readers answer no posted data any more, and later posted
    // values are refused; job data and the rest of the store are as they were. Roots are
    // appended to a pack whose last page may have room left when the filesystem is full: 140
    // more namespaces make every root larger than a page.
    for j in 0..140 {
        let v = PostedValue {
            nspace: format!("o{j}"),
            ..posted(0, "o", Value::Uint32(j))
        };
        s.store(&[v]).unwrap();
    }
    let _filler = fill(fs.path(), 0);
    assert_eq!(s.withdraw("ns", 2, "n").unwrap(), Withdrawn::Store);
    assert!(matches!(posted_get(&r, 2, "n"), Err(Error::StoreRemoved)));
    assert!(s.store(&[posted(3, "m", Value::Uint32(1))]).is_err());
    drop(r);
    s.close().unwrap();
}

/// Run `rshm get STORE ns job k` as the test user; (success, output).
fn get_as_user(rshm: &Path, store: &Path) -> (bool, String) {
    let out = Command::new("runuser")
        .args(["-u", USER, "--"])
        .arg(rshm)
        .arg("get")
        .arg(store)
        .args(["ns", "job", "k"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(if out.status.success() {
        &out.stdout
    } else {
        &out.stderr
    });
    (out.status.success(), text.trim().to_owned())
}

#[test]
fn another_user_cannot_open_a_private_store_and_the_reader_named_can() {
    if !root_for("create a user") {
        return;
    }
    let uid = test_user().uid;
    let base = tempfile::Builder::new()
        .prefix("rshm-uid-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // The binary must be reachable by the other user wherever the checkout lives.
    let rshm: PathBuf = base.path().join("rshm");
    std::fs::copy(env!("CARGO_BIN_EXE_rshm"), &rshm).unwrap();
    std::fs::set_permissions(&rshm, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "k", &Value::Uint32(42)).unwrap();

    // Private (root's, 0700/0600): the other user is refused.
    let mut private = Writer::create(opts(base.path())).unwrap();
    let mut tx = private.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    let (ok, msg) = get_as_user(&rshm, private.path());
    assert!(!ok && msg.contains("permission denied"), "{msg}");

    // Readable by the job's user (PMIX_USERID), through an ACL: that user reads it.
    let mut theirs = Writer::create(StoreOptions {
        ownership: Ownership {
            reader_uid: Some(uid),
            reader_gid: None,
        },
        ..opts(base.path())
    })
    .unwrap();
    let mut tx = theirs.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        get_as_user(&rshm, theirs.path()),
        (true, "Uint32(42)".to_string())
    );
    // Still root's, writable by root alone: the ACL's mask (the group bits) grants read only.
    let meta = std::fs::metadata(theirs.path().join("rshm-anchor")).unwrap();
    assert_eq!(meta.uid(), 0);
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
}
