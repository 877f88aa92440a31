//! What a process keeps mapped of a store: for tests of old generations being let go.

/// This process's mappings of files of `store` that were unlinked.
pub fn deleted_mappings(store: &std::path::Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let dir = store.to_string_lossy();
    maps.lines()
        .filter(|l| l.contains(dir.as_ref()) && l.ends_with("(deleted)"))
        .count()
}
