//! The fence-batch path (`modex::FenceBatch` + `Posted::apply`) against the reference path
//! (`Posted::put` of every value): the same table bytes and the same PMIx_Get answers for mixed
//! batches (several scopes, replaced values, out-of-order ranks, RANK_UNDEF), merged into what
//! the namespace already had; and a batch published in one transaction is seen whole or not at
//! all.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{store, Rng};

use rshm_gds::jobdata::TargetRank;
use rshm_gds::modex::{self, FenceBatch, Posted, Scope};
use rshm_gds::{part, Error, Reader, Value, Writer};

const KEYS: [&str; 5] = ["btl.tcp.card", "a", "ucx.addr", "zz.last", "m.string"];
const RANKS: u32 = 40;

/// One posted value: rank, scope, key, value.
type Put = (u32, Scope, &'static str, Value);

fn random_puts(rng: &mut Rng, n: usize, tag: u8) -> Vec<Put> {
    (0..n)
        .map(|i| {
            let rank = rng.below(RANKS as usize) as u32;
            let scope = Scope::ALL[rng.below(3)];
            let key = KEYS[rng.below(KEYS.len())];
            let value = if key == "m.string" {
                Value::String(format!("{tag}-{i}-{rank}"))
            } else {
                let len = rng.below(100); // empty cards too
                Value::ByteObject((0..len).map(|b| (b as u8) ^ tag ^ i as u8).collect())
            };
            (rank, scope, key, value)
        })
        .collect()
}

/// A batch the way a fence usually delivers it: every rank in order, its keys in byte order.
fn ordered_puts(tag: u8, scope: Scope) -> Vec<Put> {
    let mut keys = KEYS;
    keys.sort();
    let mut v = Vec::new();
    for rank in 0..RANKS {
        for key in keys.iter().take(2) {
            v.push((
                rank,
                scope,
                *key,
                Value::ByteObject(vec![tag; rank as usize]),
            ));
        }
    }
    v
}

fn by_put(p: &mut Posted, puts: &[Put]) {
    for (rank, scope, key, value) in puts {
        p.put(*rank, *scope, key, value).unwrap();
    }
}

fn by_batch(p: &mut Posted, puts: &[Put]) {
    let mut b = FenceBatch::new();
    for (rank, scope, key, value) in puts {
        match value {
            // Both entry points of the batch.
            Value::ByteObject(bytes) if rank % 2 == 0 => {
                b.put_bytes(*rank, *scope, key, bytes).unwrap()
            }
            v => b.put(*rank, *scope, key, v).unwrap(),
        }
    }
    assert_eq!(b.len(), puts.len());
    p.apply(b).unwrap();
}

/// Every answer a reader can get from the two tables is the same.
fn same_answers(w: &mut Writer, reference: &Posted, fast: &Posted, min_found: u32) {
    assert_eq!(reference.len(), fast.len());
    assert!(
        reference.table().encode(9).unwrap() == fast.table().encode(9).unwrap(),
        "the fence-batch table differs from the put table"
    );
    let mut tx = w.begin();
    tx.put_table_packable("ref", part::POSTED, reference.table())
        .unwrap();
    tx.put_table_packable("fast", part::POSTED, fast.table())
        .unwrap();
    tx.commit().unwrap();
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let (a, b) = (
        r.table(&pin, "ref", part::POSTED).unwrap(),
        r.table(&pin, "fast", part::POSTED).unwrap(),
    );
    let show = |x: rshm_gds::Result<rshm_gds::ValueRef<'_>>| match x {
        Ok(v) => Ok(v.to_value()),
        Err(Error::NotFound) => Err("not found"),
        Err(Error::ExistsOutsideScope) => Err("outside scope"),
        Err(e) => panic!("unexpected error {e}"),
    };
    let mut found = 0;
    let targets = (0..RANKS + 2)
        .map(TargetRank::Rank)
        .chain([TargetRank::Undef]);
    for target in targets {
        for key in KEYS.iter().chain(&["k", "never.posted"]) {
            for local in [true, false] {
                for scope in [
                    None,
                    Some(Scope::Local),
                    Some(Scope::Remote),
                    Some(Scope::Global),
                ] {
                    let x = show(modex::get(a, target, key, local, scope));
                    let y = show(modex::get(b, target, key, local, scope));
                    assert_eq!(x, y, "{target:?} {key} local={local} scope={scope:?}");
                    found += x.is_ok() as u32;
                }
            }
        }
    }
    for key in KEYS.iter().chain(&["k"]) {
        assert_eq!(
            modex::undef_rank(a, key),
            modex::undef_rank(b, key),
            "{key}"
        );
    }
    assert!(found >= min_found, "too few values to compare ({found})");
}

