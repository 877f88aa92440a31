//! Posted data (PMIx v5 standard ch. 5): scopes (5.2.1.1), retrieval rules for non-reserved keys
//! (5.3, 5.4), fences as one generation, latest wins, many namespaces over a store's life.
//!
//! Job: node001 = ranks 0-3 (the store's node), node002 = ranks 4-7.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use rshm_gds::jobdata::{self, TargetRank};
use rshm_gds::modex::{self, FenceBatch, Posted, Scope};
use rshm_gds::{part, Error, Info, Reader, Value, Writer};

use common::store;

fn job_infos() -> Vec<Info> {
    vec![
        Info::new("pmix.nmap", Value::String("pmix[node[3:1-2]]".into())),
        Info::new("pmix.pmap", Value::String("pmix[0-3;4-7]".into())),
    ]
}

fn publish(w: &mut Writer, ns: &str, posted: &Posted, with_job: bool) {
    let mut tx = w.begin();
    if with_job {
        let (t, _) = jobdata::build(Some("node001"), &job_infos()).unwrap();
        tx.put_table(ns, part::DATA, &t).unwrap();
    }
    tx.put_table_packable(ns, part::POSTED, posted.table())
        .unwrap();
    tx.commit().unwrap();
}

/// PMIx_Get of a posted key as a process of this node would do it.
fn get(
    r: &Reader,
    ns: &str,
    rank: TargetRank,
    key: &str,
    scope: Option<Scope>,
) -> rshm_gds::Result<Value> {
    let pin = r.pin();
    let job = r.table(&pin, ns, part::DATA)?;
    let posted = r.table(&pin, ns, part::POSTED)?;
    let local = match rank {
        TargetRank::Rank(n) => jobdata::is_local(job, n).unwrap(),
        _ => true,
    };
    modex::get(posted, rank, key, local, scope).map(|v| v.to_value())
}

fn card(s: &str) -> Value {
    Value::ByteObject(s.as_bytes().to_vec())
}

#[test]
fn s5_2_1_1_scopes_decide_who_sees_posted_data() {
    let (_b, mut w) = store();
    let mut p = Posted::new();
    // Rank 1 is local (committed data), rank 5 remote (delivered by a fence).
    for (rank, scope, key) in [
        (1, Scope::Local, "l"),
        (1, Scope::Remote, "r"),
        (1, Scope::Global, "g"),
        (5, Scope::Local, "l"),
        (5, Scope::Remote, "r"),
        (5, Scope::Global, "g"),
    ] {
        p.put(rank, scope, key, &card(&format!("{rank}{key}")))
            .unwrap();
    }
    publish(&mut w, "ns", &p, true);
    let r = Reader::attach(w.path()).unwrap();
    let g = |rank, key| get(&r, "ns", TargetRank::Rank(rank), key, None);
    // PMIX_LOCAL: "only available to processes on the local node".
    assert_eq!(g(1, "l").unwrap(), card("1l"));
    assert!(matches!(g(5, "l"), Err(Error::ExistsOutsideScope)));
    // PMIX_REMOTE: "only available to processes on remote nodes" (5.4: EXISTS_OUTSIDE_SCOPE).
    assert!(matches!(g(1, "r"), Err(Error::ExistsOutsideScope)));
    assert_eq!(g(5, "r").unwrap(), card("5r"));
    // PMIX_GLOBAL: "shared with all other requesting processes, regardless of location".
    assert_eq!(g(1, "g").unwrap(), card("1g"));
    assert_eq!(g(5, "g").unwrap(), card("5g"));
    // Absent: NOT_FOUND, so the server can wait, ask its host, or answer (5.3 step 3).
    assert!(matches!(g(1, "missing"), Err(Error::NotFound)));
    assert!(matches!(g(7, "g"), Err(Error::NotFound)));
}

