//! `scale --sets`: process-set queries and group Gets, answered by libpmix 4.2.2 (its host's
//! `query` upcall; a group Get asked of the host) and by the preloaded client library from the
//! store, in the same run (docs/performance.md "Process sets and groups"). Per M (job ranks)
//! and S (sets: S blocks of ranks, defined through `pmix-host --psets`), N local clients time
//! `PMIx_Query_info` of `PMIX_QUERY_NUM_PSETS` + `PMIX_QUERY_PSET_NAMES`, of
//! `PMIX_QUERY_PSET_MEMBERSHIP`, and `PMIx_Get` of `PMIX_PSET_NAMES`; then the N clients
//! construct a group and time `{group, 1}`'s `PMIX_LOCAL_RANK`, `PMIX_GROUP_NAMES` and the
//! context id. The median over the clients is reported, with the status the calls returned.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::build;
use super::report::{fmt_m, fmt_ns};
use super::run::{self, median};

pub struct SetsArgs {
    pub ms: Vec<u32>,
    pub ss: Vec<u32>,
    pub clients: u32,
    pub calls_fast: u32,
    pub calls_libpmix: u32,
    pub out: Option<PathBuf>,
}

/// S sets over M ranks: set i is the block of M/S ranks (at least 1) from (i * M/S) mod M.
fn write_sets(dir: &Path, m: u32, s: u32) -> std::io::Result<PathBuf> {
    let path = dir.join(format!("sets-{m}-{s}.txt"));
    let width = (m / s).max(1);
    let mut t = String::new();
    for i in 0..s {
        let lo = (u64::from(i) * u64::from(width) % u64::from(m)) as u32;
        let hi = (lo + width - 1).min(m - 1);
        let _ = writeln!(t, "define set{i:05} @:{lo}-{hi}");
    }
    std::fs::write(&path, t)?;
    Ok(path)
}

/// One pmix-host run: the clients' `bench <rank> <what> <STATUS> ns_per_call=<n>` lines, as
/// (what, status) -> median ns.
fn run_host(
    tool_dir: &Path,
    args: &[String],
    env: &[(&str, String)],
    timeout: Duration,
) -> Result<Vec<(String, String, f64)>, String> {
    let mut cmd = Command::new(tool_dir.join("pmix-host"));
    cmd.current_dir(tool_dir)
        .args(args)
        .env("PMIX_MCA_gds", "hash")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    let (status, out, err) = run::run_group(cmd, Instant::now() + timeout, &|| {})
        .unwrap_or_else(|e| (None, String::new(), format!("cannot start pmix-host: {e}")));
    if !status.is_some_and(|s| s.success()) {
        return Err(format!(
            "pmix-host {args:?}: {status:?}: {}",
            err.lines().last().unwrap_or("")
        ));
    }
    let mut by: Vec<(String, String, Vec<f64>)> = Vec::new();
    for l in out.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let ["bench", _, what, st, ns, ..] = f.as_slice() else {
            continue;
        };
        let Some(ns) = ns.strip_prefix("ns_per_call=") else {
            continue;
        };
        let v: f64 = ns.parse().map_err(|_| format!("bad line {l}"))?;
        match by.iter_mut().find(|b| b.0 == *what && b.1 == *st) {
            Some(b) => b.2.push(v),
            None => by.push(((*what).to_owned(), (*st).to_owned(), vec![v])),
        }
    }
    Ok(by
        .into_iter()
        .map(|(w, s, v)| (w, s, median(v).unwrap_or(f64::NAN)))
        .collect())
}

/// One row per call timed: libpmix's and the preloaded time, each with its status.
fn rows(
    table: &mut String,
    m: u32,
    s: &str,
    got: &[(String, String, f64)],
    pre: &[(String, String, f64)],
) {
    for (what, st, ns) in got {
        let p = pre.iter().find(|p| &p.0 == what);
        let _ = writeln!(
            table,
            "{:>5} {:>6} {:<18} {:>22} {:>22}",
            fmt_m(m),
            s,
            what,
            format!("{} {}", fmt_ns(*ns), st),
            p.map_or("-".into(), |p| format!("{} {}", fmt_ns(p.2), p.1))
        );
    }
}

