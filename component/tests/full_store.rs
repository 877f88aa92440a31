//! The component's server when its store cannot take a commit: real OpenPMIx 4.2.2 clients
//! (tools/pmix-host) must read exactly what they read under `PMIX_MCA_gds=hash`, never an older
//! value the store still holds (docs/openpmix.md "A value the store cannot take").
//!
//! The store is put on a tmpfs of a few MiB mounted for the test (`PMIX_SERVER_TMPDIR` in the
//! server's environment), so these tests need root; elsewhere each prints a `SKIPPED` line.
//! Large values are read with the client's `digest` line (length and hash of the value's text).

mod support;

use support::*;

const JOB: &str = "examples/job-2node.txt";
const CLIENTS: u32 = 4;
/// The server's log of a flush that failed and withdrew its keys (staging.c).
const WITHDRAWN: &str = "staged values not published, their keys withdrawn";

/// The answer lines (no `maps`) of `lines` whose id starts with `prefix`, sorted.
fn of(lines: &[String], prefix: &str) -> Vec<String> {
    answers(lines)
        .into_iter()
        .filter(|l| l.starts_with(prefix))
        .collect()
}

/// Every client mapped its store on `fs` (the run used the small filesystem).
fn mapped_on(lines: &[String], fs: &Tmpfs) {
    let m = maps(lines);
    assert_eq!(m.len(), CLIENTS as usize, "maps: {m:?}");
    for (rank, segs) in &m {
        assert!(
            !segs.is_empty()
                && segs
                    .iter()
                    .all(|(_, p)| p.starts_with(&*fs.path().to_string_lossy())),
            "rank {rank} mapped {segs:?}, not a store on {}",
            fs.path().display()
        );
    }
}

#[test]
fn a_value_the_full_store_cannot_write_is_read_from_hash_not_the_older_one() {
    if !root_for("mount a tmpfs") {
        return;
    }
    // Every rank commits k = "v1-<rank>", then k again as a 5 MiB string: the store (a 4 MiB
    // tmpfs) cannot publish the second commit, and must withdraw the first value.
    let fs = Tmpfs::mount("4m");
    let big = "x".repeat(5 << 20);
    let mut corpus =
        format!("put global k v1-%r\ncommit\nfence\nput global k {big}-%r\ncommit\nfence\n");
    for r in 0..CLIENTS {
        corpus.push_str(&format!("digest w{r} {r} k\n"));
    }
    corpus.push_str("maps\n");
    let tmpdir = fs.path().to_str().unwrap();
    let env = [
        ("PMIX_SERVER_TMPDIR", tmpdir),
        ("PMIX_MCA_gds_base_verbose", "1"),
    ];
    let corpora = [corpus];
    let name = "full-store-big.txt";
    let (ok, hash, err) = pmix_job_run(JOB, name, &corpora, Gds::Hash, "", &env);
    assert!(ok, "hash run failed:\n{err}");
    let st = tempfile::tempdir().unwrap();
    let (ok, rshm, err) = pmix_job_run(JOB, name, &corpora, Gds::Rshm(st.path()), "", &env);
    assert!(ok, "rshm run failed:\n{err}");

    let (h, r) = (of(&hash, "w"), of(&rshm, "w"));
    let newer = format!("len={}", big.len() + 4); // quoted, "-<rank>" appended
    assert_eq!(h.len(), (CLIENTS * CLIENTS) as usize, "hash: {h:#?}");
    assert!(h.iter().all(|l| l.contains(&newer)), "hash: {h:#?}");
    let d = diff(&h, &r);
    assert!(d.is_empty(), "answers differ from hash's:\n{d:#?}");
    mapped_on(&rshm, &fs);
    assert!(
        err.contains(WITHDRAWN),
        "the server never failed to publish (the store fit?):\n{}",
        err.lines()
            .filter(|l| l.contains("gds:rshm"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let (answered, _, clients) = stats(st.path());
    assert_eq!(clients, CLIENTS as usize);
    eprintln!(
        "5 MiB commits on a 4 MiB store: {} answers equal hash's (the new value), {} withdrawals \
         logged; {answered} Gets answered from the store",
        r.len(),
        err.matches(WITHDRAWN).count()
    );
}
