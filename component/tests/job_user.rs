//! A root server for another user's job, as Slurm's slurmstepd is: tools/pmix-host runs as root
//! with the job's user named in `PMIx_server_init`'s info (`PMIX_USERID` / `PMIX_GRPID`, from
//! `PMIX_HOST_JOB_UID` / `PMIX_HOST_JOB_GID`), and its clients run as that user (a system user
//! made for the tests, `setpriv --reuid --regid --clear-groups`). The user's clients read the
//! store (answers equal hash's; their mappings of its files are read-only) and can change
//! nothing in it: every write, truncation, rename, removal and new file is refused. The same
//! without `PMIX_USERID` in the init info but with the server's tmpdir owned by the job's user
//! (`PMIX_HOST_INIT_NO_USERID=1`, `--tmpdir`), as Slurm's PMIx plugin built against OpenPMIx >= 5
//! runs it: the tmpdir's owner reads the store.
//!
//! Root only (it creates a user and changes uid); it prints why it skipped otherwise.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::*;

const JOB: &str = "examples/job-2node.txt";

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
    # The exit status, not the file's absence: the server unlinks old generations itself.
    if unlink "$f" 2>/dev/null; then echo "attack $RSHM_HOST_RANK removed $f"; fi
done
if touch "$RSHM_STORE/rshm-planted" 2>/dev/null; then echo "attack $RSHM_HOST_RANK planted a file"; fi
if rmdir "$RSHM_STORE" 2>/dev/null; then echo "attack $RSHM_HOST_RANK removed the store"; fi
echo "tried $RSHM_HOST_RANK $n uid $(id -u)"
exec "$@"
"#;

/// What the user's processes run, load and write, copied where any user can reach them (the
/// build tree may be under a home directory the user cannot enter): pmix-client, the component,
/// the corpus, the script, and a directory for the clients' counters. (Not named `rshm-*`: the
/// clients' `maps` lines list paths containing that.)
struct Staged {
    dir: tempfile::TempDir,
}

