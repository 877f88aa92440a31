//! Registrations recorded from real hosts (tools/pmix-host/examples/recorded/*.reg, written by
//! the component under `RSHM_RECORD_REGISTRATIONS`: Open MPI 4.1.4's mpirun, Slurm 22.05's
//! `srun --mpi=pmix`), replayed with `pmix-host --replay-registration` once under
//! `PMIX_MCA_gds=hash` and once under `rshm,hash` with the component. The corpus asks every
//! reserved key of every realm (and every key the host registered) of rank `*` and of every
//! rank, and node- and app-qualified Gets of every node and app in the registration; the
//! answers must be equal, except the lines `known-differences.txt` (same directory) lists,
//! which must still differ exactly so: a fixed difference must leave the list. A third run
//! puts `librshm_client_preload.so` into the clients (`LD_PRELOAD`) over the component's store and is
//! compared with hash the same way, its lines named `<recording>+preload`.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use support::*;

const DIR: &str = "examples/recorded";

/// Reserved keys asked of rank `*` and of every rank (macro names; pmix-client resolves them).
const KEYS: &[&str] = &[
    // job / session
    "PMIX_UNIV_SIZE",
    "PMIX_JOB_SIZE",
    "PMIX_MAX_PROCS",
    "PMIX_NUM_NODES",
    "PMIX_JOB_NUM_APPS",
    "PMIX_NSPACE",
    "PMIX_JOBID",
    "PMIX_NODE_LIST",
    "PMIX_NPROC_OFFSET",
    "PMIX_SPAWNED",
    "PMIX_TMPDIR",
    "PMIX_NSDIR",
    "PMIX_TDIR_RMCLEAN",
    "PMIX_MAPBY",
    "PMIX_RANKBY",
    "PMIX_BINDTO",
    "PMIX_ANL_MAP",
    "PMIX_SERVER_NSPACE",
    // node
    "PMIX_LOCAL_PEERS",
    "PMIX_LOCAL_SIZE",
    "PMIX_LOCALLDR",
    "PMIX_NODE_SIZE",
    "PMIX_AVAIL_PHYS_MEMORY",
    "PMIX_TOPOLOGY_SIGNATURE",
    // app
    "PMIX_APPNUM",
    "PMIX_APP_SIZE",
    "PMIX_APPLDR",
    "PMIX_APP_RANK",
    "PMIX_WDIR",
    "PMIX_APP_ARGV",
    // proc
    "PMIX_RANK",
    "PMIX_GLOBAL_RANK",
    "PMIX_LOCAL_RANK",
    "PMIX_NODE_RANK",
    "PMIX_NODEID",
    "PMIX_HOSTNAME",
    "PMIX_LOCALITY_STRING",
    "PMIX_CPUSET",
];

/// Node-realm keys asked with `PMIX_NODE_INFO` and a `PMIX_HOSTNAME` / `PMIX_NODEID` qualifier.
const NODE_KEYS: &[&str] = &[
    "PMIX_HOSTNAME",
    "PMIX_NODEID",
    "PMIX_LOCAL_SIZE",
    "PMIX_NODE_SIZE",
    "PMIX_LOCALLDR",
    "PMIX_LOCAL_PEERS",
];

/// App-realm keys asked with `PMIX_APP_INFO` and a `PMIX_APPNUM` qualifier.
const APP_KEYS: &[&str] = &[
    "PMIX_APPNUM",
    "PMIX_APP_SIZE",
    "PMIX_APPLDR",
    "PMIX_MAX_PROCS",
    "PMIX_WDIR",
    "PMIX_APP_ARGV",
];

/// The array keys that hold other infos (not asked themselves), and `PMIX_SERVER_RANK`, which
/// libpmix 4.2.2 answers with the server's pid whatever the host registered (differs per run).
const NOT_ASKED: &[&str] = &[
    "pmix.pdata",
    "pmix.node.arr",
    "pmix.app.arr",
    "pmix.ssn.arr",
    "pmix.srv.rank",
];

/// What a registration dump names: ranks, nodes (names and ids), apps, keys; and the keys whose
/// value is too long to print (asked with `digest`).
#[derive(Default)]
struct Facts {
    ranks: BTreeSet<u32>,
    hosts: BTreeSet<String>,
    nodeids: BTreeSet<u32>,
    apps: BTreeSet<u32>,
    keys: BTreeSet<String>,
    long: BTreeSet<String>,
    job_size: Option<u32>,
    nlocal: usize,
}

