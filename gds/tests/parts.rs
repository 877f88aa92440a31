//! Table parts are `u32`s the layers above the store choose (format.md section 5, `part`):
//! the store gives them no meaning, so nothing but this test keeps two layers from choosing
//! the same one. Each layer's parts, as ranges (a part with a per-rank or per-domain offset
//! spans its range), collide with no other layer's.

use rshm_gds::{jobdata, modex, psets};

/// Every layer's parts as (name, first, last).
fn parts() -> Vec<(&'static str, u32, u32)> {
    vec![
        ("jobdata DATA", jobdata::part::DATA, jobdata::part::DATA),
        (
            "jobdata RESOURCES",
            jobdata::part::RESOURCES,
            jobdata::part::RESOURCES,
        ),
        (
            "jobdata DATA_REPLICAS",
            jobdata::part::DATA_REPLICAS,
            jobdata::part::DATA_REPLICAS + 7,
        ),
        ("modex POSTED", modex::part::POSTED, modex::part::POSTED),
        (
            "modex POSTED_INDEX",
            modex::part::POSTED_INDEX,
            modex::part::POSTED_INDEX,
        ),
        ("modex POSTED_RANKS", modex::part::POSTED_RANKS, u32::MAX),
        ("psets PSETS", psets::part::PSETS, psets::part::PSETS),
        ("psets GROUPS", psets::part::GROUPS, psets::part::GROUPS),
        // The topology's (`rshm_topo::store::PART`, outside this crate; server-shim checks it).
        ("topo", 4, 4),
    ]
}

#[test]
fn the_layers_parts_do_not_collide() {
    let p = parts();
    for (i, a) in p.iter().enumerate() {
        for b in &p[i + 1..] {
            assert!(a.2 < b.1 || b.2 < a.1, "{a:?} and {b:?} overlap");
        }
    }
}

#[test]
fn gds_part_lists_the_layers_parts() {
    assert_eq!(rshm_gds::part::DATA, jobdata::part::DATA);
    assert_eq!(rshm_gds::part::POSTED_RANKS, modex::part::POSTED_RANKS);
    assert_eq!(rshm_gds::part::GROUPS, psets::part::GROUPS);
}
