//! Who may read and change a store (format.md section 1): the writer owns every file and alone
//! may write; readers it names read through ACL entries; a reader refuses a store not owned by
//! whom it trusts, or writable by others. The tests acting as other users need root (see
//! support/users.rs).
//!
//! A reader under a given environment or user is this test binary run again as a child
//! (`in_child`), running only the calling test, which attaches and prints what it got.

mod common;
#[path = "support/tmpfs.rs"]
mod tmpfs;
#[path = "support/users.rs"]
mod users;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use rshm_gds::{part, Error, Ownership, Reader, Realm, StoreOptions, TableBuilder, Value, Writer};
use tmpfs::Tmpfs;
use users::{as_user, root_for, sh_as, test_user, Ids, NOBODY};

/// The store a child attaches to.
const CHILD_STORE: &str = "RSHM_TEST_ATTACH";

fn opts(base: &Path, own: Ownership) -> StoreOptions {
    StoreOptions {
        ownership: own,
        ..common::opts(base)
    }
}

fn publish(w: &mut Writer, k: u32) {
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "k", &Value::Uint32(k)).unwrap();
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();
}

/// `k` of namespace `ns` as a reader of `store` sees it, or the error, as text.
fn read_k(store: &Path) -> String {
    let got = Reader::attach(store).and_then(|r| {
        let pin = r.pin();
        let v = r.get(&pin, "ns", part::DATA, Realm::Job, "k")?.to_value();
        Ok(v)
    });
    match got {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("{e:?}"),
    }
}

/// In a child started by [`in_child`]: attach, print what was read, and return true (the test
/// then ends there). False in the test itself.
fn child_reads() -> bool {
    let Some(store) = std::env::var_os(CHILD_STORE) else {
        return false;
    };
    println!("\nread: {}", read_k(Path::new(&store)));
    true
}

/// A copy of this test binary that any user may run, and the directory holding it.
fn runnable_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("rshm-exe-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = dir.path().join("store_access");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, exe)
}

