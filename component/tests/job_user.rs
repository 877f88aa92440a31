//! A root server for another user's job, as Slurm's slurmstepd is: tools/pmix-host runs as root
//! with the job's user named in `PMIx_server_init`'s info (`PMIX_USERID` / `PMIX_GRPID`, from
//! `PMIX_HOST_JOB_UID` / `PMIX_HOST_JOB_GID`), and its clients run as that user (a system user
//! made for the test, `setpriv --reuid --regid --clear-groups`). The user's clients read the
//! store (answers equal hash's; their mappings of its files are read-only) and can change
//! nothing in it: every write, truncation, rename, removal and new file is refused.
//!
//! Root only (it creates a user and changes uid); it prints why it skipped otherwise.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use support::*;

const JOB: &str = "examples/job-2node.txt";
const USER: &str = "rshmtest";

/// What the job's user tries on the store before its client starts (`$RSHM_STORE`, from
/// setup_fork): one "attack" line for any change that succeeded, and a count of what it tried.
const ATTACK: &str = r#"#!/bin/sh
n=0
for f in "$RSHM_STORE"/rshm-*; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    if (echo x >> "$f") 2>/dev/null; then echo "attack $RSHM_HOST_RANK wrote $f"; fi
    if truncate -s 0 "$f" 2>/dev/null; then echo "attack $RSHM_HOST_RANK truncated $f"; fi
    if mv "$f" "$f.moved" 2>/dev/null; then echo "attack $RSHM_HOST_RANK renamed $f"; fi
    rm -f "$f" 2>/dev/null
    if [ ! -e "$f" ]; then echo "attack $RSHM_HOST_RANK removed $f"; fi
done
if touch "$RSHM_STORE/rshm-planted" 2>/dev/null; then echo "attack $RSHM_HOST_RANK planted a file"; fi
if rmdir "$RSHM_STORE" 2>/dev/null; then echo "attack $RSHM_HOST_RANK removed the store"; fi
echo "tried $RSHM_HOST_RANK $n uid $(id -u)"
exec "$@"
"#;

/// The test user's uid and gid, made if missing.
fn job_user() -> (u32, u32) {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, USER]).output().ok()?;
        String::from_utf8(out.stdout).ok()?.trim().parse().ok()
    };
    if id("-u").is_none() {
        let st = Command::new("useradd")
            .args(["--system", "--no-create-home", USER])
            .status()
            .expect("useradd");
        assert!(st.success(), "useradd --system {USER}");
    }
    (id("-u").expect("uid"), id("-g").expect("gid"))
}

#[test]
fn a_root_server_s_store_is_read_and_not_changed_by_the_job_s_user() {
    if !root_for("create a user and run clients as it") {
        return;
    }
    let (uid, gid) = job_user();
    let script = std::env::temp_dir().join(format!("rshm-attack-{}.sh", std::process::id()));
    std::fs::write(&script, ATTACK).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let wrap = format!(
        "setpriv --reuid={uid} --regid={gid} --clear-groups /bin/sh {} ",
        script.display()
    );
    let (uid_s, gid_s) = (uid.to_string(), gid.to_string());
    let env = [
        ("PMIX_HOST_JOB_UID", uid_s.as_str()),
        ("PMIX_HOST_JOB_GID", gid_s.as_str()),
        ("PMIX_MCA_gds_rshm_verbose", "1"),
    ];
    let text =
        std::fs::read_to_string(pmixhost::build().join("examples/corpus-2node.txt")).unwrap();
    let corpora = [format!("{text}\nmaps\n")];
    let name = "job-user.txt";
    let ours = |lines: &[String]| -> Vec<String> {
        answers(lines)
            .into_iter()
            .filter(|l| !l.starts_with("tried ") && !l.starts_with("attack "))
            .collect()
    };

    let (ok, hash, err) = pmix_job_run(JOB, name, &corpora, Gds::Hash, &wrap, &env);
    assert!(ok, "hash run failed:\n{err}");
    // The user's clients write their counters here.
    let st = tempfile::tempdir().unwrap();
    std::fs::set_permissions(st.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let (ok, rshm, err) = pmix_job_run(JOB, name, &corpora, Gds::Rshm(st.path()), &wrap, &env);
    let _ = std::fs::remove_file(&script);
    assert!(ok, "rshm run failed:\n{err}");

    // The server made its store for the user.
    let said: Vec<&str> = err.lines().filter(|l| l.contains("rshm: store ")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].ends_with(&format!("owner uid 0, readable by uid {uid} gid {gid}")),
        "{}",
        said[0]
    );
    // The clients ran as the user, found the store's files, and changed none of them.
    let tried: Vec<&String> = rshm.iter().filter(|l| l.starts_with("tried ")).collect();
    assert_eq!(tried.len(), 4, "{rshm:#?}");
    for t in &tried {
        let f: Vec<&str> = t.split(' ').collect();
        assert!(f[2].parse::<u32>().unwrap() >= 2, "{t}: too few files");
        assert_eq!(f[4], uid_s, "{t}: not the job's user");
    }
    let attacks: Vec<&String> = rshm.iter().filter(|l| l.starts_with("attack ")).collect();
    assert!(
        attacks.is_empty(),
        "the job's user changed the store: {attacks:#?}"
    );
    // They read it: their answers are hash's, from read-only mappings of the store's files.
    let d = diff(&ours(&hash), &ours(&rshm));
    assert!(d.is_empty(), "answers differ from hash's:\n{d:#?}");
    let m = maps(&rshm);
    assert_eq!(m.len(), 4);
    for (rank, segs) in &m {
        assert!(
            segs.iter().any(|(_, p)| p.contains("/rshm-tbl-")),
            "rank {rank} mapped no table: {segs:?}"
        );
        for (perms, path) in segs {
            assert!(
                perms.starts_with("r--"),
                "rank {rank}: {path} mapped {perms}"
            );
        }
    }
    let (answered, _, clients) = stats(st.path());
    assert_eq!(clients, 4, "client counters");
    assert!(answered > 0, "no Get answered from the store");
    eprintln!(
        "4 clients as uid {uid}: {answered} Gets answered from the store, same answers as hash, \
         no change to the store possible"
    );
}
