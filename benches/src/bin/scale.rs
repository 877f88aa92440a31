//! Issue #8's scale harness: one job, the same registration and the same N local clients, run
//! side by side as rshm direct Get (client-shim), rshm through the OpenPMIx gds component,
//! rshm preloaded PMIx_Get, OpenPMIx hash and OpenPMIx ds21, at M = 1k, 10k, 100k, 1M ranks.
//!
//! ```sh
//! cargo run --release -p rshm-benches --bin scale -- [--quick] [--max-m N] [--pmix-max-m N]
//!     [--hash-max-m N] [--clients N] [--columns a,b,..] [--component PATH] [--out DIR]
//! ```
//!
//! Host: tools/pmix-host (libpmix 4.2.2 server, `--rshm` registers through server-shim), clients:
//! tools/pmix-client (`-d` = rshm_client_attach/get). Output: a table, `scale.json` and
//! `latency.svg`, `memory.svg`, `register.svg` in `--out` (default target/rshm-bench/scale).
//! Columns and caveats: docs/performance.md, "Scale harness".

#[path = "../scale/run.rs"]
mod run;
#[path = "../scale/svg.rs"]
mod svg;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use run::{median, Col, Outcome, Plan, Tools, KINDS};

struct Args {
    quick: bool,
    ms: Vec<u32>,
    pmix_max_m: u32,
    hash_max_m: u32,
    clients: u32,
    cols: Vec<Col>,
    component: Option<PathBuf>,
    out: Option<PathBuf>,
    calls_fast: u32,
    calls_libpmix: u32,
    /// Runs per cell (each a fresh pmix-host and job array); the one with the median register
    /// time is reported.
    repeat: u32,
    argv: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: scale [--quick] [--max-m N] [--pmix-max-m N] [--hash-max-m N] [--clients N]\n\
         \x20            [--columns LIST] [--repeat N]\
         \x20            [--component PATH] [--calls-fast N] [--calls-libpmix N] [--out DIR]\n\
         columns: {}",
        Col::ALL.map(Col::name).join(",")
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let quick = argv.iter().any(|a| a == "--quick");
    let mut a = Args {
        quick,
        ms: vec![1_000, 10_000, 100_000, 1_000_000],
        pmix_max_m: 100_000,
        hash_max_m: 100_000,
        clients: if quick { 2 } else { 8 },
        cols: Col::ALL.to_vec(),
        component: None,
        out: None,
        calls_fast: if quick { 20_000 } else { 200_000 },
        calls_libpmix: if quick { 300 } else { 2_000 },
        repeat: 1,
        argv: argv.clone(),
    };
    let mut max_m = if quick { 10_000 } else { 1_000_000 };
    let mut it = argv.into_iter();
    let num = |v: Option<String>| -> u32 {
        v.and_then(|s| s.replace('_', "").parse().ok())
            .unwrap_or_else(|| usage())
    };
    while let Some(x) = it.next() {
        match x.as_str() {
            "--quick" => {}
            "--max-m" => max_m = num(it.next()),
            "--pmix-max-m" => a.pmix_max_m = num(it.next()),
            "--hash-max-m" => a.hash_max_m = num(it.next()),
            "--clients" => a.clients = num(it.next()).max(1),
            "--calls-fast" => a.calls_fast = num(it.next()),
            "--calls-libpmix" => a.calls_libpmix = num(it.next()),
            "--repeat" => a.repeat = num(it.next()).max(1),
            "--component" => a.component = it.next().map(PathBuf::from),
            "--out" => a.out = it.next().map(PathBuf::from),
            "--columns" => {
                let list = it.next().unwrap_or_else(|| usage());
                a.cols = list
                    .split(',')
                    .map(|n| {
                        Col::ALL
                            .into_iter()
                            .find(|c| c.name() == n)
                            .unwrap_or_else(|| usage())
                    })
                    .collect();
            }
            // cargo bench passes --bench; ignore it
            "--bench" => {}
            _ => usage(),
        }
    }
    a.ms.retain(|m| *m <= max_m);
    if a.ms.is_empty() || !a.ms.contains(&max_m) && max_m > 1_000 {
        a.ms.push(max_m);
        a.ms.sort_unstable();
        a.ms.dedup();
    }
    a
}

