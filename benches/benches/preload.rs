//! Preloaded `PMIx_Get` (librshm_client_preload.so answering from shared memory) against Debian's
//! libpmix 4.2.2 `PMIx_Get` (`PMIX_MCA_gds=hash`) on the same job, in one run: tools/pmix-host
//! registers examples/job-2node.txt (with `--rshm` beside libpmix for the preloaded run) and one
//! real client runs `bench` lines: n PMIx_Get + PMIX_VALUE_RELEASE of one key, timed in batches
//! of 32 (pmix-client.c). Prints a table and the ratio; writes target/rshm-bench/preload.json.
//!
//! `cargo bench -p rshm-benches --bench preload` (full); with `-- --test` a smoke run.

#[path = "../../gds/tests/support/pmixhost/mod.rs"]
mod pmixhost;

use std::path::PathBuf;
use std::process::Command;

/// (corpus key text, what it is)
const KEYS: [(&str, &str, &str); 3] = [
    ("*", "PMIX_JOB_SIZE", "job key (rank WILDCARD)"),
    ("1", "PMIX_LOCAL_RANK", "proc key of a local peer"),
    ("5", "PMIX_HOSTNAME", "proc key of a remote rank"),
];

fn libs(root: &std::path::Path) -> (PathBuf, PathBuf) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let st = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "-q",
            "--release",
            "-p",
            "rshm-server",
            "-p",
            "rshm-client-preload",
            "--lib",
        ])
        .status()
        .expect("cargo build");
    assert!(st.success(), "building the shims failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| if p.is_absolute() { p } else { root.join(p) })
        .unwrap_or_else(|| root.join("target"));
    let d = target.join("release");
    (
        d.join("librshm_server.so"),
        d.join("librshm_client_preload.so"),
    )
}

/// Run one client over the bench corpus; return key → (p50, p99) in ns.
fn run(
    tool: &std::path::Path,
    corpus: &std::path::Path,
    preload: Option<(&PathBuf, &PathBuf)>,
) -> Vec<(String, u64, u64)> {
    let mut cmd = Command::new(tool.join("pmix-host"));
    cmd.current_dir(tool)
        .args([
            "--job",
            "examples/job-2node.txt",
            "--clients",
            "1",
            "--timeout",
            "300",
        ])
        .arg("--client-cmd")
        .arg(format!("./pmix-client {}", corpus.display()))
        .env("PMIX_MCA_gds", "hash");
    if let Some((server, pre)) = preload {
        cmd.arg("--rshm").arg(server).env("LD_PRELOAD", pre);
    }
    let out = cmd.output().expect("pmix-host");
    assert!(
        out.status.success(),
        "pmix-host failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("bench ")) {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f[3], "SUCCESS", "bench Get failed: {line}");
        let num = |p: &str| -> u64 {
            f.iter()
                .find_map(|x| x.strip_prefix(p))
                .and_then(|v| v.parse().ok())
                .expect("bench field")
        };
        rows.push((f[2].to_string(), num("p50_ns="), num("p99_ns=")));
    }
    assert_eq!(rows.len(), KEYS.len(), "bench output: {text}");
    rows
}

fn main() {
    let quick = std::env::args().any(|a| a == "--test" || a == "--quick");
    let root = pmixhost::repo_root();
    let tool = pmixhost::build();
    let (server, preload) = libs(&root);
    let out_dir = root.join("target").join("rshm-bench");
    std::fs::create_dir_all(&out_dir).expect("out dir");
    // libpmix's Get is ~100x slower: fewer calls keep both runs a few seconds long.
    let (n_rshm, n_pmix) = if quick { (640, 64) } else { (200_000, 4_000) };
    let corpus = |n: usize, name: &str| {
        let p = out_dir.join(name);
        let text: String = KEYS
            .iter()
            .map(|(rank, key, _)| format!("bench {n} {rank} {key}\n"))
            .collect();
        std::fs::write(&p, text).expect("corpus");
        p
    };
    let c_rshm = corpus(n_rshm, "preload-corpus.txt");
    let c_pmix = corpus(n_pmix, "libpmix-corpus.txt");
    let plain = run(&tool, &c_pmix, None);
    let pre = run(&tool, &c_rshm, Some((&server, &preload)));
    println!(
        "preloaded PMIx_Get vs libpmix 4.2.2 (gds=hash), one client, one run{}",
        if quick {
            " [smoke: numbers not meaningful]"
        } else {
            ""
        }
    );
    println!(
        "{:<18} {:<28} {:>12} {:>12} {:>14} {:>14} {:>8}",
        "key", "kind", "rshm p50 ns", "rshm p99 ns", "libpmix p50 ns", "libpmix p99 ns", "ratio"
    );
    let mut json = Vec::new();
    for (i, (_, key, kind)) in KEYS.iter().enumerate() {
        let (r, l) = (&pre[i], &plain[i]);
        let ratio = l.1 as f64 / r.1.max(1) as f64;
        println!(
            "{key:<18} {kind:<28} {:>12} {:>12} {:>14} {:>14} {:>7.0}x",
            r.1, r.2, l.1, l.2, ratio
        );
        json.push(format!(
            "{{\"key\":\"{key}\",\"rshm_p50_ns\":{},\"rshm_p99_ns\":{},\"libpmix_p50_ns\":{},\"libpmix_p99_ns\":{},\"ratio\":{ratio:.1}}}",
            r.1, r.2, l.1, l.2
        ));
    }
    let path = out_dir.join("preload.json");
    std::fs::write(&path, format!("[{}]\n", json.join(","))).expect("write json");
    println!("wrote {}", path.display());
}
