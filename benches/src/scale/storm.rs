//! `scale --commit-storm`: N local clients' commits, in process through the server shim. Each
//! commit is one `Server::commit` of the rank's K values (what the gds component's server does
//! at a client's PMIx_Commit: `rshm_server_commit`), into a store holding an N-rank local job. Per (N, K) it prints
//! the server's time, the bytes the store wrote against the bytes committed, generations
//! published against commits and the store directory's peak size; `--storm-fence` adds one
//! fence's collected data of N remote ranks (one more `Server::store`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rshm_benches::storm;
use rshm_gds::modex::Scope;

use super::report::fmt_bytes;

pub struct StormArgs {
    pub ns: Vec<u32>,
    pub ks: Vec<u32>,
    pub bytes: usize,
    pub fence: bool,
    /// Base directory of the stores (default gds's: /dev/shm when there is one).
    pub base: Option<PathBuf>,
    pub out: Option<PathBuf>,
}

/// One (N, K) run.
pub struct Row {
    pub n: u32,
    pub k: u32,
    /// Server time of each commit, in rank order.
    pub commit_times: Vec<Duration>,
    pub committed: u64,
    pub written: u64,
    pub files: u64,
    pub publications: u64,
    /// Largest allocated size (st_blocks) of the store directory's files after a commit.
    pub peak_dir: u64,
    /// Server time and bytes written of the fence's store, with `--storm-fence`.
    pub fence: Option<(Duration, u64)>,
}

impl Row {
    fn total(&self) -> Duration {
        self.commit_times.iter().sum()
    }

    /// Mean server time of the commits `from..` (rank order), in µs.
    fn mean_us(&self, from: usize) -> f64 {
        let t = &self.commit_times[from.min(self.commit_times.len() - 1)..];
        t.iter().sum::<Duration>().as_secs_f64() * 1e6 / t.len() as f64
    }
}

/// Allocated bytes of the regular files under `dir` (tmpfs: the pages the store holds).
pub fn dir_bytes(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_bytes(&e.path()),
            Ok(m) if m.is_file() => m.blocks() * 512,
            _ => 0,
        })
        .sum()
}

/// N clients commit K values each, one `Server::commit` per commit, in rank order.
pub fn run_one(a: &StormArgs, n: u32, k: u32) -> Row {
    let mut s = storm::server(n, a.base.clone());
    let before = s.stats();
    let mut row = Row {
        n,
        k,
        commit_times: Vec::with_capacity(n as usize),
        committed: 0,
        written: 0,
        files: 0,
        publications: 0,
        peak_dir: dir_bytes(s.path()),
        fence: None,
    };
    for rank in 0..n {
        let values = storm::commit(rank, k, a.bytes, 0, Scope::Global);
        row.committed += storm::committed_bytes(&values);
        let t0 = Instant::now();
        storm::publish(&mut s, &values);
        row.commit_times.push(t0.elapsed());
        row.peak_dir = row.peak_dir.max(dir_bytes(s.path()));
    }
    let after = s.stats();
    row.written = after.bytes_written - before.bytes_written;
    row.files = after.files_written - before.files_written;
    row.publications = after.publications - before.publications;
    if a.fence {
        // The collected data of the other node's N ranks: REMOTE for this node's clients.
        let values: Vec<_> = (n..2 * n)
            .flat_map(|r| storm::commit(r, k, a.bytes, 0, Scope::Remote))
            .collect();
        let t0 = Instant::now();
        s.store(&values).expect("fence");
        let dt = t0.elapsed();
        row.fence = Some((dt, s.stats().bytes_written - after.bytes_written));
        row.peak_dir = row.peak_dir.max(dir_bytes(s.path()));
    }
    s.close().expect("remove the store");
    row
}

fn mb(b: u64) -> String {
    fmt_bytes(b as f64)
}

pub fn table(a: &StormArgs, rows: &[Row]) -> String {
    let mut t = format!(
        "commit storm, in process: each commit one Server::commit of K byte objects of {} B \
         (scope GLOBAL); peak store = allocated bytes of the store directory's files, sampled \
         after every commit\n",
        a.bytes
    );
    t += &format!(
        "{:>5} {:>3} {:>10} {:>10} {:>11} {:>11} {:>12} {:>9} {:>13} {:>11}",
        "N",
        "K",
        "server ms",
        "µs/commit",
        "last10% µs",
        "written",
        "committed",
        "w/c",
        "gens/commits",
        "peak store"
    );
    if a.fence {
        t += &format!(" {:>9} {:>11}", "fence ms", "fence wrote");
    }
    t.push('\n');
    for r in rows {
        t += &format!(
            "{:>5} {:>3} {:>10.1} {:>10.1} {:>11.1} {:>11} {:>12} {:>9.1} {:>13} {:>11}",
            r.n,
            r.k,
            r.total().as_secs_f64() * 1e3,
            r.mean_us(0),
            r.mean_us(r.commit_times.len() * 9 / 10),
            mb(r.written),
            mb(r.committed),
            r.written as f64 / r.committed.max(1) as f64,
            format!("{}/{}", r.publications, r.commit_times.len()),
            mb(r.peak_dir),
        );
        if let Some((d, w)) = r.fence {
            t += &format!(" {:>9.1} {:>11}", d.as_secs_f64() * 1e3, mb(w));
        }
        t.push('\n');
    }
    t
}

/// Run every (N, K), print the table and write it to `<out>/commit-storm.txt`.
pub fn main(a: StormArgs, out: &Path) {
    let started = Instant::now();
    let mut rows = Vec::new();
    for &k in &a.ks {
        for &n in &a.ns {
            eprintln!("commit storm: N={n} K={k} ...");
            let r = run_one(&a, n, k);
            eprintln!(
                "        {:.1} ms, {:.1} µs/commit",
                r.total().as_secs_f64() * 1e3,
                r.mean_us(0)
            );
            rows.push(r);
        }
    }
    let t = table(&a, &rows);
    print!("{t}");
    std::fs::create_dir_all(out).expect("output directory");
    let p = out.join("commit-storm.txt");
    std::fs::write(&p, &t).expect("write the table");
    println!("wrote {}", p.display());
    eprintln!("commit storm: {:.0} s", started.elapsed().as_secs_f64());
}
