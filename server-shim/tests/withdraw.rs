//! `Server::withdraw`: a (namespace, rank, key) the store could not take a new value of is
//! removed in every scope, in one generation, so that readers fall through to whatever else
//! holds the new value instead of reading the older one here.

use rshm_gds::jobdata::TargetRank;
use rshm_gds::modex::{self, Scope};
use rshm_gds::{part, Error, Reader, Value};
use rshm_server::server::{PostedValue, Server, ServerOptions};

fn posted(rank: u32, scope: Scope, key: &str, v: &str) -> PostedValue {
    PostedValue {
        nspace: "ns".into(),
        rank,
        scope: scope as u8,
        key: key.into(),
        value: Value::String(v.into()),
    }
}

/// What a reader gets for (rank, key) from every side: local, remote, and each data scope.
fn answers(r: &Reader, rank: TargetRank, key: &str) -> Vec<rshm_gds::Result<Value>> {
    r.refresh().unwrap();
    let pin = r.pin();
    let get = |local: bool, scope: Option<Scope>| {
        modex::find(r, &pin, "ns", rank, key, |_| local, scope).map(|(v, _)| v.to_value())
    };
    let mut out = Vec::new();
    for local in [true, false] {
        out.push(get(local, None));
        for s in Scope::ALL {
            out.push(get(local, Some(s)));
        }
    }
    out
}

/// The RANK_UNDEF poster of `key` as the index table names it (none: no index table).
fn undef_poster(r: &Reader, key: &str) -> Option<u32> {
    let pin = r.pin();
    let index = r.table(&pin, "ns", part::POSTED_INDEX).ok()?;
    modex::undef_rank(index, key)
}

fn not_found(a: &[rshm_gds::Result<Value>]) -> bool {
    a.iter().all(|x| matches!(x, Err(Error::NotFound)))
}

#[test]
fn withdraw_removes_a_key_of_one_rank_in_every_scope_in_one_generation() {
    let base = tempfile::tempdir().unwrap();
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    s.store(&[
        posted(0, Scope::Global, "k", "v1"),
        posted(0, Scope::Local, "other", "o0"),
        posted(1, Scope::Remote, "k", "r1"),
    ])
    .unwrap();
    let r = Reader::attach(s.path()).unwrap();
    assert!(!not_found(&answers(&r, TargetRank::Rank(0), "k")));
    let other = answers(&r, TargetRank::Rank(0), "other");
    let rank1 = answers(&r, TargetRank::Rank(1), "k");
    let before = s.stats().publications;

    s.withdraw("ns", 0, "k").unwrap();

    assert!(not_found(&answers(&r, TargetRank::Rank(0), "k")));
    // One transaction: the rank's table, the index and their root.
    assert_eq!(s.stats().publications, before + 1);
    let g = |x: &[rshm_gds::Result<Value>]| format!("{x:?}");
    assert_eq!(g(&answers(&r, TargetRank::Rank(0), "other")), g(&other));
    assert_eq!(g(&answers(&r, TargetRank::Rank(1), "k")), g(&rank1));
    // Rank 0 was k's first poster (its RANK_UNDEF rank): that index entry is gone, so a
    // PMIX_RANK_UNDEF lookup of k is not answered from the older value either.
    assert!(not_found(&answers(&r, TargetRank::Undef, "k")));

    // Posted in one scope then withdrawn: a later store of the key is served again, and a
    // withdrawal of what the store lacks publishes nothing it did not hold.
    s.store(&[posted(0, Scope::Local, "k", "v2")]).unwrap();
    assert_eq!(
        answers(&r, TargetRank::Rank(0), "k")[0].as_ref().unwrap(),
        &Value::String("v2".into())
    );
    s.withdraw("ns", 0, "k").unwrap();
    s.withdraw("ns", 0, "k").unwrap();
    s.withdraw("ns", 7, "never").unwrap();
    s.withdraw("absent", 0, "k").unwrap();
    assert!(not_found(&answers(&r, TargetRank::Rank(0), "k")));
    assert!(matches!(
        s.withdraw("ns", u32::MAX, "k"),
        Err(Error::InvalidArgument(_))
    ));
    s.close().unwrap();
}

#[test]
fn the_last_poster_of_a_key_withdrawn_leaves_no_rank_undef_index() {
    let base = tempfile::tempdir().unwrap();
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    s.store(&[posted(3, Scope::Global, "uniq", "u")]).unwrap();
    s.withdraw("ns", 3, "uniq").unwrap();
    let r = Reader::attach(s.path()).unwrap();
    assert!(not_found(&answers(&r, TargetRank::Undef, "uniq")));
    assert_eq!(undef_poster(&r, "uniq"), None);
    // Posted again (by another rank): indexed again.
    s.store(&[posted(2, Scope::Global, "uniq", "w")]).unwrap();
    r.refresh().unwrap();
    assert_eq!(undef_poster(&r, "uniq"), Some(2));
    s.close().unwrap();
}

#[test]
fn withdraw_posted_removes_the_posted_table_only_and_later_commits_start_afresh() {
    let base = tempfile::tempdir().unwrap();
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    let reg = [rshm_gds::Info::new("pmix.univ.size", Value::Uint32(4))];
    s.register_nspace("ns", 1, &reg).unwrap();
    s.store(&[
        posted(0, Scope::Global, "k", "v1"),
        posted(1, Scope::Global, "j", "w"),
    ])
    .unwrap();
    let r = Reader::attach(s.path()).unwrap();
    let files = || s_files(base.path());
    let before = files();

    s.withdraw_posted("ns").unwrap();

    r.refresh().unwrap();
    let pin = r.pin();
    assert!(matches!(
        r.table(&pin, "ns", part::POSTED),
        Err(Error::NotFound)
    ));
    assert!(r.table(&pin, "ns", part::DATA).is_ok());
    drop(pin);
    // The posted tables were in the pack with the roots: no file was written or removed.
    assert_eq!(files(), before);
    // A later commit publishes only what came after.
    s.store(&[posted(2, Scope::Global, "n", "x")]).unwrap();
    assert!(not_found(&answers(&r, TargetRank::Rank(0), "k")));
    assert!(not_found(&answers(&r, TargetRank::Rank(1), "j")));
    assert!(!not_found(&answers(&r, TargetRank::Rank(2), "n")));
    // Withdrawing a table that is not there publishes an unchanged store.
    s.withdraw_posted("absent").unwrap();
    s.close().unwrap();
}

/// The store's files (under the one store directory in `base`).
fn s_files(base: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(base).unwrap() {
        for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
            out.push(f.unwrap().file_name().to_string_lossy().into_owned());
        }
    }
    out
}