#[test]
fn a_fence_batch_gives_the_answers_of_puts_for_mixed_batches() {
    let (_b, mut w) = store();
    for seed in 1..=6u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let (mut reference, mut fast) = (Posted::new(), Posted::new());
        // Commits before the fence (some seeds only), as a local client's store.
        if seed % 2 == 0 {
            let commits = random_puts(&mut rng, 30, 1);
            by_put(&mut reference, &commits);
            by_put(&mut fast, &commits);
        }
        // The fence: scopes mixed, ranks out of order, keys and (rank, key) posted again.
        let fence = random_puts(&mut rng, 400, 2);
        by_put(&mut reference, &fence);
        by_batch(&mut fast, &fence);
        same_answers(&mut w, &reference, &fast, 100);
        // A commit after the fence replaces some of its values.
        let commits = random_puts(&mut rng, 20, 3);
        by_put(&mut reference, &commits);
        by_put(&mut fast, &commits);
        same_answers(&mut w, &reference, &fast, 100);
        // A second fence, in rank order with one scope: merged, latest wins.
        let scope = Scope::ALL[seed as usize % 3];
        let fence = ordered_puts(4, scope);
        by_put(&mut reference, &fence);
        by_batch(&mut fast, &fence);
        same_answers(&mut w, &reference, &fast, 100);
        // And a random one again over all of that.
        let fence = random_puts(&mut rng, 200, 5);
        by_put(&mut reference, &fence);
        by_batch(&mut fast, &fence);
        same_answers(&mut w, &reference, &fast, 100);
    }
}

#[test]
fn a_batch_of_many_keys_each_put_again_keeps_one_value_per_key() {
    // More distinct keys than a batch compares one by one before it indexes them by name, each
    // put again after that point: every key keeps one id, its last value wins.
    let keys: Vec<&'static str> = (0..70)
        .map(|i| &*Box::leak(format!("many.{i:02}").into_boxed_str()))
        .collect();
    let mut rng = Rng(0x0005_eed0_f4e7 | 1);
    let mut puts: Vec<Put> = Vec::new();
    for round in 0..3u8 {
        for (i, key) in keys.iter().enumerate() {
            let rank = rng.below(4) as u32;
            let value = Value::ByteObject(vec![round, i as u8, rank as u8]);
            puts.push((rank, Scope::ALL[rng.below(3)], key, value));
        }
    }
    let (mut reference, mut fast) = (Posted::new(), Posted::new());
    by_put(&mut reference, &puts);
    by_batch(&mut fast, &puts);
    // The same values (at least one and a RANK_UNDEF index entry per key), the same bytes.
    assert_eq!(reference.len(), fast.len());
    assert!(fast.len() > 140);
    assert!(reference.table().encode(9).unwrap() == fast.table().encode(9).unwrap());
}