fn facts(text: &str) -> Facts {
    let mut f = Facts::default();
    f.apps.insert(0);
    let mut infos = false;
    for line in text.lines() {
        let l = line.trim_start();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if !infos {
            if let Some(h) = l.strip_prefix("local ") {
                f.hosts.insert(h.trim().to_owned());
            }
            if let Some(n) = l.strip_prefix("nlocalprocs ") {
                f.nlocal = n.trim().parse().expect("nlocalprocs");
            }
            infos = l.starts_with("ninfo ");
            continue;
        }
        let t: Vec<&str> = l.splitn(4, ' ').collect();
        assert_eq!(t.len(), 4, "bad dump line {line}");
        let (key, value) = (t[1], t[3]);
        if NOT_ASKED.contains(&key) {
            continue;
        }
        f.keys.insert(key.to_owned());
        if value.len() > 200 {
            f.long.insert(key.to_owned());
        }
        let num = || value.parse::<u32>().ok();
        match key {
            "pmix.rank" => f.ranks.extend(num()),
            "pmix.hname" => {
                f.hosts.insert(value.trim_matches('"').to_owned());
            }
            "pmix.nodeid" => f.nodeids.extend(num()),
            "pmix.appnum" => f.apps.extend(num()),
            "pmix.job.size" if t[0] == "0" => f.job_size = num(),
            _ => {}
        }
    }
    if f.ranks.is_empty() {
        f.ranks
            .extend(0..f.job_size.expect("no ranks and no PMIX_JOB_SIZE"));
    }
    f
}

/// One Get line per (key, rank) and per qualified query; ids `<key>@<rank>`,
/// `<key>@node=<name>`, `<key>@nodeid=<id>`, `<key>@app=<n>`. Every Get carries
/// `PMIX_IMMEDIATE`: no waiting for keys the host never registered (README.md, "Hangs").
fn corpus(f: &Facts) -> String {
    let mut c = String::new();
    let mut get = |id: &str, rank: &str, key: &str, quals: &str| {
        let verb = if f.long.contains(key) { "digest " } else { "" };
        c.push_str(&format!(
            "{verb}{id} {rank} {key}{quals} PMIX_IMMEDIATE=true\n"
        ));
    };
    let keys: Vec<&str> = KEYS
        .iter()
        .copied()
        .chain(f.keys.iter().map(String::as_str))
        .collect();
    let ranks: Vec<String> = std::iter::once("*".to_owned())
        .chain(f.ranks.iter().map(u32::to_string))
        .collect();
    for key in &keys {
        for r in &ranks {
            get(&format!("{key}@{r}"), r, key, "");
        }
    }
    for key in NODE_KEYS {
        for h in &f.hosts {
            let q = format!(" PMIX_NODE_INFO=true PMIX_HOSTNAME={h}");
            get(&format!("{key}@node={h}"), "*", key, &q);
        }
        for n in &f.nodeids {
            let q = format!(" PMIX_NODE_INFO=true PMIX_NODEID={n}");
            get(&format!("{key}@nodeid={n}"), "*", key, &q);
        }
    }
    for key in APP_KEYS {
        for a in &f.apps {
            let q = format!(" PMIX_APP_INFO=true PMIX_APPNUM={a}");
            get(&format!("{key}@app={a}"), "*", key, &q);
        }
    }
    c
}

/// The answers that differ, one line per (side, id, answer) with the clients that gave it:
/// `<recording> <hash|rshm>: <id> <status> <type> <value> [clients a,b,...]`.
fn differences(name: &str, hash: &[String], rshm: &[String]) -> BTreeSet<String> {
    let mut by: BTreeMap<(String, String, String), Vec<u32>> = BTreeMap::new();
    for d in diff(hash, rshm) {
        let (side, line) = d.split_once(": ").unwrap();
        let t: Vec<&str> = line.splitn(3, ' ').collect();
        let client: u32 = t[1].parse().unwrap_or(u32::MAX);
        by.entry((t[0].to_owned(), side.to_owned(), t[2].to_owned()))
            .or_default()
            .push(client);
    }
    by.into_iter()
        .map(|((id, side, answer), mut clients)| {
            clients.sort_unstable();
            let c: Vec<String> = clients.iter().map(u32::to_string).collect();
            format!("{name} {side}: {id} {answer} [clients {}]", c.join(","))
        })
        .collect()
}

fn known(tool: &Path, name: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(tool.join(DIR).join("known-differences.txt")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter(|l| l.split(' ').next() == Some(name))
        .map(str::to_owned)
        .collect()
}

fn replay(name: &str) {
    let tool = pmixhost::build();
    let reg = tool.join(DIR).join(format!("{name}.reg"));
    let f = facts(&std::fs::read_to_string(&reg).unwrap());
    let corpora = [corpus(&f)];
    let arg = reg.display().to_string();
    let job = ["--replay-registration", arg.as_str()];
    let run = |gds, env: &[(&str, &str)]| {
        let (ok, lines, err) =
            pmix_host_run(&job, &format!("{name}-corpus"), &corpora, gds, "", env);
        assert!(ok, "{name}: pmix-host failed:\n{err}");
        answers(&lines)
    };
    let st = tempfile::tempdir().unwrap();
    let hash = run(Gds::Hash, &[]);
    let rshm = run(Gds::Rshm(st.path()), &[]);
    let preload = preload_library().display().to_string();
    let pst = tempfile::tempdir().unwrap();
    let pst_s = pst.path().display().to_string();
    let env = [
        ("LD_PRELOAD", preload.as_str()),
        ("RSHM_PRELOAD_STATS", pst_s.as_str()),
    ];
    let pst_gds = tempfile::tempdir().unwrap();
    let pre = run(Gds::Rshm(pst_gds.path()), &env);
    let nget = corpora[0].lines().count();
    assert_eq!(hash.len(), nget * f.nlocal, "{name}: answers of hash");
    assert_eq!(rshm.len(), nget * f.nlocal, "{name}: answers of rshm");
    assert_eq!(pre.len(), nget * f.nlocal, "{name}: answers of the preload");
    // Every client wrote its preload counters at exit: each was answered from the store.
    let answered: Vec<u64> = std::fs::read_dir(pst.path())
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .filter_map(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("answered ")?.parse().ok())
        })
        .collect();
    assert!(
        answered.len() >= f.nlocal && answered.iter().all(|&n| n > 0),
        "{name}: preloaded clients not answered from the store: {answered:?}"
    );
    compare(&tool, name, &hash, &rshm);
    compare(&tool, &format!("{name}+preload"), &hash, &pre);
}

