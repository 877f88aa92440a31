//! `Server::register_resources` is all or nothing: the infos of a call that fails are not kept
//! for a later call to publish.

use rshm_gds::jobdata::resources;
use rshm_gds::{part, Error, Info, Reader, Realm, Value};
use rshm_server::server::{Server, ServerOptions};

#[test]
fn a_refused_call_s_infos_are_not_published_by_the_next_one() {
    let base = tempfile::tempdir().unwrap();
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        local_host: Some("node0".into()),
        ..ServerOptions::default()
    })
    .unwrap();
    // A good info, then one the store refuses (a node array that is not an array of infos).
    let refused = [
        Info::new("test.first", Value::Uint32(1)),
        Info::new("pmix.node.arr", Value::Uint32(7)),
    ];
    assert!(matches!(
        s.register_resources(&refused),
        Err(Error::InvalidArgument(_))
    ));
    s.register_resources(&[Info::new("test.second", Value::Uint32(2))])
        .unwrap();
    let r = Reader::attach(s.path()).unwrap();
    let pin = r.pin();
    let get = |key: &str| {
        r.get(
            &pin,
            resources::NAMESPACE,
            part::RESOURCES,
            Realm::Node(0),
            key,
        )
        .map(|v| v.to_value())
    };
    assert_eq!(get("test.second").unwrap(), Value::Uint32(2));
    assert!(
        matches!(get("test.first"), Err(Error::NotFound)),
        "an info of the refused call was published"
    );
    drop(pin);
    drop(r);
    s.close().unwrap();
}
