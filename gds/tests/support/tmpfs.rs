//! A tmpfs mounted for one test (root only), unmounted on drop: a filesystem that fills up at a
//! known size, or whose use no other test adds to. Shared by the tests of several crates
//! (`#[path]`).

#![allow(dead_code)] // each including test uses a part

use std::path::Path;
use std::process::Command;

pub struct Tmpfs(tempfile::TempDir);

impl Tmpfs {
    /// Mount a tmpfs of `size` (mount's syntax: "4m", "512k") on a fresh directory.
    pub fn mount(size: &str) -> Tmpfs {
        Tmpfs::try_mount(size).expect("mount tmpfs")
    }

    /// As [`Tmpfs::mount`], `None` when it cannot be mounted (not root).
    pub fn try_mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::Builder::new()
            .prefix("rshm-tmpfs-")
            .tempdir_in("/tmp")
            .ok()?;
        let opts = format!("size={size},mode=0755");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &opts, "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs(dir))
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a reader's or client's mapping of a file there may outlive the test by a
        // moment.
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}
