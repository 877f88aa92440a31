//! Set-up shared by the CLI's tests: private stores in /dev/shm.

#![allow(dead_code)] // each test binary uses its own part

use rshm_gds::{StoreOptions, Writer};

/// A private base directory for stores in /dev/shm, removed on drop.
pub fn base(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in("/dev/shm")
        .expect("temp dir")
}

/// Options for a store in `base` with sweeping off (tests run in parallel).
pub fn opts(base: &std::path::Path) -> StoreOptions {
    StoreOptions {
        base_dir: Some(base.to_path_buf()),
        sweep: false,
        ..StoreOptions::default()
    }
}

/// A new store in a private base directory (keep the directory alive as long as the writer).
pub fn store(prefix: &str) -> (tempfile::TempDir, Writer) {
    let base = base(prefix);
    let w = Writer::create(opts(base.path())).unwrap();
    (base, w)
}