fn repo_root() -> PathBuf {
    let mut d = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    while !d.join("tools").join("pmix-host").is_dir() {
        assert!(d.pop(), "no tools/pmix-host above the benches crate");
    }
    d
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"))
}

/// Build pmix-host/pmix-client, the three shims and the gds component. Err: why the harness
/// cannot run.
fn build(root: &Path, component: Option<PathBuf>) -> Result<(Tools, Vec<String>), String> {
    let tool_dir = root.join("tools").join("pmix-host");
    let out = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&tool_dir)
        .output()
        .map_err(|e| format!("make: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pmix-host does not build (is libpmix-dev installed?):\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(root)
        .args(["build", "-q", "--release", "--lib"])
        .args([
            "-p",
            "server-shim",
            "-p",
            "client-shim",
            "-p",
            "rshm-preload",
        ])
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !st.success() {
        return Err("building the shims failed".into());
    }
    let rel = target_dir(root).join("release");
    let mut notes = Vec::new();
    // Build the gds component unless one was given (so the column never runs a stale one);
    // a machine without OpenPMIx's internal headers skips that column.
    if component.is_none() && std::env::var_os("RSHM_GDS_COMPONENT").is_none() {
        let ok = Command::new("make")
            .args(["-s", "-C"])
            .arg(root.join("component"))
            .stdout(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            notes.push("make -C component failed: the component columns are skipped".into());
        }
    }
    let so = component
        .or_else(|| std::env::var_os("RSHM_GDS_COMPONENT").map(PathBuf::from))
        .unwrap_or_else(|| rel.join("gds-component").join("pmix_mca_gds_rshm.so"));
    let so = if so.is_dir() {
        so.join("pmix_mca_gds_rshm.so")
    } else {
        so
    };
    let component_dir = if so.is_file() {
        notes.push(format!("gds component: {}", so.display()));
        so.parent().map(Path::to_path_buf)
    } else {
        notes.push(format!(
            "rshm-component skipped: {} not found (component/ has not produced it: make -C component)",
            so.display()
        ));
        None
    };
    Ok((
        Tools {
            tool_dir,
            server_so: rel.join("librshm_server.so"),
            client_so: rel.join("librshm_client.so"),
            preload_so: rel.join("librshm_preload.so"),
            component_dir,
        },
        notes,
    ))
}

/// One table cell's data.
struct Cell {
    m: u32,
    col: Col,
    result: Result<Outcome, String>,
    loadavg: String,
    /// The register time of every run of the cell (`--repeat`), in run order.
    register_runs_us: Vec<f64>,
}

impl Cell {
    fn ok(&self) -> Option<&Outcome> {
        self.result.as_ref().ok()
    }
    fn get(&self, k: usize) -> Option<(f64, f64)> {
        let o = self.ok()?;
        Some((
            median(o.clients.iter().filter_map(|c| c.get[k].map(|g| g.0)))?,
            median(o.clients.iter().filter_map(|c| c.get[k].map(|g| g.1)))?,
        ))
    }
    fn init_us(&self) -> Option<f64> {
        median(
            self.ok()?
                .clients
                .iter()
                .map(|c| c.init_us + c.first_get_us),
        )
    }
    /// The slowest client: when the job can start.
    fn init_max_us(&self) -> Option<f64> {
        self.ok()?
            .clients
            .iter()
            .map(|c| c.init_us + c.first_get_us)
            .filter(|v| v.is_finite())
            .reduce(f64::max)
    }
    fn fence_us(&self) -> Option<f64> {
        median(self.ok()?.clients.iter().filter_map(|c| c.fence_us))
    }
    fn private_bytes(&self) -> Option<f64> {
        median(self.ok()?.clients.iter().map(|c| c.rss_anon_kb * 1024.0))
    }
}

fn fmt_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.1} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