#[test]
fn s5_4_data_scope_narrows_the_search_to_one_scope() {
    let (_b, mut w) = store();
    let mut p = Posted::new();
    p.put(2, Scope::Global, "g", &card("g")).unwrap();
    p.put(2, Scope::Local, "l", &card("l")).unwrap();
    publish(&mut w, "ns", &p, true);
    let r = Reader::attach(w.path()).unwrap();
    let g = |key, s| get(&r, "ns", TargetRank::Rank(2), key, Some(s));
    assert_eq!(g("g", Scope::Global).unwrap(), card("g"));
    assert!(matches!(
        g("g", Scope::Local),
        Err(Error::ExistsOutsideScope)
    ));
    assert_eq!(g("l", Scope::Local).unwrap(), card("l"));
    assert!(matches!(
        g("l", Scope::Global),
        Err(Error::ExistsOutsideScope)
    ));
}

#[test]
fn s5_1_reserved_keys_and_internal_data_are_refused() {
    let mut p = Posted::new();
    assert!(matches!(
        p.put(0, Scope::Global, "pmix.job.size", &Value::Uint32(1)),
        Err(Error::InvalidArgument(_))
    ));
    assert!(
        matches!(Scope::from_raw(4), Err(Error::InvalidArgument(m)) if m.contains("PMIX_INTERNAL"))
    );
    assert!(matches!(Scope::from_raw(0), Err(Error::InvalidArgument(_))));
    assert_eq!(Scope::from_raw(3).unwrap(), Scope::Global);
}

/// Only a process posts data: a special rank value (WILDCARD, UNDEF, LOCAL_NODE,
/// PMIX_RANK_VALID and above) is refused as a poster, one call at a time and in a fence batch.
#[test]
fn special_rank_values_cannot_post() {
    let valid_limit = u32::MAX - 50; // PMIX_RANK_VALID
    for rank in [
        u32::MAX,
        u32::MAX - 1,
        u32::MAX - 2,
        0xffff_fff0,
        valid_limit,
    ] {
        let mut p = Posted::new();
        assert!(
            matches!(
                p.put(rank, Scope::Global, "card", &card("x")),
                Err(Error::InvalidArgument(_))
            ),
            "rank {rank:#x} posted"
        );
        let mut b = modex::FenceBatch::new();
        assert!(
            matches!(
                b.put(rank, Scope::Remote, "card", &card("x")),
                Err(Error::InvalidArgument(_))
            ),
            "rank {rank:#x} in a fence batch"
        );
        assert!(b.is_empty());
    }
    let mut p = Posted::new();
    p.put(valid_limit - 1, Scope::Global, "card", &card("x"))
        .unwrap();
}

#[test]
fn a_provider_replaces_its_value_and_a_held_view_stays_valid() {
    let (_b, mut w) = store();
    let mut p = Posted::new();
    p.put(0, Scope::Global, "card", &card("v1")).unwrap();
    publish(&mut w, "ns", &p, true);
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let old = modex::get(
        r.table(&pin, "ns", part::POSTED).unwrap(),
        TargetRank::Rank(0),
        "card",
        true,
        None,
    )
    .unwrap();
    // Latest wins, whatever the scope of the new put.
    p.put(0, Scope::Local, "card", &card("v2")).unwrap();
    publish(&mut w, "ns", &p, false);
    assert_eq!(
        old.as_bytes(),
        Some(&b"v1"[..]),
        "the old view reads the same after the writer moved on"
    );
    assert_eq!(
        get(&r, "ns", TargetRank::Rank(0), "card", None).unwrap(),
        card("v2")
    );
    assert!(matches!(
        get(&r, "ns", TargetRank::Rank(0), "card", Some(Scope::Global)),
        Err(Error::ExistsOutsideScope)
    ));
}

#[test]
fn s5_1_rank_undef_finds_a_globally_unique_key() {
    let (_b, mut w) = store();
    let mut p = Posted::new();
    p.put(
        6,
        Scope::Global,
        "unique.service",
        &Value::String("tcp://10.0.0.6:99".into()),
    )
    .unwrap();
    publish(&mut w, "ns", &p, true);
    let r = Reader::attach(w.path()).unwrap();
    assert_eq!(
        get(&r, "ns", TargetRank::Undef, "unique.service", None).unwrap(),
        Value::String("tcp://10.0.0.6:99".into())
    );
    assert!(matches!(
        get(&r, "ns", TargetRank::Undef, "nobody.posted", None),
        Err(Error::NotFound)
    ));
}

