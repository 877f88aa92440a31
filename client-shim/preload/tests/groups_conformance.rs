//! Process groups against libpmix itself (docs/psets-groups.md "Groups"): four real libpmix
//! clients (`group-client`) call `PMIx_Group_construct` for a group of all of them, listed in
//! reverse rank order, asking for a context id; tools/pmix-host's `group` upcall completes it
//! (context id 1), and with `--rshm` also publishes the result through server-shim. Each client
//! then asks `{group, rank}` for every group rank, `PMIX_GROUP_NAMES` of itself and the group's
//! `PMIX_GROUP_CONTEXT_ID`, destructs the group and asks again. Run plain and preloaded.
//!
//! The construct and destruct themselves, and every Get of a native process, equal libpmix's.
//! OpenPMIx 4.2.2 resolves none of the group Gets (12.2: it translates `{group, rank}` only in
//! a fence; a Get of a group id goes to the host as a direct modex, NOT-SUPPORTED here), so for
//! those the preloaded answer is checked against the standard: `{group, r}` answers as the
//! member with group rank r does, `PMIX_GROUP_NAMES` lists the group, the context id is the one
//! the construct returned; once the group is destructed, everything is libpmix's again.

#[path = "../../../gds/tests/support/pmixhost/mod.rs"]
mod pmixhost;

#[path = "support/build.rs"]
mod build;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use build::libraries;

const N: u32 = 4;

/// (rank, what) -> answer.
type Lines = BTreeMap<(u32, String), String>;

fn run(env: &[(&str, &str)], args: &[&str]) -> Lines {
    let dir = pmixhost::build();
    let mut cmd = Command::new(dir.join("pmix-host"));
    cmd.current_dir(&dir)
        .args([
            "--job",
            "examples/job-2node.txt",
            "--timeout",
            "50",
            "--client-cmd",
        ])
        .arg(format!("{} {N}", dir.join("group-client").display()))
        .args(args)
        .env("PMIX_MCA_gds", "hash")
        .envs(env.iter().copied());
    let (status, out, err) = pmixhost::run_group(cmd, Duration::from_secs(60));
    assert!(
        status.is_some_and(|s| s.success()),
        "pmix-host {args:?}: {status:?}\n{}",
        String::from_utf8_lossy(&err)
    );
    let mut lines = Lines::new();
    for l in String::from_utf8(out).unwrap().lines() {
        let mut f = l.splitn(4, ' ');
        assert_eq!(f.next(), Some("group"), "{l}");
        let rank = f.next().unwrap().parse().unwrap();
        let what = f.next().unwrap().to_owned();
        lines.insert((rank, what), f.next().unwrap_or("").to_owned());
    }
    lines
}

#[test]
fn group_answers_equal_libpmix_s_or_the_standard_s() {
    let (server, preload) = libraries();
    let plain = run(&[], &[]);
    let p = preload.display().to_string();
    let pre = run(
        &[("LD_PRELOAD", p.as_str())],
        &["--rshm", server.to_str().unwrap()],
    );
    assert_eq!(
        plain.keys().collect::<Vec<_>>(),
        pre.keys().collect::<Vec<_>>()
    );
    // construct, its result, 2 x N + 2 before, destruct, 2 + 2 after
    assert_eq!(plain.len(), (N * 17) as usize, "{plain:#?}");
    for (k @ (rank, what), want) in &plain {
        let got = &pre[k];
        let r = |w: &str| {
            w.split_once('(')
                .and_then(|(_, r)| r.trim_end_matches(')').parse::<u32>().ok())
        };
        if what.starts_with("built:grank(") {
            // OpenPMIx 4.2.2: a group id is no namespace it knows.
            assert_eq!(want, "NOT-SUPPORTED", "{k:?}");
            // Group rank g is the g-th member as libpmix handed the group to its host:
            // sorted by rank (4.2.2 sorts the construct's procs). The construct listed rank
            // N-1-i at position i, so the member of group rank g is native(N-1-g).
            let g = r(what).unwrap();
            let native = &plain[&(*rank, format!("built:native({})", N - 1 - g))];
            assert_eq!(got, native, "{k:?}");
        } else if what == "built:names(self)" {
            assert_eq!(want, "NOT-FOUND", "{k:?}");
            assert_eq!(
                got, "SUCCESS pmix.pgrp.nm=PMIX_DATA_ARRAY:[\"grpA\"]",
                "{k:?}"
            );
        } else if what == "built:ctxid(grpA)" {
            assert_eq!(want, "NOT-SUPPORTED", "{k:?}");
            let result = &plain[&(*rank, "construct-result".to_owned())];
            assert_eq!(got, result, "the context id the construct returned");
        } else {
            assert_eq!(got, want, "{k:?}");
        }
    }
}
