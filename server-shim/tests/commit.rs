//! `Server::commit` (a process's commit in one call; its first since a merge goes straight
//! from the caller's values into the pack) publishes what staging each value and flushing
//! publishes: the same answers to every Get, the same refusals, one generation per commit.

mod common;

use std::path::Path;

use rshm_gds::jobdata::TargetRank;
use rshm_gds::modex;
use rshm_gds::{Error, Reader, Value};
use rshm_server::server::{PostedData, Server, ServerOptions};

const KEYS: [&str; 6] = ["card", "btl.tcp", "a", "zz", "pmix.reserved", "shm.seg"];
const RANKS: u32 = 40;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn open(base: &Path) -> Server {
    Server::open(ServerOptions {
        base_dir: Some(base.into()),
        ..ServerOptions::default()
    })
    .unwrap()
}

fn answer(r: &Reader, rank: TargetRank, key: &str) -> String {
    let pin = r.pin();
    match modex::find(r, &pin, "ns", rank, key, |_| true, None) {
        Ok((v, _)) => format!("{:?}", v.to_value()),
        Err(Error::NotFound) => "not found".into(),
        Err(e) => format!("error {e}"),
    }
}

#[test]
fn a_commit_answers_as_its_values_staged_and_flushed() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut a, mut b) = (open(da.path()), open(db.path()));
    let (ra, rb) = (
        Reader::attach(a.path()).unwrap(),
        Reader::attach(b.path()).unwrap(),
    );
    let mut rng = Rng(0x0dd_c0ff_ee12_3457);
    for step in 0..700 {
        let rank = rng.below(RANKS as u64) as u32;
        let mut values: Vec<(u8, &str, Value)> = Vec::new();
        for _ in 0..1 + rng.below(5) {
            // Mostly the keys every rank posts (after the first commits, all of them known),
            // now and then a reserved key or PMIX_INTERNAL (refused: their keys withdrawn).
            let keys = if rng.below(20) == 0 { 6 } else { 4 };
            let key = KEYS[rng.below(keys) as usize];
            let scope = if rng.below(40) == 0 {
                4
            } else {
                1 + rng.below(3) as u8
            };
            let value = match rng.below(4) {
                0 => Value::String(format!("s{step}")),
                1 => Value::Uint32(step as u32),
                _ => Value::ByteObject(vec![step as u8; rng.below(400) as usize]),
            };
            values.push((scope, key, value));
        }
        let refs: Vec<(u8, &str, PostedData<'_>)> = values
            .iter()
            .map(|(s, k, v)| (*s, *k, PostedData::Value(v)))
            .collect();
        let fa = a.commit("ns", rank, &refs).unwrap();
        for (s, k, v) in &values {
            b.stage_ref("ns", rank, *s, k, PostedData::Value(v));
        }
        let fb = b.flush().unwrap();
        assert_eq!(fa, fb, "step {step}");
        if step % 50 == 49 || step < 3 {
            ra.refresh().unwrap();
            rb.refresh().unwrap();
            for key in KEYS {
                let undef = (
                    answer(&ra, TargetRank::Undef, key),
                    answer(&rb, TargetRank::Undef, key),
                );
                assert_eq!(undef.0, undef.1, "step {step}, UNDEF {key}");
                for r in 0..RANKS {
                    let got = (
                        answer(&ra, TargetRank::Rank(r), key),
                        answer(&rb, TargetRank::Rank(r), key),
                    );
                    assert_eq!(got.0, got.1, "step {step}, rank {r} {key}");
                }
            }
        }
    }
    assert_eq!(a.stats().publications, b.stats().publications);
    assert_eq!(a.stats().publications, 700);
}

/// A rank's first commit that cannot be written into the pack (a full filesystem) publishes
/// nothing of it, says so, and leaves the store taking later commits.
#[test]
fn a_commit_that_cannot_be_written_leaves_nothing_of_it() {
    use std::io::Write;
    let Some(dir) = common::SmallTmpfs::mount() else {
        return;
    };

    let mut s = open(dir.path());
    // A fence's 400 KiB base (a file of its own): rank tables of up to that much are not
    // merged into it, so the failing commit below takes the direct path.
    let small = Value::ByteObject(vec![1; 20 << 10]);
    let fence: Vec<_> = (0..20)
        .map(|rank| rshm_server::server::PostedValue {
            nspace: "ns".into(),
            rank,
            scope: 3,
            key: "card".into(),
            value: small.clone(),
        })
        .collect();
    s.store(&fence).unwrap();
    let r = Reader::attach(s.path()).unwrap();
    // Fill what is left of the filesystem.
    let filler = dir.path().join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    while f
        .write_all(&[0u8; 4096])
        .and_then(|()| f.sync_data())
        .is_ok()
    {}
    drop(f);
    // The pack has room reserved for the first; the second needs more.
    let card = Value::ByteObject(vec![2; 150 << 10]);
    let mut failed = None;
    for rank in 100..108 {
        match s.commit("ns", rank, &[(3, "card", PostedData::Value(&card))]) {
            Ok(_) => {}
            Err(e) => {
                failed = Some((rank, e));
                break;
            }
        }
    }
    let (rank, e) = failed.expect("a 150 KiB commit into a full filesystem fails");
    assert_eq!(rank, 101);
    assert!(matches!(e.error, Error::OutOfSpace), "{:?}", e.error);
    r.refresh().unwrap();
    assert_eq!(answer(&r, TargetRank::Rank(rank), "card"), "not found");
    assert_eq!(
        answer(&r, TargetRank::Rank(0), "card"),
        format!("{small:?}")
    );
    // Room again: the same commit publishes.
    std::fs::remove_file(&filler).unwrap();
    s.commit("ns", rank, &[(3, "card", PostedData::Value(&card))])
        .unwrap();
    r.refresh().unwrap();
    assert_eq!(
        answer(&r, TargetRank::Rank(rank), "card"),
        format!("{card:?}")
    );
    drop(r);
    s.close().unwrap();
}
