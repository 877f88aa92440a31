//! The three SVG figures (latency, memory, register/init/fence against M), one series per
//! column, drawn with plotters' SVG backend: panels side by side on log-log axes, a legend of
//! the columns underneath and the run's footnote.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use super::cell::Cell;
use super::report::fmt_count;
use super::run::{Col, KINDS};

/// One line of a panel.
struct Series {
    color: RGBColor,
    /// p99 / max lines: dashed.
    dashed: bool,
    /// (x, y), both > 0 (others are dropped: log axes).
    points: Vec<(f64, f64)>,
}

/// One plot.
struct Panel {
    title: String,
    x_label: String,
    y_label: String,
    /// Formats a y tick value for the axis.
    y_fmt: fn(f64) -> String,
    series: Vec<Series>,
}

/// `#rrggbb` (a column's color) as plotters' color.
fn rgb(hex: &str) -> RGBColor {
    let c = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0);
    RGBColor(c(1), c(3), c(5))
}

/// Tick label of `v` in `unit` with SI prefixes: 100 ns, 1 µs, 10 MB ...
pub fn fmt_si(v: f64, unit: &str, prefixes: &[&str]) -> String {
    let mut v = v;
    let mut i = 0;
    while v >= 999.5 && i + 1 < prefixes.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{} {}{unit}", (v * 1000.0).round() / 1000.0, prefixes[i])
}

/// The decade range [10^lo, 10^hi] covering the values (at least one decade).
fn decades(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| *v > 0.0 && v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (1.0, 10.0);
    }
    let l = lo.log10().floor();
    let h = hi.log10().ceil().max(l + 1.0);
    (10f64.powf(l), 10f64.powf(h))
}

fn series(
    cells: &[Cell],
    cols: &[Col],
    dashed: bool,
    f: &dyn Fn(&Cell) -> Option<f64>,
) -> Vec<Series> {
    cols.iter()
        .map(|&col| Series {
            color: rgb(col.color()),
            dashed,
            points: cells
                .iter()
                .filter(|c| c.col == col)
                .filter_map(|c| f(c).map(|v| (c.m as f64, v)))
                .filter(|&(x, y)| x > 0.0 && y > 0.0 && y.is_finite())
                .collect(),
        })
        .collect()
}

const W: u32 = 460; // one panel's width
const H: u32 = 360; // the panels' height
const TOP: u32 = 40; // the figure's title
const LEGEND: u32 = 80; // legend and footnote

type Err = Box<dyn std::error::Error>;

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    p: &Panel,
) -> Result<(), Err>
where
    DB::ErrorType: 'static,
{
    let (x0, x1) = decades(p.series.iter().flat_map(|s| s.points.iter().map(|q| q.0)));
    let (y0, y1) = decades(p.series.iter().flat_map(|s| s.points.iter().map(|q| q.1)));
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, ("sans-serif", 14))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
    let y_fmt = p.y_fmt;
    chart
        .configure_mesh()
        .x_desc(p.x_label.as_str())
        .y_desc(p.y_label.as_str())
        .x_label_formatter(&|v| fmt_count(*v))
        .y_label_formatter(&|v| y_fmt(*v))
        .label_style(("sans-serif", 11))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.12))
        .draw()?;
    for s in &p.series {
        let style = s.color.stroke_width(2);
        if s.dashed {
            chart.draw_series(DashedLineSeries::new(s.points.iter().copied(), 6, 4, style))?;
        } else {
            chart.draw_series(LineSeries::new(s.points.iter().copied(), style))?;
        }
        chart.draw_series(
            s.points
                .iter()
                .map(|&q| Circle::new(q, 3, s.color.filled())),
        )?;
    }
    Ok(())
}

