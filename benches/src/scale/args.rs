//! The command line (clap derive): the scale table by default, `--commit-storm` or `--sets`
//! for the other two measurements; `scale --help` lists every option by mode.

use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{CommandFactory, Parser};

use super::run::Col;
use super::sets::SetsArgs;
use super::storm::StormArgs;

/// A count, `_` allowed as a separator (`1_000_000`).
fn count(s: &str) -> Result<u32, String> {
    s.replace('_', "").parse().map_err(|e| format!("{s}: {e}"))
}

fn column(s: &str) -> Result<Col, String> {
    Col::ALL.into_iter().find(|c| c.name() == s).ok_or_else(|| {
        format!(
            "unknown column {s} (one of {})",
            Col::ALL.map(Col::name).join(",")
        )
    })
}

/// The scale harness: one PMIx job side by side under rshm (direct, component, preload) and
/// OpenPMIx (hash, ds21), over tools/pmix-host, at M = 1k..1M ranks. Writes a table,
/// scale.json, scale.txt and SVG plots into --out.
#[derive(Parser, Debug)]
#[command(name = "scale", version)]
pub struct Cli {
    /// Few calls, 2 clients, M up to 10k: numbers indicative only.
    #[arg(long)]
    quick: bool,
    /// Largest M (default 1M, 10k with --quick); the table runs 1k, 10k, 100k, 1M up to it.
    #[arg(long, value_name = "N", value_parser = count)]
    max_m: Option<u32>,
    /// Largest M for the columns whose clients are served by libpmix.
    #[arg(long, value_name = "N", value_parser = count, default_value = "100000")]
    pmix_max_m: u32,
    /// Largest M for OpenPMIx hash (every hash client copies the whole job).
    #[arg(long, value_name = "N", value_parser = count, default_value = "100000")]
    hash_max_m: u32,
    /// Client processes on the local node (default 8, 2 with --quick, 4 with --sets).
    #[arg(long, value_name = "N", value_parser = count)]
    clients: Option<u32>,
    /// The columns to run, comma-separated (default all).
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = column)]
    columns: Vec<Col>,
    /// Runs per cell (each a fresh pmix-host and job); the one with the median register time
    /// is reported.
    #[arg(long, value_name = "N", value_parser = count, default_value = "1")]
    repeat: u32,
    /// The gds component to load (default: the one built from component/).
    #[arg(long, value_name = "PATH")]
    component: Option<PathBuf>,
    /// Timed calls per Get kind through rshm (default 200000, 20000 with --quick).
    #[arg(long, value_name = "N", value_parser = count)]
    calls_fast: Option<u32>,
    /// Timed calls per Get kind through libpmix (default 2000, 300 with --quick).
    #[arg(long, value_name = "N", value_parser = count)]
    calls_libpmix: Option<u32>,
    /// Output directory (default benches/results for the table, target/rshm-bench/scale with
    /// --quick, target/rshm-bench/commit-storm or target/rshm-bench/sets for the others).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,

    /// Run the commit storm instead (src/scale/storm.rs, docs/commit-storm.md).
    #[arg(long, help_heading = "Commit storm", conflicts_with = "sets")]
    commit_storm: bool,
    /// Local clients N, comma-separated.
    #[arg(long, help_heading = "Commit storm", value_name = "LIST", value_delimiter = ',',
          value_parser = count, default_value = "16,64,128,256,512,1024", requires = "commit_storm")]
    storm_n: Vec<u32>,
    /// Values per commit K, comma-separated.
    #[arg(long, help_heading = "Commit storm", value_name = "LIST", value_delimiter = ',',
          value_parser = count, default_value = "1,16,64", requires = "commit_storm")]
    storm_k: Vec<u32>,
    /// Bytes per value.
    #[arg(
        long,
        help_heading = "Commit storm",
        value_name = "N",
        default_value_t = 200,
        requires = "commit_storm"
    )]
    storm_bytes: usize,
    /// Add one fence's collected data of N remote ranks.
    #[arg(long, help_heading = "Commit storm", requires = "commit_storm")]
    storm_fence: bool,
    /// Base directory of the stores (default gds's: /dev/shm when there is one).
    #[arg(
        long,
        help_heading = "Commit storm",
        value_name = "DIR",
        requires = "commit_storm"
    )]
    storm_base: Option<PathBuf>,

    /// Time process-set queries and group Gets instead (src/scale/sets.rs).
    #[arg(long, help_heading = "Process sets")]
    sets: bool,
    /// Job sizes M, comma-separated.
    #[arg(long, help_heading = "Process sets", value_name = "LIST", value_delimiter = ',',
          value_parser = count, default_value = "1000,100000", requires = "sets")]
    sets_m: Vec<u32>,
    /// Numbers of sets S, comma-separated.
    #[arg(long, help_heading = "Process sets", value_name = "LIST", value_delimiter = ',',
          value_parser = count, default_value = "10,1000,10000", requires = "sets")]
    sets_s: Vec<u32>,
}

