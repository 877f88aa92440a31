//! What the report says besides the figures: the machine it ran on, and how to read the numbers.

use std::process::Command;

use super::args::Args;

/// The machine: date, kernel, CPUs, memory, load at the start (`(key, value)`, in JSON order).
pub fn machine() -> Vec<(String, String)> {
    vec![
        ("date".to_string(), sh("date -u +%Y-%m-%dT%H:%M:%SZ")),
        ("host".to_string(), sh("uname -srm")),
        (
            "cpus".to_string(),
            std::thread::available_parallelism()
                .map(|n| n.to_string())
                .unwrap_or_default(),
        ),
        ("mem_total".to_string(), sh("grep MemTotal /proc/meminfo")),
        ("loadavg_start".to_string(), loadavg()),
    ]
}

/// The 1, 5 and 15 minute load averages.
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// How the figures were taken, appended to the notes of the build.
pub fn method_notes(a: &Args, notes: &mut Vec<String>) {
    if a.ms.iter().any(|m| *m > a.pmix_max_m) {
        notes.push(format!(
            "M > {}: only rshm direct Get (the libpmix-based columns are skipped: raise with --pmix-max-m; at 1M the host's libpmix registration alone takes ~13 s and ~14 GB, and every hash client would unpack the whole job)",
            a.pmix_max_m
        ));
    }
    notes.push(
        "Get p50/p99: per client, n Gets (+ PMIX_VALUE_RELEASE) timed in batches of 32, the 50th/99th percentile batch mean; the table shows the median over clients".into(),
    );
    notes.push("register: rshm columns (direct, preload) = rshm_server_register_nspace of the same info array, called before libpmix registers it; the component columns (with and without preload) and OpenPMIx columns = PMIx_server_register_nspace (call to callback)".into());
    if a.repeat > 1 {
        notes.push(format!(
            "--repeat {}: each cell run {} times (a fresh pmix-host and job array each time); the cell shows the run with the median register time, all its other figures from that run; every run's register time is in scale.json (register_us_runs)",
            a.repeat, a.repeat
        ));
    }
    notes.push("fence: the collecting fence after a barrier, from every client's entry and return on CLOCK_MONOTONIC: the table's fence is the collective itself (last client's entry to first client's release), skew the clients' arrival spread (first to last entry); under the table also last entry to last release, the clients' own call (median) and when the host's fence upcall came after the last entry (it has every contribution then)".into());
    notes.push("init+1st: PMIx_Init (direct: rshm_client_attach) + the first Get (PMIX_JOB_SIZE), fastest / median / slowest client, every client's under the table (ds21: the first clients wait until the server has filled the store); private = RssAnon of each client at the end (median); shared = allocated bytes of the store files (rshm store + libpmix's files in the server tmpdir)".into());
}

fn sh(cmd: &str) -> String {
    Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}
