//! The PMI-2 check program (tests/c/pmi2_check.c: every call of pmi2.h, 4 ranks, values at the
//! length limits, the size probe, waitFor) linked with librshm_pmi2.so and run by Open MPI
//! 4.1.4's mpirun (libpmix 4.2.2 server) twice: under `PMIX_MCA_gds=hash`, where every read
//! goes to libpmix, and under the rshm component, where the library reads the store. The
//! answers must be equal, and the counters the library writes at PMI2_Finalize
//! (`$RSHM_PMI2_STATS`) must show the rshm run attached the store and answered from it.
//! Needs Debian's `openmpi-bin`, `libopenmpi-dev` and `libpmix-dev`. The same program run
//! without a server checks the singleton init.

#[path = "../../client-shim/preload/tests/support/build.rs"]
mod build;
#[path = "../../gds/tests/support/pmixhost/mod.rs"]
mod pmixhost;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Build librshm_pmi2.so (this profile) and the check program linked with it.
fn check_program(dir: &Path) -> PathBuf {
    program(dir, "pmi2_check")
}

/// Build librshm_pmi2.so (this profile) and `pmi2/tests/c/<name>.c` linked with it.
fn program(dir: &Path, name: &str) -> PathBuf {
    let root = pmixhost::repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "-q", "-p", "rshm-pmi2", "--lib"])
        .status()
        .expect("cargo build");
    assert!(st.success(), "building librshm_pmi2.so failed");
    let lib = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
        .join("debug");
    assert!(lib.join("librshm_pmi2.so").exists());
    let exe = dir.join(name);
    let out = Command::new("cc")
        .args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(root.join(format!("pmi2/tests/c/{name}.c")))
        .arg(format!("-I{}", root.join("pmi2/include").display()))
        .arg(format!("-L{}", lib.display()))
        .arg("-lrshm_pmi2")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .output()
        .expect("cc");
    assert!(
        out.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// mpirun -np 4 of `exe` with `gds` (and the component's directory for rshm); the sorted
/// output lines, and the library's counters, one line per rank.
fn run(exe: &Path, gds: &str, stats: &Path) -> (Vec<String>, Vec<String>) {
    run_with(exe, gds, stats, None)
}

/// [`run`], with `libdir` first on the processes' library path.
fn run_with(
    exe: &Path,
    gds: &str,
    stats: &Path,
    libdir: Option<&Path>,
) -> (Vec<String>, Vec<String>) {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "4"])
        .args(["-x", "PMIX_MCA_gds", "-x", "RSHM_PMI2_STATS"])
        .env("PMIX_MCA_gds", gds)
        .env("RSHM_PMI2_STATS", stats);
    if let Some(dir) = libdir {
        cmd.args(["-x", "LD_LIBRARY_PATH"])
            .env("LD_LIBRARY_PATH", dir);
    }
    if gds.starts_with("rshm") {
        cmd.args(["-x", "PMIX_MCA_mca_base_component_path"])
            .env("PMIX_MCA_mca_base_component_path", build::component_dir());
    }
    cmd.arg(exe);
    let (status, out, err) = pmixhost::run_group(cmd, Duration::from_secs(180));
    let out = String::from_utf8_lossy(&out).into_owned();
    assert!(
        status.is_some_and(|s| s.success()),
        "mpirun ({gds}) failed:\n{out}\n{}",
        String::from_utf8_lossy(&err)
    );
    let mut lines: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with("rank "))
        .map(str::to_owned)
        .collect();
    lines.sort();
    let mut counters: Vec<String> = std::fs::read_dir(stats)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap().trim().to_owned())
        .collect();
    counters.sort();
    (lines, counters)
}

/// `appnum`: the rshm component answers PMIx_Get of a process's own PMIX_APPNUM with
/// NOT_FOUND where hash answers 0 (libpmix's answer, which this library passes on either
/// way). That one field is compared apart.
fn without_appnum(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| match l.find(" appnum ") {
            Some(i) => {
                let rest = &l[i + 8..];
                let end = rest.find(' ').unwrap_or(rest.len());
                format!("{} appnum *{}", &l[..i], &rest[end..])
            }
            None => l.clone(),
        })
        .collect()
}

