//! Packs (docs/format.md section 10): roots and small posted tables are appended to one file,
//! so a commit creates and unlinks no file; a full pack moves what the store still names to a
//! new one and the old one goes; a transaction that is not published leaves the pack as it
//! was; a reader maps a pack once, whatever the generations it reads through it.

mod common;

use rshm_gds::{part, Reader, Realm, TableBuilder, Value, Writer};

/// A posted table of one rank holding `key` = `value` (`bytes` long).
fn rank_table(rank: u32, key: &str, fill: u8, bytes: usize) -> TableBuilder {
    let mut t = TableBuilder::new();
    t.insert(
        Realm::Proc(rank),
        key,
        &Value::ByteObject(vec![fill; bytes]),
    )
    .unwrap();
    t
}

fn commit_rank(w: &mut Writer, rank: u32, fill: u8, bytes: usize) {
    let mut tx = w.begin();
    tx.put_table_packable(
        "ns",
        part::POSTED_RANKS + rank,
        &rank_table(rank, "card", fill, bytes),
    )
    .unwrap();
    tx.commit().unwrap();
}

fn card(r: &Reader, rank: u32) -> Option<Vec<u8>> {
    let pin = r.pin();
    let v = r
        .get(
            &pin,
            "ns",
            part::POSTED_RANKS + rank,
            Realm::Proc(rank),
            "card",
        )
        .ok()?;
    match v.to_value() {
        Value::ByteObject(b) => Some(b),
        other => panic!("not a card: {other:?}"),
    }
}

fn packs(w: &Writer) -> Vec<String> {
    let mut v: Vec<String> = w
        .files()
        .unwrap()
        .into_iter()
        .filter(|f| f.starts_with("rshm-pack-"))
        .collect();
    v.sort();
    v
}

/// This process's read-only mappings of file `name` of the store: the reader's (the writer maps
/// its pack read-write).
fn read_mappings(w: &Writer, name: &str) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    let path = w.path().join(name);
    let path = path.to_string_lossy();
    maps.lines()
        .filter(|l| l.contains(path.as_ref()) && l.split(' ').nth(1) == Some("r--s"))
        .count()
}

#[test]
fn commits_of_small_posted_tables_create_and_unlink_no_file() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let mut job = TableBuilder::new();
    job.insert(Realm::Job, "pmix.job.size", &Value::Uint32(64))
        .unwrap();
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &job).unwrap();
    tx.commit().unwrap();
    let files = w.files().unwrap();
    let files_before = w.stats().files_written;
    let r = Reader::attach(w.path()).unwrap();
    for rank in 0..64 {
        commit_rank(&mut w, rank, rank as u8, 200);
        assert_eq!(card(&r, rank), Some(vec![rank as u8; 200]), "rank {rank}");
    }
    assert_eq!(
        w.files().unwrap(),
        files,
        "a commit created or removed a file"
    );
    assert_eq!(w.stats().files_written, files_before);
    for rank in 0..64 {
        assert_eq!(card(&r, rank), Some(vec![rank as u8; 200]));
    }
    // One mapping of the pack, however many generations the reader went through.
    assert_eq!(read_mappings(&w, &packs(&w)[0]), 1);
}

#[test]
fn a_full_pack_moves_the_live_tables_and_the_old_pack_goes() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let r = Reader::attach(w.path()).unwrap();
    // Rank 0's table is written once and must survive every move; ranks 1.. rewrite theirs
    // (~40 KiB each) until the store is on its third pack.
    commit_rank(&mut w, 0, 0xa0, 1000);
    let pin = r.pin();
    let first = r
        .get(&pin, "ns", part::POSTED_RANKS, Realm::Proc(0), "card")
        .unwrap();
    let mut round = 0u8;
    while packs(&w).first().map(String::as_str) < Some("rshm-pack-00000003") {
        round = round.wrapping_add(1);
        for rank in 1..4 {
            commit_rank(&mut w, rank, round, 40 << 10);
        }
        assert_eq!(
            packs(&w).len(),
            1,
            "the old pack is unlinked once the new root is out"
        );
        assert!(round < 200, "no new pack after {round} rounds");
    }
    assert_eq!(card(&r, 0), Some(vec![0xa0; 1000]), "a moved table");
    for rank in 1..4 {
        assert_eq!(card(&r, rank), Some(vec![round; 40 << 10]));
    }
    // The value borrowed before the moves is still mapped (its pack is unlinked).
    assert_eq!(first.as_bytes(), Some(&[0xa0; 1000][..]));
    assert_eq!(read_mappings(&w, "rshm-pack-00000001 (deleted)"), 1);
    drop(pin);
    // Nothing keeps the first pack now: the reader lets it go within a few generations.
    for _ in 0..8 {
        commit_rank(&mut w, 1, 1, 100);
        assert_eq!(card(&r, 0), Some(vec![0xa0; 1000]));
    }
    assert_eq!(
        read_mappings(&w, "rshm-pack-00000001 (deleted)"),
        0,
        "the first pack is still mapped"
    );
}

