//! The component's server when its store cannot take a commit: real OpenPMIx 4.2.2 clients
//! (tools/pmix-host) must read exactly what they read under `PMIX_MCA_gds=hash`, never an older
//! value the store still holds (docs/openpmix.md "A value the store cannot take").
//!
//! The store is put on a tmpfs of a few MiB mounted for the test (`RSHM_DIR` in the
//! server's environment), so these tests need root; elsewhere each prints a `SKIPPED` line.
//! Large values are read with the client's `digest` line (length and hash of the value's text).

mod support;

use support::tmpfs::Tmpfs;
use support::*;

const JOB: &str = "examples/job-2node.txt";
const CLIENTS: u32 = 4;
/// The server's log of a flush that failed and withdrew its keys, or (when even that could not
/// be published) its namespaces' posted data (staging.c).
const WITHDRAWN: &str = "staged values not published, their ";

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
    if !users::root_for("mount a tmpfs") {
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
    let env = [("RSHM_DIR", tmpdir), ("PMIX_MCA_gds_base_verbose", "1")];
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

/// The per-rank corpora of [`a_store_filled_by_fenced_cards_answers_as_hash_and_serves_later_commits`].
/// Every rank commits k = "v1-<rank>"; ranks 0 and 1 then commit a card of `card` bytes each
/// and every rank fences with PMIX_COLLECT_DATA; ranks 2 and 3 then commit k = "v2-<rank>" and
/// m; every rank reads every k and m; ranks 2 and 3 commit n, read by every rank after the next
/// fence (`reads` false: without those reads). A rank never reads a key twice (libpmix's own
/// cache would answer the second read under hash).
fn fill_corpora(card: usize, reads: bool) -> Vec<String> {
    let big = "c".repeat(card);
    (0..CLIENTS)
        .map(|rank| {
            let mut c = String::from("put global k v1-%r\ncommit\nfence\n");
            if rank < 2 {
                c.push_str(&format!("put global card {big}-%r\ncommit\n"));
            }
            c.push_str("fence\n");
            for r in 0..2 {
                c.push_str(&format!("digest d{r} {r} card\n"));
            }
            // no rank commits again before every rank has read
            c.push_str("fence nocollect\n");
            if rank >= 2 {
                c.push_str("put global k v2-%r\nput global m m1-%r\ncommit\n");
            }
            c.push_str("fence\n");
            for r in 0..CLIENTS {
                c.push_str(&format!("q{r} {r} k\n"));
            }
            for r in 2..CLIENTS {
                c.push_str(&format!("p{r} {r} m\n"));
            }
            c.push_str("fence nocollect\n");
            if rank >= 2 {
                c.push_str("put global n n1-%r\ncommit\n");
            }
            c.push_str("fence\n");
            if reads {
                for r in 2..CLIENTS {
                    c.push_str(&format!("n{r} {r} n\n"));
                }
            }
            c.push_str("maps\n");
            c
        })
        .collect()
}

#[test]
fn a_store_filled_by_fenced_cards_answers_as_hash_and_serves_later_commits() {
    if !users::root_for("mount a tmpfs") {
        return;
    }
    // Two ranks commit 1.5 MiB cards and fence with PMIX_COLLECT_DATA: the 4 MiB store holds
    // them, and has no room left for the second of the next two commits (k again, and m): its
    // keys, or the namespace's posted data, are withdrawn, and every rank reads hash's answers
    // (v2, never the store's v1). The commits after that (n) are published and answered from
    // the store again.
    let fs = Tmpfs::mount("4m");
    let tmpdir = fs.path().to_str().unwrap();
    let env = [("RSHM_DIR", tmpdir), ("PMIX_MCA_gds_base_verbose", "1")];
    let card = 3 << 19;
    let name = "full-store-fill.txt";
    let corpora = fill_corpora(card, true);
    let (ok, hash, err) = pmix_job_run(JOB, name, &corpora, Gds::Hash, "", &env);
    assert!(ok, "hash run failed:\n{err}");
    let st = tempfile::tempdir().unwrap();
    let (ok, rshm, err) = pmix_job_run(JOB, name, &corpora, Gds::Rshm(st.path()), "", &env);
    assert!(ok, "rshm run failed:\n{err}");

    let (h, r) = (answers(&hash), answers(&rshm));
    let cards = h.iter().filter(|l| l.starts_with('d')).count();
    assert_eq!(cards, 2 * CLIENTS as usize, "hash: {h:#?}");
    assert!(
        h.iter()
            .filter(|l| l.starts_with('d'))
            .all(|l| l.contains(&format!("len={}", card + 4))),
        "hash: {h:#?}"
    );
    for r in 2..CLIENTS {
        let v2 = h
            .iter()
            .filter(|l| l.starts_with(&format!("q{r} ")) && l.ends_with(&format!("\"v2-{r}\"")))
            .count();
        assert_eq!(v2, CLIENTS as usize, "hash's k of rank {r}: {h:#?}");
    }
    let d = diff(&h, &r);
    assert!(d.is_empty(), "answers differ from hash's:\n{d:#?}");
    mapped_on(&rshm, &fs);
    let failed = err.matches(WITHDRAWN).count();
    assert!(
        failed > 0,
        "the server never failed to publish (the store fit?):\n{}",
        err.lines()
            .filter(|l| l.contains("gds:rshm"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The same job without the reads of n: the difference in Gets answered from the store is
    // the reads of n the store answered after the failure.
    let st0 = tempfile::tempdir().unwrap();
    let corpora0 = fill_corpora(card, false);
    let (ok, _, err0) = pmix_job_run(JOB, name, &corpora0, Gds::Rshm(st0.path()), "", &env);
    assert!(ok, "rshm run without reads failed:\n{err0}");
    let ((with_reads, _, n), (without, _, n0)) = (stats(st.path()), stats(st0.path()));
    assert_eq!((n, n0), (CLIENTS as usize, CLIENTS as usize));
    eprintln!(
        "1.5 MiB cards of 2 ranks on a 4 MiB store: {} answers equal hash's, {failed} failed \
         publications withdrawn; Gets answered from the store: {with_reads} with the 8 reads \
         of n, {without} without",
        r.len()
    );
    assert_eq!(
        with_reads - without,
        8,
        "the reads of n committed after the failure were not all answered from the store"
    );
}
