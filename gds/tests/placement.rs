//! Where a store goes by default: a memory-backed filesystem, never a resource manager's
//! on-disk `PMIX_SERVER_TMPDIR` (Slurm's is `SlurmdSpoolDir/pmix.J.S`), unless told so
//! explicitly (`RSHM_DIR`, or the caller's own directory).
//!
//! One test: it sets environment variables that `choose_base_dir` reads.

use std::path::Path;

use rshm_gds::{choose_base_dir, is_tmpfs};

#[test]
fn the_base_is_a_tmpfs_unless_given_explicitly() {
    let disk = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let shm = Path::new("/dev/shm");
    if is_tmpfs(disk) || !is_tmpfs(shm) {
        eprintln!(
            "SKIPPED: needs a directory on disk and a tmpfs on /dev/shm; nothing was checked"
        );
        return;
    }
    assert!(!is_tmpfs(Path::new("/nonexistent/rshm")));
    let tmpfs = tempfile::Builder::new()
        .prefix("gds-test-")
        .tempdir_in(shm)
        .unwrap();
    for var in [rshm_gds::ENV_DIR, "PMIX_SERVER_TMPDIR", "TMPDIR"] {
        std::env::remove_var(var);
    }

    // Given by the caller: as given, disk or not.
    assert_eq!(choose_base_dir(Some(disk), Some(tmpfs.path())), disk);
    // The server's tmpdir: taken on a tmpfs, passed over on disk.
    assert_eq!(choose_base_dir(None, Some(tmpfs.path())), tmpfs.path());
    assert_eq!(choose_base_dir(None, Some(disk)), shm);
    assert_eq!(choose_base_dir(None, None), shm);

    // The same from the environment.
    std::env::set_var("PMIX_SERVER_TMPDIR", disk);
    assert_eq!(
        choose_base_dir(None, None),
        shm,
        "an on-disk PMIX_SERVER_TMPDIR"
    );
    assert_eq!(rshm_gds::default_base_dir(), shm);
    std::env::set_var("PMIX_SERVER_TMPDIR", tmpfs.path());
    assert_eq!(choose_base_dir(None, None), tmpfs.path());
    std::env::remove_var("PMIX_SERVER_TMPDIR");
    // TMPDIR names a place for scratch files, often on disk: it does not choose.
    std::env::set_var("TMPDIR", disk);
    assert_eq!(choose_base_dir(None, None), shm);
    // RSHM_DIR: as given, over the server's tmpdir.
    std::env::set_var(rshm_gds::ENV_DIR, disk);
    assert_eq!(choose_base_dir(None, Some(tmpfs.path())), disk);
    std::env::set_var("PMIX_SERVER_TMPDIR", tmpfs.path());
    assert_eq!(choose_base_dir(None, None), disk);
    // The caller's directory still comes first.
    assert_eq!(choose_base_dir(Some(tmpfs.path()), None), tmpfs.path());
    for var in [rshm_gds::ENV_DIR, "PMIX_SERVER_TMPDIR", "TMPDIR"] {
        std::env::remove_var(var);
    }

    // A server's tmpdir another user could rearrange (writable by others without the sticky
    // bit, or, for a root server, another user's, such as the job's) is passed over, not
    // chosen to be refused.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmpfs.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(choose_base_dir(None, Some(tmpfs.path())), shm);
    std::fs::set_permissions(tmpfs.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    assert_eq!(choose_base_dir(None, Some(tmpfs.path())), tmpfs.path());
    if rustix::process::geteuid().is_root() {
        std::os::unix::fs::chown(tmpfs.path(), Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(tmpfs.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(choose_base_dir(None, Some(tmpfs.path())), shm);
        std::os::unix::fs::chown(tmpfs.path(), Some(0), Some(0)).unwrap();
    }
}
