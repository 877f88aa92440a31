//! `Server::construct_group` and its updates (12.2): each one generation (the index and the
//! group's table together); a call that fails publishes nothing.

use rshm_gds::psets;
use rshm_gds::psets::groups::{self, Group};
use rshm_gds::{part, Error, Reader};
use rshm_server::server::{Server, ServerOptions};

fn members(r: &Reader, grp: &str) -> Vec<u32> {
    let pin = r.pin();
    let t = r.table(&pin, groups::NAMESPACE, part::GROUPS).unwrap();
    let ix = psets::index_of(t).unwrap();
    ix.find(grp)
        .map_or_else(Vec::new, |i| ix.members(i).map(|m| m.rank).collect())
}

#[test]
fn construct_join_leave_destruct_one_generation_each() {
    let base = tempfile::tempdir().unwrap();
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    let group = Group {
        members: vec![("job".into(), 2), ("job".into(), 0)],
        context_id: Some(5),
        ..Group::default()
    };
    s.construct_group("g", group).unwrap();
    let r = Reader::attach(s.path()).unwrap();
    let p0 = s.stats().publications;
    s.join_group("g", ("job", 7), None).unwrap();
    assert_eq!(members(&r, "g"), [2, 0, 7]);
    s.leave_group("g", ("job", 2)).unwrap();
    assert_eq!(members(&r, "g"), [0, 7]);
    assert_eq!(s.stats().publications, p0 + 2);
    assert!(matches!(
        s.leave_group("g", ("job", 2)),
        Err(Error::NotFound)
    ));
    assert!(matches!(s.destruct_group("nope"), Err(Error::NotFound)));
    assert!(
        s.construct_group("bad", Group::default()).is_err(),
        "a group without members"
    );
    assert_eq!(s.stats().publications, p0 + 2, "refusals publish nothing");
    s.destruct_group("g").unwrap();
    assert_eq!(members(&r, "g"), Vec::<u32>::new());
    let pin = r.pin();
    assert!(r.table(&pin, "g", part::GROUPS).is_err());
}
