//! Process groups in the store (rshm_gds::psets::groups, docs/psets-groups.md "Groups"): one row per
//! rule of the standard's 12.2, against real stores.

mod common;

use rshm_gds::psets::groups::{self, Group, Groups};
use rshm_gds::psets::{self, IndexView};
use rshm_gds::{part, Error, Info, Reader, Realm, Value, Writer};

use common::store;

fn publish(w: &mut Writer, name: &str, c: groups::Change) {
    let mut tx = w.begin();
    tx.put_table(groups::NAMESPACE, part::GROUPS, &c.index)
        .unwrap();
    match &c.group {
        Some(t) => tx.put_table(name, part::GROUPS, t).unwrap(),
        None => tx.remove_table(name, part::GROUPS).unwrap(),
    }
    tx.commit().unwrap();
}

fn group(members: &[(&str, u32)], ctx: Option<u64>) -> Group {
    Group {
        members: members.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect(),
        context_id: ctx,
        info: vec![Info::new("app.grp.tag", Value::String("blue".into()))],
        endpoints: members
            .iter()
            .map(|(n, r)| Some(format!("ep-{n}-{r}").into_bytes()))
            .collect(),
    }
}

fn names(ix: &IndexView<'_>, ns: &str, rank: u32) -> Vec<String> {
    match psets::names_of(&psets::Sets::single(*ix), ns, rank) {
        Some(Value::DataArray(a)) => a
            .items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => panic!("{other:?}"),
            })
            .collect(),
        None => vec![],
        other => panic!("{other:?}"),
    }
}

