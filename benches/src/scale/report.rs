//! What the harness prints: the table, the direct column's register and attach lines, the
//! OpenPMIx / rshm ratios, and the formats of their numbers.

use std::fmt::Write as _;

use super::args::Args;
use super::cell::Cell;
use super::run::{self, median, Col};

pub fn fmt_ns(ns: f64) -> String {
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

pub fn fmt_bytes(b: f64) -> String {
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

pub fn opt(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.map(f).unwrap_or_else(|| "-".into())
}

pub fn fmt_m(m: u32) -> String {
    fmt_count(m as f64)
}

/// 1k, 10k, 100k, 1M (axis ticks and the table's M).
pub fn fmt_count(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{}k", v / 1e3)
    } else {
        format!("{v}")
    }
}

pub fn table(cells: &[Cell]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:>5} {:<22} {:>9} {:>28} {:>19} {:>19} {:>19} {:>9} {:>9} {:>10} {:>10}",
        "M",
        "column",
        "register",
        "init+1st min/p50/max",
        "Get job p50/p99",
        "Get proc p50/p99",
        "Get card p50/p99",
        "fence",
        "skew",
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
                    "{head} {:>9} {:>28} {:>19} {:>19} {:>19} {:>9} {:>9} {:>10} {:>10}",
                    opt(o.register_us, |v| fmt_ns(v * 1e3)),
                    format!(
                        "{} / {} / {}",
                        opt(c.init_min_us(), |v| fmt_ns(v * 1e3)),
                        opt(c.init_us(), |v| fmt_ns(v * 1e3)),
                        opt(c.init_max_us(), |v| fmt_ns(v * 1e3))
                    ),
                    g(0),
                    g(1),
                    g(2),
                    opt(c.fence_us(), |v| fmt_ns(v * 1e3)),
                    opt(c.fence().map(|f| f.arrival_skew_us), |v| fmt_ns(v * 1e3)),
                    opt(o.shared_bytes.map(|b| b as f64), fmt_bytes),
                    opt(c.private_bytes(), fmt_bytes),
                );
            }
        }
    }
    t
}

/// Per cell, every client's init + first Get (ascending; min / p50 / max of more than 8), and the
/// fence: the collective (last entry to first release, the table's "fence") beside last entry to
/// last release, the arrival skew and the clients' own calls, all from one run.
pub fn detail_lines(cells: &[Cell]) -> String {
    let mut t = String::from(
        "fence (ms): collective (last entry -> first release) / last entry -> last release / \
         arrival skew / clients' own call p50 / host upcall after the last entry;\n\
         init+1st per client (ms)\n",
    );
    let ms = |v: f64| format!("{:.2}", v / 1e3);
    for c in cells.iter().filter(|c| c.ok().is_some()) {
        let all = c.init_all_us();
        let init = if all.len() <= 8 {
            all.iter().map(|&v| ms(v)).collect::<Vec<_>>().join(" ")
        } else {
            format!(
                "min {} p50 {} max {} (of {})",
                ms(all[0]),
                ms(c.init_us().unwrap_or(f64::NAN)),
                ms(all[all.len() - 1]),
                all.len()
            )
        };
        let fence = c.fence().map_or("-".into(), |f| {
            format!(
                "{} / {} / {} / {} / {}",
                ms(f.collective_us),
                ms(f.last_release_us),
                ms(f.arrival_skew_us),
                ms(f.call_p50_us),
                f.host_upcall_us.map_or("-".into(), ms)
            )
        });
        let _ = writeln!(
            t,
            "{:>5} {:<22} {:>34}   {init}",
            fmt_m(c.m),
            c.col.label(),
            fence
        );
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
pub fn ratios(cells: &[Cell], ms: &[u32]) -> String {
    let mut t = String::new();
    let find = |m: u32, col: Col| {
        cells
            .iter()
            .find(|c| c.m == m && c.col == col && c.ok().is_some())
    };
    for &m in ms {
        let rshm42 = [
            Col::Direct,
            Col::Preload,
            Col::Component,
            Col::ComponentPreload,
        ];
        for (base, rs) in [
            (Col::Hash, &rshm42[..]),
            (Col::Ds21, &rshm42[..]),
            (Col::Pmix5, &[Col::Pmix5Preloads][..]),
        ] {
            let Some(b) = find(m, base) else { continue };
            for &r in rs {
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

/// The progress line of a finished cell (stderr).
pub fn cell_done(cell: &Cell) {
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
}

/// The report on stdout: `tab` and `rat` are [`table`] and [`ratios`] of `cells`.
pub fn print(a: &Args, cells: &[Cell], tab: &str, rat: &str, notes: &[String]) {
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
    print!("\n{}", detail_lines(cells));
    let reg = register_lines(cells);
    if !reg.is_empty() {
        println!(
            "\nrshm_server_register_nspace (direct column): time, in CPU time of the host's threads, and the host's page faults meanwhile"
        );
        print!("{reg}");
    }
    let att = attach_lines(cells);
    if !att.is_empty() {
        println!("\nrshm_client_attach alone (direct column, without dlopen): median / slowest client\n{att}");
    }
    if !rat.is_empty() {
        println!("\nratios (OpenPMIx / rshm, same run):\n{rat}");
    }
    for n in notes {
        println!("note: {n}");
    }
}