/// What a child reader (this binary, running test `name`) reads from `store`: as `user` when
/// given (running `exe`, a copy it may run), with `owner` as `RSHM_STORE_OWNER` when given.
fn in_child(name: &str, store: &Path, user: Option<(Ids, &Path)>, owner: Option<&str>) -> String {
    let mut cmd = match user {
        Some((ids, exe)) => as_user(ids, exe),
        None => Command::new(std::env::current_exe().unwrap()),
    };
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_STORE, store)
        .env_remove(rshm_gds::ENV_STORE_OWNER);
    if let Some(owner) = owner {
        cmd.env(rshm_gds::ENV_STORE_OWNER, owner);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("read: "))
        .unwrap_or_else(|| {
            panic!(
                "the child read nothing:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
        .to_owned()
}

fn ok(out: &std::process::Output) -> bool {
    out.status.success()
}

#[test]
fn a_named_reader_reads_the_store_and_can_change_nothing_in_it() {
    const NAME: &str = "a_named_reader_reads_the_store_and_can_change_nothing_in_it";
    if child_reads() || !root_for("create a user and act as it") {
        return;
    }
    let user = test_user();
    let (_exe_dir, exe) = runnable_copy();
    let fs = Tmpfs::mount("16m");
    let mut w = Writer::create(opts(
        fs.path(),
        Ownership {
            reader_uid: Some(user.uid),
            reader_gid: None,
        },
    ))
    .unwrap();
    publish(&mut w, 1);
    let store = w.path().to_path_buf();
    let anchor = store.join("rshm-anchor");
    let files = w.files().unwrap();
    let table = store.join(files.iter().find(|f| f.starts_with("rshm-tbl-")).unwrap());

    // Owned by the writer (root), never by the reader.
    assert_eq!(w.owner_uid(), 0);
    for p in [&store, &anchor, &table] {
        let m = std::fs::symlink_metadata(p).unwrap();
        assert_eq!((m.uid(), m.mode() & 0o022), (0, 0), "{}", p.display());
    }

    // The named user lists the directory, reads the files, and attaches as a reader.
    let ls = sh_as(user, &format!("ls {}", store.display()));
    assert!(ok(&ls), "{ls:?}");
    assert!(String::from_utf8_lossy(&ls.stdout).contains("rshm-anchor"));
    for f in [&anchor, &table] {
        let cat = sh_as(user, &format!("cat {} | wc -c", f.display()));
        assert!(ok(&cat), "{cat:?}");
        let n: u64 = String::from_utf8_lossy(&cat.stdout).trim().parse().unwrap();
        assert_eq!(n, std::fs::metadata(f).unwrap().len(), "{}", f.display());
    }
    assert_eq!(
        in_child(NAME, &store, Some((user, &exe)), None),
        "Uint32(1)"
    );
    assert_eq!(
        in_child(NAME, &store, Some((user, &exe)), Some("0")),
        "Uint32(1)"
    );

    // It can change nothing: each attempt fails and leaves the store as it was.
    let lock = store.join(rshm_gds::LOCK_NAME);
    let attempts = [
        (
            "open the anchor for write",
            format!("echo x >> {}", anchor.display()),
        ),
        (
            "truncate the anchor",
            format!("truncate -s 0 {}", anchor.display()),
        ),
        (
            "truncate a table",
            format!("truncate -s 0 {}", table.display()),
        ),
        (
            "rename the anchor",
            format!("mv {} {}.moved", anchor.display(), anchor.display()),
        ),
        ("unlink a table", format!("rm -f {}", table.display())),
        (
            "create a file in the store",
            format!("touch {}/rshm-planted", store.display()),
        ),
        ("open the lock file", format!("cat {}", lock.display())),
    ];
    for (what, script) in &attempts {
        let out = sh_as(user, script);
        assert!(!ok(&out), "the reader could {what}");
    }
    assert_eq!(std::fs::metadata(&anchor).unwrap().len(), 4096);
    assert_eq!(w.files().unwrap(), files);

    // A user the store does not name can neither list nor read it.
    assert!(!ok(&sh_as(NOBODY, &format!("ls {}", store.display()))));
    assert!(!ok(&sh_as(NOBODY, &format!("cat {}", anchor.display()))));

    // The writer goes on publishing, and the reader reads the new files.
    publish(&mut w, 2);
    assert_eq!(read_k(&store), "Uint32(2)");
    assert_eq!(
        in_child(NAME, &store, Some((user, &exe)), None),
        "Uint32(2)"
    );

    // A named group: a member reads, the others are refused as before.
    let mut g = Writer::create(opts(
        fs.path(),
        Ownership {
            reader_uid: None,
            reader_gid: Some(user.gid),
        },
    ))
    .unwrap();
    publish(&mut g, 3);
    let member = Ids {
        uid: NOBODY.uid,
        gid: user.gid,
    };
    assert_eq!(
        in_child(NAME, g.path(), Some((member, &exe)), None),
        "Uint32(3)"
    );
    assert!(!ok(&sh_as(NOBODY, &format!("ls {}", g.path().display()))));
    // Both closed before the tmpfs goes.
    w.close().unwrap();
    g.close().unwrap();
}

#[test]
fn a_store_swapped_by_another_user_is_refused_and_the_writer_goes_on() {
    const NAME: &str = "a_store_swapped_by_another_user_is_refused_and_the_writer_goes_on";
    if child_reads() || !root_for("create a user and act as it") {
        return;
    }
    let attacker = test_user();
    let fs = Tmpfs::mount("16m");
    // A base anyone may write, without the sticky bit: anyone may rename what is in it.
    let base = fs.path().join("base");
    std::fs::create_dir(&base).unwrap();

    // A well-formed store saying k = 666, for the attacker to plant.
    let forge = fs.path().join("forge");
    std::fs::create_dir(&forge).unwrap();
    {
        let src = tempfile::tempdir_in(fs.path()).unwrap();
        let mut f = Writer::create(opts(src.path(), Ownership::PRIVATE)).unwrap();
        publish(&mut f, 666);
        for name in f.files().unwrap() {
            std::fs::copy(f.path().join(&name), forge.join(&name)).unwrap();
            std::fs::set_permissions(forge.join(&name), std::fs::Permissions::from_mode(0o644))
                .unwrap();
        }
        f.close().unwrap();
    }

    let mut w = Writer::create(opts(&base, Ownership::PRIVATE)).unwrap();
    publish(&mut w, 1);
    let store = w.path().to_path_buf();
    assert_eq!(read_k(&store), "Uint32(1)");
    // Made writable after the store was created: a writer refuses to create its store in such
    // a base (store_identity.rs), but a base can change.
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
    let swap = sh_as(
        attacker,
        &format!(
            "mv {s} {s}.away && mkdir {s} && cp {f}/* {s}/",
            s = store.display(),
            f = forge.display()
        ),
    );
    assert!(ok(&swap), "{swap:?}");
    assert_eq!(
        std::fs::metadata(&store).unwrap().uid(),
        attacker.uid,
        "the attacker's store stands at the path"
    );

    // A root reader refuses it, trusting root or itself, and trusting uid 0 only.
    let mine = read_k(&store);
    assert!(mine.starts_with("Untrusted("), "{mine}");
    assert!(
        mine.contains(&format!("owned by uid {}", attacker.uid)),
        "{mine}"
    );
    let exact = in_child(NAME, &store, None, Some("0"));
    assert!(exact.starts_with("Untrusted("), "{exact}");
    assert!(matches!(Reader::attach(&store), Err(Error::Untrusted(_))));

    // The writer keeps its own directory (wherever it was moved) and publishes on.
    publish(&mut w, 2);
    let away = PathBuf::from(format!("{}.away", store.display()));
    assert_eq!(read_k(&away), "Uint32(2)");
    // Closing removes its files, and not the directory now standing at its path.
    let closed = w.close().unwrap_err().to_string();
    assert!(closed.contains("moved or replaced"), "{closed}");
    assert_eq!(std::fs::read_dir(&away).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_dir(&store).unwrap().count(),
        3,
        "the attacker's files"
    );
}

#[test]
fn a_store_others_may_write_or_owned_by_another_than_expected_is_refused() {
    const NAME: &str = "a_store_others_may_write_or_owned_by_another_than_expected_is_refused";
    if child_reads() {
        return;
    }
    let base = common::base_dir();
    let mut w = Writer::create(opts(base.path(), Ownership::PRIVATE)).unwrap();
    publish(&mut w, 1);
    let store = w.path().to_path_buf();
    let me = rustix::process::geteuid().as_raw();
    assert_eq!(w.owner_uid(), me);
    assert_eq!(in_child(NAME, &store, None, None), "Uint32(1)");
    assert_eq!(
        in_child(NAME, &store, None, Some(&me.to_string())),
        "Uint32(1)"
    );

    // Expected to be owned by another uid.
    let other = in_child(NAME, &store, None, Some(&(me + 1).to_string()));
    assert!(
        other.starts_with("Untrusted(") && other.contains("owned by uid"),
        "{other}"
    );
    let bad = in_child(NAME, &store, None, Some("root"));
    assert!(
        bad.starts_with("Untrusted(") && bad.contains("not a uid"),
        "{bad}"
    );

    // A file others may write.
    let anchor = store.join("rshm-anchor");
    std::fs::set_permissions(&anchor, std::fs::Permissions::from_mode(0o620)).unwrap();
    let writable = read_k(&store);
    assert!(
        writable.starts_with("Untrusted(") && writable.contains("writable"),
        "{writable}"
    );
    std::fs::set_permissions(&anchor, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(read_k(&store), "Uint32(1)");

    // The directory others may write.
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o703)).unwrap();
    let dir = read_k(&store);
    assert!(
        dir.starts_with("Untrusted(") && dir.contains("writable"),
        "{dir}"
    );
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o700)).unwrap();
    w.close().unwrap();
}

