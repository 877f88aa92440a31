//! A client reads only the store its own server made for it (format.md section 1, "Identity"):
//! a store's random id (`rshm-id`), exported at setup_fork as `RSHM_STORE_ID`, is checked at
//! attach; and a server refuses a base directory another user could rearrange. The tests acting
//! as another user need root (see support/users.rs).
//!
//! A reader under a given environment or user is this test binary run again as a child
//! (`in_child`), running only the calling test, which attaches and prints what it got.

mod common;
#[path = "support/users.rs"]
mod users;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use rshm_gds::{part, Error, Ownership, Reader, Realm, StoreOptions, TableBuilder, Value, Writer};
use users::{as_user, root_for, sh_as, test_user, Ids};

/// The store a child attaches to.
const CHILD_STORE: &str = "RSHM_TEST_ATTACH";

fn opts(base: &Path, own: Ownership) -> StoreOptions {
    StoreOptions {
        ownership: own,
        ..common::opts(base)
    }
}

fn publish(w: &mut Writer, card: &str) {
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "card", &Value::String(card.into()))
        .unwrap();
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();
}

/// `card` of namespace `ns` as a reader of `store` sees it, or the error, as text.
fn read_card(store: &Path) -> String {
    let got = Reader::attach(store).and_then(|r| {
        let pin = r.pin();
        let v = r
            .get(&pin, "ns", part::DATA, Realm::Job, "card")?
            .to_value();
        Ok(v)
    });
    match got {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("{e:?}"),
    }
}

fn child_reads() -> bool {
    let Some(store) = std::env::var_os(CHILD_STORE) else {
        return false;
    };
    println!("\nread: {}", read_card(Path::new(&store)));
    true
}

/// A copy of this test binary that any user may run, and the directory holding it.
fn runnable_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("rshm-exe-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = dir.path().join("store_identity");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, exe)
}