/// One figure: `panels` in a row under `title`, the columns' legend and `foot` underneath.
fn render(path: &Path, title: &str, panels: &[Panel], cols: &[Col], foot: &str) -> Result<(), Err> {
    let n = panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (W * n, TOP + H + LEGEND)).into_drawing_area();
    root.fill(&WHITE)?;
    let (head, rest) = root.split_vertically(TOP);
    let (body, bottom) = rest.split_vertically(H);
    head.draw(&Text::new(title, (10, 12), ("sans-serif", 18)))?;
    for (area, p) in body.split_evenly((1, n as usize)).iter().zip(panels) {
        draw_panel(area, p)?;
    }
    // The legend: one entry per column, then what a dashed line is.
    let per_row = (W * n / 190).max(1) as usize;
    for (i, col) in cols.iter().enumerate() {
        let (x, y) = (
            10 + 190 * (i % per_row) as i32,
            8 + 16 * (i / per_row) as i32,
        );
        let c = rgb(col.color());
        bottom.draw(&PathElement::new(
            vec![(x, y + 6), (x + 24, y + 6)],
            c.stroke_width(2),
        ))?;
        bottom.draw(&Text::new(col.label(), (x + 30, y), ("sans-serif", 12)))?;
    }
    let rows = cols.len().div_ceil(per_row) as i32;
    let y = 8 + 16 * rows;
    bottom.draw(&Text::new(
        "solid: p50 (median); dashed: p99 / slowest client",
        (10, y),
        ("sans-serif", 12),
    ))?;
    bottom.draw(&Text::new(
        foot,
        (10, y + 16),
        ("sans-serif", 11).into_font().color(&BLACK.mix(0.6)),
    ))?;
    root.present()?;
    Ok(())
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
    let ns_fmt: fn(f64) -> String = |v| fmt_si(v, "s", &["n", "µ", "m", ""]);
    let b_fmt: fn(f64) -> String = |v| fmt_si(v, "B", &["", "k", "M", "G", "T"]);
    let m = "M (ranks in the job)".to_string();
    let lat: Vec<Panel> = KINDS
        .iter()
        .enumerate()
        .map(|(k, (name, _))| {
            let mut s = series(cells, cols, false, &|c| c.get(k).map(|g| g.0));
            s.extend(series(cells, cols, true, &|c| c.get(k).map(|g| g.1)));
            Panel {
                title: format!("Get, {name} key: {}", PLOT_TITLES[k]),
                x_label: m.clone(),
                y_label: "time per Get".into(),
                y_fmt: ns_fmt,
                series: s,
            }
        })
        .collect();
    let mem = vec![
        Panel {
            title: "private bytes per client (RssAnon)".into(),
            x_label: m.clone(),
            y_label: "bytes".into(),
            y_fmt: b_fmt,
            series: series(cells, cols, false, &|c| c.private_bytes()),
        },
        Panel {
            title: "shared bytes (store files on tmpfs)".into(),
            x_label: m.clone(),
            y_label: "bytes".into(),
            y_fmt: b_fmt,
            series: series(cells, cols, false, &|c| {
                c.ok().and_then(|o| o.shared_bytes).map(|b| b as f64)
            }),
        },
    ];
    let reg = vec![
        Panel {
            title: "register (server, one namespace)".into(),
            x_label: m.clone(),
            y_label: "time".into(),
            y_fmt: ns_fmt,
            series: series(cells, cols, false, &|c| {
                c.ok().and_then(|o| o.register_us).map(|v| v * 1e3)
            }),
        },
        Panel {
            title: "client init/attach + first Get (median, max)".into(),
            x_label: m.clone(),
            y_label: "time".into(),
            y_fmt: ns_fmt,
            series: {
                let mut s = series(cells, cols, false, &|c| c.init_us().map(|v| v * 1e3));
                s.extend(series(cells, cols, true, &|c| {
                    c.init_max_us().map(|v| v * 1e3)
                }));
                s
            },
        },
        Panel {
            title: "collecting fence: last entry to first release".into(),
            x_label: m,
            y_label: "time".into(),
            y_fmt: ns_fmt,
            series: series(cells, cols, false, &|c| c.fence_us().map(|v| v * 1e3)),
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
        render(&p, title, &panels, cols, foot)
            .map_err(|e| std::io::Error::other(format!("{}: {e}", p.display())))?;
        written.push(p);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::super::run::{Client, Outcome};
    use super::*;

    /// Each figure is an SVG document holding every column's label and color.
    #[test]
    fn writes_three_svg_figures_with_every_column() {
        let dir = tempfile::tempdir().unwrap();
        let cols = [Col::Direct, Col::Hash];
        let cells: Vec<Cell> = [1_000, 10_000]
            .into_iter()
            .flat_map(|m| cols.map(|col| (m, col)))
            .map(|(m, col)| {
                let o = Outcome {
                    register_us: Some(f64::from(m) / 10.0),
                    shared_bytes: Some(u64::from(m) * 100),
                    clients: vec![Client {
                        init_us: 500.0,
                        first_get_us: 5.0,
                        rss_anon_kb: 400.0,
                        fence_us: Some(300.0),
                        fence_enter_ns: Some(1e9),
                        fence_exit_ns: Some(1e9 + 2e5),
                        get: [Some((60.0, 90.0)), Some((70.0, 95.0)), None],
                        ..Client::default()
                    }],
                    ..Outcome::default()
                };
                Cell::from_runs(m, col, String::new(), vec![Ok(o)])
            })
            .collect();
        let files = plots(dir.path(), &cells, &cols, "a footnote").unwrap();
        assert_eq!(files.len(), 3);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            assert!(text.starts_with("<svg"), "{}", f.display());
            assert!(text.trim_end().ends_with("</svg>"), "{}", f.display());
            for col in cols {
                assert!(
                    text.contains(col.label()),
                    "{}: {}",
                    f.display(),
                    col.label()
                );
                let hex = col.color().to_ascii_uppercase();
                assert!(
                    text.to_ascii_uppercase().contains(&hex),
                    "{}: {hex}",
                    f.display()
                );
            }
            assert!(text.contains("a footnote"));
        }
    }
}