#[test]
fn a_value_posted_twice_in_one_batch_keeps_the_last_and_its_first_poster_is_undef() {
    let (_b, mut w) = store();
    let puts: Vec<Put> = vec![
        (9, Scope::Global, "k", Value::ByteObject(b"first".to_vec())),
        (3, Scope::Local, "k", Value::ByteObject(b"three".to_vec())),
        (9, Scope::Remote, "k", Value::ByteObject(b"second".to_vec())),
    ];
    let (mut reference, mut fast) = (Posted::new(), Posted::new());
    by_put(&mut reference, &puts);
    by_batch(&mut fast, &puts);
    same_answers(&mut w, &reference, &fast, 4);
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let t = r.table(&pin, "fast", part::POSTED).unwrap();
    assert_eq!(modex::undef_rank(t, "k"), Some(9));
    let v = modex::get(t, TargetRank::Rank(9), "k", false, None).unwrap();
    assert_eq!(v.as_bytes(), Some(&b"second"[..]));
    assert!(matches!(
        modex::get(t, TargetRank::Rank(9), "k", true, None),
        Err(Error::ExistsOutsideScope)
    ));
}

#[test]
fn a_fence_batch_refuses_what_put_refuses() {
    let mut b = FenceBatch::new();
    for key in ["pmix.job.size", "", "bad\0key"] {
        assert!(matches!(
            b.put_bytes(0, Scope::Global, key, b"x"),
            Err(Error::InvalidArgument(_))
        ));
        assert!(Posted::new()
            .put(0, Scope::Global, key, &Value::ByteObject(b"x".to_vec()))
            .is_err());
    }
    assert!(b.is_empty(), "a refused value is not in the batch");
    let mut p = Posted::new();
    p.apply(b).unwrap();
    assert!(p.is_empty());
}