fn with_index<T>(r: &Reader, f: impl FnOnce(&IndexView<'_>) -> T) -> T {
    let pin = r.pin();
    let t = r.table(&pin, groups::NAMESPACE, part::GROUPS).unwrap();
    f(&psets::index_of(t).unwrap())
}

/// 12.2 ("assigns a new group rank based on their relative position in the array of processes
/// provided in the call"): group rank r is the r-th member as given, across namespaces; a
/// process may be in several groups at once (12.1: "can simultaneously belong to multiple
/// process groups"), and PMIX_GROUP_NAMES (v5.0 14.2.5) lists them all.
#[test]
fn group_ranks_follow_the_construct_order_and_a_process_is_in_several_groups() {
    let (_d, mut w) = store();
    let mut g = Groups::new();
    let c = g
        .construct(
            "grpA",
            group(&[("job", 3), ("job", 1), ("other", 0)], Some(42)),
        )
        .unwrap();
    publish(&mut w, "grpA", c);
    let c = g
        .construct("grpB", group(&[("job", 1), ("job", 2)], None))
        .unwrap();
    publish(&mut w, "grpB", c);
    let r = Reader::attach(w.path()).unwrap();
    with_index(&r, |ix| {
        let a = ix.find("grpA").unwrap();
        let m = |rank| ix.member_at(a, rank).map(|m| (m.nspace.to_owned(), m.rank));
        assert_eq!(m(0), Some(("job".into(), 3)));
        assert_eq!(m(1), Some(("job".into(), 1)));
        assert_eq!(m(2), Some(("other".into(), 0)));
        assert_eq!(m(3), None, "no group rank 3");
        assert_eq!(names(ix, "job", 1), ["grpA", "grpB"]);
        assert_eq!(names(ix, "job", 2), ["grpB"]);
        assert_eq!(names(ix, "job", 0), Vec::<String>::new());
    });
}

/// 12.2.1: the construct's result is the group's context id (PMIX_GROUP_CONTEXT_ID, size_t,
/// when the host assigned one), its info, its membership and each member's endpoint data
/// (PMIX_GROUP_ENDPT_DATA), all in one generation.
#[test]
fn a_construct_publishes_context_id_info_membership_and_endpoints_at_once() {
    let (_d, mut w) = store();
    let mut g = Groups::new();
    let pubs = w.stats().publications;
    let c = g
        .construct("grpA", group(&[("job", 3), ("job", 1)], Some(42)))
        .unwrap();
    publish(&mut w, "grpA", c);
    assert_eq!(w.stats().publications, pubs + 1, "one generation");
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let t = r.table(&pin, "grpA", part::GROUPS).unwrap();
    let job = |k| t.get(Realm::Job, k).map(|v| v.to_value());
    assert_eq!(job(groups::GROUP_CONTEXT_ID), Some(Value::Size(42)));
    assert_eq!(job("app.grp.tag"), Some(Value::String("blue".into())));
    match job(groups::GROUP_MEMBERSHIP) {
        Some(Value::DataArray(a)) => assert_eq!(a.items.len(), 2),
        other => panic!("{other:?}"),
    }
    let ep = |rank| {
        t.get(Realm::Proc(rank), groups::GROUP_ENDPT_DATA)
            .and_then(|v| v.as_bytes().map(<[u8]>::to_vec))
    };
    assert_eq!(ep(0), Some(b"ep-job-3".to_vec()));
    assert_eq!(ep(1), Some(b"ep-job-1".to_vec()));
    // Without a context id from the host, there is none.
    let c = g.construct("grpN", group(&[("job", 0)], None)).unwrap();
    publish(&mut w, "grpN", c);
    let pin = r.pin();
    let t = r.table(&pin, "grpN", part::GROUPS).unwrap();
    assert!(t.get(Realm::Job, groups::GROUP_CONTEXT_ID).is_none());
}

/// 12.2.3 (destruct), 12.2.7 (join), 12.2.9 (leave): each an update of the group; a leave moves
/// the later members down one group rank; the last one leaving ends the group; a reader holding
/// the old generation keeps the old group.
#[test]
fn destruct_join_and_leave_are_updates() {
    let (_d, mut w) = store();
    let mut g = Groups::new();
    let c = g
        .construct(
            "grpA",
            group(&[("job", 0), ("job", 1), ("job", 2)], Some(7)),
        )
        .unwrap();
    publish(&mut w, "grpA", c);
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    let held = r
        .table_arc(&pin, groups::NAMESPACE, part::GROUPS)
        .unwrap()
        .clone();
    drop(pin);

    let c = g.join("grpA", ("job", 9), Some(b"ep9")).unwrap();
    publish(&mut w, "grpA", c);
    let c = g.leave("grpA", ("job", 1)).unwrap();
    publish(&mut w, "grpA", c);
    with_index(&r, |ix| {
        let a = ix.find("grpA").unwrap();
        let ranks: Vec<u32> = ix.members(a).map(|m| m.rank).collect();
        assert_eq!(
            ranks,
            [0, 2, 9],
            "job:2 is group rank 1 now, the joiner rank 2"
        );
        assert_eq!(names(ix, "job", 1), Vec::<String>::new());
    });
    {
        let pin = r.pin();
        let t = r.table(&pin, "grpA", part::GROUPS).unwrap();
        let ep = |rank| {
            t.get(Realm::Proc(rank), groups::GROUP_ENDPT_DATA)
                .and_then(|v| v.as_bytes().map(<[u8]>::to_vec))
        };
        assert_eq!(ep(1), Some(b"ep-job-2".to_vec()));
        assert_eq!(ep(2), Some(b"ep9".to_vec()));
    }
    // The held generation: the group as constructed.
    let old = psets::index_of(&held).unwrap();
    let a = old.find("grpA").unwrap();
    assert_eq!(
        old.members(a).map(|m| m.rank).collect::<Vec<_>>(),
        [0, 1, 2]
    );

    assert!(matches!(g.leave("grpA", ("job", 1)), Err(Error::NotFound)));
    assert!(matches!(
        g.join("nope", ("job", 1), None),
        Err(Error::NotFound)
    ));
    let c = g.destruct("grpA").unwrap();
    publish(&mut w, "grpA", c);
    with_index(&r, |ix| assert!(ix.find("grpA").is_none()));
    let pin = r.pin();
    assert!(
        r.table(&pin, "grpA", part::GROUPS).is_err(),
        "its table is gone"
    );
    assert!(matches!(g.destruct("grpA"), Err(Error::NotFound)));
}

/// 12.2.1 (group identifiers "of maximum size PMIX_MAX_NSLEN"; the members are processes, each
/// once): a refused construct changes nothing.
#[test]
fn a_refused_construct_changes_nothing() {
    let mut g = Groups::new();
    assert!(g.construct("", group(&[("job", 0)], None)).is_err());
    assert!(g
        .construct(&"g".repeat(256), group(&[("job", 0)], None))
        .is_err());
    assert!(g.construct("grp", group(&[], None)).is_err());
    assert!(g
        .construct("grp", group(&[("job", 0), ("job", 0)], None))
        .is_err());
    let mut too_many = group(&[("job", 0)], None);
    too_many.endpoints.push(None);
    assert!(g.construct("grp", too_many).is_err());
    assert!(g.is_empty());
}
