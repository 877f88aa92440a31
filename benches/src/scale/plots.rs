//! The three SVG figures (latency, memory, register/init/fence against M), one series per
//! column.

use std::path::{Path, PathBuf};

use super::cell::Cell;
use super::run::{Col, KINDS};
use super::svg;

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

pub fn plots(
    out: &Path,
    cells: &[Cell],
    cols: &[Col],
    foot: &str,
) -> std::io::Result<Vec<PathBuf>> {
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
