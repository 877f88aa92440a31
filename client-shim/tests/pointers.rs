//! PMIX_GET_POINTER_VALUES answers stay valid until their value is replaced (5.3), and what a
//! process holds for them is bounded by the keys it asks, not by how many Gets it makes or how
//! many generations the store goes through: a process that never releases them (an unmodified
//! libpmix client under the preload cannot) must not keep one copy per Get or one mapping per
//! generation.

#[path = "../../gds/tests/support/mappings.rs"]
mod mappings;

use rshm_client::Client;
use rshm_gds::jobdata::Decision;
use rshm_gds::{part, Realm, StoreOptions, TableBuilder, Value, Writer};

fn publish(w: &mut Writer, g: u64) {
    let mut t = TableBuilder::new();
    t.insert(Realm::Job, "test.gen", &Value::Uint64(g)).unwrap();
    t.insert(
        Realm::Proc(0),
        "test.name",
        &Value::String(format!("gen {g}")),
    )
    .unwrap();
    t.insert(Realm::Proc(1), "test.fixed", &Value::Uint32(7))
        .unwrap();
    let mut tx = w.begin();
    tx.put_table("ns", part::DATA, &t).unwrap();
    tx.commit().unwrap();
}

#[test]
fn pointer_values_are_held_once_per_key_across_gets_and_generations() {
    let base = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
    let mut w = Writer::create(StoreOptions {
        base_dir: Some(base.path().to_path_buf()),
        sweep: false,
        ..StoreOptions::default()
    })
    .unwrap();
    publish(&mut w, 0);
    let c = Client::attach(Some(w.path()), Some(("ns".into(), 0))).unwrap();
    let req = rshm_abi::get::GetRequest::default();
    let ask = |rank: u32, key: &str| {
        let pin = c.reader().pin();
        match c.decide(&pin, "ns", rank, key, &req) {
            Decision::Answer(v, t) => c.hold(("ns", rank, key), &v, t).unwrap(),
            _ => panic!("{key} of {rank} not answered"),
        }
    };
    let mut worst_mapped = 0;
    for g in 1..=500u64 {
        publish(&mut w, g);
        let mut last: *mut rshm_abi::types::pmix_value_t = std::ptr::null_mut();
        for _ in 0..20 {
            // The same value asked again within a generation: the same pointer.
            let p = ask(0, "test.name");
            assert!(
                last.is_null() || p == last,
                "a new pointer for the same value"
            );
            last = p;
            ask(1, "test.fixed");
            ask(u32::MAX - 1, "test.gen");
        }
        worst_mapped = worst_mapped.max(mappings::deleted_mappings(w.path()));
    }
    let held = c.release_pointers();
    assert!(held <= 3, "{held} pointer values held for 3 keys");
    assert!(
        worst_mapped <= 8,
        "{worst_mapped} unlinked segments kept mapped by held pointer values"
    );
}