#[test]
fn hash_and_rshm_give_the_same_answers_and_rshm_reads_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = check_program(tmp.path());
    let (hs, rs) = (tmp.path().join("hash"), tmp.path().join("rshm"));
    std::fs::create_dir_all(&hs).unwrap();
    std::fs::create_dir_all(&rs).unwrap();
    let (hash, hash_counters) = run(&exe, "hash", &hs);
    let (rshm, rshm_counters) = run(&exe, "rshm,hash", &rs);

    // The run itself is right: every rank's value, at the limits, found; the probe; waitFor.
    for want in [
        "rank 2 init rc 0 spawned 0 size 4 appnum 0 version 2.0 initialized 1",
        "rank 0 get src 3 rc 0 len 1020 same 1",
        "rank 3 get-any src 0 rc 0 len 1023 same 1",
        "rank 1 probe src 0 rc 0 valLen -1024 untouched 1 rc0 0 valLen0 -1024",
        "rank 1 probe-get src 0 rc 0 len 1023 same 1",
        "rank 0 put-limits key64 5 val1024 7 emptykey 4 badutf8 6 nullval 3",
        "rank 1 getnode wait rc 0 flag 1 same 1",
        "rank 2 job PMI_process_mapping rc 0 flag 1 (vector,(0,1,4))",
        "rank 3 node localRanks rc 0 flag 1 n 4 [0,1,2,3]",
        "rank X lookup rc 0 port-of-rank-0",
        "rank 0 finalize rc 0 initialized 0 again 1",
        // Edges: NULL outputs, reserved keys, keys nobody put, ranks and jobs outside the
        // job, PMI2_Init after PMI2_Finalize.
        "rank 0 init-null rc 3 initialized 0",
        "rank 1 put-reserved job.size 4 hname 4 node 4",
        "rank 2 get-reserved job.size rc 4 hname rc 4",
        "rank 3 kvs-as-node rc 0 flag 0",
        "rank 0 get-missing-src rc 4 fast 1",
        "rank 1 get-outside rc 3 3 fast 1",
        "rank 2 get-otherjob rc 3 fast 1",
        "rank 3 reinit rc 1 initialized 0 fence 1",
    ] {
        assert!(
            hash.iter().any(|l| l == want),
            "hash run lacks {want:?}:\n{hash:#?}"
        );
    }
    assert_eq!(hash.len(), rshm.len(), "{hash:#?}\n{rshm:#?}");
    let (h, r) = (without_appnum(&hash), without_appnum(&rshm));
    let diff: Vec<_> = h.iter().zip(&r).filter(|(a, b)| a != b).collect();
    assert!(diff.is_empty(), "hash and rshm answers differ: {diff:#?}");

    // Who answered: none from a store under hash; most reads from it under rshm.
    assert_eq!(hash_counters.len(), 4, "{hash_counters:?}");
    assert_eq!(rshm_counters.len(), 4, "{rshm_counters:?}");
    let field = |l: &str, k: &str| -> u64 {
        let f: Vec<&str> = l.split(' ').collect();
        let i = f.iter().position(|x| *x == k).unwrap();
        f[i + 1].parse().unwrap_or(0)
    };
    for l in &hash_counters {
        assert!(
            l.contains("attached false") && field(l, "store") == 0,
            "{l}"
        );
    }
    for l in &rshm_counters {
        assert!(l.contains("attached true"), "{l}");
        assert!(
            field(l, "store") >= 20,
            "rshm run read little from the store: {l}"
        );
    }
    eprintln!("hash: {hash_counters:?}\nrshm: {rshm_counters:?}");
}

