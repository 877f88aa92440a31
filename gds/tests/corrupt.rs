//! A reader refuses forged, truncated and wrong-version segments with the right typed error,
//! and never panics or reads out of bounds on mutated bytes.

mod common;

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use rshm_gds::{part, Error, Reader, Realm, TableBuilder, Value, Writer};

/// A segment: the file it is in and where it starts there (a root is embedded in a pack).
struct Seg {
    path: PathBuf,
    base: u64,
}

/// A store with one namespace; returns the writer (keep it alive), the root and the table file
/// path.
fn store(base: &Path) -> (Writer, Seg, PathBuf) {
    let mut w = Writer::create(common::opts(base)).unwrap();
    let mut t = TableBuilder::new();
    for (i, (key, v)) in common::every_value().iter().enumerate() {
        t.insert(Realm::Proc(i as u32 % 4), key, v).unwrap();
    }
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    let files = w.files().unwrap();
    let find = |prefix: &str| {
        w.path()
            .join(files.iter().find(|f| f.starts_with(prefix)).unwrap())
    };
    let anchor = std::fs::read(w.path().join("rshm-anchor")).unwrap();
    let at = u64::from_ne_bytes(anchor[64..72].try_into().unwrap());
    let (seq, off) = rshm_gds::layout::place_in_pack(at).unwrap();
    let root = Seg {
        path: w.path().join(format!("rshm-pack-{seq:08x}")),
        base: off,
    };
    let table = find("rshm-tbl-");
    (w, root, table)
}

fn poke(path: &Path, off: u64, bytes: &[u8]) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, off).unwrap();
}

fn get_any(r: &Reader) -> rshm_gds::Result<Value> {
    let pin = r.pin();
    let i = common::every_value()
        .iter()
        .position(|(k, _)| *k == "string")
        .unwrap();
    r.get(&pin, "ns", part::DATA, Realm::Proc(i as u32 % 4), "string")
        .map(|v| v.to_value())
}

#[test]
fn anchor_with_bad_magic_is_refused() {
    let base = common::base_dir();
    let (w, ..) = store(base.path());
    poke(&w.path().join("rshm-anchor"), 0, b"NOTRSHM\0");
    assert!(matches!(Reader::attach(w.path()), Err(Error::BadMagic)));
}

#[test]
fn newer_major_version_is_refused_and_newer_minor_accepted() {
    let base = common::base_dir();
    let (w, root, _) = store(base.path());
    poke(&root.path, root.base + 10, &7u16.to_ne_bytes());
    assert!(
        get_any(&Reader::attach(w.path()).unwrap()).is_ok(),
        "minor 7 is compatible"
    );
    let newer = rshm_gds::layout::FORMAT_MAJOR + 1;
    poke(&root.path, root.base + 8, &newer.to_ne_bytes());
    assert!(matches!(
        Reader::attach(w.path()),
        Err(Error::Version {
            major,
            minor: 7,
            ..
        }) if major == newer
    ));
}

#[test]
fn unknown_value_format_is_a_version_error() {
    let base = common::base_dir();
    let (w, _, table) = store(base.path());
    poke(&table, 44, &9u32.to_ne_bytes());
    let r = Reader::attach(w.path()).unwrap();
    assert!(matches!(
        get_any(&r),
        Err(Error::Version {
            value_format: 9,
            ..
        })
    ));
}

#[test]
fn other_byte_order_is_refused() {
    let base = common::base_dir();
    let (w, ..) = store(base.path());
    poke(
        &w.path().join("rshm-anchor"),
        12,
        &0x0403_0201u32.to_ne_bytes(),
    );
    assert!(matches!(Reader::attach(w.path()), Err(Error::ByteOrder)));
}

#[test]
fn truncated_and_extended_segments_are_refused() {
    let base = common::base_dir();
    let (w, root, table) = store(base.path());
    let len = std::fs::metadata(&table).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&table)
        .unwrap()
        .set_len(len - 8)
        .unwrap();
    let r = Reader::attach(w.path()).unwrap();
    assert!(
        matches!(get_any(&r), Err(Error::Truncated { expected, actual }) if expected == len && actual == len - 8)
    );
    OpenOptions::new()
        .write(true)
        .open(&root.path)
        .unwrap()
        .set_len(10)
        .unwrap();
    assert!(matches!(
        Reader::attach(w.path()),
        Err(Error::Truncated {
            expected: 64,
            actual: 10
        })
    ));
}

#[test]
fn a_segment_whose_ready_state_is_unset_is_not_ready() {
    let base = common::base_dir();
    let (w, root, _) = store(base.path());
    poke(&root.path, root.base + 20, &0u32.to_ne_bytes());
    assert!(matches!(Reader::attach(w.path()), Err(Error::NotReady)));
}

#[test]
fn a_segment_of_the_wrong_kind_is_corrupt() {
    let base = common::base_dir();
    let (w, _, table) = store(base.path());
    poke(&table, 16, &2u32.to_ne_bytes());
    let r = Reader::attach(w.path()).unwrap();
    assert!(matches!(get_any(&r), Err(Error::Corrupt(_))));
}

#[test]
fn offsets_pointing_outside_the_file_are_corrupt() {
    let base = common::base_dir();
    let (w, _, table) = store(base.path());
    // entries_off (table header +48) far past the end.
    poke(&table, 64 + 48, &(1u64 << 40).to_ne_bytes());
    let r = Reader::attach(w.path()).unwrap();
    assert!(matches!(get_any(&r), Err(Error::Corrupt(_))));
}

#[test]
fn a_planted_symlink_is_never_followed() {
    let base = common::base_dir();
    let (w, _, table) = store(base.path());
    let target = base.path().join("elsewhere");
    std::fs::copy(&table, &target).unwrap();
    std::fs::remove_file(&table).unwrap();
    std::os::unix::fs::symlink(&target, &table).unwrap();
    let r = Reader::attach(w.path()).unwrap();
    assert!(matches!(get_any(&r), Err(Error::InvalidArgument(m)) if m.contains("symlink")));
}

#[test]
fn a_missing_store_is_not_found() {
    let base = common::base_dir();
    assert!(matches!(
        Reader::attach(&base.path().join("rshm-nope")),
        Err(Error::NotFound)
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Flipped bytes anywhere after the header's ready state: every get ends in a typed error
    /// or a value, never a panic or an out-of-bounds read (the test would crash).
    #[test]
    fn mutated_tables_never_panic(flips in prop::collection::vec((0usize..4096, any::<u8>()), 1..8)) {
        let base = common::base_dir();
        let (w, _, table) = store(base.path());
        let len = std::fs::metadata(&table).unwrap().len() as usize;
        for (off, byte) in flips {
            let off = 24 + off % (len - 24);
            poke(&table, off as u64, &[byte]);
        }
        if let Ok(r) = Reader::attach(w.path()) {
            let pin = r.pin();
            for (i, (key, _)) in common::every_value().iter().enumerate() {
                let _ = r.get(&pin, "ns", part::DATA, Realm::Proc(i as u32 % 4), key).map(|v| v.to_value());
            }
        }
    }
}
