//! `Server::define_pset` / `delete_pset` (17.2.19-20): each change one generation; a call that
//! fails publishes nothing and changes nothing.

use gds::psets;
use gds::{part, Error, Reader};
use rshm_server::server::{Server, ServerOptions};

fn names(r: &Reader) -> Vec<String> {
    let pin = r.pin();
    let base = r.table(&pin, psets::NAMESPACE, part::PSETS).ok();
    let delta = r.table(&pin, psets::DELTA_NAMESPACE, part::PSETS).ok();
    psets::names(&psets::sets_of_tables(base, delta).unwrap())
}

#[test]
fn each_define_and_delete_is_one_generation_and_a_failure_changes_nothing() {
    let base = tempfile::tempdir().unwrap();
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    s.define_pset("a", &[("job", 0), ("job", 1)]).unwrap();
    let r = Reader::attach(s.path()).unwrap();
    let g0 = s.stats().publications;
    s.define_pset("b", &[("job", 2)]).unwrap();
    assert_eq!(s.stats().publications, g0 + 1);
    assert_eq!(names(&r), ["a", "b"]);
    // Refused: a name longer than PMIX_MAX_NSLEN; an unknown delete.
    assert!(matches!(
        s.define_pset(&"x".repeat(256), &[("job", 0)]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(s.delete_pset("zzz"), Err(Error::NotFound)));
    assert_eq!(s.stats().publications, g0 + 1);
    s.delete_pset("a").unwrap();
    assert_eq!(s.stats().publications, g0 + 2);
    assert_eq!(names(&r), ["b"]);
}
