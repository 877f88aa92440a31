//! Where a server's store goes and what its clients are told: `rshm.dir` is used as given,
//! `PMIX_SERVER_TMPDIR` only when it is a tmpfs (a resource manager's is often on disk), and
//! setup_fork names the store's owner beside the store.

use std::path::Path;

use rshm_gds::{Info, Value};
use rshm_server::server::{env, Server, ServerOptions};

fn open(infos: &[Info]) -> Server {
    Server::open(ServerOptions::from_infos(infos).expect("options")).expect("open")
}

fn is_in(store: &Path, base: &Path) -> bool {
    store.parent() == Some(base)
}

#[test]
fn rshm_dir_is_used_as_given_before_the_server_tmpdir() {
    let explicit = tempfile::tempdir().unwrap();
    let tmpdir = tempfile::tempdir_in("/dev/shm").unwrap();
    let s = open(&[
        Info::new(
            "pmix.srvr.tmpdir",
            Value::String(tmpdir.path().display().to_string()),
        ),
        Info::new(
            env::INFO_DIR,
            Value::String(explicit.path().display().to_string()),
        ),
    ]);
    assert!(is_in(s.path(), explicit.path()), "{}", s.path().display());
    s.close().unwrap();
}

#[test]
fn a_server_tmpdir_on_tmpfs_is_taken() {
    let tmpdir = tempfile::tempdir_in("/dev/shm").unwrap();
    assert!(rshm_gds::is_tmpfs(tmpdir.path()));
    let s = open(&[Info::new(
        "pmix.srvr.tmpdir",
        Value::String(tmpdir.path().display().to_string()),
    )]);
    assert!(is_in(s.path(), tmpdir.path()), "{}", s.path().display());
    assert!(s.describe().contains(" (tmpfs), "), "{}", s.describe());
    s.close().unwrap();
}

#[test]
fn a_server_tmpdir_on_disk_is_not_taken() {
    // A directory of the build tree: on the disk the sources are on.
    let disk = Path::new(env!("CARGO_MANIFEST_DIR"));
    if rshm_gds::is_tmpfs(disk) {
        eprintln!(
            "SKIPPED: {} is a tmpfs here; nothing was checked",
            disk.display()
        );
        return;
    }
    let tmpdir = tempfile::tempdir_in(disk).unwrap();
    let s = open(&[Info::new(
        "pmix.srvr.tmpdir",
        Value::String(tmpdir.path().display().to_string()),
    )]);
    assert!(
        !s.path().starts_with(tmpdir.path()),
        "{}",
        s.path().display()
    );
    assert!(
        std::fs::read_dir(tmpdir.path()).unwrap().next().is_none(),
        "the store wrote into the tmpdir on disk"
    );
    s.close().unwrap();
}

#[test]
fn a_bad_rshm_dir_is_refused() {
    for v in [Value::Uint32(1), Value::String(String::new())] {
        let e = ServerOptions::from_infos(&[Info::new(env::INFO_DIR, v.clone())]).unwrap_err();
        assert!(
            matches!(e, rshm_gds::Error::InvalidArgument(_)),
            "{v:?}: {e}"
        );
    }
}

#[test]
fn setup_fork_names_the_owner_beside_the_store() {
    let base = tempfile::tempdir().unwrap();
    let s = open(&[
        Info::new(
            env::INFO_DIR,
            Value::String(base.path().display().to_string()),
        ),
        Info::new("pmix.euid", Value::Uint32(4242)),
    ]);
    let vars = s.client_env("ns", 3);
    let get = |name: &str| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} in {vars:?}"))
    };
    assert_eq!(get(env::STORE), s.path().display().to_string());
    let me = std::fs::metadata(s.path()).map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid()
    });
    assert_eq!(get(env::STORE_OWNER), me.unwrap().to_string());
    assert_eq!(get(env::STORE_OWNER), s.owner_uid().to_string());
    // The store's id, which the client requires of the store at that path.
    let id = std::fs::read_to_string(s.path().join(rshm_gds::STORE_ID_NAME)).unwrap();
    assert_eq!(get(env::STORE_ID), id);
    assert_eq!(id.len(), 32);
    assert!(
        s.describe().ends_with(&format!(
            "owner uid {}, readable by uid 4242 gid -",
            s.owner_uid()
        )),
        "{}",
        s.describe()
    );
    s.close().unwrap();
}