fn fmt_bytes(b: f64) -> String {
    if b < 1024.0 {
        format!("{b:.0} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.0} KiB", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / 1024.0 / 1024.0)
    } else {
        format!("{:.2} GiB", b / 1024.0 / 1024.0 / 1024.0)
    }
}

fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

fn fmt_m(m: u32) -> String {
    svg::fmt_count(m as f64)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn table(cells: &[Cell]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:>5} {:<22} {:>9} {:>19} {:>19} {:>19} {:>19} {:>9} {:>10} {:>10}",
        "M",
        "column",
        "register",
        "init+1st p50/max",
        "Get job p50/p99",
        "Get proc p50/p99",
        "Get card p50/p99",
        "fence",
        "shared",
        "private"
    );
    for c in cells {
        let head = format!("{:>5} {:<22}", fmt_m(c.m), c.col.label());
        match &c.result {
            Err(e) => {
                let _ = writeln!(t, "{head} {e}");
            }
            Ok(o) => {
                let g = |k| {
                    c.get(k)
                        .map(|(a, b)| format!("{} / {}", fmt_ns(a), fmt_ns(b)))
                        .unwrap_or_else(|| "-".into())
                };
                let _ = writeln!(
                    t,
                    "{head} {:>9} {:>19} {:>19} {:>19} {:>19} {:>9} {:>10} {:>10}",
                    opt(o.register_us, |v| fmt_ns(v * 1e3)),
                    format!(
                        "{} / {}",
                        opt(c.init_us(), |v| fmt_ns(v * 1e3)),
                        opt(c.init_max_us(), |v| fmt_ns(v * 1e3))
                    ),
                    g(0),
                    g(1),
                    g(2),
                    opt(c.fence_us(), |v| fmt_ns(v * 1e3)),
                    opt(o.shared_bytes.map(|b| b as f64), fmt_bytes),
                    opt(c.private_bytes(), fmt_bytes),
                );
            }
        }
    }
    t
}

/// The direct column's registration: time, the host's page faults and CPU time meanwhile.
fn register_lines(cells: &[Cell]) -> String {
    let mut t = String::new();
    for c in cells.iter().filter(|c| c.col == Col::Direct) {
        let Some(o) = c.ok() else { continue };
        let (Some(us), Some(faults), Some(cpu)) = (
            o.register_us,
            o.rshm_register_faults,
            o.rshm_register_cpu_us,
        ) else {
            continue;
        };
        let runs = if c.register_runs_us.len() > 1 {
            let all: Vec<String> = c
                .register_runs_us
                .iter()
                .map(|&v| fmt_ns(v * 1e3))
                .collect();
            format!(" (runs: {})", all.join(", "))
        } else {
            String::new()
        };
        let _ = writeln!(
            t,
            "{:>5} {}, {} CPU, {faults} page faults{runs}",
            fmt_m(c.m),
            fmt_ns(us * 1e3),
            fmt_ns(cpu * 1e3)
        );
    }
    t
}

/// The direct column's attach time (`rshm_client_attach` alone), per M.
fn attach_lines(cells: &[Cell]) -> String {
    let mut t = String::new();
    for c in cells.iter().filter(|c| c.col == Col::Direct) {
        let Some(o) = c.ok() else { continue };
        let v: Vec<f64> = o.clients.iter().filter_map(|c| c.attach_us).collect();
        let (Some(med), Some(max)) = (
            median(v.iter().copied()),
            v.iter().copied().reduce(f64::max),
        ) else {
            continue;
        };
        let _ = writeln!(t, "{:>5} {med:.0} µs / {max:.0} µs", fmt_m(c.m));
    }
    t
}

