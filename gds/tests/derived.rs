//! What a layer above the store derives from a mapped table and the view keeps: a byte per key
//! (`TableView::key_tag`) and one value (`TableView::derived`), and job data's use of them (its
//! default realms and `JobMeta`).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use rshm_gds::jobdata::{self, keys, Qualifiers, TargetRank};
use rshm_gds::{part, JobMeta, KeyTag, Realm, TableBuilder, Value};

/// A registration with a session, a node map naming the store's node, and a session key.
fn registration() -> Vec<rshm_gds::Info> {
    let info = rshm_gds::Info::new;
    vec![
        info(keys::SESSION_ID, Value::Uint32(7)),
        info(keys::NODE_MAP, Value::String("n0,n1".into())),
        info(keys::PROC_MAP, Value::String("0,1;2,3".into())),
        info("pmix.univ.size", Value::Uint32(64)),
    ]
}

#[test]
fn derived_is_computed_once_per_view_and_keeps_one_type() {
    let mut b = TableBuilder::new();
    b.insert(Realm::Job, "a", &Value::Uint32(1)).unwrap();
    let (_dir, _w, r) = common::published("ns", &b);
    let pin = r.pin();
    let t = r.table(&pin, "ns", part::DATA).unwrap();
    let calls = AtomicUsize::new(0);
    let init = |t: &rshm_gds::TableView| {
        calls.fetch_add(1, Ordering::Relaxed);
        t.key_count() * 10
    };
    assert_eq!(t.derived(init), Some(&10u32));
    assert_eq!(t.derived(init), Some(&10u32));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
    // Another type: no cache for it, and the first type's value stays.
    assert_eq!(t.derived(|_| 5u8), None);
    assert_eq!(t.derived(init), Some(&10u32));
    assert_eq!(calls.load(Ordering::Relaxed), 1);
}

static LEN_CALLS: AtomicUsize = AtomicUsize::new(0);

/// A key's length.
struct Len;

impl KeyTag for Len {
    fn tag(name: &[u8]) -> u8 {
        LEN_CALLS.fetch_add(1, Ordering::Relaxed);
        name.len() as u8
    }
}

/// A key's first byte.
struct First;

impl KeyTag for First {
    fn tag(name: &[u8]) -> u8 {
        name[0]
    }
}

#[test]
fn key_tags_are_computed_once_per_view_for_one_tagger() {
    let mut b = TableBuilder::new();
    b.insert(Realm::Job, "ab", &Value::Uint32(1)).unwrap();
    b.insert(Realm::Job, "xyz", &Value::Uint32(2)).unwrap();
    let (_dir, _w, r) = common::published("ns", &b);
    let pin = r.pin();
    let t = r.table(&pin, "ns", part::DATA).unwrap();
    let (ab, xyz) = (t.key_id(b"ab").unwrap(), t.key_id(b"xyz").unwrap());
    assert_eq!(t.key_tag::<Len>(ab), Some(2));
    assert_eq!(t.key_tag::<Len>(xyz), Some(3));
    assert_eq!(t.key_tag::<Len>(t.key_count()), None);
    // Every key once, on the first call.
    assert_eq!(LEN_CALLS.load(Ordering::Relaxed), 2);
    // Another tagger: computed per call, still right; the first one's tags stay.
    assert_eq!(t.key_tag::<First>(xyz), Some(b'x'));
    assert_eq!(t.key_tag::<First>(t.key_count()), None);
    assert_eq!(t.key_tag::<Len>(ab), Some(2));
    assert_eq!(LEN_CALLS.load(Ordering::Relaxed), 2);
}

/// Job data answers alike whether its `JobMeta` is cached or (the slot taken by another type)
/// computed per call.
#[test]
fn job_data_answers_with_and_without_its_cached_facts() {
    let (b, summary) = jobdata::build(Some("n1"), &registration()).unwrap();
    assert_eq!(summary.local_nodeid, Some(1));
    let want = JobMeta {
        session: Some(7),
        local_node: Some(1),
        local_host_id: Some(1),
    };
    let (_dir, _w, r) = common::published("ns", &b);
    let pin = r.pin();
    let cached = r.table(&pin, "ns", part::DATA).unwrap();
    let (_dir2, _w2, r2) = common::published("ns", &b);
    let pin2 = r2.pin();
    let uncached = r2.table(&pin2, "ns", part::DATA).unwrap();
    assert_eq!(uncached.derived(|_| ()), Some(&()));

    let q = Qualifiers::default();
    for t in [cached, uncached] {
        assert_eq!(t.job_meta(), want);
        let get = |rank, key| {
            jobdata::get(t, None, Some(0), rank, key, &q)
                .unwrap()
                .to_value()
        };
        // A session key of the session registered; a node key of the store's own node.
        assert_eq!(
            get(TargetRank::Wildcard, "pmix.univ.size"),
            Value::Uint32(64)
        );
        assert_eq!(
            get(TargetRank::Wildcard, keys::HOSTNAME),
            Value::String("n1".into())
        );
        // A job key of rank wildcard; a proc key of a rank.
        assert_eq!(get(TargetRank::Wildcard, keys::JOB_SIZE), Value::Uint32(4));
        assert_eq!(get(TargetRank::Rank(3), keys::LOCAL_RANK), Value::Uint16(1));
    }
}
