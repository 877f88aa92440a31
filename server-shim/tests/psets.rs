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

/// A set may not take a registered namespace's name (17.2.19: set names do not conflict with
/// namespaces; a Get of `{name, PMIX_RANK_WILDCARD}` would name either), nor may one call define
/// more than `MAX_SETS_PER_CALL` sets; each refusal publishes and changes nothing.
#[test]
fn a_set_named_as_a_registered_namespace_or_too_many_sets_are_refused() {
    let base = tempfile::tempdir().unwrap();
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    s.register_nspace(
        "job",
        0,
        &[gds::Info::new("pmix.job.size", gds::Value::Uint32(4))],
    )
    .unwrap();
    s.define_pset("a", &[("job", 0)]).unwrap();
    let g0 = s.stats().publications;
    let e = s.define_pset("job", &[("job", 1)]).unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(_)) && e.to_string().contains("registered namespace"),
        "{e}"
    );
    let e = s
        .define_psets(&[("b", vec![("job", 1)]), ("job", vec![("job", 2)])])
        .unwrap_err();
    assert!(e.to_string().contains("registered namespace"), "{e}");
    let too_many: Vec<(String, Vec<(&str, u32)>)> = (0..=psets::MAX_SETS_PER_CALL)
        .map(|i| (format!("s{i}"), Vec::new()))
        .collect();
    let too_many: Vec<(&str, Vec<(&str, u32)>)> = too_many
        .iter()
        .map(|(n, m)| (n.as_str(), m.clone()))
        .collect();
    let e = s.define_psets(&too_many).unwrap_err();
    assert!(
        e.to_string().contains("more than one call may define"),
        "{e}"
    );
    assert_eq!(s.stats().publications, g0);
    let r = Reader::attach(s.path()).unwrap();
    assert_eq!(names(&r), ["a"]);
    // Deregistered, the name is free.
    s.deregister_nspace("job").unwrap();
    s.define_pset("job", &[("other", 0)]).unwrap_err();
    s.define_pset("job2", &[("other", 0)]).unwrap();
}
