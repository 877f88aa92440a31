//! scale.json: every figure of every cell, the command, the machine and the notes (serde).
//! Times and sizes are rounded to 3 decimals; a figure a run did not give is `null`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::args::Args;
use super::cell::{Cell, Fence};
use super::run::{self, Client, KINDS};

/// The whole file.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct ScaleJson {
    /// The command line that wrote it.
    pub command: String,
    /// The machine and the run: CPU, kernel, load averages, wall time ([`super::meta`]).
    pub machine: BTreeMap<String, String>,
    /// Client processes per job (all on the local node).
    pub clients: u32,
    /// Ranks per node of the other nodes.
    pub ppn: u32,
    pub calls_fast: u32,
    pub calls_libpmix: u32,
    pub quick: bool,
    /// Get kinds: name -> what is asked.
    pub get_kinds: BTreeMap<String, String>,
    pub notes: Vec<String>,
    pub runs: Vec<RunJson>,
}

/// One cell (M, column).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct RunJson {
    pub m: u32,
    pub column: String,
    pub loadavg: String,
    #[serde(flatten)]
    pub result: RunResult,
}

/// A cell's outcome, tagged by `status`.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum RunResult {
    Ok(Box<OkRun>),
    Skipped { reason: String },
    Failed { reason: String },
}

/// A cell's figures (the run with the median register time, `register_us_runs` from all).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct OkRun {
    pub register_us: Option<f64>,
    pub register_us_runs: Vec<f64>,
    pub libpmix_register_us: Option<f64>,
    pub rshm_register_faults: Option<u64>,
    pub rshm_register_cpu_us: Option<f64>,
    /// Init (or attach) + first Get of every client, ascending (µs).
    pub init_plus_first_get_all_us: Vec<f64>,
    pub init_plus_first_get_us: Option<f64>,
    pub init_plus_first_get_min_us: Option<f64>,
    pub init_plus_first_get_max_us: Option<f64>,
    /// Median over clients of each Get kind's p50 and p99 (ns).
    pub get: BTreeMap<String, Option<P50P99>>,
    /// The collective's own time (µs): last client's entry to first client's release.
    pub fence_us: Option<f64>,
    /// The fence in full: collective, last release, arrival skew, clients' own calls.
    pub fence: Option<Fence>,
    pub shared_bytes: Option<u64>,
    pub rshm_store_bytes: Option<u64>,
    pub private_bytes_per_client: Option<f64>,
    pub gds_answered: Option<u64>,
    pub gds_passed: Option<u64>,
    pub wall_s: f64,
    pub notes: Vec<String>,
    pub per_client: Vec<ClientJson>,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct P50P99 {
    pub p50_ns: f64,
    pub p99_ns: f64,
}

/// One client's figures.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientJson {
    pub rank: u32,
    pub init_us: Option<f64>,
    pub attach_us: Option<f64>,
    pub first_get_us: Option<f64>,
    /// Its own PMIx_Fence call, entry to return (µs).
    pub fence_call_us: Option<f64>,
    /// Entry and return of that call on CLOCK_MONOTONIC (ns).
    pub fence_enter_ns: Option<f64>,
    pub fence_exit_ns: Option<f64>,
    pub rss_anon_kb: Option<f64>,
    pub rss_shmem_kb: Option<f64>,
    pub pss_kb: Option<f64>,
    /// Per Get kind ([`KINDS`] order): its p50 and p99 (ns).
    pub get: Vec<Option<P50P99>>,
}

/// `v` rounded to 3 decimals; None if it is not a finite number (JSON has no NaN).
fn r3(v: Option<f64>) -> Option<f64> {
    v.filter(|x| x.is_finite())
        .map(|x| (x * 1000.0).round() / 1000.0)
}

fn fence_r3(f: Fence) -> Fence {
    let r = |v: f64| r3(Some(v)).unwrap_or(0.0);
    Fence {
        collective_us: r(f.collective_us),
        last_release_us: r(f.last_release_us),
        arrival_skew_us: r(f.arrival_skew_us),
        call_p50_us: r(f.call_p50_us),
        host_upcall_us: r3(f.host_upcall_us),
    }
}

fn p50p99(g: Option<(f64, f64)>) -> Option<P50P99> {
    let (a, b) = g?;
    Some(P50P99 {
        p50_ns: r3(Some(a))?,
        p99_ns: r3(Some(b))?,
    })
}

fn client(c: &Client) -> ClientJson {
    ClientJson {
        rank: c.rank,
        init_us: r3(Some(c.init_us)),
        attach_us: r3(c.attach_us),
        first_get_us: r3(Some(c.first_get_us)),
        fence_call_us: r3(c.fence_us),
        fence_enter_ns: c.fence_enter_ns,
        fence_exit_ns: c.fence_exit_ns,
        rss_anon_kb: r3(Some(c.rss_anon_kb)),
        rss_shmem_kb: r3(Some(c.rss_shmem_kb)),
        pss_kb: r3(Some(c.pss_kb)),
        get: c.get.iter().map(|g| p50p99(*g)).collect(),
    }
}

