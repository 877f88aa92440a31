//! Clients whose store was removed under them (its directory deleted while the job runs; the
//! clients' corpus line `rm $RSHM_STORE`), compared answer for answer with `PMIX_MCA_gds=hash`.
//!
//! A store file a client has not mapped yet is gone: its reader reports the store removed
//! (`PMIX_ERR_UNREACH` from rshm's own client calls), and the component's fetch turns that into
//! `PMIX_ERR_NOT_FOUND`, so libpmix asks hash and the server. What a client mapped before the
//! removal stays readable; the server can publish nothing more.

mod support;

use support::*;

const JOB: &str = "examples/job-2node.txt";

/// Run `corpus` under hash and under the component; return their answers (no `maps`, no `rm`
/// lines, which differ: hash has no store to remove) and the rshm run's `rm` lines.
fn hash_and_rshm(name: &str, corpus: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
    let corpora = [format!("{corpus}maps\n")];
    let (ok, hash, err) = pmix_job_run(JOB, name, &corpora, Gds::Hash, "", &[]);
    assert!(ok, "hash run failed:\n{err}");
    let st = tempfile::tempdir().unwrap();
    let (ok, rshm, err) = pmix_job_run(JOB, name, &corpora, Gds::Rshm(st.path()), "", &[]);
    assert!(ok, "rshm run failed:\n{err}");
    let not_rm = |lines: &[String]| -> Vec<String> {
        answers(lines)
            .into_iter()
            .filter(|l| !l.starts_with("rm "))
            .collect()
    };
    let removed: Vec<String> = rshm
        .iter()
        .filter(|l| l.starts_with("rm ") && l.ends_with(" removed"))
        .cloned()
        .collect();
    let m = maps(&rshm);
    assert_eq!(m.len(), 4);
    assert!(
        m.values().all(|segs| !segs.is_empty()),
        "a client did not use the store: {m:?}"
    );
    (not_rm(&hash), not_rm(&rshm), removed)
}

#[test]
fn clients_whose_store_was_removed_answer_as_hash() {
    // Job data is mapped (a first Get) before the removal, the posted table is not: the reads
    // of k find its file gone and go to hash; m, committed after the removal, cannot be
    // published and is hash's too.
    let corpus = "\
put global k v1-%r
commit
fence
a0 * PMIX_JOB_SIZE
fence nocollect
rm $RSHM_STORE
fence nocollect
b0 * PMIX_JOB_SIZE
b1 1 PMIX_LOCAL_RANK
b2 * test.job.str
put global m m1-%r
commit
fence
m0 0 m
m1 1 m
m2 2 m
m3 3 m
k0 0 k
k1 1 k
k2 2 k
k3 3 k
";
    let (hash, rshm, removed) = hash_and_rshm("removed-unmapped.txt", corpus);
    assert!(!removed.is_empty(), "no client removed the store");
    let k = hash
        .iter()
        .filter(|l| l.starts_with('k') && l.contains(" SUCCESS PMIX_STRING \"v1-"))
        .count();
    assert_eq!(k, 16, "hash: {hash:#?}");
    let d = diff(&hash, &rshm);
    assert!(d.is_empty(), "answers differ from hash's:\n{d:#?}");
}

#[test]
fn a_value_committed_after_the_store_was_removed_is_not_read_stale() {
    // The posted table is mapped (the reads of l) before the removal; every rank then commits
    // k again. Under hash a rank reads its own k as v2 (a peer's k as v1: OpenPMIx 4.2.2's
    // client cached the peer's data with its l); from its mapping it would read its own v1.
    let corpus = "\
put global k v1-%r
put global l l1-%r
commit
fence
l0 0 l
l1 1 l
l2 2 l
l3 3 l
fence nocollect
rm $RSHM_STORE
fence nocollect
put global k v2-%r
commit
fence
k0 0 k
k1 1 k
k2 2 k
k3 3 k
";
    let (hash, rshm, removed) = hash_and_rshm("removed-mapped.txt", corpus);
    assert!(!removed.is_empty(), "no client removed the store");
    for r in 0..4 {
        let own = format!("k{r} {r} SUCCESS PMIX_STRING \"v2-{r}\"");
        assert!(hash.contains(&own), "hash: {hash:#?}");
        assert!(rshm.contains(&own), "rshm: {rshm:#?}");
    }
    // The server, unable to publish or withdraw, withdraws the store's posted data for good:
    // clients stop answering posted keys from their mappings and ask libpmix, whose server has
    // every rank's v2. Under hash a client answers a peer's k from the v1 it cached with that
    // peer's l: where the answers differ, rshm's must be the newer value, never an older one.
    for line in diff(&hash, &rshm) {
        let Some(answer) = line.strip_prefix("rshm: ") else {
            continue;
        };
        assert!(
            answer.starts_with('k') && answer.contains(" SUCCESS PMIX_STRING \"v2-"),
            "rshm answered {answer}, where hash's answer differs:\n{rshm:#?}\n{hash:#?}"
        );
    }
}
