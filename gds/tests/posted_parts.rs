//! `PostedParts` (a namespace's posted data as base, rank and index tables) answers exactly as
//! one `Posted` table holding the same puts, whatever the order of commits, fences, merges
//! and withdrawals; and a commit writes its own values, not the namespace's.

mod common;

use rshm_gds::jobdata::TargetRank;
use rshm_gds::modex::{self, FenceBatch, Posted, PostedParts, Scope};
use rshm_gds::{part, Error, Reader, StoreOptions, Value, Writer};

/// xorshift: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const KEYS: [&str; 5] = ["card", "lcard", "rcard", "uniq", "big"];
const RANKS: u32 = 24;

fn writer(base: &std::path::Path) -> Writer {
    Writer::create(StoreOptions {
        base_dir: Some(base.to_path_buf()),
        ..StoreOptions::default()
    })
    .unwrap()
}

/// As the server publishes: a rank's first commit since a merge straight into the pack, any
/// other batch staged (its rank tables read back from the store). Returns whether it went
/// straight into the pack.
fn publish(w: &mut Writer, parts: &mut PostedParts, batch: FenceBatch) -> bool {
    if let Some(commit) = parts.stage_small_batch(&batch).unwrap() {
        let mut tx = w.begin();
        PostedParts::publish_small(&commit, &mut tx, "ns").unwrap();
        tx.commit().unwrap();
        parts.accept_small(commit);
        return true;
    }
    let staged = parts.stage(batch, w, "ns").unwrap();
    let mut tx = w.begin();
    PostedParts::publish(&staged, &mut tx, "ns").unwrap();
    tx.commit().unwrap();
    parts.accept(staged);
    false
}

/// Every answer of the reference table and of the store must agree.
fn compare(reference: &Posted, w: &mut Writer, r: &Reader, step: usize) {
    let mut tx = w.begin();
    tx.put_table_packable("ref", part::POSTED, reference.table())
        .unwrap();
    tx.commit().unwrap();
    r.refresh().unwrap();
    let pin = r.pin();
    let rt = r.table(&pin, "ref", part::POSTED).ok();
    let show = |x: rshm_gds::Result<Value>| match x {
        Ok(v) => format!("{v:?}"),
        Err(Error::NotFound) => "not found".into(),
        Err(Error::ExistsOutsideScope) => "outside".into(),
        Err(e) => panic!("step {step}: {e}"),
    };
    let targets = (0..RANKS).map(TargetRank::Rank).chain([TargetRank::Undef]);
    for target in targets {
        for key in KEYS {
            for local in [true, false] {
                for scope in [
                    None,
                    Some(Scope::Global),
                    Some(Scope::Local),
                    Some(Scope::Remote),
                ] {
                    let want = match rt {
                        Some(t) => modex::get(t, target, key, local, scope).map(|v| v.to_value()),
                        None => Err(Error::NotFound),
                    };
                    let got = modex::find(r, &pin, "ns", target, key, |_| local, scope)
                        .map(|(v, _)| v.to_value());
                    assert_eq!(
                        show(got),
                        show(want),
                        "step {step}: {target:?} {key} local={local} {scope:?}"
                    );
                }
            }
        }
    }
}

fn value(rng: &mut Rng, key: &str) -> Value {
    if key == "big" {
        // Big values make the rank tables outweigh the base now and then: merges happen.
        Value::ByteObject(vec![
            rng.below(256) as u8;
            40_000 + rng.below(40_000) as usize
        ])
    } else {
        Value::String(format!("v{}", rng.next() % 1000))
    }
}

#[test]
fn parts_answer_as_one_table_through_commits_fences_merges_and_withdrawals() {
    let base = common::base_dir();
    let mut w = writer(base.path());
    let r = Reader::attach(w.path()).unwrap();
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut reference = Posted::new();
    let mut parts = PostedParts::new();
    let scopes = [Scope::Global, Scope::Local, Scope::Remote];
    let (mut merges, mut small, mut staged) = (0, 0, 0);
    for step in 0..120 {
        let before = parts.rank_tables();
        match rng.below(10) {
            // A commit: one rank, a few keys.
            0..=5 => {
                let rank = rng.below(RANKS as u64) as u32;
                let mut batch = FenceBatch::new();
                for _ in 0..1 + rng.below(3) {
                    let key = KEYS[rng.below(KEYS.len() as u64) as usize];
                    let scope = scopes[rng.below(3) as usize];
                    let v = value(&mut rng, key);
                    reference.put(rank, scope, key, &v).unwrap();
                    batch.put(rank, scope, key, &v).unwrap();
                }
                if publish(&mut w, &mut parts, batch) {
                    small += 1;
                } else {
                    staged += 1;
                }
            }
            // A fence: most ranks, remote data.
            6..=7 => {
                let mut batch = FenceBatch::new();
                for rank in 0..RANKS {
                    if rng.below(4) == 0 {
                        continue;
                    }
                    let key = KEYS[rng.below(3) as usize];
                    let v = value(&mut rng, key);
                    reference.put(rank, Scope::Remote, key, &v).unwrap();
                    batch.put(rank, Scope::Remote, key, &v).unwrap();
                }
                publish(&mut w, &mut parts, batch);
            }
            // A withdrawal.
            _ => {
                let rank = rng.below(RANKS as u64) as u32;
                let key = KEYS[rng.below(KEYS.len() as u64) as usize];
                reference.withdraw(rank, key).unwrap();
                if let Some(staged) = parts.stage_withdraw(rank, key, &mut w, "ns").unwrap() {
                    let mut tx = w.begin();
                    PostedParts::publish(&staged, &mut tx, "ns").unwrap();
                    tx.commit().unwrap();
                    parts.accept(staged);
                }
            }
        }
        if parts.rank_tables() < before {
            merges += 1;
        }
        // Every few steps, and after every merge (a merge moves every rank table's values).
        if step % 4 == 3 || parts.rank_tables() < before {
            compare(&reference, &mut w, &r, step);
        }
    }
    compare(&reference, &mut w, &r, usize::MAX);
    eprintln!("{merges} merges, {small} commits straight into the pack, {staged} staged");
    assert!(
        merges >= 2,
        "the run must merge rank tables ({merges} merges)"
    );
    // Both commit paths, and rank tables read back (commits of ranks that have a table).
    assert!(
        small >= 5 && staged >= 5,
        "{small} straight, {staged} staged"
    );
}

