//! `Server::define_pset` / `delete_pset` (17.2.19-20): each change one generation; a call that
//! fails publishes nothing and changes nothing.

use rshm_gds::psets;
use rshm_gds::{Error, Reader};
use rshm_server::server::{Server, ServerOptions};

fn names(r: &Reader) -> Vec<String> {
    let pin = r.pin();
    psets::names(&psets::read(r, &pin).unwrap())
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
        &[rshm_gds::Info::new(
            "pmix.job.size",
            rshm_gds::Value::Uint32(4),
        )],
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

/// The most bytes one define, delete or redefine of one set may publish, whatever the number of
/// sets already defined: the chunk holding it (and a neighbour it merges with), the chunk list
/// and the root (docs/psets-groups.md "Size and cost").
const ONE_CHANGE_BYTES: u64 = 256 * 1024;

/// A call's work is bounded by the sets it changes, not the sets that exist: into 100 000 sets,
/// 1 000 single defines, deletes and redefines each publish at most `ONE_CHANGE_BYTES` (the
/// writer's own count of bytes written, not a timing), and the sets read back as the host's.
#[test]
fn a_change_of_one_set_among_100k_publishes_a_bounded_number_of_bytes() {
    let base = tempfile::tempdir().unwrap();
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    const S: u32 = 100_000;
    let set_names: Vec<String> = (0..S).map(|i| format!("set{i}")).collect();
    let sets: Vec<(&str, Vec<(&str, u32)>)> = set_names
        .iter()
        .zip(0..S)
        .map(|(n, i)| (n.as_str(), (0..4).map(|k| ("job", i * 4 + k)).collect()))
        .collect();
    s.define_psets(&sets).unwrap();
    let mut live: Vec<String> = set_names.clone();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut worst = (0, String::new());
    for step in 0..1000u32 {
        let before = s.stats().bytes_written;
        let what = match step % 3 {
            0 => {
                let name = format!("new{step}");
                s.define_pset(&name, &[("job", step), ("other", step)])
                    .unwrap();
                live.push(name.clone());
                format!("define {name}")
            }
            1 => {
                let name = live.swap_remove(next() as usize % live.len());
                s.delete_pset(&name).unwrap();
                format!("delete {name}")
            }
            _ => {
                let i = next() as usize % live.len();
                let name = live.remove(i);
                s.define_pset(&name, &[("job", step)]).unwrap();
                live.push(name.clone());
                format!("redefine {name}")
            }
        };
        let wrote = s.stats().bytes_written - before;
        if wrote > worst.0 {
            worst = (wrote, format!("step {step}: {what}"));
        }
    }
    eprintln!("the largest change: {} bytes ({})", worst.0, worst.1);
    assert!(
        worst.0 <= ONE_CHANGE_BYTES,
        "{} bytes published by one change ({}), more than {ONE_CHANGE_BYTES}",
        worst.0,
        worst.1
    );
    let r = Reader::attach(s.path()).unwrap();
    let mut got = names(&r);
    got.sort();
    live.sort();
    assert_eq!(got, live);
}

/// A withdrawal removes every set table, the chunk list and each chunk: readers then pass set
/// calls to their host library; sets defined afterwards start anew.
#[test]
fn withdrawn_sets_leave_no_chunk_behind() {
    let base = tempfile::tempdir().unwrap();
    let mut s = Server::open(ServerOptions {
        base_dir: Some(base.path().into()),
        ..ServerOptions::default()
    })
    .unwrap();
    let set_names: Vec<String> = (0..2500).map(|i| format!("set{i}")).collect();
    let sets: Vec<(&str, Vec<(&str, u32)>)> = set_names
        .iter()
        .zip(0u32..)
        .map(|(n, i)| (n.as_str(), vec![("job", i)]))
        .collect();
    s.define_psets(&sets).unwrap();
    let r = Reader::attach(s.path()).unwrap();
    {
        let pin = r.pin();
        assert_eq!(psets::read(&r, &pin).unwrap().chunks(), 3);
    }
    s.withdraw_psets().unwrap();
    {
        let pin = r.pin();
        assert!(psets::read(&r, &pin).is_none());
        for id in 0..3 {
            let chunk = psets::chunk_namespace(id);
            assert!(
                r.table(&pin, &chunk, rshm_gds::part::PSETS).is_err(),
                "{chunk}"
            );
        }
    }
    s.define_pset("again", &[("job", 0)]).unwrap();
    assert_eq!(names(&r), ["again"]);
}