/// Fail on differences of `hash` and `rshm` not listed for `name`, and on listed ones gone.
fn compare(tool: &Path, name: &str, hash: &[String], rshm: &[String]) {
    let found = differences(name, hash, rshm);
    let expected = known(tool, name);
    let new: Vec<&String> = found.difference(&expected).collect();
    let fixed: Vec<&String> = expected.difference(&found).collect();
    eprintln!(
        "{name}: {} Gets x clients; {} answer lines differ, all of them listed in \
         known-differences.txt",
        hash.len(),
        found.len()
    );
    assert!(
        new.is_empty() && fixed.is_empty(),
        "{name}: differences not in known-differences.txt:\n{}\n\nlisted there but no longer \
         differing (remove them):\n{}",
        new.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        fixed
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn open_mpi_np6_answers_as_hash() {
    replay("ompi-np6");
}

#[test]
fn open_mpi_two_app_contexts_answer_as_hash() {
    replay("ompi-2apps");
}

#[test]
fn slurm_srun_n4_answers_as_hash() {
    replay("slurm-n4");
}

#[test]
fn open_mpi_three_nodes_mpirun_on_a_rankless_node_answers_as_hash() {
    replay("ompi-3node-rankless");
}

#[test]
fn open_mpi_three_nodes_mpirun_in_node1_answers_as_hash() {
    replay("ompi-3node-in-node1");
}

/// What the component records is what pmix-host's `--dump-registration` writes for the same
/// registration (comment lines aside), so one parser and `--replay-registration` read both.
#[test]
fn the_component_records_the_registration_as_the_host_passed_it() {
    let rec = tempfile::tempdir().unwrap();
    let dump = rec.path().join("host-dump.txt");
    let dir = rec.path().join("rec");
    std::fs::create_dir(&dir).unwrap();
    let st = tempfile::tempdir().unwrap();
    let d = dump.display().to_string();
    let job = [
        "--job",
        "examples/job-2node.txt",
        "--dump-registration",
        d.as_str(),
    ];
    let corpus = ["j01 * PMIX_JOB_SIZE\n".to_owned()];
    let dir_s = dir.display().to_string();
    let env = [("RSHM_RECORD_REGISTRATIONS", dir_s.as_str())];
    let (ok, lines, err) = pmix_host_run(&job, "rec", &corpus, Gds::Rshm(st.path()), "", &env);
    assert!(ok, "pmix-host failed:\n{err}");
    assert_eq!(lines.len(), 4, "{lines:?}");
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().to_string_lossy().into_owned();
    assert!(
        name.starts_with("rshmtest.") && name.ends_with(".reg"),
        "{name}"
    );
    let strip = |t: String| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let recorded = strip(std::fs::read_to_string(files[0].path()).unwrap());
    let dumped = strip(std::fs::read_to_string(&dump).unwrap());
    assert!(dumped.len() > 50, "{dumped:?}");
    assert_eq!(recorded, dumped);
}

/// A recording directory that cannot be written: logged, and the job runs as without it.
#[test]
fn a_recording_that_cannot_be_written_fails_nothing() {
    let st = tempfile::tempdir().unwrap();
    let missing = st.path().join("no-such-dir");
    let m = missing.display().to_string();
    let corpus = ["j01 * PMIX_JOB_SIZE\n".to_owned()];
    let job = ["--job", "examples/job-2node.txt"];
    let env = [("RSHM_RECORD_REGISTRATIONS", m.as_str())];
    let (ok, lines, err) = pmix_host_run(&job, "norec", &corpus, Gds::Rshm(st.path()), "", &env);
    assert!(ok, "pmix-host failed:\n{err}");
    assert_eq!(
        answers(&lines),
        (0..4)
            .map(|r| format!("j01 {r} SUCCESS PMIX_UINT32 8"))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        err.matches("rshm: cannot record the registration of rshmtest")
            .count(),
        1,
        "{err}"
    );
    assert!(!missing.exists());
}
