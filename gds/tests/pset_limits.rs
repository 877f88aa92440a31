//! What a process set may be named and hold (docs/psets-groups.md, "Names and members"): names
//! and members that would make an answer ambiguous are refused, a set's size is bounded, and a
//! member answer larger than its bound is an error, not an allocation. Each refusal changes
//! nothing.

mod common;

use rshm_gds::psets::index::{self, Run, SetSpec};
use rshm_gds::psets::{self, Registry, Sets};
use rshm_gds::{Error, Value};

const W: u32 = u32::MAX - 1;

fn refused(reg: &mut Registry, name: &str, members: &[(&str, u32)], says: &str) {
    let before = reg.encode().unwrap();
    match reg.define(name, members) {
        Err(Error::InvalidArgument(why)) => assert!(why.contains(says), "{name:?}: {why}"),
        other => panic!("{name:?} {members:?}: {other:?}"),
    }
    assert_eq!(
        reg.encode().unwrap(),
        before,
        "{name:?}: the refusal changed the sets"
    );
}

#[test]
fn names_that_make_answers_ambiguous_are_refused() {
    let mut reg = Registry::new();
    reg.define("ok-1.a_b", &[("job", 0)]).unwrap();
    for (name, says) in [
        ("a,b", "','"),
        ("a\nb", "white space"),
        ("a b", "white space"),
        ("tab\t", "white space"),
        ("bell\u{7}", "control"),
        ("rshm.psets", "rshm."),
        ("rshm.x", "rshm."),
        ("", "1..=255"),
    ] {
        refused(&mut reg, name, &[("job", 1)], says);
    }
    // A set named as a namespace members name, or a member namespace named as a set.
    refused(&mut reg, "job", &[("other", 1)], "ambiguous");
    refused(&mut reg, "self", &[("self", 1)], "ambiguous");
    refused(&mut reg, "s2", &[("ok-1.a_b", 1)], "ambiguous");
    // Eleven sets read back as eleven names.
    let mut reg = Registry::new();
    for i in 0..11 {
        reg.define(&format!("s{i}"), &[("job", i)]).unwrap();
    }
    let bytes = reg.encode().unwrap();
    let ix = psets::index::IndexView::new(&bytes).unwrap();
    let names = psets::query(&Sets::single(ix), psets::QUERY_PSET_NAMES, None).unwrap();
    match names {
        Value::String(s) => assert_eq!(s.split(',').count(), 11, "{s}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn reserved_ranks_and_repeated_members_are_refused() {
    let mut reg = Registry::new();
    for (rank, says) in [
        (u32::MAX, "PMIX_RANK_UNDEF"),
        (u32::MAX - 2, "PMIX_RANK_LOCAL_NODE"),
        (u32::MAX - 3, "PMIX_RANK_INVALID"),
        (u32::MAX - 4, "PMIX_RANK_LOCAL_PEERS"),
        (u32::MAX - 50, "reserved rank"),
    ] {
        refused(&mut reg, "s", &[("job", 0), ("job", rank)], says);
    }
    refused(&mut reg, "s", &[("job", 3), ("job", 3)], "listed twice");
    refused(
        &mut reg,
        "s",
        &[("job", 1), ("job", 2), ("job", 0), ("job", 2)],
        "listed twice",
    );
    refused(
        &mut reg,
        "s",
        &[("job", 0), ("job", 5), ("job", 3), ("job", 4), ("job", 5)],
        "listed twice",
    );
    refused(&mut reg, "s", &[("job", 7), ("job", W)], "listed twice");
    refused(&mut reg, "s", &[("job", W), ("job", W)], "listed twice");
    refused(
        &mut reg,
        "s",
        &[("a", 1), ("b", 1), ("a", W), ("b", 0)],
        "listed twice",
    );
    // The same rank of two namespaces, a wildcard of another, ranks out of order: accepted.
    reg.define(
        "t",
        &[("a", 1), ("b", 1), ("c", W), ("b", 0), ("a", 9), ("a", 2)],
    )
    .unwrap();
    assert_eq!(reg.len(), 1);
}

#[test]
fn a_set_larger_than_the_limit_is_refused() {
    let mut reg = Registry::new();
    let at_limit: Vec<(&str, u32)> = (0..psets::MAX_MEMBERS as u32).map(|r| ("job", r)).collect();
    reg.define("big", &at_limit).unwrap();
    let over: Vec<(&str, u32)> = (0..=psets::MAX_MEMBERS as u32)
        .map(|r| ("job", r))
        .collect();
    refused(&mut reg, "bigger", &over, "more than a set may have");
    assert_eq!(reg.len(), 1);
}

#[test]
fn a_member_answer_over_its_bound_is_an_error_not_an_allocation() {
    // Only a forged (or foreign) index holds such a set: the writer refuses to define it.
    let runs = [Run {
        ns: 0,
        first: 0,
        count: 100_000_000,
    }];
    let bytes = index::encode(
        &["job"],
        &[SetSpec {
            name: "huge",
            runs: &runs,
        }],
    )
    .unwrap();
    let base = common::base_dir();
    let mut w = rshm_gds::Writer::create(common::opts(base.path())).unwrap();
    let mut tx = w.begin();
    psets::stage_indexes(&mut tx, &[(0, bytes)]).unwrap();
    tx.commit().unwrap();
    let r = rshm_gds::Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let sets = psets::read(&r, &pin).unwrap();
    let i = sets.find("huge").unwrap();
    assert_eq!(sets.member_count(i), 100_000_000);
    let e = psets::check_answer_size(&sets, i).unwrap_err();
    assert!(e.to_string().contains("more than an answer holds"), "{e}");
    let q = psets::query(&sets, psets::QUERY_PSET_MEMBERSHIP, Some("huge")).unwrap_err();
    assert!(matches!(q, Error::InvalidArgument(_)), "{q:?}");
    // The set's name still answers: it is listed and counted.
    assert!(psets::names_of(&sets, "job", 5).is_some());
}
