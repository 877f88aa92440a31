//! The command line: `scale [--quick] [--max-m N] ...` (hand-parsed: a few numeric flags).

use std::path::PathBuf;

use super::run::Col;

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

fn usage() -> ! {
    eprintln!(
        "usage: scale [--quick] [--max-m N] [--pmix-max-m N] [--hash-max-m N] [--clients N]\n\
         \x20            [--columns LIST] [--repeat N]\n\
         \x20            [--component PATH] [--calls-fast N] [--calls-libpmix N] [--out DIR]\n\
         columns: {}\n\
         or:    {}",
        Col::ALL.map(Col::name).join(","),
        super::storm::USAGE
    );
    std::process::exit(2)
}

impl Args {
    /// The process's arguments; prints the usage and exits 2 on anything it does not know.
    pub fn parse() -> Args {
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
}
