//! What a writer publishes is read by a separate process (the `rshm` binary, not a fork of the
//! test harness), and the main job runs end to end.

mod common;

use common::opts;
use std::process::Command;
use std::time::{Duration, SystemTime};

use rshm_gds::{part, Realm, TableBuilder, Value, Writer};

fn rshm() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rshm"))
}

fn base() -> tempfile::TempDir {
    common::base("rshm-cli-test-")
}

fn get(store: &std::path::Path, realm: &str, key: &str) -> (bool, String) {
    let out = rshm()
        .arg("get")
        .arg(store)
        .args(["ns", realm, key])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(if out.status.success() {
        &out.stdout
    } else {
        &out.stderr
    });
    (out.status.success(), text.trim().to_owned())
}

#[test]
fn another_process_reads_what_the_writer_published_and_follows_new_generations() {
    let base = base();
    let mut w = Writer::create(opts(base.path())).unwrap();
    for g in 1..=3u32 {
        let mut t = TableBuilder::new();
        t.insert(Realm::Job, "pmix.job.size", &Value::Uint32(100 * g))
            .unwrap();
        t.insert(Realm::Proc(3), "card", &Value::ByteObject(vec![g as u8; 4]))
            .unwrap();
        let mut tx = w.begin();
        tx.put_table("ns", part::DATA, &t).unwrap();
        tx.commit().unwrap();
        assert_eq!(
            get(w.path(), "job", "pmix.job.size"),
            (true, format!("Uint32({})", 100 * g))
        );
        let g = g as u8;
        assert_eq!(
            get(w.path(), "proc:3", "card"),
            (true, format!("ByteObject([{g}, {g}, {g}, {g}])"))
        );
    }
    let (ok, msg) = get(w.path(), "proc:4", "card");
    assert!(!ok && msg.contains("not found"), "{msg}");
}

#[test]
fn another_process_refuses_a_store_of_an_unknown_major_version() {
    use std::os::unix::fs::FileExt;
    let base = base();
    let mut w = Writer::create(opts(base.path())).unwrap();
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "k", &Value::Bool(true)).unwrap();
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();
    let anchor = std::fs::OpenOptions::new()
        .write(true)
        .open(w.path().join("rshm-anchor"))
        .unwrap();
    anchor.write_all_at(&9u16.to_ne_bytes(), 8).unwrap();
    let (ok, msg) = get(w.path(), "job", "k");
    assert!(!ok && msg.contains("unsupported rshm format 9.0"), "{msg}");
}

#[test]
fn dump_shows_each_proc_column_and_whether_it_is_stored_in_blocks() {
    let base = base();
    let mut w = Writer::create(opts(base.path())).unwrap();
    // 40,000 ranks on nodes of 64: lrank (2 B, 80,000 bytes plain) is blocked; 100 ranks of
    // a cyclic node id stay plain.
    let mut big = TableBuilder::with_ranks(40_000);
    for r in 0..40_000u32 {
        big.insert(
            Realm::Proc(r),
            "pmix.lrank",
            &Value::Uint16((r % 64) as u16),
        )
        .unwrap();
    }
    let mut small = TableBuilder::with_ranks(100);
    for r in 0..100u32 {
        small
            .insert(Realm::Proc(r), "pmix.nodeid", &Value::Uint32(r % 7))
            .unwrap();
    }
    let mut tx = w.begin();
    tx.put_table("big", part::DATA, &big).unwrap();
    tx.put_table("small", part::DATA, &small).unwrap();
    tx.commit().unwrap();
    let out = rshm().arg("dump").arg(w.path()).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // 1,250 blocks: 8 bytes of head + 16 bytes each.
    assert!(
        text.contains(
            "column pmix.lrank   40000 ranks x 2 B: 20008 bytes, 1250 blocks of 32 ranks, 0 stored as values"
        ),
        "{text}"
    );
    assert!(
        text.contains("column pmix.nodeid  100 ranks x 4 B: 400 bytes, plain"),
        "{text}"
    );
}

#[test]
fn sweep_removes_the_store_of_a_dead_writer_and_keeps_live_ones() {
    let base = base();
    // Stores without a lock file (an older rshm's) whose writer pid cannot exist (pid_max is
    // below 2^22 + 1 on Linux): judged by that pid once older than the grace period, which
    // covers a writer between its mkdir and its lock.
    let lockless = |name: &str, age: Duration| {
        let dir = base.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("rshm-anchor"), b"left by a dead server").unwrap();
        let then = SystemTime::now() - age;
        std::fs::File::open(&dir)
            .unwrap()
            .set_modified(then)
            .unwrap();
        dir
    };
    let dead = lockless("rshm-4194305-00000000deadbeef", Duration::from_secs(120));
    let young = lockless("rshm-4194306-00000000deadbeef", Duration::ZERO);
    let live = Writer::create(opts(base.path())).unwrap();
    let out = rshm().arg("sweep").arg(base.path()).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 removed, 1 alive, 1 skipped"), "{text}");
    assert!(text.contains("younger than 60 s"), "{text}");
    assert!(!dead.exists());
    assert!(young.exists());
    assert!(live.path().exists());
}

#[test]
fn the_main_job_runs_end_to_end() {
    let base = base();
    let out = rshm()
        .args([
            "demo",
            "--ranks",
            "3000",
            "--readers",
            "2",
            "--gets",
            "4096",
            "--base",
        ])
        .arg(base.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("checked    20000 values against the writer's, all equal"),
        "{text}"
    );
    assert!(text.contains("store removed"));
    assert_eq!(
        std::fs::read_dir(base.path()).unwrap().count(),
        0,
        "nothing left in the base dir"
    );
}

#[test]
fn get_reads_posted_keys_with_their_scope() {
    use rshm_gds::modex::{FenceBatch, PostedParts, Scope};
    let base = base();
    let mut w = Writer::create(opts(base.path())).unwrap();
    let mut batch = FenceBatch::new();
    batch
        .put(2, Scope::Local, "mn.card", &Value::Uint32(1))
        .unwrap();
    // A later put of the key replaces it, whatever its scope.
    batch
        .put(2, Scope::Remote, "mn.card", &Value::Uint32(2))
        .unwrap();
    batch
        .put(2, Scope::Local, "shm.seg", &Value::Uint32(7))
        .unwrap();
    batch
        .put(3, Scope::Global, "only3", &Value::String("x".into()))
        .unwrap();
    let mut parts = PostedParts::new();
    let staged = parts.stage(batch, &mut w, "ns").unwrap();
    let mut tx = w.begin();
    PostedParts::publish(&staged, &mut tx, "ns").unwrap();
    tx.commit().unwrap();
    parts.accept(staged);

    assert_eq!(
        get(w.path(), "posted:2", "mn.card"),
        (true, "remote Uint32(2)".to_owned())
    );
    assert_eq!(
        get(w.path(), "posted:2:remote", "mn.card"),
        (true, "remote Uint32(2)".to_owned())
    );
    assert_eq!(
        get(w.path(), "posted:undef", "only3"),
        (true, "global String(\"x\")".to_owned())
    );
    assert_eq!(
        get(w.path(), "posted:2:local", "shm.seg"),
        (true, "local  Uint32(7)".to_owned())
    );
    let (ok, msg) = get(w.path(), "posted:2:global", "mn.card");
    assert!(!ok && msg.contains("not found"), "{msg}");
    let (ok, msg) = get(w.path(), "posted:4", "mn.card");
    assert!(!ok && msg.contains("not found"), "{msg}");
    let (ok, msg) = get(w.path(), "posted:two", "mn.card");
    assert!(!ok && msg.contains("bad realm"), "{msg}");
}
