//! Shared by the tests that need a full filesystem.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

/// A 1 MiB tmpfs mounted on a temporary directory, unmounted when dropped.
pub struct SmallTmpfs {
    dir: tempfile::TempDir,
}

impl SmallTmpfs {
    /// Mount one; `None` (saying so) when this process is not root and cannot.
    pub fn mount() -> Option<SmallTmpfs> {
        let uid = std::fs::metadata("/proc/self")
            .map(|m| m.uid())
            .unwrap_or(1);
        if uid != 0 {
            eprintln!("SKIPPED (not root): needs root to mount a tmpfs; nothing was checked");
            return None;
        }
        let dir = tempfile::tempdir_in("/tmp").unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m,mode=0755", "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tmpfs");
        Some(SmallTmpfs { dir })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}
