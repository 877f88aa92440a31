//! `Server::stage` + `Server::flush`: values received one at a time (a commit's keys) are
//! published as one generation, in the order staged; a value the store refuses withdraws its
//! key in that generation; a flush that cannot be written withdraws every staged key instead.

mod common;

use std::path::Path;

use rshm_gds::jobdata::TargetRank;
use rshm_gds::modex::{self, Scope};
use rshm_gds::{Error, Reader, Value};
use rshm_server::server::{Flushed, PostedValue, Server, ServerOptions, Withdrawn};

fn posted(ns: &str, rank: u32, key: &str, value: Value) -> PostedValue {
    PostedValue {
        nspace: ns.into(),
        rank,
        scope: Scope::Global as u8,
        key: key.into(),
        value,
    }
}

fn text(s: &str) -> Value {
    Value::String(s.into())
}

fn open(base: &Path) -> Server {
    Server::open(ServerOptions {
        base_dir: Some(base.into()),
        ..ServerOptions::default()
    })
    .unwrap()
}

fn get(r: &Reader, ns: &str, rank: u32, key: &str) -> rshm_gds::Result<Value> {
    r.refresh().unwrap();
    let pin = r.pin();
    modex::find(r, &pin, ns, TargetRank::Rank(rank), key, |_| true, None).map(|(v, _)| v.to_value())
}

#[test]
fn staged_values_are_unseen_until_one_flush_publishes_them_all() {
    let base = tempfile::tempdir().unwrap();
    let mut s = open(base.path());
    s.store(&[posted("ns", 0, "k0", text("old"))]).unwrap();
    let r = Reader::attach(s.path()).unwrap();
    let before = s.stats().publications;

    assert!(s.stage(posted("ns", 1, "k0", text("a"))));
    for i in 1..16 {
        assert!(!s.stage(posted("ns", 1, &format!("k{i}"), text("b"))));
    }
    // latest wins within the batch
    s.stage(posted("ns", 1, "k0", text("c")));
    assert_eq!(s.staged(), 17);
    assert!(matches!(get(&r, "ns", 1, "k0"), Err(Error::NotFound)));
    assert_eq!(s.stats().publications, before);

    assert_eq!(
        s.flush().unwrap(),
        Flushed {
            values: 17,
            refused: 0
        }
    );
    assert_eq!(s.stats().publications, before + 1);
    assert_eq!(s.staged(), 0);
    assert_eq!(get(&r, "ns", 1, "k0").unwrap(), text("c"));
    assert_eq!(get(&r, "ns", 1, "k15").unwrap(), text("b"));
    assert_eq!(get(&r, "ns", 0, "k0").unwrap(), text("old"));
    // Nothing staged: no generation.
    assert_eq!(s.flush().unwrap(), Flushed::default());
    assert_eq!(s.stats().publications, before + 1);
    drop(r);
    s.close().unwrap();
}

#[test]
fn a_refused_value_withdraws_its_key_in_the_same_generation() {
    let base = tempfile::tempdir().unwrap();
    let mut s = open(base.path());
    s.store(&[
        posted("ns", 0, "k", text("v1")),
        posted("ns", 0, "j", text("j1")),
    ])
    .unwrap();
    let r = Reader::attach(s.path()).unwrap();
    let before = s.stats().publications;

    s.stage(posted("ns", 0, "l", text("l2")));
    // a value the store cannot read (the C ABI stages it so)
    s.stage_refused("ns", 0, "k");
    // a value the store refuses (a reserved key), after a value of the same key
    s.stage(posted("ns", 0, "j", text("j2")));
    s.stage(posted("ns", 0, "j", text("j3")));
    s.stage(posted("ns", 0, "pmix.j", text("reserved")));
    s.stage(PostedValue {
        scope: 4, // PMIX_INTERNAL
        ..posted("ns", 0, "m", text("internal"))
    });

    let f = s.flush().unwrap();
    assert_eq!(f.values, 6);
    assert_eq!(f.refused, 3, "k, pmix.j and m");
    assert_eq!(s.stats().publications, before + 1);
    assert_eq!(get(&r, "ns", 0, "l").unwrap(), text("l2"));
    assert!(matches!(get(&r, "ns", 0, "k"), Err(Error::NotFound)));
    assert_eq!(get(&r, "ns", 0, "j").unwrap(), text("j3"));
    assert!(matches!(get(&r, "ns", 0, "m"), Err(Error::NotFound)));
    drop(r);
    s.close().unwrap();
}

#[test]
fn other_changes_of_posted_data_come_after_what_is_staged() {
    let base = tempfile::tempdir().unwrap();
    let mut s = open(base.path());
    let r = Reader::attach(s.path()).unwrap();

    // A store (a fence's data) after staged values: it wins, in two generations.
    s.stage(posted("ns", 0, "k", text("staged")));
    assert!(s.staged_by_other("ns", 1));
    assert!(!s.staged_by_other("ns", 0));
    let before = s.stats().publications;
    s.store(&[posted("ns", 0, "k", text("fence"))]).unwrap();
    assert_eq!(s.staged(), 0);
    assert_eq!(s.stats().publications, before + 2);
    assert_eq!(get(&r, "ns", 0, "k").unwrap(), text("fence"));

    // A withdrawal after a staged value withdraws it.
    s.stage(posted("ns", 0, "k", text("again")));
    assert_eq!(s.withdraw("ns", 0, "k").unwrap(), Withdrawn::Key);
    assert!(matches!(get(&r, "ns", 0, "k"), Err(Error::NotFound)));

    // Deregistering a namespace forgets what is staged for it, not for others.
    s.stage(posted("gone", 0, "k", text("x")));
    s.stage(posted("ns", 1, "k", text("y")));
    s.deregister_nspace("gone").unwrap();
    assert_eq!(s.staged(), 1);
    s.flush().unwrap();
    assert_eq!(get(&r, "ns", 1, "k").unwrap(), text("y"));
    r.refresh().unwrap();
    let pin = r.pin();
    assert!(r
        .namespaces(&pin)
        .unwrap()
        .iter()
        .all(|(ns, _)| ns != "gone"));
    drop(pin);
    drop(r);
    s.close().unwrap();
}

#[test]
fn a_flush_that_cannot_be_written_withdraws_the_staged_keys() {
    let Some(dir) = common::SmallTmpfs::mount() else {
        return;
    };

    let mut s = open(dir.path());
    s.store(&[
        posted("ns", 0, "k", text("v1")),
        posted("ns", 1, "j", text("j1")),
    ])
    .unwrap();
    let r = Reader::attach(s.path()).unwrap();
    // 2 MiB into a 1 MiB filesystem: the generation cannot be written.
    s.stage(posted("ns", 0, "k", text("v2")));
    s.stage(posted("ns", 0, "big", Value::ByteObject(vec![7; 2 << 20])));
    let err = s.flush().unwrap_err();
    assert!(matches!(err.error, Error::OutOfSpace), "{:?}", err.error);
    assert_eq!(err.withdrawn, Some(Withdrawn::Key));
    // Never the older value; the other rank's key stays.
    assert!(matches!(get(&r, "ns", 0, "k"), Err(Error::NotFound)));
    assert!(matches!(get(&r, "ns", 0, "big"), Err(Error::NotFound)));
    assert_eq!(get(&r, "ns", 1, "j").unwrap(), text("j1"));
    assert_eq!(s.staged(), 0);
    // Later values publish as usual.
    s.stage(posted("ns", 0, "k", text("v3")));
    s.flush().unwrap();
    assert_eq!(get(&r, "ns", 0, "k").unwrap(), text("v3"));
    drop(r);
    s.close().unwrap();
}