/// Ratios OpenPMIx / rshm within one run, per M.
fn ratios(cells: &[Cell], ms: &[u32]) -> String {
    let mut t = String::new();
    let find = |m: u32, col: Col| {
        cells
            .iter()
            .find(|c| c.m == m && c.col == col && c.ok().is_some())
    };
    for &m in ms {
        for base in [Col::Hash, Col::Ds21] {
            let Some(b) = find(m, base) else { continue };
            for r in [
                Col::Direct,
                Col::Preload,
                Col::Component,
                Col::ComponentPreload,
            ] {
                let Some(x) = find(m, r) else { continue };
                let q = |a: Option<f64>, d: Option<f64>| match (a, d) {
                    (Some(a), Some(d)) if d > 0.0 => format!("{:.1}x", a / d),
                    _ => "-".into(),
                };
                let (bo, xo) = (b.ok().unwrap(), x.ok().unwrap());
                let _ = writeln!(
                    t,
                    "{:>5} {} / {}: register {}, init+1st {} (max {}), Get job {}, proc {}, card {}, private {}",
                    fmt_m(m),
                    base.label(),
                    r.label(),
                    q(bo.register_us, xo.register_us),
                    q(b.init_us(), x.init_us()),
                    q(b.init_max_us(), x.init_max_us()),
                    q(b.get(0).map(|g| g.0), x.get(0).map(|g| g.0)),
                    q(b.get(1).map(|g| g.0), x.get(1).map(|g| g.0)),
                    q(b.get(2).map(|g| g.0), x.get(2).map(|g| g.0)),
                    q(b.private_bytes(), x.private_bytes()),
                );
            }
        }
    }
    t
}

fn jnum(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{x:.0}")
            } else {
                format!("{x:.3}")
            }
        }
        _ => "null".into(),
    }
}