#[test]
fn withdraw_removes_one_rank_s_key_in_every_scope_and_its_rank_undef_entry() {
    let (_b, mut w) = store();
    let mut p = Posted::new();
    p.put(0, Scope::Global, "k", &card("0")).unwrap();
    p.put(1, Scope::Local, "k", &card("1")).unwrap();
    p.put(1, Scope::Remote, "j", &card("1j")).unwrap();
    // Rank 1's k is not the indexed one (rank 0 posted k first): the index stays.
    assert!(p.withdraw(1, "k").unwrap());
    assert!(!p.withdraw(1, "k").unwrap());
    publish(&mut w, "ns", &p, true);
    let r = Reader::attach(w.path()).unwrap();
    let g = |rank, key| get(&r, "ns", rank, key, None);
    for s in [
        None,
        Some(Scope::Local),
        Some(Scope::Remote),
        Some(Scope::Global),
    ] {
        assert!(matches!(
            get(&r, "ns", TargetRank::Rank(1), "k", s),
            Err(Error::NotFound)
        ));
    }
    assert!(matches!(
        g(TargetRank::Rank(1), "j"),
        Err(Error::ExistsOutsideScope)
    ));
    assert_eq!(g(TargetRank::Undef, "k").unwrap(), card("0"));
    // The indexed poster's k: the index entry goes with it.
    assert!(p.withdraw(0, "k").unwrap());
    publish(&mut w, "ns", &p, false);
    r.refresh().unwrap();
    assert!(matches!(g(TargetRank::Rank(0), "k"), Err(Error::NotFound)));
    assert!(matches!(g(TargetRank::Undef, "k"), Err(Error::NotFound)));
    // The next poster of k, by put or by a fence batch, is indexed again.
    let mut batch = FenceBatch::new();
    batch.put(5, Scope::Remote, "k", &card("5")).unwrap();
    p.apply(batch).unwrap();
    publish(&mut w, "ns", &p, false);
    r.refresh().unwrap();
    let pin = r.pin();
    assert_eq!(
        modex::undef_rank(r.table(&pin, "ns", part::POSTED).unwrap(), "k"),
        Some(5)
    );
    assert!(matches!(
        p.withdraw(rshm_gds::jobdata::query::RANK_VALID, "k"),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn a_table_put_and_removed_in_one_transaction_leaves_no_file() {
    let (_b, mut w) = store();
    let mut p = Posted::new();
    p.put(0, Scope::Global, "k", &card("0")).unwrap();
    publish(&mut w, "ns", &p, true);
    let before = w.files().unwrap();
    let mut tx = w.begin();
    tx.put_table_packable("ns", part::POSTED, p.table())
        .unwrap();
    tx.remove_table("ns", part::POSTED).unwrap();
    tx.commit().unwrap();
    let after = w.files().unwrap();
    // The posted tables (the published one, the one put and removed) and the roots are in the
    // pack: no file appears, none is left.
    assert_eq!(after, before);
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    assert!(matches!(
        r.table(&pin, "ns", part::POSTED),
        Err(Error::NotFound)
    ));
    assert!(r.table(&pin, "ns", part::DATA).is_ok());
}

/// How many of a fence batch's `procs` cards a reader finds, checking each one it finds is the
/// card its process posted.
fn cards_found(t: &rshm_gds::TableView, procs: u32) -> u32 {
    let mut found = 0;
    for rank in 0..procs {
        if let Ok(v) = modex::get(t, TargetRank::Rank(rank), "card", false, None) {
            assert_eq!(
                v.to_value(),
                Value::ByteObject(vec![rank as u8; 64]),
                "rank {rank}: a card that was never posted"
            );
            found += 1;
        }
    }
    found
}

/// A reader reading in a loop while one commit publishes a whole fence batch sees the store
/// before it (no card) and after it (every card), and nothing in between.
#[test]
fn a_fence_batch_is_seen_whole_or_not_at_all() {
    const PROCS: u32 = 2000;
    let (_b, mut w) = store();
    publish(&mut w, "ns", &Posted::new(), true);
    let r = Arc::new(Reader::attach(w.path()).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    // Set once the reader has seen the store without the batch, then with it: the writer waits
    // for each rather than guessing how long a loaded machine takes to schedule the reader.
    let saw_none = Arc::new(AtomicBool::new(false));
    let saw_all = Arc::new(AtomicBool::new(false));
    let (tx_done, rx_done) = mpsc::channel();
    let reader = {
        let (r, stop) = (r.clone(), stop.clone());
        let (saw_none, saw_all) = (saw_none.clone(), saw_all.clone());
        std::thread::spawn(move || {
            let (mut none, mut all) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let pin = r.pin();
                let t = r.table(&pin, "ns", part::POSTED).unwrap();
                match cards_found(t, PROCS) {
                    0 => {
                        none += 1;
                        saw_none.store(true, Ordering::Relaxed);
                    }
                    PROCS => {
                        all += 1;
                        saw_all.store(true, Ordering::Relaxed);
                    }
                    part => panic!("a reader saw {part} of {PROCS} cards of one fence batch"),
                }
            }
            tx_done.send((none, all)).unwrap();
        })
    };
    common::wait_until(Duration::from_secs(60), || {
        saw_none.load(Ordering::Relaxed) || reader.is_finished()
    });
    let mut p = Posted::new();
    for rank in 0..PROCS {
        p.put(
            rank,
            Scope::Global,
            "card",
            &Value::ByteObject(vec![rank as u8; 64]),
        )
        .unwrap();
    }
    publish(&mut w, "ns", &p, false);
    common::wait_until(Duration::from_secs(60), || {
        saw_all.load(Ordering::Relaxed) || reader.is_finished()
    });
    stop.store(true, Ordering::Relaxed);
    let done = rx_done.recv_timeout(Duration::from_secs(60));
    // A reader that panicked (saw part of the batch) dropped its sender: report its panic.
    if let Err(e) = reader.join() {
        std::panic::resume_unwind(e);
    }
    let (none, all) = done.expect("reader stuck");
    assert!(none > 0, "the reader never saw the store before the batch");
    assert!(
        all > 0,
        "the reader did not see the batch within 60 s ({none} reads without it)"
    );
}

#[test]
fn a_thousand_namespaces_come_and_go_and_leave_nothing() {
    let (_b, mut w) = store();
    let r = Reader::attach(w.path()).unwrap();
    let rss = || common::status_kb("VmRSS");
    let mut rss_at_100 = 0;
    let count: u32 = std::env::var("RSHM_SOAK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    for i in 0..count {
        let ns = format!("spawn-{i}");
        let mut p = Posted::new();
        for rank in 0..8 {
            p.put(
                rank,
                Scope::Global,
                "card",
                &Value::ByteObject(vec![i as u8; 256]),
            )
            .unwrap();
        }
        publish(&mut w, &ns, &p, true);
        assert_eq!(
            get(&r, &ns, TargetRank::Rank(5), "card", None).unwrap(),
            Value::ByteObject(vec![i as u8; 256])
        );
        let mut tx = w.begin();
        tx.remove_namespace(&ns);
        tx.commit().unwrap();
        if i == 100 {
            rss_at_100 = rss();
        }
    }
    let files = w.files().unwrap();
    assert_eq!(
        files.len(),
        2,
        "only the anchor and the (empty) root remain: {files:?}"
    );
    assert!(w.namespaces().is_empty());
    let grown = rss().saturating_sub(rss_at_100);
    eprintln!(
        "{count} namespaces: RSS grew {grown} KiB after the first 100 (4000: 1.8 MiB; bounded)"
    );
    assert!(
        grown < 8 * 1024,
        "writer + reader memory grew {grown} KiB over 900 namespaces"
    );
}
