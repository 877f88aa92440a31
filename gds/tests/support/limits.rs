//! A registration run in a child process under an address-space limit, and what it reports:
//! its outcome, the size of the store it made, the memory it took. For the tests of hostile
//! registrations, whose failure was an abort that would take the test process with it.

#![allow(dead_code)]

use std::process::Command;

use rshm_gds::jobdata;
use rshm_gds::Info;

/// The child's test name (set by the parent; the child runs the closure instead of spawning).
const CHILD_ENV: &str = "RSHM_LIMITS_CHILD";
/// The child's address-space limit: what a hostile registration's allocation meets.
const ADDRESS_SPACE: u64 = 2 << 30;
/// docs/jobdata.md "Limits": a registration's peak memory stays within
/// `FACTOR_K` x the store it makes + `FACTOR_MIB` MiB.
pub const FACTOR_K: u64 = 4;
pub const FACTOR_MIB: u64 = 16;

/// What one registration did.
#[derive(Debug)]
pub struct Report {
    /// `Ok job_size=N`, or the error's variant and message.
    pub outcome: String,
    /// Bytes of the encoded table (0 on error).
    pub store: u64,
    /// Bytes of memory the build and the encoding took at their peak, over what the process
    /// held before (the input included).
    pub peak: u64,
}

impl Report {
    fn line(&self) -> String {
        format!("REPORT\t{}\t{}\t{}", self.outcome, self.store, self.peak)
    }

    fn parse(line: &str) -> Option<Report> {
        let mut f = line.strip_prefix("REPORT\t")?.split('\t');
        Some(Report {
            outcome: f.next()?.to_owned(),
            store: f.next()?.parse().ok()?,
            peak: f.next()?.parse().ok()?,
        })
    }

    /// The documented factor.
    pub fn within_factor(&self) -> bool {
        self.peak <= FACTOR_K * self.store + (FACTOR_MIB << 20)
    }

    pub fn assert_within_factor(&self, what: &str) {
        assert!(
            self.within_factor(),
            "{what}: {} MiB at the peak for a store of {} MiB (documented: {FACTOR_K} x store + \
             {FACTOR_MIB} MiB)",
            mib(self.peak),
            mib(self.store)
        );
    }
}

pub fn mib(bytes: u64) -> String {
    format!("{:.1}", bytes as f64 / (1 << 20) as f64)
}

/// `/proc/self/status` field `field` (kB), in bytes.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kb: u64 = line
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .expect("a number of kB");
    kb << 10
}

/// Build (and encode) a registration, measuring the peak resident memory it added: the peak
/// is reset first (`clear_refs` 5), so each report is its own.
pub fn build_report(infos: &[Info]) -> Report {
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting the peak RSS");
    let before = status_bytes("VmRSS:");
    let (outcome, store) = match jobdata::build(Some("n0"), infos) {
        Ok((t, s)) => match t.encode(1) {
            Ok(bytes) => (format!("Ok job_size={}", s.job_size), bytes.len() as u64),
            Err(e) => (format!("encode {e:?}"), 0),
        },
        Err(e) => (format!("{e:?}"), 0),
    };
    let peak = status_bytes("VmHWM:").saturating_sub(before);
    Report {
        outcome,
        store,
        peak,
    }
}

/// Run `body` in a child process: this test binary, running only test `name`, under an
/// address-space limit of [`ADDRESS_SPACE`]. In the parent, returns the child's reports after
/// asserting it exited normally; in the child, runs `body`, prints its reports and returns
/// None (the test then ends there). One call a test: `name` is the test's.
pub fn in_child(name: &str, body: impl FnOnce() -> Vec<Report>) -> Option<Vec<Report>> {
    if std::env::var(CHILD_ENV).is_ok_and(|n| n == name) {
        use rustix::process::{setrlimit, Resource, Rlimit};
        let limit = Rlimit {
            current: Some(ADDRESS_SPACE),
            maximum: Some(ADDRESS_SPACE),
        };
        setrlimit(Resource::As, limit).expect("setrlimit(RLIMIT_AS)");
        for r in body() {
            // After the harness's "test NAME ... ", which ends no line.
            println!("\n{}", r.line());
        }
        return None;
    }
    let out = Command::new(std::env::current_exe().expect("the test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, name)
        .output()
        .expect("spawning the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the child running {name} did not exit normally ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let reports: Vec<Report> = stdout.lines().filter_map(Report::parse).collect();
    assert!(!reports.is_empty(), "the child reported nothing:\n{stdout}");
    Some(reports)
}