/// 512 ranks each commit 16 keys of 200 bytes, one commit at a time (a node's MPI_Init): each
/// commit is one generation, and the store writes at most 4x what was committed (its rank
/// tables, the merges into the base, the index and the roots).
#[test]
fn a_commit_storm_writes_what_it_commits_not_the_namespace_per_commit() {
    storm(512, 16, 4);
}

/// Commits of one small key each: roots, which name every rank table, would be most of what is
/// written if rank tables were merged by their bytes alone (81x at 1,024 ranks).
#[test]
fn small_commits_do_not_write_mostly_roots() {
    storm(1024, 1, 24);
}

/// `ranks` commits of `keys` keys of 200 bytes; at most `factor` x the committed bytes written.
fn storm(ranks: u32, keys: u32, factor: usize) {
    let base = common::base_dir();
    let mut w = writer(base.path());
    let mut parts = PostedParts::new();
    let mut committed = 0usize;
    let start = w.stats();
    for rank in 0..ranks {
        let mut batch = FenceBatch::new();
        for k in 0..keys {
            let key = format!("mpi.card.{k}");
            let v = vec![rank as u8; 200];
            committed += key.len() + v.len();
            batch.put_bytes(rank, Scope::Global, &key, &v).unwrap();
        }
        publish(&mut w, &mut parts, batch);
    }
    let s = w.stats();
    assert_eq!(s.publications - start.publications, ranks as u64);
    let written = (s.bytes_written - start.bytes_written) as usize;
    eprintln!(
        "{ranks} commits of {keys} keys: {committed} bytes committed, {written} written, {} files",
        s.files_written - start.files_written
    );
    assert!(
        written <= factor * committed,
        "wrote {written} bytes for {committed} committed"
    );
    // And every card is there.
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    for rank in [0, 1, ranks / 2, ranks - 1] {
        let (v, _) = modex::find(
            &r,
            &pin,
            "ns",
            TargetRank::Rank(rank),
            &format!("mpi.card.{}", keys - 1),
            |_| true,
            None,
        )
        .unwrap();
        assert_eq!(v.to_value(), Value::ByteObject(vec![rank as u8; 200]));
    }
}

/// Posted data the writer can no longer publish nor withdraw is withdrawn for good (P6): a
/// reader answers no posted data any more, job data as before.
#[test]
fn posted_data_withdrawn_for_good_is_no_longer_answered_but_job_data_is() {
    let base = common::base_dir();
    let mut w = writer(base.path());
    let mut job = rshm_gds::TableBuilder::new();
    job.insert(rshm_gds::Realm::Job, "pmix.job.size", &Value::Uint32(2))
        .unwrap();
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &job).unwrap();
    tx.commit().unwrap();
    let mut parts = PostedParts::new();
    let mut batch = FenceBatch::new();
    batch
        .put(0, Scope::Global, "k", &Value::String("v1".into()))
        .unwrap();
    publish(&mut w, &mut parts, batch);
    let r = Reader::attach(w.path()).unwrap();
    let find = |r: &Reader| {
        let pin = r.pin();
        modex::find(r, &pin, "ns", TargetRank::Rank(0), "k", |_| true, None)
            .map(|(v, _)| v.to_value())
    };
    assert_eq!(find(&r).unwrap(), Value::String("v1".into()));
    assert!(!modex::withdrawn(&r));
    assert_eq!(r.withdrawn(), 0);

    modex::withdraw_for_good(&mut w).unwrap();

    assert!(modex::withdrawn(&r));
    assert_eq!(r.withdrawn(), modex::WITHDRAWN_CLASS);
    assert!(matches!(find(&r), Err(Error::StoreRemoved)));
    let pin = r.pin();
    assert_eq!(
        r.get(
            &pin,
            "ns",
            part::DATA,
            rshm_gds::Realm::Job,
            "pmix.job.size"
        )
        .unwrap()
        .to_value(),
        Value::Uint32(2)
    );
}
