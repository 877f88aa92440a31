//! bench/median.awk, the medians bench/mpi-bench.sh prints: formatted by awk's printf, so a
//! median past a million (which awk's plain print writes as `1.2e+06`) keeps its digits, and a
//! column without a number fails instead of printing a made-up one.

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// median.awk over `lines` for `key`, divided by `div`, printed as `fmt`.
fn median(lines: &str, key: &str, div: &str, fmt: &str) -> Output {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/median.awk");
    let mut awk = Command::new("awk")
        .args(["-v", &format!("key={key}"), "-v", &format!("div={div}")])
        .args(["-v", &format!("fmt={fmt}"), "-f", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("awk");
    awk.stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    awk.wait_with_output().unwrap()
}

fn printed(out: &Output) -> &str {
    assert!(
        out.status.success(),
        "median.awk failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::str::from_utf8(&out.stdout).unwrap().trim_end()
}

#[test]
fn medians_past_a_million_keep_their_digits() {
    // The even count's median, 1250000.5 us, is what awk's print wrote as 1.25e+06 (which bc
    // could not read, and the table showed as 0.0 ms).
    let lines = "rank 0 init_us 1300000 fence_us 7\nrank 1 init_us 1200001 fence_us 9\n";
    assert_eq!(printed(&median(lines, "init_us", "1000", "%.1f")), "1250.0");
    assert_eq!(printed(&median(lines, "init_us", "1", "%.0f")), "1250000");
    assert_eq!(printed(&median(lines, "fence_us", "1", "%.0f")), "8");
    let odd = "a k 30\na k 2500000\na k 10\n";
    assert_eq!(printed(&median(odd, "k", "1", "%.0f")), "30");
}

#[test]
fn a_column_without_a_number_fails() {
    for lines in [
        "rank 0 init_us nan\nrank 1 init_us 5\n",
        "rank 0 fence_us 5\n",
        "",
    ] {
        let out = median(lines, "init_us", "1000", "%.1f");
        assert!(!out.status.success(), "{lines:?} gave a median");
        assert!(out.stdout.is_empty(), "{lines:?} printed a median");
    }
}
