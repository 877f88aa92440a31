//! Golden segments: docs/format.md, the code and checked-in bytes agree.
//!
//! `golden_files_match_the_writer` writes a fixed store and compares every file with
//! gds/tests/golden/v4.0/ (bytes 48..56 of each header, the writer's pid and uid, are masked,
//! in the pack's embedded segments too; a pack is kept up to its last segment, the rest of the
//! file being zeros). `golden_store_opens_and_reads` attaches to a copy of those files. After an intended format
//! change: update docs/format.md, run with RSHM_BLESS=1 to rewrite the files, review the diff.

mod common;

use std::path::{Path, PathBuf};

use rshm_gds::jobdata::TargetRank;
use rshm_gds::modex::{self, FenceBatch, PostedParts, Scope};
use rshm_gds::value::types;
use rshm_gds::{part, Reader, Realm, StoreOptions, TableBuilder, Value, Writer};

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/v4.0")
}

fn contents() -> Vec<(Realm, &'static str, Value)> {
    vec![
        (Realm::Job, "pmix.job.size", Value::Uint32(4)),
        (Realm::Job, "pmix.nspace", Value::String("golden".into())),
        (Realm::Session(1), "pmix.univ.size", Value::Uint32(4)),
        (Realm::App(0), "pmix.appnum", Value::Uint32(0)),
        (
            Realm::Node(0),
            "pmix.hname",
            Value::String("node000".into()),
        ),
        (Realm::Proc(3), "pmix.lrank", Value::Uint16(3)),
        (
            Realm::Proc(3),
            "card",
            Value::ByteObject(vec![0xde, 0xad, 0xbe, 0xef]),
        ),
        (
            Realm::Proc(0),
            "nested",
            Value::info_array([(
                "x".to_string(),
                Value::array(types::INT64, vec![Value::Int64(-1)]),
            )]),
        ),
    ]
}

/// A 100-rank table whose proc columns are stored in blocks (format.md "Blocked columns"):
/// local rank `r % 40` (ranks 64..96: `r % 10`) and node id `r / 40`: one line in blocks 0 and 3,
/// two pieces in blocks 1 and 2 (a node boundary inside), block 2 of local ranks stored as
/// values (three boundaries); the app rank is `r` (one line); global rank 70 is absent (its
/// block stored) and rank 71's is of another type (an entry).
fn blocked_contents() -> Vec<(Realm, &'static str, Value)> {
    let mut v = Vec::new();
    for r in 0..100u32 {
        let lrank = if (64..96).contains(&r) {
            r % 10
        } else {
            r % 40
        };
        v.push((Realm::Proc(r), "pmix.lrank", Value::Uint16(lrank as u16)));
        v.push((Realm::Proc(r), "pmix.nodeid", Value::Uint32(r / 40)));
        v.push((Realm::Proc(r), "pmix.apprank", Value::ProcRank(r)));
        match r {
            70 => {}
            71 => v.push((Realm::Proc(r), "pmix.grank", Value::Uint64(71))),
            r => v.push((Realm::Proc(r), "pmix.grank", Value::ProcRank(r))),
        }
    }
    v
}

/// Posted data: a fence of 20 ranks' cards (the base table and the RANK_UNDEF index), then a
/// commit of rank 3 replacing its card and posting a new key (rank 3's table, the index again).
fn fence_card(r: u32) -> Vec<u8> {
    vec![r as u8; 8]
}