#[test]
fn a_dropped_transaction_leaves_the_pack_as_published() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    commit_rank(&mut w, 1, 1, 100);
    {
        let mut tx = w.begin();
        tx.put_table_packable("ns", part::POSTED_RANKS + 1, &rank_table(1, "card", 9, 100))
            .unwrap();
        tx.put_table_packable("ns", part::POSTED_RANKS + 2, &rank_table(2, "card", 9, 100))
            .unwrap();
        // Dropped: never published.
    }
    let r = Reader::attach(w.path()).unwrap();
    assert_eq!(card(&r, 1), Some(vec![1; 100]));
    assert_eq!(card(&r, 2), None);
    // The next transaction writes over the dropped one's bytes.
    commit_rank(&mut w, 2, 2, 100);
    assert_eq!(card(&r, 1), Some(vec![1; 100]));
    assert_eq!(card(&r, 2), Some(vec![2; 100]));
}

#[test]
fn only_small_tables_put_as_packable_go_into_the_pack() {
    let base = common::base_dir();
    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let mut tx = w.begin();
    // The part does not place a table: the caller's hint does.
    for p in [part::DATA, part::RESOURCES, part::POSTED_RANKS + 5] {
        tx.put_table("ns", p, &rank_table(0, "k", 1, 16)).unwrap();
    }
    for p in [part::POSTED, 7, part::POSTED_RANKS + 6] {
        tx.put_table_packable("ns", p, &rank_table(0, "k", 1, 16))
            .unwrap();
    }
    // Packable but larger than 256 KiB: a file of its own.
    tx.put_table_packable("ns", 9, &rank_table(0, "k", 1, 300 << 10))
        .unwrap();
    tx.commit().unwrap();
    let parts: Vec<String> = w
        .files()
        .unwrap()
        .into_iter()
        .filter_map(|f| Some(f.strip_prefix("rshm-tbl-")?[9..17].to_owned()))
        .collect();
    assert_eq!(parts, ["00000000", "00000001", "00000009", "00000015"]);
}

/// Retirement is per store: a thread pinned on another store for as long as this one moves
/// through three packs does not keep this store's old pack mapped.
#[test]
fn a_pin_held_on_another_store_does_not_keep_old_packs_mapped() {
    let base = common::base_dir();
    let mut other = Writer::create(common::opts(base.path())).unwrap();
    commit_rank(&mut other, 0, 1, 100);
    let other_reader = Reader::attach(other.path()).unwrap();
    let (pinned_tx, pinned) = std::sync::mpsc::channel();
    let (release, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        let pin = other_reader.pin();
        assert_eq!(card(&other_reader, 0), Some(vec![1; 100]));
        pinned_tx.send(()).unwrap();
        let _ = release_rx.recv();
        drop(pin);
    });
    pinned.recv().unwrap();

    let mut w = Writer::create(common::opts(base.path())).unwrap();
    let r = Reader::attach(w.path()).unwrap();
    commit_rank(&mut w, 0, 0xa0, 1000);
    assert_eq!(card(&r, 0), Some(vec![0xa0; 1000]));
    let mut round = 0u8;
    while packs(&w).first().map(String::as_str) < Some("rshm-pack-00000002") {
        round = round.wrapping_add(1);
        for rank in 1..4 {
            commit_rank(&mut w, rank, round, 40 << 10);
            assert_eq!(card(&r, rank), Some(vec![round; 40 << 10]));
        }
        assert!(round < 200, "no new pack after {round} rounds");
    }
    for _ in 0..8 {
        commit_rank(&mut w, 1, 1, 100);
        assert_eq!(card(&r, 0), Some(vec![0xa0; 1000]));
    }
    let still = read_mappings(&w, "rshm-pack-00000001 (deleted)");
    release.send(()).unwrap();
    holder.join().unwrap();
    assert_eq!(still, 0, "another store's pin kept the first pack mapped");
}