#[test]
fn readers_named_on_a_filesystem_without_acls_fail_the_create_and_leave_nothing() {
    if !root_for("mount a ramfs") {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("rshm-ramfs-")
        .tempdir_in("/tmp")
        .unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "ramfs", "ramfs"])
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    assert!(mounted, "mount ramfs");
    let named = Writer::create(opts(
        dir.path(),
        Ownership {
            reader_uid: Some(12345),
            reader_gid: None,
        },
    ));
    let err = named.err().expect("no ACLs on a ramfs");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    let _ = Command::new("umount").arg("-l").arg(dir.path()).status();
    assert!(err.to_string().contains("POSIX ACLs"), "{err}");
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The lock file never has an ACL (format.md section 1), even when the base directory has a
/// default ACL that the store directory inherits when it is made: only the writer's user can
/// open it, so only that user can take its lock.
#[test]
fn the_lock_file_has_no_acl_under_a_base_with_a_default_acl() {
    const ACL_ACCESS: &str = "system.posix_acl_access";
    let base = common::base_dir();
    // version 2; user::rwx, user:<uid + 1>:rwx, group::r-x, mask::rwx, other::--- (tag, perm, id).
    let uid = rustix::process::geteuid().as_raw();
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (1u16, 7u16, u32::MAX),
        (2, 7, uid.wrapping_add(1)),
        (4, 5, u32::MAX),
        (0x10, 7, u32::MAX),
        (0x20, 0, u32::MAX),
    ] {
        acl.extend_from_slice(&tag.to_le_bytes());
        acl.extend_from_slice(&perm.to_le_bytes());
        acl.extend_from_slice(&id.to_le_bytes());
    }
    let set = rustix::fs::setxattr(
        base.path(),
        "system.posix_acl_default",
        &acl,
        rustix::fs::XattrFlags::empty(),
    );
    if set == Err(rustix::io::Errno::OPNOTSUPP) {
        eprintln!("skipped: no ACLs on {}", base.path().display());
        return;
    }
    set.unwrap();
    for own in [
        Ownership::PRIVATE,
        Ownership {
            reader_uid: Some(uid.wrapping_add(1)),
            reader_gid: None,
        },
    ] {
        let w = Writer::create(opts(base.path(), own)).unwrap();
        let lock = w.path().join(rshm_gds::LOCK_NAME);
        let mut buf = [0u8; 256];
        assert_eq!(
            rustix::fs::getxattr(&lock, ACL_ACCESS, &mut buf[..]),
            Err(rustix::io::Errno::NODATA),
            "{own:?}: the lock file has an ACL"
        );
        let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{own:?}");
        // The directory's own default ACL is gone: files made in it inherit nothing.
        assert_eq!(
            rustix::fs::getxattr(w.path(), "system.posix_acl_default", &mut buf[..]),
            Err(rustix::io::Errno::NODATA)
        );
    }
}