fn jstr(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json(a: &Args, cells: &[Cell], notes: &[String], meta: &[(String, String)]) -> String {
    let mut j = String::from("{\n");
    let _ = writeln!(
        j,
        "  \"command\": {},",
        jstr(&format!(
            "cargo run --release -p rshm-benches --bin scale --{}",
            a.argv.iter().map(|x| format!(" {x}")).collect::<String>()
        ))
    );
    for (k, v) in meta {
        let _ = writeln!(j, "  {}: {},", jstr(k), jstr(v));
    }
    let _ = writeln!(
        j,
        "  \"clients\": {}, \"ppn\": {}, \"calls_fast\": {}, \"calls_libpmix\": {}, \"quick\": {},",
        a.clients,
        run::PPN,
        a.calls_fast,
        a.calls_libpmix,
        a.quick
    );
    let _ = writeln!(
        j,
        "  \"get_kinds\": {{{}}},",
        KINDS
            .iter()
            .map(|(k, d)| format!("{}: {}", jstr(k), jstr(d)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        j,
        "  \"notes\": [{}],",
        notes.iter().map(|n| jstr(n)).collect::<Vec<_>>().join(", ")
    );
    j.push_str("  \"runs\": [\n");
    for (i, c) in cells.iter().enumerate() {
        let _ = write!(
            j,
            "    {{\"m\": {}, \"column\": {}, \"loadavg\": {}, ",
            c.m,
            jstr(c.col.name()),
            jstr(&c.loadavg)
        );
        match &c.result {
            Err(e) => {
                let status = if e.starts_with("skipped") {
                    "skipped"
                } else {
                    "failed"
                };
                let _ = write!(j, "\"status\": \"{status}\", \"reason\": {}}}", jstr(e));
            }
            Ok(o) => {
                let gets: Vec<String> = KINDS
                    .iter()
                    .enumerate()
                    .map(|(k, (name, _))| match c.get(k) {
                        Some((p50, p99)) => format!(
                            "{}: {{\"p50_ns\": {}, \"p99_ns\": {}}}",
                            jstr(name),
                            jnum(Some(p50)),
                            jnum(Some(p99))
                        ),
                        None => format!("{}: null", jstr(name)),
                    })
                    .collect();
                let per: Vec<String> = o
                    .clients
                    .iter()
                    .map(|cl| {
                        let g: Vec<String> = cl
                            .get
                            .iter()
                            .map(|g| match g {
                                Some((a, b)) => format!("[{}, {}]", jnum(Some(*a)), jnum(Some(*b))),
                                None => "null".into(),
                            })
                            .collect();
                        format!(
                            "{{\"rank\": {}, \"init_us\": {}, \"attach_us\": {}, \"first_get_us\": {}, \"fence_us\": {}, \"rss_anon_kb\": {}, \"rss_shmem_kb\": {}, \"pss_kb\": {}, \"get_p50_p99_ns\": [{}]}}",
                            cl.rank,
                            jnum(Some(cl.init_us)),
                            jnum(cl.attach_us),
                            jnum(Some(cl.first_get_us)),
                            jnum(cl.fence_us),
                            jnum(Some(cl.rss_anon_kb)),
                            jnum(Some(cl.rss_shmem_kb)),
                            jnum(Some(cl.pss_kb)),
                            g.join(", ")
                        )
                    })
                    .collect();
                let _ = write!(
                    j,
                    "\"status\": \"ok\", \"register_us\": {}, \"register_us_runs\": [{}], \"libpmix_register_us\": {}, \"rshm_register_faults\": {}, \"rshm_register_cpu_us\": {}, \"init_plus_first_get_us\": {}, \"init_plus_first_get_max_us\": {}, \"get\": {{{}}}, \"fence_us\": {}, \"shared_bytes\": {}, \"rshm_store_bytes\": {}, \"private_bytes_per_client\": {}, \"gds_answered\": {}, \"gds_passed\": {}, \"wall_s\": {}, \"notes\": [{}],\n      \"per_client\": [{}]}}",
                    jnum(o.register_us),
                    c.register_runs_us
                        .iter()
                        .map(|&v| jnum(Some(v)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    jnum(o.libpmix_register_us),
                    jnum(o.rshm_register_faults.map(|v| v as f64)),
                    jnum(o.rshm_register_cpu_us),
                    jnum(c.init_us()),
                    jnum(c.init_max_us()),
                    gets.join(", "),
                    jnum(c.fence_us()),
                    jnum(o.shared_bytes.map(|b| b as f64)),
                    jnum(o.rshm_store_bytes.map(|b| b as f64)),
                    jnum(c.private_bytes()),
                    jnum(o.gds_answered.map(|v| v as f64)),
                    jnum(o.gds_passed.map(|v| v as f64)),
                    jnum(Some((o.wall_s * 1000.0).round() / 1000.0)),
                    o.notes.iter().map(|n| jstr(n)).collect::<Vec<_>>().join(", "),
                    per.join(",\n        ")
                );
            }
        }
        j.push_str(if i + 1 < cells.len() { ",\n" } else { "\n" });
    }
    j.push_str("  ]\n}\n");
    j
}

fn series(
    cells: &[Cell],
    cols: &[Col],
    suffix: &str,
    dash: &'static str,
    f: &dyn Fn(&Cell) -> Option<f64>,
) -> Vec<svg::Series> {
    cols.iter()
        .map(|&col| svg::Series {
            name: format!("{}{suffix}", col.label()),
            color: col.color(),
            dash,
            points: cells
                .iter()
                .filter(|c| c.col == col)
                .filter_map(|c| f(c).map(|v| (c.m as f64, v)))
                .collect(),
        })
        .collect()
}

const PLOT_TITLES: [&str; 3] = [
    "PMIX_JOB_SIZE (rank *)",
    "PMIX_LOCAL_RANK, random rank",
    "a local peer's card, after fence",
];

fn plots(out: &Path, cells: &[Cell], cols: &[Col], foot: &str) -> std::io::Result<Vec<PathBuf>> {
    let ns_fmt: fn(f64) -> String = |v| svg::fmt_si(v, "s", &["n", "µ", "m", ""]);
    let b_fmt: fn(f64) -> String = |v| svg::fmt_si(v, "B", &["", "k", "M", "G", "T"]);
    let m = "M (ranks in the job)".to_string();
    let lat: Vec<svg::Panel> = KINDS
        .iter()
        .enumerate()
        .map(|(k, (name, _))| {
            let mut s = series(cells, cols, " p50", "", &|c| c.get(k).map(|g| g.0));
            s.extend(series(cells, cols, " p99", "5,4", &|c| {
                c.get(k).map(|g| g.1)
            }));
            svg::Panel {
                title: format!("Get, {name} key: {}", PLOT_TITLES[k]),
                x_label: m.clone(),
                y_label: "time per Get".into(),
                y_fmt: ns_fmt,
                series: s,
            }
        })
        .collect();
    let mem = vec![
        svg::Panel {
            title: "private bytes per client (RssAnon)".into(),
            x_label: m.clone(),
            y_label: "bytes".into(),
            y_fmt: b_fmt,
            series: series(cells, cols, "", "", &|c| c.private_bytes()),
        },
        svg::Panel {
            title: "shared bytes (store files on tmpfs)".into(),
            x_label: m.clone(),
            y_label: "bytes".into(),
            y_fmt: b_fmt,
            series: series(cells, cols, "", "", &|c| {
                c.ok().and_then(|o| o.shared_bytes).map(|b| b as f64)
            }),
        },
    ];
    let reg = vec![
        svg::Panel {
            title: "register (server, one namespace)".into(),
            x_label: m.clone(),
            y_label: "time".into(),
            y_fmt: ns_fmt,
            series: series(cells, cols, "", "", &|c| {
                c.ok().and_then(|o| o.register_us).map(|v| v * 1e3)
            }),
        },
        svg::Panel {
            title: "client init/attach + first Get (median, max)".into(),
            x_label: m.clone(),
            y_label: "time".into(),
            y_fmt: ns_fmt,
            series: {
                let mut s = series(cells, cols, "", "", &|c| c.init_us().map(|v| v * 1e3));
                s.extend(series(cells, cols, " (max)", "5,4", &|c| {
                    c.init_max_us().map(|v| v * 1e3)
                }));
                s
            },
        },
        svg::Panel {
            title: "collecting fence (after a barrier)".into(),
            x_label: m,
            y_label: "time".into(),
            y_fmt: ns_fmt,
            series: series(cells, cols, "", "", &|c| c.fence_us().map(|v| v * 1e3)),
        },
    ];
    let mut written = Vec::new();
    for (file, title, panels) in [
        (
            "latency.svg",
            "PMIx_Get latency vs job size (median over clients)",
            lat,
        ),
        ("memory.svg", "Memory vs job size", mem),
        ("register.svg", "Register, init and fence vs job size", reg),
    ] {
        let p = out.join(file);
        std::fs::write(&p, svg::render(title, &panels, foot))?;
        written.push(p);
    }
    Ok(written)
}

fn main() {
    let a = parse_args();
    let root = repo_root();
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| target_dir(&root).join("rshm-bench").join("scale"));
    std::fs::create_dir_all(&out).expect("output directory");
    let out = out.canonicalize().expect("output directory");
    let work = out.join("work");
    std::fs::create_dir_all(&work).expect("work directory");
    let started = Instant::now();
    eprintln!("scale: building tools/pmix-host and the shims ...");
    let (tools, mut notes) = match build(&root, a.component.clone()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("scale: cannot run: {e}");
            std::process::exit(3);
        }
    };
    let mut meta = vec![
        ("date".to_string(), sh("date -u +%Y-%m-%dT%H:%M:%SZ")),
        ("host".to_string(), sh("uname -srm")),
        (
            "cpus".to_string(),
            std::thread::available_parallelism()
                .map(|n| n.to_string())
                .unwrap_or_default(),
        ),
        ("mem_total".to_string(), sh("grep MemTotal /proc/meminfo")),
        ("loadavg_start".to_string(), loadavg()),
    ];
    if a.ms.iter().any(|m| *m > a.pmix_max_m) {
        notes.push(format!(
            "M > {}: only rshm direct Get (the libpmix-based columns are skipped: raise with --pmix-max-m; at 1M the host's libpmix registration alone takes ~13 s and ~14 GB, and every hash client would unpack the whole job)",
            a.pmix_max_m
        ));
    }
    notes.push(
        "Get p50/p99: per client, n Gets (+ PMIX_VALUE_RELEASE) timed in batches of 32, the 50th/99th percentile batch mean; the table shows the median over clients".into(),
    );
    notes.push("register: rshm columns (direct, preload) = rshm_server_register_nspace of the same info array, called before libpmix registers it; the component columns (with and without preload) and OpenPMIx columns = PMIx_server_register_nspace (call to callback)".into());
    if a.repeat > 1 {
        notes.push(format!(
            "--repeat {}: each cell run {} times (a fresh pmix-host and job array each time); the cell shows the run with the median register time, all its other figures from that run; every run's register time is in scale.json (register_us_runs)",
            a.repeat, a.repeat
        ));
    }
    notes.push("init+1st: PMIx_Init (direct: rshm_client_attach) + the first Get (PMIX_JOB_SIZE), median and slowest client (ds21: the first clients wait until the server has filled the store); private = RssAnon of each client at the end (median); shared = allocated bytes of the store files (rshm store + libpmix's files in the server tmpdir)".into());
    // the work list
    let mut todo: Vec<(u32, Col, Option<String>)> = Vec::new();
    for &m in &a.ms {
        for &col in &a.cols {
            let skip = if col.needs_component() && tools.component_dir.is_none() {
                Some("skipped: no pmix_mca_gds_rshm.so".to_string())
            } else if col.needs_libpmix_clients() && m > a.pmix_max_m {
                Some(format!("skipped: M > --pmix-max-m {}", a.pmix_max_m))
            } else if col == Col::Hash && m > a.hash_max_m {
                Some(format!(
                    "skipped: M > --hash-max-m {} (every hash client copies the whole job: ~2 KB/rank)",
                    a.hash_max_m
                ))
            } else {
                None
            };
            todo.push((m, col, skip));
        }
    }
    let total = todo.iter().filter(|t| t.2.is_none()).count();
    let mut cells: Vec<Cell> = Vec::new();
    let mut jobs: Vec<(u32, PathBuf)> = Vec::new();
    let mut k = 0;
    for (m, col, skip) in todo {
        if let Some(why) = skip {
            cells.push(Cell {
                m,
                col,
                result: Err(why),
                loadavg: loadavg(),
                register_runs_us: Vec::new(),
            });
            continue;
        }
        k += 1;
        let job = match jobs.iter().find(|j| j.0 == m) {
            Some(j) => j.1.clone(),
            None => {
                let p = run::write_job(&work, m, a.clients).expect("job file");
                jobs.push((m, p.clone()));
                p
            }
        };
        let plan = Plan {
            m,
            clients: a.clients,
            calls_fast: a.calls_fast,
            calls_libpmix: a.calls_libpmix,
            timeout: Duration::from_secs(60 + u64::from(m) / 1000),
        };
        let la = loadavg();
        eprintln!(
            "[{k}/{total}] M={} {:<22} {} clients ... (load {la})",
            fmt_m(m),
            col.label(),
            a.clients
        );
        let progress = |d: Duration| eprintln!("        ... {} s", d.as_secs());
        // On a noisy machine one run's register time can be twice another's: with --repeat,
        // the run with the median register time stands for the cell (a failed run for it if
        // any run failed), every run's register time kept.
        let mut runs: Vec<Result<Outcome, String>> = Vec::new();
        for r in 0..a.repeat {
            if r > 0 {
                eprintln!("        run {} of {}", r + 1, a.repeat);
            }
            runs.push(run::run(&tools, col, &plan, &job, &work, &progress));
        }
        let register_runs_us: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.as_ref().ok().and_then(|o| o.register_us))
            .collect();
        let result = match runs.iter().position(Result::is_err) {
            Some(failed) => runs.swap_remove(failed),
            None => {
                runs.sort_by(|x, y| {
                    let reg = |r: &Result<Outcome, String>| {
                        r.as_ref().ok().and_then(|o| o.register_us).unwrap_or(0.0)
                    };
                    reg(x).total_cmp(&reg(y))
                });
                runs.swap_remove(runs.len() / 2)
            }
        };
        let cell = Cell {
            m,
            col,
            result,
            loadavg: la,
            register_runs_us,
        };
        match &cell.result {
            Ok(o) => eprintln!(
                "        done in {:.1} s: register {}, init+1st {}, Get job {} proc {}",
                o.wall_s,
                opt(o.register_us, |v| fmt_ns(v * 1e3)),
                opt(cell.init_us(), |v| fmt_ns(v * 1e3)),
                opt(cell.get(0).map(|g| g.0), fmt_ns),
                opt(cell.get(1).map(|g| g.0), fmt_ns),
            ),
            Err(e) => eprintln!("        FAILED: {e}"),
        }
        cells.push(cell);
    }
    meta.push(("loadavg_end".to_string(), loadavg()));
    meta.push((
        "wall_s".to_string(),
        format!("{:.0}", started.elapsed().as_secs_f64()),
    ));
    let tab = table(&cells);
    let rat = ratios(&cells, &a.ms);
    println!(
        "\nscale harness: {} local clients, {} ranks per other node{}",
        a.clients,
        run::PPN,
        if a.quick {
            " [quick: few calls, numbers indicative only]"
        } else {
            ""
        }
    );
    print!("{tab}");
    let reg = register_lines(&cells);
    if !reg.is_empty() {
        println!(
            "\nrshm_server_register_nspace (direct column): time, in CPU time of the host's threads, and the host's page faults meanwhile"
        );
        print!("{reg}");
    }
    let att = attach_lines(&cells);
    if !att.is_empty() {
        println!("\nrshm_client_attach alone (direct column, without dlopen): median / slowest client\n{att}");
    }
    if !rat.is_empty() {
        println!("\nratios (OpenPMIx / rshm, same run):\n{rat}");
    }
    for n in &notes {
        println!("note: {n}");
    }
    let jpath = out.join("scale.json");
    std::fs::write(&jpath, json(&a, &cells, &notes, &meta)).expect("write json");
    std::fs::write(out.join("scale.txt"), format!("{tab}\n{rat}")).expect("write table");
    let foot = format!(
        "{} clients on {} CPUs; {}; {}",
        a.clients,
        meta[2].1,
        meta[0].1,
        "tools/pmix-host + libpmix 4.2.2; cargo run --release -p rshm-benches --bin scale"
    );
    let svgs = plots(&out, &cells, &a.cols, &foot).expect("write svg");
    println!("wrote {}", jpath.display());
    for s in svgs {
        println!("wrote {}", s.display());
    }
    let _ = std::fs::remove_dir_all(&work);
    eprintln!("scale: {:.0} s", started.elapsed().as_secs_f64());
    if cells
        .iter()
        .any(|c| matches!(&c.result, Err(e) if !e.starts_with("skipped")))
    {
        std::process::exit(1);
    }
}

fn sh(cmd: &str) -> String {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