/// The scale table's settings.
pub struct Args {
    pub quick: bool,
    pub ms: Vec<u32>,
    pub pmix_max_m: u32,
    pub hash_max_m: u32,
    pub clients: u32,
    pub cols: Vec<Col>,
    pub component: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub calls_fast: u32,
    pub calls_libpmix: u32,
    /// Runs per cell (each a fresh pmix-host and job array); the one with the median register
    /// time is reported.
    pub repeat: u32,
    /// The arguments as given, for the JSON's `command`.
    pub argv: Vec<String>,
}

/// What to run.
pub enum Mode {
    Scale(Args),
    Storm(StormArgs),
    Sets(SetsArgs),
}

fn invalid(msg: &str) -> ! {
    Cli::command().error(ErrorKind::ValueValidation, msg).exit()
}

impl Mode {
    /// The process's arguments; prints the error and the usage and exits 2 on a bad one.
    pub fn parse() -> Mode {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        Mode::from(Cli::parse(), argv)
    }

    fn from(c: Cli, argv: Vec<String>) -> Mode {
        if c.commit_storm {
            if c.storm_n.contains(&0) {
                invalid("--storm-n: every N must be at least 1");
            }
            return Mode::Storm(StormArgs {
                ns: c.storm_n,
                ks: c.storm_k,
                bytes: c.storm_bytes,
                fence: c.storm_fence,
                base: c.storm_base,
                out: c.out,
            });
        }
        if c.sets {
            let a = SetsArgs {
                ms: c.sets_m,
                ss: c.sets_s,
                clients: c.clients.unwrap_or(4),
                calls_fast: c.calls_fast.unwrap_or(100_000),
                calls_libpmix: c.calls_libpmix.unwrap_or(1_000),
                out: c.out,
            };
            if a.clients == 0 || a.ms.iter().any(|&m| m < a.clients) || a.ss.contains(&0) {
                invalid("--sets: every M must hold the clients, and every S be at least 1");
            }
            return Mode::Sets(a);
        }
        let quick = c.quick;
        let mut a = Args {
            quick,
            ms: vec![1_000, 10_000, 100_000, 1_000_000],
            pmix_max_m: c.pmix_max_m,
            hash_max_m: c.hash_max_m,
            clients: c.clients.unwrap_or(if quick { 2 } else { 8 }).max(1),
            cols: if c.columns.is_empty() {
                Col::ALL.to_vec()
            } else {
                c.columns
            },
            component: c.component,
            out: c.out,
            calls_fast: c.calls_fast.unwrap_or(if quick { 20_000 } else { 200_000 }),
            calls_libpmix: c.calls_libpmix.unwrap_or(if quick { 300 } else { 2_000 }),
            repeat: c.repeat.max(1),
            argv,
        };
        let max_m = c.max_m.unwrap_or(if quick { 10_000 } else { 1_000_000 });
        a.ms.retain(|m| *m <= max_m);
        if a.ms.is_empty() || !a.ms.contains(&max_m) && max_m > 1_000 {
            a.ms.push(max_m);
            a.ms.sort_unstable();
            a.ms.dedup();
        }
        Mode::Scale(a)
    }
}

#[cfg(test)]
impl Args {
    /// The table's settings from `argv` (without the program name).
    pub fn for_test(argv: &[&str]) -> Args {
        let c = Cli::try_parse_from(std::iter::once("scale").chain(argv.iter().copied())).unwrap();
        match Mode::from(c, argv.iter().map(|s| s.to_string()).collect()) {
            Mode::Scale(a) => a,
            _ => panic!("not the table: {argv:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_definition_passes_claps_checks() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_flags_keep_their_spellings_and_defaults() {
        let a = Args::for_test(&["--quick"]);
        assert_eq!(
            (a.ms.as_slice(), a.clients, a.calls_fast),
            (&[1_000, 10_000][..], 2, 20_000)
        );
        let a = Args::for_test(&[
            "--max-m",
            "10_000",
            "--columns",
            "rshm-direct,pmix-hash",
            "--repeat",
            "3",
        ]);
        assert_eq!(a.ms, [1_000, 10_000]);
        assert_eq!(a.cols, [Col::Direct, Col::Hash]);
        assert_eq!((a.repeat, a.clients), (3, 8));
        let a = Args::for_test(&["--pmix-max-m", "1000000", "--out", "x", "--bench"]);
        assert_eq!(a.ms.len(), 4);
        assert_eq!(a.pmix_max_m, 1_000_000);
        let parse = |v: &[&str]| {
            Cli::try_parse_from(std::iter::once("scale").chain(v.iter().copied()))
                .map(|c| Mode::from(c, Vec::new()))
        };
        assert!(parse(&["--columns", "nope"]).is_err());
        assert!(
            parse(&["--storm-n", "16"]).is_err(),
            "a storm flag without --commit-storm"
        );
        let Ok(Mode::Storm(s)) = parse(&["--commit-storm", "--storm-n", "16,64", "--storm-fence"])
        else {
            panic!()
        };
        assert_eq!(
            (s.ns, s.ks, s.bytes, s.fence),
            (vec![16, 64], vec![1, 16, 64], 200, true)
        );
        let Ok(Mode::Sets(s)) = parse(&["--sets", "--sets-s", "10"]) else {
            panic!()
        };
        assert_eq!((s.ms, s.ss, s.clients), (vec![1_000, 100_000], vec![10], 4));
    }
}