/// rshm's `libpmi2.so.0` (pmi2/Makefile, this profile): the directory holding it.
fn drop_in_dir() -> PathBuf {
    let root = pmixhost::repo_root();
    let out = Command::new("make")
        .args(["-s", "-C"])
        .arg(root.join("pmi2"))
        .arg("PROFILE=debug")
        .output()
        .expect("make");
    assert!(
        out.status.success(),
        "make -C pmi2 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
        .join("debug/pmi2-slurm");
    assert!(dir.join("libpmi2.so.0").exists(), "{}", dir.display());
    dir
}

/// The check program built against Slurm's `slurm/pmi2.h` and linked with Slurm's `-lpmi2`
/// (Debian's libpmi2-0-dev), as an existing PMI-2 binary is.
fn slurm_abi_program(dir: &Path) -> PathBuf {
    let exe = dir.join("pmi2_check_slurm");
    let out = Command::new("cc")
        .args([
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-I/usr/include/slurm",
            "-o",
        ])
        .arg(&exe)
        .arg(pmixhost::repo_root().join("pmi2/tests/c/pmi2_check.c"))
        .arg("-lpmi2")
        .output()
        .expect("cc");
    assert!(
        out.status.success(),
        "cc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// The answers without the version `PMI2_Init` returns (Slurm's form has no such output).
fn without_version(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| match l.find(" version ") {
            Some(i) => {
                let rest = &l[i + 9..];
                let end = rest.find(' ').unwrap_or(rest.len());
                format!("{}{}", &l[..i], &rest[end..])
            }
            None => l.clone(),
        })
        .collect()
}

/// A binary of Slurm's PMI-2 ABI, unchanged, on rshm's drop-in `libpmi2.so.0` by its library
/// path alone: the same answers as the program built against rshm's own pmi2.h, the calls only
/// Slurm's header has (PMI2_Job_GetRank, PMI2_Info_GetSize, PMIX_Ring) answered, and its reads
/// from the store.
#[test]
fn a_slurm_abi_binary_runs_on_the_drop_in_library() {
    let tmp = tempfile::tempdir().unwrap();
    let own = check_program(tmp.path());
    let dir = drop_in_dir();
    let slurm = slurm_abi_program(tmp.path());
    let (a, b) = (tmp.path().join("own"), tmp.path().join("dropin"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let (own_lines, _) = run(&own, "rshm,hash", &a);
    let (drop_lines, counters) = run_with(&slurm, "rshm,hash", &b, Some(&dir));

    let (extra, rest): (Vec<String>, Vec<String>) = drop_lines
        .iter()
        .cloned()
        .partition(|l| l.contains(" slurm-abi "));
    for r in 0..4 {
        for want in [
            format!("rank {r} slurm-abi getrank rc 0 same 1 getsize rc 0 4"),
            format!(
                "rank {r} slurm-abi ring rc 0 rank-same 1 ranks 4 left ring-{} right ring-{}",
                (r + 3) % 4,
                (r + 1) % 4
            ),
        ] {
            assert!(extra.contains(&want), "lacks {want:?}:\n{extra:#?}");
        }
    }
    let (o, d) = (without_version(&own_lines), without_version(&rest));
    assert_eq!(o.len(), d.len(), "{o:#?}\n{d:#?}");
    let diff: Vec<_> = o.iter().zip(&d).filter(|(x, y)| x != y).collect();
    assert!(
        diff.is_empty(),
        "the two ABIs answer differently: {diff:#?}"
    );
    // rshm's library answered (its counters), from the store.
    assert_eq!(counters.len(), 4, "{counters:?}");
    for l in &counters {
        assert!(l.contains("attached true"), "{l}");
    }
}

/// The API's singleton init: a process no PMIx server started is rank 0 of a job of 1 with
/// appnum 0, its KVS and node attributes its own, name publishing an error.
#[test]
fn a_process_no_server_started_is_a_singleton() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = check_program(tmp.path());
    let mut cmd = Command::new(&exe);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PMIX_") {
            cmd.env_remove(k);
        }
    }
    let (status, out, err) = pmixhost::run_group(cmd, Duration::from_secs(60));
    let out = String::from_utf8_lossy(&out).into_owned();
    assert!(
        status.is_some_and(|s| s.success()),
        "{out}\n{}",
        String::from_utf8_lossy(&err)
    );
    for want in [
        "rank 0 init rc 0 spawned 0 size 1 appnum 0 version 2.0 initialized 1",
        "rank 0 get src 0 rc 0 len 1023 same 1",
        "rank 0 get-any src 0 rc 0 len 1023 same 1",
        "rank 0 probe-get src 0 rc 0 len 1023 same 1",
        "rank 0 getnode wait rc 0 flag 1 same 1",
        "rank 0 job PMI_process_mapping rc 0 flag 1 (vector,(0,1,1))",
        "rank 0 job universeSize rc 0 flag 1 1",
        "rank 0 node localRanks rc 0 flag 1 n 1 [0]",
        "rank 0 publish rc 14",
        "rank 0 finalize rc 0 initialized 0 again 1",
        "rank 0 init-null rc 3 initialized 0",
        "rank 0 put-reserved job.size 4 hname 4 node 4",
        "rank 0 get-reserved job.size rc 4 hname rc 4",
        "rank 0 kvs-as-node rc 0 flag 0",
        "rank 0 get-missing-src rc 4 fast 1",
        "rank 0 get-outside rc 3 3 fast 1",
        "rank 0 get-otherjob rc 3 fast 1",
        "rank 0 reinit rc 1 initialized 0 fence 1",
    ] {
        assert!(out.lines().any(|l| l == want), "lacks {want:?}:\n{out}");
    }
}

/// PMI2_Job_Spawn over PMIx_Spawn: rank 0 of a 2-rank mpirun job starts 2 processes of a new
/// job, which see their own job of 2.
#[test]
fn job_spawn_starts_a_new_job() {
    let tmp = tempfile::tempdir().unwrap();
    let exe = program(tmp.path(), "pmi2_spawn");
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .args(["-x", "PMIX_MCA_gds"])
        .env("PMIX_MCA_gds", "hash")
        .arg(&exe);
    let (status, out, err) = pmixhost::run_group(cmd, Duration::from_secs(120));
    let out = String::from_utf8_lossy(&out).into_owned();
    assert!(
        status.is_some_and(|s| s.success()),
        "{out}\n{}",
        String::from_utf8_lossy(&err)
    );
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "child rank 0 size 2 new-job 1",
            "child rank 1 size 2 new-job 1",
            "spawn rc 0 errors 0 child-job 1"
        ],
        "{out}"
    );
}