#[test]
fn a_fence_batch_is_seen_whole_or_not_at_all() {
    const PROCS: u32 = 20_000;
    let (_b, mut w) = store();
    let fence = |p: &mut Posted, w: &mut Writer, tag: u8| {
        let mut b = FenceBatch::with_capacity(PROCS as usize, PROCS as usize * 64);
        for rank in 0..PROCS {
            b.put_bytes(rank, Scope::Global, "card", &[tag; 64])
                .unwrap();
        }
        p.apply(b).unwrap();
        let mut tx = w.begin();
        tx.put_table_packable("ns", part::POSTED, p.table())
            .unwrap();
        tx.commit().unwrap();
    };
    let mut p = Posted::new();
    fence(&mut p, &mut w, 1);
    let r = Arc::new(Reader::attach(w.path()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    // The tag the reader saw last, so that the writer waits for the reader instead of guessing
    // how long a loaded machine takes to schedule it.
    let latest = Arc::new(AtomicU8::new(0));
    let (tx_done, rx_done) = mpsc::channel();
    let reader = {
        let (r, stop, latest) = (r.clone(), stop.clone(), latest.clone());
        std::thread::spawn(move || {
            let mut seen = [0u64; 256];
            while !stop.load(Ordering::Relaxed) {
                let pin = r.pin();
                let t = r.table(&pin, "ns", part::POSTED).unwrap();
                let card = |rank| {
                    modex::get(t, TargetRank::Rank(rank), "card", false, None)
                        .unwrap()
                        .as_bytes()
                        .unwrap()[0]
                };
                let (first, mid, last) = (card(0), card(PROCS / 2), card(PROCS - 1));
                assert!(
                    first == mid && mid == last,
                    "a reader saw part of a fence batch: {first} {mid} {last}"
                );
                seen[first as usize] += 1;
                latest.store(first, Ordering::Relaxed);
            }
            tx_done.send(seen).unwrap();
        })
    };
    // Every later fence replaces every card (latest wins), each as one generation.
    for tag in 2..=6 {
        std::thread::sleep(Duration::from_millis(5));
        fence(&mut p, &mut w, tag);
    }
    common::wait_until(Duration::from_secs(60), || {
        latest.load(Ordering::Relaxed) == 6
    });
    stop.store(true, Ordering::Relaxed);
    let seen = rx_done
        .recv_timeout(Duration::from_secs(60))
        .expect("reader stuck");
    reader.join().unwrap();
    assert!(
        seen[6] > 0,
        "the reader did not see the last batch within 60 s: {:?}",
        &seen[..8]
    );
    assert_eq!(
        p.len(),
        PROCS as usize + 1,
        "cards and the key's UNDEF index"
    );
}

#[test]
fn a_large_table_is_written_to_its_file_exactly_as_encoded_and_every_value_is_found() {
    // Big enough for the bucketed index (more than 8192 slots), several entry chunks and more
    // than 1024 value pieces (odd lengths: padding between values).
    const PROCS: u32 = 12_000;
    let (_b, mut w) = store();
    let mut reference = Posted::new();
    reference
        .put(3, Scope::Local, "x.first", &Value::String("before".into()))
        .unwrap();
    let mut p = reference.clone();
    let mut batch = FenceBatch::new();
    let mut puts = Vec::new();
    for rank in 0..PROCS {
        let card: Vec<u8> = (0..(rank % 37) as u8).map(|b| b ^ rank as u8).collect();
        puts.push((rank, Scope::Global, "card", Value::ByteObject(card.clone())));
        batch.put_bytes(rank, Scope::Global, "card", &card).unwrap();
        if rank % 3 == 0 {
            let s = Value::String(format!("endpoint-{rank}"));
            puts.push((rank, Scope::Remote, "x.first", s.clone()));
            batch.put(rank, Scope::Remote, "x.first", &s).unwrap();
        }
    }
    p.apply(batch).unwrap();
    by_put(&mut reference, &puts);
    let mut tx = w.begin();
    tx.put_table_packable("ns", part::POSTED, p.table())
        .unwrap();
    tx.commit().unwrap();
    let name = w
        .files()
        .unwrap()
        .into_iter()
        .find(|f| f.starts_with("rshm-tbl-"))
        .unwrap();
    let gen = u64::from_str_radix(&name[name.len() - 16..], 16).unwrap();
    let file = std::fs::read(w.path().join(&name)).unwrap();
    let mut encoded = reference.table().encode(gen).unwrap();
    // The file is ready (state word 20..24); encode() leaves it BUILDING.
    encoded[20..24].copy_from_slice(&file[20..24]);
    assert!(file == encoded, "the streamed file differs from encode()");

    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let t = r.table(&pin, "ns", part::POSTED).unwrap();
    for (rank, scope, key, value) in &puts {
        let v = modex::get(t, TargetRank::Rank(*rank), key, false, Some(*scope)).unwrap();
        assert_eq!(&v.to_value(), value, "rank {rank} {key}");
    }
    // Rank 3's LOCAL value was replaced by its REMOTE one (latest wins, whatever the scope).
    assert!(matches!(
        modex::get(t, TargetRank::Rank(3), "x.first", true, None),
        Err(Error::ExistsOutsideScope)
    ));
    assert_eq!(modex::undef_rank(t, "x.first"), Some(3));
    assert_eq!(modex::undef_rank(t, "card"), Some(0));
}

/// A clone shares its original's value bytes (a writer clones the posted base to apply a change
/// it may yet drop): changing either, by batch or by put, leaves the other's table as it was.
#[test]
fn a_clone_and_its_original_change_apart() {
    let mut rng = Rng(0x00c1_0ee5 | 1);
    let mut original = Posted::new();
    by_batch(&mut original, &random_puts(&mut rng, 200, 1));
    by_put(&mut original, &random_puts(&mut rng, 50, 2));
    let before = original.table().encode(9).unwrap();

    let mut clone = original.clone();
    by_put(&mut clone, &random_puts(&mut rng, 80, 3));
    by_batch(&mut clone, &random_puts(&mut rng, 120, 4));
    clone.withdraw(3, KEYS[0]).unwrap();
    assert!(
        original.table().encode(9).unwrap() == before,
        "the clone's changes reached its original"
    );

    let cloned = clone.table().encode(9).unwrap();
    by_put(&mut original, &random_puts(&mut rng, 80, 5));
    by_batch(&mut original, &random_puts(&mut rng, 120, 6));
    assert!(
        clone.table().encode(9).unwrap() == cloned,
        "the original's changes reached its clone"
    );
    assert!(original.table().encode(9).unwrap() != before);
}