/// What a child reader (this binary, running test `name`) reads from `store`, as `user` when
/// given, with the environment a server's setup_fork gives it: `vars`.
fn in_child(name: &str, store: &Path, user: Option<(Ids, &Path)>, vars: &[(&str, &str)]) -> String {
    let mut cmd = match user {
        Some((ids, exe)) => as_user(ids, exe),
        None => Command::new(std::env::current_exe().unwrap()),
    };
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_STORE, store)
        .env_remove(rshm_gds::ENV_STORE_OWNER)
        .env_remove(rshm_gds::ENV_STORE_ID)
        .env_remove(rshm_gds::ENV_STORE);
    for (k, v) in vars {
        cmd.env(k, v);
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

/// What a server hands its client for store `w` (the variables of `client_env`).
fn setup_fork_env(w: &Writer) -> Vec<(&'static str, String)> {
    vec![
        (rshm_gds::ENV_STORE, w.path().display().to_string()),
        (rshm_gds::ENV_STORE_OWNER, w.owner_uid().to_string()),
        (rshm_gds::ENV_STORE_ID, w.store_id().to_owned()),
    ]
}

fn refs<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

#[test]
fn a_store_renamed_over_another_is_refused_by_the_other_jobs_client() {
    const NAME: &str = "a_store_renamed_over_another_is_refused_by_the_other_jobs_client";
    if child_reads() {
        return;
    }
    let base = common::base_dir();
    let mut a = Writer::create(opts(base.path(), Ownership::PRIVATE)).unwrap();
    let mut b = Writer::create(opts(base.path(), Ownership::PRIVATE)).unwrap();
    assert_ne!(a.store_id(), b.store_id());
    assert_eq!(a.store_id().len(), 32, "128 random bits in hex");
    publish(&mut a, "card-A");
    publish(&mut b, "card-0");
    let env_a = setup_fork_env(&a);
    assert_eq!(
        in_child(NAME, a.path(), None, &refs(&env_a)),
        "String(\"card-A\")"
    );

    // B's store renamed over A's path (A's moved away first).
    let path_a = a.path().to_path_buf();
    let away = base.path().join("rshm-away");
    std::fs::rename(&path_a, &away).unwrap();
    std::fs::rename(b.path(), &path_a).unwrap();

    let got = in_child(NAME, &path_a, None, &refs(&env_a));
    assert!(!got.contains("card-0"), "A's client read B's value: {got}");
    assert!(
        got.starts_with("Untrusted(") && got.contains(rshm_gds::ENV_STORE_ID),
        "{got}"
    );
    // Without the id (an older server's client) the owner check alone cannot tell.
    assert_eq!(in_child(NAME, &path_a, None, &[]), "String(\"card-0\")");
    // A forged id file cannot be planted: the store is the owner's alone, and a missing one
    // is refused too.
    std::fs::remove_file(path_a.join(rshm_gds::STORE_ID_NAME)).unwrap();
    let missing = in_child(NAME, &path_a, None, &refs(&env_a));
    assert!(
        missing.starts_with("Untrusted(") && missing.contains(rshm_gds::STORE_ID_NAME),
        "{missing}"
    );
    assert!(Reader::attach(&away).is_ok());
    let _ = a.close();
    let _ = b.close();
}

#[test]
fn rename_attack_by_the_jobs_user_on_a_root_servers_stores() {
    const NAME: &str = "rename_attack_by_the_jobs_user_on_a_root_servers_stores";
    if child_reads() || !root_for("create a user and act as it") {
        return;
    }
    let user = test_user();
    let (_exe_dir, exe) = runnable_copy();
    let reader = Ownership {
        reader_uid: Some(user.uid),
        reader_gid: None,
    };
    // The job's user owns the base (RSHM_DIR, rshm.dir, gds_rshm_dir pointed at it).
    let top = tempfile::Builder::new()
        .prefix("rshm-ident-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let base = top.path().join("base");
    std::fs::create_dir(&base).unwrap();
    std::os::unix::fs::chown(&base, Some(user.uid), Some(user.gid)).unwrap();

    // The root server refuses to create its store there, naming the rule.
    let refused = Writer::create(opts(&base, reader)).err().expect("refused");
    assert!(matches!(refused, Error::Untrusted(_)), "{refused:?}");
    let text = refused.to_string();
    assert!(
        text.contains(&format!("owned by uid {}", user.uid)) && text.contains("base directory"),
        "{text}"
    );
    assert_eq!(std::fs::read_dir(&base).unwrap().count(), 0, "nothing made");

    // Stores that got there anyway (the base handed to the user after they were made): the
    // user renames job B's store over job A's, and A's client refuses it.
    std::os::unix::fs::chown(&base, Some(0), Some(0)).unwrap();
    let mut a = Writer::create(opts(&base, reader)).unwrap();
    let mut b = Writer::create(opts(&base, reader)).unwrap();
    publish(&mut a, "card-A");
    publish(&mut b, "card-0");
    std::os::unix::fs::chown(&base, Some(user.uid), Some(user.gid)).unwrap();
    let env_a = setup_fork_env(&a);
    assert_eq!(env_a[1].1, "0");
    assert_eq!(
        in_child(NAME, a.path(), Some((user, &exe)), &refs(&env_a)),
        "String(\"card-A\")"
    );
    let swap = sh_as(
        user,
        &format!(
            "mv {a} {base}/rshm-away && mv {b} {a}",
            a = a.path().display(),
            b = b.path().display(),
            base = base.display()
        ),
    );
    assert!(swap.status.success(), "{swap:?}");
    let got = in_child(NAME, a.path(), Some((user, &exe)), &refs(&env_a));
    assert!(!got.contains("card-0"), "A's client read B's value: {got}");
    assert!(
        got.starts_with("Untrusted(") && got.contains("is not the store its server made"),
        "{got}"
    );
    std::os::unix::fs::chown(&base, Some(0), Some(0)).unwrap();
    let _ = a.close();
    let _ = b.close();
}

#[test]
fn a_base_directory_others_may_rearrange_is_refused_at_creation() {
    let top = common::base_dir();
    let base = top.path().join("base");
    std::fs::create_dir(&base).unwrap();
    for (mode, ok) in [
        (0o700, true),
        (0o755, true),
        (0o1777, true),
        (0o1770, true),
        (0o777, false),
        (0o770, false),
        (0o702, false),
    ] {
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(mode)).unwrap();
        match Writer::create(opts(&base, Ownership::PRIVATE)) {
            Ok(w) => {
                assert!(ok, "mode {mode:o} accepted");
                w.close().unwrap();
            }
            Err(e) => {
                assert!(!ok, "mode {mode:o} refused: {e}");
                let text = e.to_string();
                assert!(
                    text.contains("writable by others") && text.contains("sticky"),
                    "{text}"
                );
                let left: Vec<_> = std::fs::read_dir(&base).unwrap().collect();
                assert!(left.is_empty(), "mode {mode:o}: {left:?}");
            }
        }
    }
}

#[test]
fn a_refused_base_directory_is_not_swept() {
    let top = common::base_dir();
    let base = top.path().join("base");
    std::fs::create_dir(&base).unwrap();
    // A dead store of this user: its lock file held by nobody.
    let dead = base.join("rshm-1-00000000deadbeef");
    std::fs::create_dir(&dead).unwrap();
    std::fs::write(dead.join("rshm-lock"), b"").unwrap();
    std::fs::write(dead.join("rshm-anchor"), b"old").unwrap();
    let sweeping = |base: &Path| StoreOptions {
        sweep: true,
        ..opts(base, Ownership::PRIVATE)
    };

    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(matches!(
        Writer::create(sweeping(&base)),
        Err(Error::Untrusted(_))
    ));
    assert!(
        dead.join("rshm-anchor").exists(),
        "a refused base was swept"
    );

    // The same base, no longer writable by others: swept, and the store made.
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o700)).unwrap();
    let w = Writer::create(sweeping(&base)).unwrap();
    assert!(!dead.exists(), "the dead store was not swept");
    w.close().unwrap();
}