impl Staged {
    fn new(corpus: &str) -> Staged {
        let dir = tempfile::Builder::new()
            .prefix("job-user-")
            .tempdir_in("/tmp")
            .unwrap();
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        mode(dir.path(), 0o755);
        let put = |name: &str, from: Option<&Path>, text: &str, m: u32| {
            let to = dir.path().join(name);
            match from {
                Some(f) => drop(std::fs::copy(f, &to).unwrap()),
                None => std::fs::write(&to, text).unwrap(),
            }
            mode(&to, m);
        };
        std::fs::create_dir(dir.path().join("component")).unwrap();
        mode(&dir.path().join("component"), 0o755);
        let so = component_dir().join("pmix_mca_gds_rshm.so");
        put("component/pmix_mca_gds_rshm.so", Some(&so), "", 0o644);
        put(
            "pmix-client",
            Some(&pmixhost::build().join("pmix-client")),
            "",
            0o755,
        );
        put("corpus.txt", None, corpus, 0o644);
        put("attack.sh", None, ATTACK, 0o755);
        std::fs::create_dir(dir.path().join("stats")).unwrap();
        mode(&dir.path().join("stats"), 0o777);
        Staged { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// How the server learns the job's user.
#[derive(Clone, Copy, PartialEq)]
enum Told {
    /// `PMIX_USERID` / `PMIX_GRPID` in `PMIx_server_init`'s info.
    InitInfo,
    /// Neither; the server's tmpdir (`PMIX_SERVER_TMPDIR`) is a directory the user owns.
    TmpdirOwner,
}

/// tools/pmix-host (as root) for the job's user, its clients run as that user; `rshm`: under
/// `rshm,hash` with `gds_rshm_verbose`, else `hash`. Returns the output lines and stderr.
fn run_job(
    staged: &Staged,
    (uid, gid): (u32, u32),
    told: Told,
    rshm: bool,
) -> (Vec<String>, String) {
    let tool = pmixhost::build();
    let client = format!(
        "setpriv --reuid={uid} --regid={gid} --clear-groups /bin/sh {} {} {}",
        staged.path("attack.sh").display(),
        staged.path("pmix-client").display(),
        staged.path("corpus.txt").display()
    );
    let mut cmd = Command::new(tool.join("pmix-host"));
    cmd.current_dir(staged.dir.path())
        .arg("--job")
        .arg(tool.join(JOB))
        .args(["--timeout", "100", "--client-cmd", &client])
        .env("PMIX_HOST_JOB_UID", uid.to_string())
        .env("PMIX_HOST_JOB_GID", gid.to_string());
    if told == Told::TmpdirOwner {
        // as Slurm's pmixp_mkdir makes SlurmdSpoolDir/pmix.J.S: the job's user's, 0700
        let tmp = staged.path(if rshm { "tmp-rshm" } else { "tmp-hash" });
        std::fs::create_dir(&tmp).unwrap();
        std::os::unix::fs::chown(&tmp, Some(uid), None).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o700)).unwrap();
        cmd.arg("--tmpdir")
            .arg(&tmp)
            .env("PMIX_HOST_INIT_NO_USERID", "1");
    }
    if rshm {
        cmd.env("PMIX_MCA_gds", "rshm,hash")
            .env("PMIX_MCA_mca_base_component_path", staged.path("component"))
            .env("PMIX_MCA_gds_rshm_verbose", "1")
            .env("RSHM_GDS_STATS", staged.path("stats"));
    } else {
        cmd.env("PMIX_MCA_gds", "hash");
    }
    let (ok, out, err) = run(cmd, Duration::from_secs(120));
    assert!(ok, "pmix-host (rshm: {rshm}) failed:\n{out}\n{err}");
    (out.lines().map(str::to_owned).collect(), err)
}

#[test]
fn a_root_server_s_store_is_read_and_not_changed_by_the_job_s_user() {
    if !users::root_for("create a user and run clients as it") {
        return;
    }
    let users::Ids { uid, gid } = users::test_user();
    job_user_reads_the_store((uid, gid), Told::InitInfo, &format!("uid {uid} gid {gid}"));
}

#[test]
fn without_pmix_userid_the_owner_of_the_server_s_tmpdir_reads_the_store() {
    if !users::root_for("create a user and run clients as it") {
        return;
    }
    let users::Ids { uid, gid } = users::test_user();
    job_user_reads_the_store((uid, gid), Told::TmpdirOwner, &format!("uid {uid} gid -"));
}

/// Under hash and rshm, the user's clients: the store made readable by `readers` (the server's
/// log line), nothing in it changed, answers equal hash's, read from read-only mappings.
fn job_user_reads_the_store((uid, gid): (u32, u32), told: Told, readers: &str) {
    let text =
        std::fs::read_to_string(pmixhost::build().join("examples/corpus-2node.txt")).unwrap();
    let staged = Staged::new(&format!("{text}\nmaps\n"));
    let ours = |lines: &[String]| -> Vec<String> {
        answers(lines)
            .into_iter()
            .filter(|l| !l.starts_with("tried ") && !l.starts_with("attack "))
            .collect()
    };

    let (hash, _) = run_job(&staged, (uid, gid), told, false);
    let (rshm, err) = run_job(&staged, (uid, gid), told, true);

    // The server made its store for the user.
    let said: Vec<&str> = err.lines().filter(|l| l.contains("rshm: store ")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].ends_with(&format!("owner uid 0, readable by {readers}")),
        "{}",
        said[0]
    );
    // The clients ran as the user, found the store's files, and changed none of them.
    let tried: Vec<&String> = rshm.iter().filter(|l| l.starts_with("tried ")).collect();
    assert_eq!(tried.len(), 4, "{rshm:#?}");
    for t in &tried {
        let f: Vec<&str> = t.split(' ').collect();
        assert!(f[2].parse::<u32>().unwrap() >= 2, "{t}: too few files");
        assert_eq!(f[4], uid.to_string(), "{t}: not the job's user");
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
    let (answered, _, clients) = stats(&staged.path("stats"));
    assert_eq!(clients, 4, "client counters");
    assert!(answered > 0, "no Get answered from the store");
    eprintln!(
        "4 clients as uid {uid}: {answered} Gets answered from the store, same answers as hash, \
         no change to the store possible"
    );
}
