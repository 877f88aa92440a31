//! A small log-log line-plot writer: panels side by side, each with decade ticks, one polyline
//! (and point markers) per series, and a shared legend. Plain SVG 1.1 text, no dependencies.

use std::fmt::Write as _;

/// One line of a panel.
pub struct Series {
    pub name: String,
    pub color: &'static str,
    /// SVG `stroke-dasharray` ("" = solid).
    pub dash: &'static str,
    /// (x, y), both > 0 (others are dropped: log axes).
    pub points: Vec<(f64, f64)>,
}

/// One plot.
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// Formats a y tick value (a power of ten) for the axis.
    pub y_fmt: fn(f64) -> String,
    pub series: Vec<Series>,
}

const PW: f64 = 360.0; // plot area width
const PH: f64 = 260.0; // plot area height
const ML: f64 = 70.0; // left margin (y tick labels)
const MT: f64 = 40.0; // top margin (title)
const MB: f64 = 50.0; // bottom margin (x ticks + label)
const GAP: f64 = 30.0; // between panels

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Decade range [10^lo, 10^hi] covering the values (at least one decade).
fn decades(vals: impl Iterator<Item = f64>) -> (i32, i32) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| *v > 0.0 && v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0, 1);
    }
    let l = lo.log10().floor() as i32;
    let mut h = hi.log10().ceil() as i32;
    if h <= l {
        h = l + 1;
    }
    (l, h)
}

/// Tick label of a power of ten `v` in `unit` with SI prefixes: 100 ns, 1 µs, 10 MB ...
pub fn fmt_si(v: f64, unit: &str, prefixes: &[&str]) -> String {
    let mut v = v;
    let mut i = 0;
    while v >= 999.5 && i + 1 < prefixes.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{} {}{unit}", (v * 1000.0).round() / 1000.0, prefixes[i])
}

/// x-axis tick labels: 1k, 10k, 100k, 1M.
pub fn fmt_count(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{}k", v / 1e3)
    } else {
        format!("{v}")
    }
}

/// Render the panels in one row with a legend (the union of series names) underneath.
pub fn render(title: &str, panels: &[Panel], footnote: &str) -> String {
    let n = panels.len().max(1) as f64;
    // Legend entries: unique (name, color, dash) in first-seen order.
    let mut legend: Vec<(&str, &str, &str)> = Vec::new();
    for p in panels {
        for s in &p.series {
            if !s.points.is_empty() && !legend.iter().any(|l| l.0 == s.name) {
                legend.push((&s.name, s.color, s.dash));
            }
        }
    }
    let per_row = 3usize;
    let legend_rows = legend.len().div_ceil(per_row) as f64;
    let width = ML + n * (PW + GAP + ML) - ML + 20.0;
    let height = 30.0 + MT + PH + MB + 20.0 + legend_rows * 20.0 + 30.0;
    let mut o = String::new();
    let _ = writeln!(
        o,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        o,
        r#"<rect width="100%" height="100%" fill="white"/><text x="{:.0}" y="22" font-size="16" text-anchor="middle">{}</text>"#,
        width / 2.0,
        esc(title)
    );
    for (i, p) in panels.iter().enumerate() {
        let x0 = ML + i as f64 * (PW + GAP + ML);
        let y0 = 30.0 + MT;
        let all = || p.series.iter().flat_map(|s| s.points.iter());
        let (xl, xh) = decades(all().map(|p| p.0));
        let (yl, yh) = decades(all().map(|p| p.1));
        let sx = |x: f64| x0 + (x.log10() - xl as f64) / (xh - xl) as f64 * PW;
        let sy = |y: f64| y0 + PH - (y.log10() - yl as f64) / (yh - yl) as f64 * PH;
        let _ = writeln!(
            o,
            r##"<text x="{:.1}" y="{:.1}" font-size="13" text-anchor="middle">{}</text><rect x="{x0:.1}" y="{y0:.1}" width="{PW}" height="{PH}" fill="none" stroke="#444"/>"##,
            x0 + PW / 2.0,
            y0 - 10.0,
            esc(&p.title)
        );
        for d in xl..=xh {
            let x = sx(10f64.powi(d));
            let _ = writeln!(
                o,
                r##"<line x1="{x:.1}" y1="{y0:.1}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                y0 + PH,
                y0 + PH + 16.0,
                fmt_count(10f64.powi(d))
            );
        }
        for d in yl..=yh {
            let y = sy(10f64.powi(d));
            let _ = writeln!(
                o,
                r##"<line x1="{x0:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                x0 + PW,
                x0 - 6.0,
                y + 4.0,
                esc(&(p.y_fmt)(10f64.powi(d)))
            );
        }
        let _ = writeln!(
            o,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text transform="translate({:.1},{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            x0 + PW / 2.0,
            y0 + PH + 36.0,
            esc(&p.x_label),
            x0 - 52.0,
            y0 + PH / 2.0,
            esc(&p.y_label)
        );
        for s in &p.series {
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| *x > 0.0 && *y > 0.0 && x.is_finite() && y.is_finite())
                .collect();
            if pts.is_empty() {
                continue;
            }
            let path: Vec<String> = pts
                .iter()
                .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
                .collect();
            let _ = writeln!(
                o,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2" stroke-dasharray="{}"><title>{}</title></polyline>"#,
                path.join(" "),
                s.color,
                s.dash,
                esc(&s.name)
            );
            for (x, y) in &pts {
                let _ = writeln!(
                    o,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"><title>{}: {}</title></circle>"#,
                    sx(*x),
                    sy(*y),
                    s.color,
                    esc(&s.name),
                    esc(&(p.y_fmt)(*y))
                );
            }
        }
    }
    let ly = 30.0 + MT + PH + MB + 10.0;
    for (i, (name, color, dash)) in legend.iter().enumerate() {
        let lx = ML + (i % per_row) as f64 * 300.0;
        let y = ly + (i / per_row) as f64 * 20.0;
        let _ = writeln!(
            o,
            r#"<line x1="{lx:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2" stroke-dasharray="{dash}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            lx + 30.0,
            lx + 36.0,
            y + 4.0,
            esc(name)
        );
    }
    let _ = writeln!(
        o,
        r##"<text x="{ML}" y="{:.1}" font-size="11" fill="#555">{}</text>"##,
        height - 12.0,
        esc(footnote)
    );
    o.push_str("</svg>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_log_panels() {
        let p = Panel {
            title: "t".into(),
            x_label: "M".into(),
            y_label: "ns".into(),
            y_fmt: |v| format!("{v}"),
            series: vec![Series {
                name: "a<b".into(),
                color: "red",
                dash: "",
                points: vec![(1e3, 50.0), (1e6, 400.0), (1e4, 0.0)],
            }],
        };
        let s = render("x", &[p], "note");
        assert!(s.starts_with("<svg") && s.ends_with("</svg>\n"));
        assert!(s.contains("a&lt;b"));
        assert_eq!(s.matches("<circle").count(), 2);
        assert_eq!(decades([50.0, 400.0].into_iter()), (1, 3));
    }
}