/// What the runs of one M share.
struct Runs<'a> {
    tool_dir: &'a Path,
    server: &'a str,
    preload: &'a str,
    a: &'a SetsArgs,
    timeout: Duration,
}

impl Runs<'_> {
    /// The same pmix-host run with plain libpmix, then with rshm's server shim and the preload
    /// (`args(calls)`: the host's arguments for `calls` calls per client), as rows `label` of
    /// `table`. False when a run failed (said in `table`).
    fn compare(
        &self,
        table: &mut String,
        m: u32,
        label: &str,
        args: impl Fn(u32) -> Vec<String>,
    ) -> bool {
        eprintln!("M={} {label}: libpmix ...", fmt_m(m));
        let plain = run_host(
            self.tool_dir,
            &args(self.a.calls_libpmix),
            &[],
            self.timeout,
        );
        eprintln!("M={} {label}: preloaded ...", fmt_m(m));
        let mut fast = args(self.a.calls_fast);
        fast.extend(["--rshm".into(), self.server.to_owned()]);
        let env = [("LD_PRELOAD", self.preload.to_owned())];
        let pre = run_host(self.tool_dir, &fast, &env, self.timeout);
        match (plain, pre) {
            (Ok(p), Ok(q)) => {
                rows(table, m, label, &p, &q);
                true
            }
            (p, q) => {
                let _ = writeln!(
                    table,
                    "{:>5} {label:>6} failed: {:?} {:?}",
                    fmt_m(m),
                    p.err(),
                    q.err()
                );
                false
            }
        }
    }
}

pub fn main(a: SetsArgs, out: &Path) {
    let root = build::repo_root();
    let (tool_dir, rel) = match build::build_tools_and_shims(&root) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("scale --sets: cannot run: {e}");
            std::process::exit(3);
        }
    };
    std::fs::create_dir_all(out).expect("output directory");
    let work = out.join("work");
    std::fs::create_dir_all(&work).expect("work directory");
    let server = rel.join("librshm_server.so").display().to_string();
    let preload = rel.join("librshm_client_preload.so").display().to_string();
    let n = a.clients;
    let mut failed = false;
    let mut table = format!(
        "{:>5} {:>6} {:<18} {:>22} {:>22}\n",
        "M", "S", "call", "libpmix 4.2.2 (hash)", "rshm preloaded"
    );
    for &m in &a.ms {
        let job = run::write_job(&work, m, n).expect("job file");
        let timeout = Duration::from_secs(120 + u64::from(m) / 1000);
        let runs = Runs {
            tool_dir: &tool_dir,
            server: &server,
            preload: &preload,
            a: &a,
            timeout,
        };
        for &s in &a.ss {
            let sets = write_sets(&work, m, s).expect("sets file");
            let ask = |calls: u32| {
                format!(
                    "{} --bench {calls} set{:05} 0",
                    tool_dir.join("pset-client").display(),
                    s / 2
                )
            };
            let base = |calls| {
                vec![
                    "--job".into(),
                    job.display().to_string(),
                    "--psets".into(),
                    sets.display().to_string(),
                    "--timeout".into(),
                    (timeout.as_secs() - 10).to_string(),
                    "--client-cmd".into(),
                    ask(calls),
                ]
            };
            failed |= !runs.compare(&mut table, m, &s.to_string(), base);
        }
        let group = |calls: u32| {
            vec![
                "--job".into(),
                job.display().to_string(),
                "--timeout".into(),
                (timeout.as_secs() - 10).to_string(),
                "--client-cmd".into(),
                format!(
                    "{} {n} --bench {calls}",
                    tool_dir.join("group-client").display()
                ),
            ]
        };
        failed |= !runs.compare(&mut table, m, "group", group);
    }
    print!("{table}");
    let path = out.join("sets.txt");
    let note = format!(
        "# scale --sets: {n} clients, {} timed calls (preloaded), {} (libpmix); median over the clients\n",
        a.calls_fast, a.calls_libpmix
    );
    std::fs::write(&path, note + &table).expect("sets.txt");
    eprintln!("scale --sets: {}", path.display());
    if failed {
        eprintln!("scale --sets: a run failed");
        std::process::exit(1);
    }
}