fn run_json(c: &Cell) -> RunJson {
    let result = match &c.result {
        Err(e) if e.starts_with("skipped") => RunResult::Skipped { reason: e.clone() },
        Err(e) => RunResult::Failed { reason: e.clone() },
        Ok(o) => RunResult::Ok(Box::new(OkRun {
            register_us: r3(o.register_us),
            register_us_runs: c
                .register_runs_us
                .iter()
                .filter_map(|&v| r3(Some(v)))
                .collect(),
            libpmix_register_us: r3(o.libpmix_register_us),
            rshm_register_faults: o.rshm_register_faults,
            rshm_register_cpu_us: r3(o.rshm_register_cpu_us),
            init_plus_first_get_all_us: c
                .init_all_us()
                .into_iter()
                .filter_map(|v| r3(Some(v)))
                .collect(),
            init_plus_first_get_us: r3(c.init_us()),
            init_plus_first_get_min_us: r3(c.init_min_us()),
            init_plus_first_get_max_us: r3(c.init_max_us()),
            get: KINDS
                .iter()
                .enumerate()
                .map(|(k, (name, _))| (name.to_string(), p50p99(c.get(k))))
                .collect(),
            fence_us: r3(c.fence_us()),
            fence: c.fence().map(fence_r3),
            shared_bytes: o.shared_bytes,
            rshm_store_bytes: o.rshm_store_bytes,
            private_bytes_per_client: r3(c.private_bytes()),
            gds_answered: o.gds_answered,
            gds_passed: o.gds_passed,
            wall_s: r3(Some(o.wall_s)).unwrap_or(0.0),
            notes: o.notes.clone(),
            per_client: o.clients.iter().map(client).collect(),
        })),
    };
    RunJson {
        m: c.m,
        column: c.col.name().to_string(),
        loadavg: c.loadavg.clone(),
        result,
    }
}

impl ScaleJson {
    pub fn new(a: &Args, cells: &[Cell], notes: &[String], meta: &[(String, String)]) -> Self {
        ScaleJson {
            command: format!(
                "cargo run --release -p rshm-benches --bin scale --{}",
                a.argv.iter().map(|x| format!(" {x}")).collect::<String>()
            ),
            machine: meta.iter().cloned().collect(),
            clients: a.clients,
            ppn: run::PPN,
            calls_fast: a.calls_fast,
            calls_libpmix: a.calls_libpmix,
            quick: a.quick,
            get_kinds: KINDS
                .iter()
                .map(|(k, d)| (k.to_string(), d.to_string()))
                .collect(),
            notes: notes.to_vec(),
            runs: cells.iter().map(run_json).collect(),
        }
    }
}

/// The file's text: pretty-printed, ending in a newline.
pub fn json(a: &Args, cells: &[Cell], notes: &[String], meta: &[(String, String)]) -> String {
    let mut s = serde_json::to_string_pretty(&ScaleJson::new(a, cells, notes, meta))
        .expect("serialize scale.json");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::super::run::{Col, Outcome};
    use super::*;

    fn args() -> Args {
        Args::for_test(&["--quick", "--max-m", "1000"])
    }

    fn cells() -> Vec<Cell> {
        let clients = (0..3)
            .map(|r| Client {
                rank: r,
                init_us: 1000.0 + f64::from(r) * 0.1234,
                first_get_us: 12.0,
                attach_us: (r == 0).then_some(55.5),
                fence_us: Some(400.0),
                fence_enter_ns: Some(1e12 + f64::from(r) * 1e5),
                fence_exit_ns: Some(1e12 + 6e5 + f64::from(r) * 1e4),
                rss_anon_kb: 428.0,
                pss_kb: f64::NAN,
                rss_shmem_kb: 48.0,
                get: [Some((100.0, 200.0)), None, Some((1.5, 2.25))],
            })
            .collect();
        let ok = Outcome {
            register_us: Some(900.5),
            rshm_register_faults: Some(12),
            clients,
            shared_bytes: Some(1 << 20),
            wall_s: 1.25,
            notes: vec!["a \"quoted\"\nnote".into()],
            ..Outcome::default()
        };
        vec![
            Cell::from_runs(1000, Col::Direct, "0.5 0.4 0.3".into(), vec![Ok(ok)]),
            Cell::from_runs(
                1000,
                Col::Hash,
                "1".into(),
                vec![Err("skipped: why".into())],
            ),
            Cell::from_runs(1000, Col::Ds21, "1".into(), vec![Err("timed out".into())]),
        ]
    }

    /// What the harness writes parses back into the same value, NaN figures as null.
    #[test]
    fn the_harness_output_round_trips() {
        let meta = vec![("cpu".to_string(), "x".to_string())];
        let text = json(&args(), &cells(), &["n".into()], &meta);
        let back: ScaleJson = serde_json::from_str(&text).unwrap();
        assert_eq!(
            back,
            ScaleJson::new(&args(), &cells(), &["n".into()], &meta)
        );
        let RunResult::Ok(ok) = &back.runs[0].result else {
            panic!("{:?}", back.runs[0])
        };
        assert_eq!(ok.per_client[0].pss_kb, None);
        assert_eq!(ok.fence_us, Some(400.0));
        assert_eq!(ok.fence.unwrap().arrival_skew_us, 200.0);
        assert_eq!(ok.init_plus_first_get_all_us, [1012.0, 1012.123, 1012.247]);
        assert!(matches!(back.runs[1].result, RunResult::Skipped { .. }));
        assert!(matches!(back.runs[2].result, RunResult::Failed { .. }));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["runs"][1]["status"], "skipped");
        assert_eq!(v["runs"][0]["status"], "ok");
    }

    /// The committed figures (benches/results/scale.json) are the harness's current format.
    #[test]
    fn the_committed_scale_json_parses() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/results/scale.json");
        let text = std::fs::read_to_string(path).unwrap();
        let j: ScaleJson = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert!(!j.runs.is_empty());
    }
}
