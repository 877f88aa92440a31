//! scale.json, written by hand (no serde in this crate): every figure of every cell, the
//! command, the machine and the notes. Numbers are rounded to 3 decimals, missing ones `null`.

use std::fmt::Write as _;

use super::args::Args;
use super::cell::Cell;
use super::run::{self, KINDS};

fn jnum(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => {
            if x.fract() == 0.0 && x.abs() < 1e15 {
                format!("{x:.0}")
            } else {
                format!("{x:.3}")
            }
        }
        _ => "null".into(),
    }
}

fn jstr(s: &str) -> String {
    let mut o = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

pub fn json(a: &Args, cells: &[Cell], notes: &[String], meta: &[(String, String)]) -> String {
    let mut j = String::from("{\n");
    let _ = writeln!(
        j,
        "  \"command\": {},",
        jstr(&format!(
            "cargo run --release -p rshm-benches --bin scale --{}",
            a.argv.iter().map(|x| format!(" {x}")).collect::<String>()
        ))
    );
    for (k, v) in meta {
        let _ = writeln!(j, "  {}: {},", jstr(k), jstr(v));
    }
    let _ = writeln!(
        j,
        "  \"clients\": {}, \"ppn\": {}, \"calls_fast\": {}, \"calls_libpmix\": {}, \"quick\": {},",
        a.clients,
        run::PPN,
        a.calls_fast,
        a.calls_libpmix,
        a.quick
    );
    let _ = writeln!(
        j,
        "  \"get_kinds\": {{{}}},",
        KINDS
            .iter()
            .map(|(k, d)| format!("{}: {}", jstr(k), jstr(d)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        j,
        "  \"notes\": [{}],",
        notes.iter().map(|n| jstr(n)).collect::<Vec<_>>().join(", ")
    );
    j.push_str("  \"runs\": [\n");
    for (i, c) in cells.iter().enumerate() {
        let _ = write!(
            j,
            "    {{\"m\": {}, \"column\": {}, \"loadavg\": {}, ",
            c.m,
            jstr(c.col.name()),
            jstr(&c.loadavg)
        );
        match &c.result {
            Err(e) => {
                let status = if e.starts_with("skipped") {
                    "skipped"
                } else {
                    "failed"
                };
                let _ = write!(j, "\"status\": \"{status}\", \"reason\": {}}}", jstr(e));
            }
            Ok(o) => {
                let gets: Vec<String> = KINDS
                    .iter()
                    .enumerate()
                    .map(|(k, (name, _))| match c.get(k) {
                        Some((p50, p99)) => format!(
                            "{}: {{\"p50_ns\": {}, \"p99_ns\": {}}}",
                            jstr(name),
                            jnum(Some(p50)),
                            jnum(Some(p99))
                        ),
                        None => format!("{}: null", jstr(name)),
                    })
                    .collect();
                let per: Vec<String> = o
                    .clients
                    .iter()
                    .map(|cl| {
                        let g: Vec<String> = cl
                            .get
                            .iter()
                            .map(|g| match g {
                                Some((a, b)) => format!("[{}, {}]", jnum(Some(*a)), jnum(Some(*b))),
                                None => "null".into(),
                            })
                            .collect();
                        format!(
                            "{{\"rank\": {}, \"init_us\": {}, \"attach_us\": {}, \"first_get_us\": {}, \"fence_us\": {}, \"rss_anon_kb\": {}, \"rss_shmem_kb\": {}, \"pss_kb\": {}, \"get_p50_p99_ns\": [{}]}}",
                            cl.rank,
                            jnum(Some(cl.init_us)),
                            jnum(cl.attach_us),
                            jnum(Some(cl.first_get_us)),
                            jnum(cl.fence_us),
                            jnum(Some(cl.rss_anon_kb)),
                            jnum(Some(cl.rss_shmem_kb)),
                            jnum(Some(cl.pss_kb)),
                            g.join(", ")
                        )
                    })
                    .collect();
                let _ = write!(
                    j,
                    "\"status\": \"ok\", \"register_us\": {}, \"register_us_runs\": [{}], \"libpmix_register_us\": {}, \"rshm_register_faults\": {}, \"rshm_register_cpu_us\": {}, \"init_plus_first_get_us\": {}, \"init_plus_first_get_max_us\": {}, \"get\": {{{}}}, \"fence_us\": {}, \"shared_bytes\": {}, \"rshm_store_bytes\": {}, \"private_bytes_per_client\": {}, \"gds_answered\": {}, \"gds_passed\": {}, \"wall_s\": {}, \"notes\": [{}],\n      \"per_client\": [{}]}}",
                    jnum(o.register_us),
                    c.register_runs_us
                        .iter()
                        .map(|&v| jnum(Some(v)))
                        .collect::<Vec<_>>()
                        .join(", "),
                    jnum(o.libpmix_register_us),
                    jnum(o.rshm_register_faults.map(|v| v as f64)),
                    jnum(o.rshm_register_cpu_us),
                    jnum(c.init_us()),
                    jnum(c.init_max_us()),
                    gets.join(", "),
                    jnum(c.fence_us()),
                    jnum(o.shared_bytes.map(|b| b as f64)),
                    jnum(o.rshm_store_bytes.map(|b| b as f64)),
                    jnum(c.private_bytes()),
                    jnum(o.gds_answered.map(|v| v as f64)),
                    jnum(o.gds_passed.map(|v| v as f64)),
                    jnum(Some((o.wall_s * 1000.0).round() / 1000.0)),
                    o.notes.iter().map(|n| jstr(n)).collect::<Vec<_>>().join(", "),
                    per.join(",\n        ")
                );
            }
        }
        j.push_str(if i + 1 < cells.len() { ",\n" } else { "\n" });
    }
    j.push_str("  ]\n}\n");
    j
}