fn commit_3() -> [(&'static str, Value); 2] {
    [
        ("card", Value::ByteObject(vec![0xc0, 0xde])),
        ("extra", Value::String("three".into())),
    ]
}

fn write_posted(w: &mut Writer) {
    let mut parts = PostedParts::new();
    let mut fence = FenceBatch::new();
    for r in 0..20 {
        fence
            .put_bytes(r, Scope::Remote, "card", &fence_card(r))
            .unwrap();
    }
    let staged = parts.stage(fence, w, "golden").unwrap();
    let mut tx = w.begin();
    PostedParts::publish(&staged, &mut tx, "golden").unwrap();
    tx.commit().unwrap();
    parts.accept(staged);
    let mut commit = FenceBatch::new();
    for (key, v) in commit_3() {
        commit.put(3, Scope::Global, key, &v).unwrap();
    }
    let staged = parts.stage(commit, w, "golden").unwrap();
    let mut tx = w.begin();
    PostedParts::publish(&staged, &mut tx, "golden").unwrap();
    tx.commit().unwrap();
    parts.accept(staged);
}

fn write_store(base: &Path) -> Writer {
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(base.to_path_buf()),
        name: Some("rshm-golden".into()),
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    let mut t = TableBuilder::with_ranks(4);
    for (realm, key, v) in contents() {
        t.insert(realm, key, &v).unwrap();
    }
    let mut tx = w.begin();
    tx.put_table("golden", part::DATA, &t).unwrap();
    let mut t = TableBuilder::with_ranks(100);
    t.block_columns_above(0);
    for (realm, key, v) in blocked_contents() {
        t.insert(realm, key, &v).unwrap();
    }
    tx.put_table("golden-blocks", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    write_posted(&mut w);
    w
}

fn masked(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 56 {
        bytes[48..56].fill(0);
    }
    bytes
}

/// A pack's bytes up to its last embedded segment, every segment's pid and uid masked.
fn masked_pack(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes[48..56].fill(0);
    let mut at = 64;
    while at + 64 <= bytes.len() && bytes[at..at + 8] == *b"RSHMSEG\0" {
        let len = u64::from_ne_bytes(bytes[at + 32..at + 40].try_into().unwrap()) as usize;
        bytes[at + 48..at + 56].fill(0);
        at = (at + len).next_multiple_of(64);
    }
    bytes.truncate(at.min(bytes.len()));
    bytes
}

#[test]
fn golden_files_match_the_writer() {
    let base = common::base_dir();
    let w = write_store(base.path());
    let files = w.files().unwrap();
    assert_eq!(
        files,
        [
            "rshm-anchor",
            "rshm-pack-00000001",
            "rshm-tbl-00000001-00000000-0000000000000001",
            "rshm-tbl-00000002-00000000-0000000000000002",
        ]
    );
    let bless = std::env::var_os("RSHM_BLESS").is_some();
    if bless {
        std::fs::create_dir_all(golden_dir()).unwrap();
    }
    for f in &files {
        let bytes = std::fs::read(w.path().join(f)).unwrap();
        let written = if f.starts_with("rshm-pack-") {
            masked_pack(bytes)
        } else {
            masked(bytes)
        };
        let golden_path = golden_dir().join(f);
        if bless {
            std::fs::write(&golden_path, &written).unwrap();
        }
        let golden = std::fs::read(&golden_path).unwrap();
        assert!(
            golden == written,
            "{f} differs from {}: format changed?",
            golden_path.display()
        );
    }
}

#[test]
fn golden_store_opens_and_reads() {
    let base = common::base_dir();
    let store = base.path().join("rshm-golden-copy");
    std::fs::create_dir(&store).unwrap();
    for entry in std::fs::read_dir(golden_dir()).unwrap() {
        let entry = entry.unwrap();
        let to = store.join(entry.file_name());
        std::fs::copy(entry.path(), &to).unwrap();
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("rshm-pack-")
        {
            // Kept up to its last segment: back to the size its header gives.
            let bytes = std::fs::read(&to).unwrap();
            let len = u64::from_ne_bytes(bytes[32..40].try_into().unwrap());
            std::fs::File::options()
                .write(true)
                .open(&to)
                .unwrap()
                .set_len(len)
                .unwrap();
        }
    }
    let r = Reader::attach(&store).unwrap();
    let pin = r.pin();
    for (realm, key, v) in contents() {
        assert_eq!(
            r.get(&pin, "golden", part::DATA, realm, key)
                .unwrap()
                .to_value(),
            v,
            "{key}"
        );
    }
    for (realm, key, v) in blocked_contents() {
        assert_eq!(
            r.get(&pin, "golden-blocks", part::DATA, realm, key)
                .unwrap()
                .to_value(),
            v,
            "{realm:?} {key}"
        );
    }
    assert!(r
        .get(
            &pin,
            "golden-blocks",
            part::DATA,
            Realm::Proc(70),
            "pmix.grank"
        )
        .is_err());
    let card = |rank: TargetRank, key: &str| {
        modex::find(&r, &pin, "golden", rank, key, |_| false, None).map(|(v, _)| v.to_value())
    };
    for rank in (0..20).filter(|r| *r != 3) {
        assert_eq!(
            card(TargetRank::Rank(rank), "card").unwrap(),
            Value::ByteObject(fence_card(rank))
        );
    }
    for (key, v) in commit_3() {
        assert_eq!(card(TargetRank::Rank(3), key).unwrap(), v, "{key}");
    }
    assert_eq!(
        card(TargetRank::Undef, "extra").unwrap(),
        Value::String("three".into())
    );
    assert_eq!(r.stats().generation, 9);
}
