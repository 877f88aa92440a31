//! The mapping types give no way to see memory another process may still write as `&[u8]`
//! (docs/protocol.md, "How readers touch them"): the anchor, packs and unchecked segment files
//! are a `SharedMap` over memmap2's `MmapRaw`, which hands out no reference to its interior,
//! and only a `RoMap` (one published segment's range) yields bytes. Checked on the source of
//! gds/src/raw/map.rs, the one file that makes mappings, so that adding such a way fails here.

use std::path::Path;

fn source() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/raw/map.rs")).unwrap()
}

/// The text of `impl NAME {` .. its closing `}` at column 0.
fn impl_block<'a>(src: &'a str, name: &str) -> &'a str {
    let start = src
        .find(&format!("\nimpl {name} {{"))
        .unwrap_or_else(|| panic!("no `impl {name}` in map.rs"));
    let end = src[start + 1..].find("\n}\n").unwrap() + start + 1;
    &src[start..end]
}

#[test]
fn shared_maps_wrap_raw_mappings_and_hand_out_no_bytes() {
    let src = source();
    assert!(src.contains("pub struct SharedMap(Arc<MmapRaw>);"));
    assert!(src.contains("pub struct WeakMap(Weak<MmapRaw>);"));
    for name in ["SharedMap", "WeakMap"] {
        let block = impl_block(&src, name);
        for line in block.lines().filter(|l| l.contains("->")) {
            assert!(
                !line.split("->").nth(1).unwrap_or("").contains("[u8]"),
                "`impl {name}` returns a slice over memory a writer may still change: {line}"
            );
        }
        assert!(
            !block.contains("from_raw_parts"),
            "`impl {name}` forms a slice"
        );
        assert!(
            !src.contains(&format!(" for {name}")),
            "a trait is implemented for `{name}` (Deref, AsRef, Index... would give bytes)"
        );
    }
    // The only types of memmap2 that deref to a slice, `Mmap` and `MmapMut`, are used only
    // for the writer's own mapping and a private anonymous copy, never kept for reading.
    assert!(
        !src.contains("Arc<Mmap>"),
        "a reader's mapping kept as `Mmap` derefs to bytes"
    );
    assert!(
        !src.contains("map(&fd"),
        "a file mapped with MmapOptions::map (an `Mmap`)"
    );
}

#[test]
fn only_published_segment_views_form_slices() {
    let src = source();
    let ro = impl_block(&src, "RoMap");
    assert_eq!(
        ro.matches("from_raw_parts").count(),
        1,
        "RoMap forms one slice, over its own range"
    );
    assert!(ro.contains("self.map.as_ptr().add(self.off), self.len"));
    // Every other slice in the file is ValidatedValues' copy of a RoMap's.
    assert_eq!(src.matches("from_raw_parts").count(), 2);
}
