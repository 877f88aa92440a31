//! Process sets in the store (rshm_gds::psets, docs/psets-groups.md): one row per rule, each naming
//! the section of the standard it checks (12.1 process sets; 17.2.19-20 define and delete;
//! v5.0 14.1.2 the attributes), against real stores.

mod common;

use rshm_gds::jobdata::{self, Qualifiers, TargetRank};
use rshm_gds::psets::{self, IndexView, Registry, Sets};
use rshm_gds::{part, Info, Reader, Value, Writer};

use common::{store, Rng};

const W: u32 = u32::MAX - 1;

/// Publish the changes since the last publication as a server does: the chunks they touched
/// and the chunk list.
fn publish(w: &mut Writer, reg: &mut Registry) -> psets::Staged {
    let mut tx = w.begin();
    let staged = reg.stage(&mut tx).unwrap();
    tx.commit().unwrap();
    reg.published();
    staged
}

fn strings(v: &Value) -> Vec<String> {
    match v {
        Value::DataArray(a) => a
            .items
            .iter()
            .map(|i| match i {
                Value::String(s) => s.clone(),
                other => panic!("not a string: {other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

fn procs(v: &Value) -> Vec<(String, u32)> {
    match v {
        Value::DataArray(a) => {
            assert_eq!(a.elem_type, rshm_gds::value::types::PROC);
            a.items
                .iter()
                .map(|i| match i {
                    Value::Proc(p) => (p.nspace.clone(), p.rank),
                    other => panic!("not a proc: {other:?}"),
                })
                .collect()
        }
        other => panic!("not an array: {other:?}"),
    }
}

/// The current generation's sets, as a reader reads them: the chunks its list names.
fn with_index<T>(r: &Reader, f: impl FnOnce(&Sets<'_>) -> T) -> T {
    let pin = r.pin();
    f(&psets::read(r, &pin).expect("a chunk list"))
}

fn names_of(ix: &Sets<'_>, ns: &str, rank: u32) -> Vec<String> {
    psets::names_of(ix, ns, rank).map_or_else(Vec::new, |v| strings(&v))
}

fn defined() -> Registry {
    let mut reg = Registry::new();
    let ocean: Vec<(&str, u32)> = (0..4).map(|r| ("job", r)).collect();
    reg.define("ocean", &ocean).unwrap();
    reg.define("ice", &[("job", 4), ("job", 5), ("job", 6)])
        .unwrap();
    // Members in the host's order, across namespaces, not sorted.
    reg.define("mixed", &[("job", 5), ("job", 1), ("other", 0), ("job", 2)])
        .unwrap();
    reg.define("everyone", &[("other", W)]).unwrap();
    reg
}

/// 12.1 / v5.0 14.1.2: PMIX_PSET_NAMES is every set the process is in (a process may be in
/// several sets), in definition order; a process in none has no value.
#[test]
fn pset_names_of_a_process_in_several_sets() {
    let (_d, mut w) = store();
    publish(&mut w, &mut defined());
    let r = Reader::attach(w.path()).unwrap();
    with_index(&r, |ix| {
        assert_eq!(names_of(ix, "job", 1), ["ocean", "mixed"]);
        assert_eq!(names_of(ix, "job", 5), ["ice", "mixed"]);
        assert_eq!(names_of(ix, "job", 3), ["ocean"]);
        assert_eq!(names_of(ix, "job", 7), Vec::<String>::new());
        assert!(psets::names_of(ix, "job", 7).is_none());
        assert!(psets::names_of(ix, "nobody", 0).is_none());
        // A wildcard member (17.2.19's members are pmix_proc_t) holds every rank of its
        // namespace.
        assert_eq!(names_of(ix, "other", 0), ["mixed", "everyone"]);
        assert_eq!(names_of(ix, "other", 123_456), ["everyone"]);
    });
}

/// 17.2.19 / v5.0 14.1.2: PMIX_PSET_MEMBERS (and PMIX_QUERY_PSET_MEMBERSHIP) are the members as
/// the host defined them, in its order.
#[test]
fn pset_members_in_definition_order() {
    let (_d, mut w) = store();
    publish(&mut w, &mut defined());
    let r = Reader::attach(w.path()).unwrap();
    with_index(&r, |ix| {
        let i = ix.find("mixed").unwrap();
        let want = [("job", 5), ("job", 1), ("other", 0), ("job", 2)];
        let got = procs(&psets::members_value(ix, i));
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0.as_str(), g.1), w);
        }
        let q = psets::query(ix, psets::QUERY_PSET_MEMBERSHIP, Some("ice")).unwrap();
        assert_eq!(procs(&q).iter().map(|p| p.1).collect::<Vec<_>>(), [4, 5, 6]);
        assert!(ix.find("nope").is_none());
    });
}

/// 12.1 (PMIx_Query_info_nb gives "the number of declared process sets ... a list of their
/// names"): PMIX_QUERY_NUM_PSETS a size_t, PMIX_QUERY_PSET_NAMES as OpenPMIx 4.2.2's
/// pmix_common.h and its hosts give it (a comma-delimited string), PMIX_QUERY_PSET_MEMBERSHIP of
/// an unknown set not found and without its PMIX_PSET_NAME qualifier a bad parameter.
#[test]
fn pset_queries() {
    let (_d, mut w) = store();
    publish(&mut w, &mut defined());
    let r = Reader::attach(w.path()).unwrap();
    with_index(&r, |ix| {
        let q = |k, n| psets::query(ix, k, n);
        assert_eq!(q(psets::QUERY_NUM_PSETS, None).unwrap(), Value::Size(4));
        assert_eq!(
            q(psets::QUERY_PSET_NAMES, None).unwrap(),
            Value::String("ocean,ice,mixed,everyone".into())
        );
        assert!(matches!(
            q(psets::QUERY_PSET_MEMBERSHIP, Some("gone")),
            Err(rshm_gds::Error::NotFound)
        ));
        assert!(matches!(
            q(psets::QUERY_PSET_MEMBERSHIP, None),
            Err(rshm_gds::Error::InvalidArgument(_))
        ));
        assert!(q("pmix.qry.other", None).is_err());
    });
    // No set left: zero sets, and no names to list.
    let mut reg = defined();
    for n in ["ocean", "ice", "mixed", "everyone"] {
        assert!(reg.delete(n));
    }
    publish(&mut w, &mut reg);
    with_index(&r, |ix| {
        assert_eq!(
            psets::query(ix, psets::QUERY_NUM_PSETS, None).unwrap(),
            Value::Size(0)
        );
        assert!(matches!(
            psets::query(ix, psets::QUERY_PSET_NAMES, None),
            Err(rshm_gds::Error::NotFound)
        ));
    });
}

/// 17.2.20: deleting a set removes its name ("has no impact on the member processes") in the
/// next generation; a reader holding the old generation keeps answering from it, unchanged,
/// until it moves on.
#[test]
fn pset_deleted_while_a_reader_holds_the_old_generation() {
    let (_d, mut w) = store();
    let mut reg = defined();
    publish(&mut w, &mut reg);
    let r = Reader::attach(w.path()).unwrap();
    let pin = r.pin();
    // Four sets: one chunk, the first.
    let old = r
        .table_arc(&pin, &psets::chunk_namespace(0), part::PSETS)
        .unwrap()
        .clone();
    drop(pin);
    assert!(reg.delete("ice"));
    assert!(!reg.delete("ice"), "a second delete finds nothing");
    publish(&mut w, &mut reg);
    // The held generation: still four sets, ice among them.
    let ix = Sets::single(psets::index_of(&old).unwrap());
    assert_eq!(ix.len(), 4);
    assert_eq!(names_of(&ix, "job", 5), ["ice", "mixed"]);
    // The current one: ice is gone, its members are untouched elsewhere.
    with_index(&r, |ix| {
        assert_eq!(ix.len(), 3);
        assert!(ix.find("ice").is_none());
        assert_eq!(names_of(ix, "job", 5), ["mixed"]);
        assert_eq!(names_of(ix, "job", 1), ["ocean", "mixed"]);
    });
}

/// 17.2.19: a set defined again under the same name holds the new membership (the host's
/// latest word), listed last; a refused definition (a name no namespace could have) changes
/// nothing.
#[test]
fn pset_redefined_and_refused() {
    let mut reg = defined();
    reg.define("ocean", &[("job", 9)]).unwrap();
    assert!(reg.define("", &[("job", 0)]).is_err());
    assert!(reg.define(&"x".repeat(256), &[("job", 0)]).is_err());
    assert!(reg.define("bad", &[("", 0)]).is_err());
    assert!(reg.define("nul\0", &[("job", 0)]).is_err());
    assert!(!reg.contains("bad"));
    let bytes = reg.encode().unwrap();
    let ix = Sets::single(IndexView::new(&bytes).unwrap());
    assert_eq!(psets::names(&ix), ["ice", "mixed", "everyone", "ocean"]);
    assert_eq!(names_of(&ix, "job", 9), ["ocean"]);
    assert_eq!(names_of(&ix, "job", 0), Vec::<String>::new());
}

/// 12.1: PMIX_PSET_NAME is the launch-time label, job-level information the host registers
/// (per process in its proc data, or for the job's app at the top level, where OpenPMIx 4.2.2
/// files it): the registration path stores it, and a Get answers it.
#[test]
fn pset_name_is_registered_job_data() {
    let proc_data = |rank: u32, set: &str| {
        Info::new(
            "pmix.pdata",
            Value::DataArray(Box::new(rshm_gds::DataArray {
                elem_type: rshm_gds::value::types::INFO,
                items: vec![
                    Value::Info(Box::new(Info::new("pmix.rank", Value::ProcRank(rank)))),
                    Value::Info(Box::new(Info::new(
                        psets::PSET_NAME,
                        Value::String(set.into()),
                    ))),
                ],
            })),
        )
    };
    let infos = vec![
        Info::new("pmix.job.size", Value::Uint32(2)),
        proc_data(0, "ocean"),
        proc_data(1, "ice"),
    ];
    let (t, _) = jobdata::build(Some("n0"), &infos).unwrap();
    let (_d, _w, r) = common::published("job", &t);
    let pin = r.pin();
    let view = r.table(&pin, "job", part::DATA).unwrap();
    for (rank, want) in [(0, "ocean"), (1, "ice")] {
        let v = jobdata::get(
            view,
            None,
            None,
            TargetRank::Rank(rank),
            psets::PSET_NAME,
            &Qualifiers::NONE,
        )
        .unwrap()
        .to_value();
        assert_eq!(v, Value::String(want.into()), "rank {rank}");
    }
}

/// Sized for real use (issue: 10k sets over a 1M-rank job): sets that are ranges cost their
/// runs, not their members, and a process's sets are found by searching the runs.
#[test]
fn ten_thousand_sets_over_a_million_ranks_stay_small() {
    let mut reg = Registry::new();
    let ranks: u32 = 1 << 20;
    let per = ranks / 10_000;
    for s in 0..10_000u32 {
        // Each set: a block of ranks, and every set also the 16 ranks of a "node" elsewhere.
        let mut m: Vec<(&str, u32)> = (s * per..(s + 1) * per).map(|r| ("job", r)).collect();
        let node = (s * 7919) % (ranks / 16);
        // (A process is a member once: the node's ranks inside the block are there already.)
        let block = s * per..(s + 1) * per;
        m.extend(
            (node * 16..node * 16 + 16)
                .filter(|r| !block.contains(r))
                .map(|r| ("job", r)),
        );
        reg.define(&format!("set{s:05}"), &m).unwrap();
    }
    let bytes = reg.encode().unwrap();
    assert!(bytes.len() < 1 << 20, "index of {} bytes", bytes.len());
    let ix = IndexView::new(&bytes).unwrap();
    assert_eq!(ix.len(), 10_000);
    let i = ix.find("set04242").unwrap();
    assert_eq!(ix.member_count(i), u64::from(per) + 16);
    assert_eq!(
        ix.member_at(i, 0).map(|m| m.rank),
        Some(4242 * per),
        "first member"
    );
    // Rank 4242*per is in set 4242, and in every set whose node block covers it.
    let r = 4242 * per;
    let want: Vec<usize> = (0..10_000u32)
        .filter(|s| {
            let node = (s * 7919) % (ranks / 16);
            (s * per..(s + 1) * per).contains(&r) || (node * 16..node * 16 + 16).contains(&r)
        })
        .map(|s| s as usize)
        .collect();
    assert_eq!(ix.sets_of("job", r), want);
}

/// The index is read from a file anyone with write access to the store's directory could forge
/// before it is published (format.md section 6): a truncated or corrupted index is refused or
/// answers less, never reads out of bounds or panics.
#[test]
fn forged_index_never_panics() {
    let bytes = defined().encode().unwrap();
    for cut in 0..bytes.len() {
        if let Ok(ix) = IndexView::new(&bytes[..cut]) {
            let _ = ix.sets_of("job", 1);
        }
    }
    let mut rng = Rng(0x5eed);
    for _ in 0..2000 {
        let mut b = bytes.clone();
        for _ in 0..4 {
            let at = rng.below(b.len());
            b[at] = rng.next() as u8;
        }
        if let Ok(ix) = IndexView::new(&b) {
            for i in 0..ix.len().min(64) {
                let _ = ix.name(i);
                let _ = ix.members(i).take(64).count();
                let _ = ix.member_at(i, 3);
            }
            let _ = ix.find("ice");
            let _ = ix.sets_of("job", 5);
            let _ = ix.sets_of("other", 0);
        }
    }
}

/// 12.1 / v5.0 14.1.2: the run search gives exactly the sets a brute-force scan of every member
/// finds, for random overlapping sets with repeated and special-rank members.
#[test]
fn pset_names_match_a_scan_of_the_members() {
    let mut rng = Rng(0xabcdef);
    for case in 0..40 {
        let mut reg = Registry::new();
        let mut sets: Vec<Vec<(&str, u32)>> = Vec::new();
        for s in 0..1 + rng.below(30) {
            let mut m = Vec::new();
            for _ in 0..rng.below(6) {
                let ns = ["a", "b"][rng.below(2)];
                let first = rng.below(200) as u32;
                let len = 1 + rng.below(50) as u32;
                m.extend((first..first + len).map(|r| (ns, r)));
            }
            if rng.below(8) == 0 {
                // A wildcard of b, which covers every rank of b: b's ranks go.
                m.retain(|&(ns, _)| ns != "b");
                m.push(("b", W));
            }
            // A process is a member once: repeats in overlapping ranges go.
            let mut seen = std::collections::HashSet::new();
            m.retain(|p| seen.insert(*p));
            reg.define(&format!("s{s}"), &m).unwrap();
            sets.push(m);
        }
        let bytes = reg.encode().unwrap();
        let ix = IndexView::new(&bytes).unwrap();
        for ns in ["a", "b"] {
            for rank in 0..260 {
                let want: Vec<usize> = (0..sets.len())
                    .filter(|&s| {
                        sets[s]
                            .iter()
                            .any(|&(n, r)| n == ns && (r == rank || r == W))
                    })
                    .collect();
                assert_eq!(ix.sets_of(ns, rank), want, "case {case} {ns}:{rank}");
            }
        }
    }
}

/// Chunks of `cap` sets at most, each but the last at least `cap / 4`.
fn assert_chunked(reg: &Registry, at: &str) {
    let lens = reg.chunk_lens();
    let cap = reg.chunk_sets();
    for (k, &n) in lens.iter().enumerate() {
        assert!(n >= 1 && n <= cap, "{at}: chunk {k} of {n} sets ({lens:?})");
        if k + 1 < lens.len() {
            assert!(n >= cap / 4, "{at}: chunk {k} of {n} sets ({lens:?})");
        }
    }
    assert_eq!(lens.iter().sum::<usize>(), reg.len(), "{at}");
}

/// 17.2.19-20 one at a time: sets defined, deleted and defined again one by one over chunks of
/// 8 sets (so chunks fill, empty, merge and split), each change published, read by a reader as
/// the same sets in the same order as the host's own list.
#[test]
fn define_delete_redefine_one_at_a_time_across_chunks() {
    let (_d, mut w) = store();
    let r = Reader::attach(w.path()).unwrap();
    let mut rng = Rng(0xde17a);
    let mut reg = Registry::with_chunk_sets(8);
    // The host's list: (name, members) in definition order.
    let mut model: Vec<(String, Vec<(&str, u32)>)> = Vec::new();
    let mut most_chunks = 0;
    for step in 0..1500 {
        let name = format!("s{}", rng.below(300));
        if rng.below(4) == 0 {
            let had = model.iter().position(|(n, _)| *n == name);
            assert_eq!(
                reg.delete(&name),
                had.is_some(),
                "step {step}: delete {name}"
            );
            let Some(p) = had else { continue };
            model.remove(p);
        } else {
            let ns = ["a", "b"][rng.below(2)];
            let first = rng.below(1000) as u32;
            let members: Vec<(&str, u32)> = (first..first + 1 + rng.below(20) as u32)
                .map(|r| (ns, r))
                .collect();
            reg.define(&name, &members).unwrap();
            model.retain(|(n, _)| *n != name);
            model.push((name, members));
        }
        publish(&mut w, &mut reg);
        assert_chunked(&reg, &format!("step {step}"));
        most_chunks = most_chunks.max(reg.chunk_lens().len());
        if step % 50 != 0 {
            continue;
        }
        with_index(&r, |ix| {
            let want: Vec<&str> = model.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(psets::names(ix), want, "step {step}");
            assert_eq!(ix.len(), model.len());
            assert_eq!(ix.chunks(), reg.chunk_lens().len());
            for (n, m) in &model {
                let got: Vec<(&str, u32)> = ix
                    .members(ix.find(n).unwrap())
                    .iter()
                    .map(|m| (m.nspace, m.rank))
                    .collect();
                assert_eq!(&got, m, "step {step}: {n}");
            }
            assert!(ix.find("s300").is_none());
            for rank in (0..1020).step_by(7) {
                let want: Vec<&str> = model
                    .iter()
                    .filter(|(_, m)| m.contains(&("a", rank)))
                    .map(|(n, _)| n.as_str())
                    .collect();
                assert_eq!(names_of(ix, "a", rank), want, "step {step}: a:{rank}");
            }
        });
    }
    assert!(
        most_chunks >= 20,
        "{most_chunks} chunks: the test crosses many"
    );
}

/// 17.2.20 over chunks: sets of two chunks deleted while a reader holds the old generation;
/// the held generation answers as it did, the next one without them.
#[test]
fn pset_deleted_from_a_chunk_while_a_reader_holds_the_old_generation() {
    let (_d, mut w) = store();
    let mut reg = Registry::with_chunk_sets(4);
    let ocean: Vec<(&str, u32)> = (0..4).map(|r| ("job", r)).collect();
    reg.define("ocean", &ocean).unwrap();
    reg.define("ice", &[("job", 4), ("job", 5), ("job", 6)])
        .unwrap();
    reg.define("mixed", &[("job", 5), ("job", 1), ("other", 0), ("job", 2)])
        .unwrap();
    reg.define("everyone", &[("other", W)]).unwrap();
    reg.define("late", &[("job", 5)]).unwrap();
    publish(&mut w, &mut reg);
    assert_eq!(reg.chunk_lens(), [4, 1]);
    let r = Reader::attach(w.path()).unwrap();
    let held = r.pin();
    let old = psets::read(&r, &held).unwrap();
    assert!(reg.delete("ice") && reg.delete("late"));
    publish(&mut w, &mut reg);
    assert_eq!(old.len(), 5);
    assert_eq!(old.chunks(), 2);
    assert_eq!(names_of(&old, "job", 5), ["ice", "mixed", "late"]);
    with_index(&r, |ix| {
        assert_eq!(ix.len(), 3);
        assert_eq!(ix.chunks(), 1);
        assert!(ix.find("ice").is_none() && ix.find("late").is_none());
        assert_eq!(names_of(ix, "job", 5), ["mixed"]);
        assert_eq!(
            psets::query(ix, psets::QUERY_PSET_NAMES, None).unwrap(),
            Value::String("ocean,mixed,everyone".into())
        );
    });
}

/// The work of a change is bounded by the sets it changes, not the sets that exist: into 1 000
/// and into 30 000 sets (chunks of 64), each of 600 single defines, deletes and redefines
/// rewrites at most three chunks (the chunk it leaves, a neighbour that chunk merges with, the
/// last chunk it joins), so at most 3 x 64 sets, the same bound at both sizes; the chunk list
/// names at most 4 S / 64 + 1 chunks. Counted by the registry (what it staged), not timed.
#[test]
fn a_change_rewrites_at_most_three_chunks_whatever_the_number_of_sets() {
    const CAP: usize = 64;
    for s in [1_000u32, 30_000] {
        let (_d, mut w) = store();
        let mut reg = Registry::with_chunk_sets(CAP);
        let names: Vec<String> = (0..s).map(|i| format!("set{i}")).collect();
        for (i, n) in names.iter().enumerate() {
            reg.define(n, &[("job", i as u32)]).unwrap();
        }
        let all = publish(&mut w, &mut reg);
        assert_eq!(all.sets, s as usize, "one call: every set once");
        assert_eq!(all.chunks, (s as usize).div_ceil(CAP));
        let mut live = names.clone();
        let mut rng = Rng(u64::from(s));
        for step in 0..600u32 {
            match step % 3 {
                0 => {
                    let name = format!("new{step}");
                    reg.define(&name, &[("job", s + step)]).unwrap();
                    live.push(name);
                }
                1 => {
                    let name = live.swap_remove(rng.below(live.len()));
                    assert!(reg.delete(&name));
                }
                _ => {
                    let name = live.remove(rng.below(live.len()));
                    reg.define(&name, &[("other", step)]).unwrap();
                    live.push(name);
                }
            }
            let staged = publish(&mut w, &mut reg);
            assert!(
                staged.chunks + staged.removed <= 3 && staged.sets <= 3 * CAP,
                "S = {s}, step {step}: {staged:?}"
            );
            assert!(staged.list <= 4 * reg.len() / CAP + 1, "{staged:?}");
        }
        let r = Reader::attach(w.path()).unwrap();
        with_index(&r, |ix| {
            let mut got = psets::names(ix);
            got.sort();
            live.sort();
            assert_eq!(got, live, "S = {s}");
        });
    }
}

/// 17.2.19-20, "a failed call changes nothing": the defines and deletes since the last
/// publication, rolled back (their publication failed), leave the sets, their chunks and
/// their order as they were, across chunks filled, emptied, merged and split; the next
/// publication writes the sets as the host then holds them.
#[test]
fn a_rolled_back_change_leaves_the_sets_as_they_were() {
    let (_d, mut w) = store();
    let mut reg = Registry::with_chunk_sets(4);
    for i in 0..14u32 {
        reg.define(&format!("s{i}"), &[("job", i)]).unwrap();
    }
    publish(&mut w, &mut reg);
    let before = (reg.encode().unwrap(), reg.chunk_lens());
    assert_eq!(before.1, [4, 4, 4, 2]);
    // Deletes that empty and merge chunks, redefines, new sets and namespaces, then undone.
    for n in ["s0", "s1", "s2", "s5", "s13"] {
        assert!(reg.delete(n));
    }
    reg.define("s4", &[("fresh", 1)]).unwrap();
    for i in 20..30u32 {
        reg.define(&format!("t{i}"), &[("fresh", i)]).unwrap();
    }
    assert_ne!(reg.chunk_lens(), before.1);
    reg.rollback();
    assert_eq!((reg.encode().unwrap(), reg.chunk_lens()), before);
    assert!(reg.contains("s0") && !reg.contains("t20"));
    // "fresh" was numbered by the undone defines, and is no more: a set may take its name.
    reg.define("fresh", &[("job", 100)]).unwrap();
    reg.rollback();
    // A refused define changes nothing either.
    assert!(reg.define("s3", &[("job", 1), ("job", 1)]).is_err());
    assert_eq!((reg.encode().unwrap(), reg.chunk_lens()), before);
    // What is published next is the host's sets, the rolled back changes nowhere.
    assert!(reg.delete("s6"));
    publish(&mut w, &mut reg);
    let r = Reader::attach(w.path()).unwrap();
    with_index(&r, |ix| {
        let want: Vec<String> = (0..14)
            .filter(|&i| i != 6)
            .map(|i| format!("s{i}"))
            .collect();
        assert_eq!(psets::names(ix), want);
        assert_eq!(names_of(ix, "job", 4), ["s4"]);
    });
    assert_chunked(&reg, "after the rollbacks");
}

/// The chunk list is read from a file anyone with write access to the store's directory could
/// forge (format.md section 8): a list of another version, or whose ids do not fit, names no
/// set; a chunk it names that is missing is left out; nothing panics or reads out of bounds.
#[test]
fn forged_chunk_list_answers_less() {
    let (_d, mut w) = store();
    let r = Reader::attach(w.path()).unwrap();
    let mut tx = w.begin();
    psets::stage_indexes(&mut tx, &[(0, defined().encode().unwrap())]).unwrap();
    tx.commit().unwrap();
    let good = psets::encode_list(&[0]).unwrap();
    let mut cases: Vec<(Vec<u8>, usize)> = vec![
        (good.clone(), 4),
        (psets::encode_list(&[0, 7]).unwrap(), 4),
        (psets::encode_list(&[7]).unwrap(), 0),
        (psets::encode_list(&[]).unwrap(), 0),
        (good[..good.len() - 1].to_vec(), 0),
        (Vec::new(), 0),
    ];
    let mut v2 = good.clone();
    v2[0] = 2;
    cases.push((v2, 0));
    let mut many = good.clone();
    many[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push((many, 0));
    for (i, (bytes, sets)) in cases.into_iter().enumerate() {
        let mut t = rshm_gds::TableBuilder::new();
        t.insert(
            rshm_gds::Realm::Meta,
            psets::LIST_KEY,
            &Value::ByteObject(bytes),
        )
        .unwrap();
        let mut tx = w.begin();
        tx.put_table(psets::LIST_NAMESPACE, part::PSETS, &t)
            .unwrap();
        tx.commit().unwrap();
        with_index(&r, |ix| {
            assert_eq!(ix.len(), sets, "case {i}");
            assert_eq!(ix.find("ice").is_some(), sets > 0, "case {i}");
            let _ = names_of(ix, "job", 5);
            let _ = psets::query(ix, psets::QUERY_PSET_NAMES, None);
        });
    }
}
