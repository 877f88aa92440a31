//! What a process keeps mapped of a store, and the machine's shared memory: for tests of old
//! generations being let go.

#![allow(dead_code)] // each including test uses a part

use std::path::Path;

/// This process's mappings of files of `store` that were unlinked.
pub fn deleted_mappings(store: &Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let dir = store.to_string_lossy();
    maps.lines()
        .filter(|l| l.contains(dir.as_ref()) && l.ends_with("(deleted)"))
        .count()
}

/// What one process maps: all its mappings, and those of unlinked files of one store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mapped {
    /// Lines of /proc/PID/maps.
    pub lines: usize,
    /// Mappings of files of the store (live or unlinked).
    pub store: usize,
    /// Unlinked files of the store mapped (a file mapped twice counts once), and the bytes
    /// of their mappings.
    pub deleted: usize,
    pub deleted_bytes: u64,
}

/// [`Mapped`] for process `pid` and `store`; None once the process is gone.
pub fn mapped(pid: u32, store: &Path) -> Option<Mapped> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let dir = store.to_string_lossy();
    let mut m = Mapped::default();
    let mut deleted = std::collections::HashSet::new();
    for l in maps.lines() {
        m.lines += 1;
        let Some(at) = l.find(dir.as_ref()) else {
            continue;
        };
        m.store += 1;
        if l.ends_with("(deleted)") {
            deleted.insert(&l[at..]);
            m.deleted_bytes += range_bytes(l);
        }
    }
    m.deleted = deleted.len();
    Some(m)
}

/// The size of a maps line's address range (`start-end ...`).
fn range_bytes(line: &str) -> u64 {
    let range = line.split(' ').next().unwrap_or("");
    let (a, b) = range.split_once('-').unwrap_or(("0", "0"));
    let a = u64::from_str_radix(a, 16).unwrap_or(0);
    let b = u64::from_str_radix(b, 16).unwrap_or(0);
    b.saturating_sub(a)
}

/// A field of /proc/meminfo (`Shmem`, ...) in bytes: machine-wide.
pub fn meminfo_bytes(field: &str) -> u64 {
    kb_field(&std::fs::read_to_string("/proc/meminfo").unwrap(), field)
        .expect("the field in /proc/meminfo")
}

/// A field of /proc/PID/status (`VmRSS`, ...) in bytes; None once the process is gone.
pub fn status_bytes(pid: u32, field: &str) -> Option<u64> {
    kb_field(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        field,
    )
}

fn kb_field(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// Bytes the files of `store` occupy (allocated blocks: what tmpfs charges to Shmem).
pub fn store_bytes(store: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(dir) = std::fs::read_dir(store) else {
        return 0;
    };
    dir.filter_map(|e| e.ok()?.metadata().ok())
        .map(|m| m.blocks() * 512)
        .sum()
}
