//! The PMI process mapping the server stores with a job (`jobdata::anlmap`): written once at
//! registration from the process map, read from the job table's meta realm, and never a PMIx
//! answer (PMIx_Get of PMIX_ANL_MAP stays what the host registered).

mod common;

use rshm_gds::jobdata::{self, anlmap, keys, Decision, Directives};
use rshm_gds::{part, Realm, Value};

fn stored(infos: &[rshm_gds::Info]) -> (Option<String>, bool) {
    let (b, _) = jobdata::build(Some("n0"), infos).unwrap();
    let (_dir, _w, r) = common::published("ns", &b);
    let pin = r.pin();
    let v = r
        .get(&pin, "ns", part::DATA, Realm::Meta, anlmap::META_KEY)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned));
    let d = jobdata::decide(
        &r,
        &pin,
        Some(0),
        "ns",
        u32::MAX - 1,
        "pmix.anlmap",
        &Directives::NONE,
    );
    (v, matches!(d, Decision::Answer(..)))
}

#[test]
fn registration_stores_the_vector_of_the_process_map() {
    let info = rshm_gds::Info::new;
    let (v, answered) = stored(&[
        info(keys::NODE_MAP, Value::String("n0,n1".into())),
        info(keys::PROC_MAP, Value::String("0,2;1,3".into())),
    ]);
    assert_eq!(v.as_deref(), Some("(vector,(0,2,1),(0,2,1))"));
    assert!(!answered, "the meta value is not a PMIx answer");

    let (v, _) = stored(&jobdata::synthetic::registration_maps(10, 4));
    assert_eq!(v.as_deref(), Some("(vector,(0,2,4),(2,1,2))"));
}

#[test]
fn a_job_the_map_does_not_cover_has_none() {
    let info = rshm_gds::Info::new;
    // No process map.
    let (v, _) = stored(&[info(keys::JOB_SIZE, Value::Uint32(4))]);
    assert_eq!(v, None);
    // A map of 2 ranks in a job of 4.
    let (v, _) = stored(&[
        info(keys::JOB_SIZE, Value::Uint32(4)),
        info(keys::NODE_MAP, Value::String("n0".into())),
        info(keys::PROC_MAP, Value::String("0,1".into())),
    ]);
    assert_eq!(v, None);
}
