//! Get throughput of 1..N reader processes on one store. Id: `get_job_throughput/<readers>`
//! (criterion reports Gets per second over all readers).
//!
//! The readers are this bench binary run again as children (`RSHM_BENCH_READER` = the store
//! directory), attached and warmed up before anything is timed. A timed iteration count
//! `iters` is sent to every reader on its stdin; each does `iters` Gets of `PMIX_JOB_SIZE`
//! (rank WILDCARD, pin per call, the ch. 6 rules) and answers on its stdout; the time is from
//! the first send to the last answer. The readers share nothing but the mapped store, so on a
//! machine with C cores the total should grow with the readers up to C (this VM: 2).

use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use rshm_benches::{host, registration};
use rshm_gds::jobdata::{self, Qualifiers, TargetRank};
use rshm_gds::{part, Reader};

const CHILD: &str = "RSHM_BENCH_READER";
const RANKS: u32 = 1000;

/// A reader process: attach, warm up, then answer each count on stdin with that many Gets.
fn reader(store: &Path) {
    let r = Reader::attach(store).expect("attach");
    let none = Qualifiers::default();
    let get = || {
        let pin = r.pin();
        let t = r.table(&pin, "bench", part::DATA).expect("job table");
        let v = jobdata::get(
            t,
            None,
            Some(0),
            TargetRank::Wildcard,
            black_box("pmix.job.size"),
            &none,
        );
        black_box(v.expect("PMIX_JOB_SIZE"));
    };
    for _ in 0..10_000 {
        get();
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")
        .and_then(|()| out.flush())
        .expect("stdout");
    for line in std::io::stdin().lock().lines() {
        let n: u64 = line.expect("stdin").trim().parse().expect("a count");
        for _ in 0..n {
            get();
        }
        writeln!(out, "done")
            .and_then(|()| out.flush())
            .expect("stdout");
    }
}

struct Readers {
    children: Vec<(Child, ChildStdin, BufReader<ChildStdout>)>,
}

impl Readers {
    fn start(n: usize, store: &Path) -> Readers {
        let exe = std::env::current_exe().expect("bench binary");
        let mut children: Vec<_> = (0..n)
            .map(|_| {
                let mut c = Command::new(&exe)
                    .env(CHILD, store)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("spawn a reader");
                let stdin = c.stdin.take().expect("stdin");
                let stdout = BufReader::new(c.stdout.take().expect("stdout"));
                (c, stdin, stdout)
            })
            .collect();
        for (_, _, out) in &mut children {
            expect_line(out, "ready");
        }
        Readers { children }
    }

    /// Every reader does `iters` Gets; the wall time until the last is done.
    fn run(&mut self, iters: u64) -> Duration {
        let t = Instant::now();
        for (_, stdin, _) in &mut self.children {
            writeln!(stdin, "{iters}")
                .and_then(|()| stdin.flush())
                .expect("to a reader");
        }
        for (_, _, out) in &mut self.children {
            expect_line(out, "done");
        }
        t.elapsed()
    }
}

impl Drop for Readers {
    fn drop(&mut self) {
        for (mut c, stdin, _) in self.children.drain(..) {
            drop(stdin); // EOF: the reader's loop ends
            let _ = c.wait();
        }
    }
}

fn expect_line(out: &mut BufReader<ChildStdout>, want: &str) {
    let mut line = String::new();
    out.read_line(&mut line).expect("from a reader");
    assert_eq!(
        line.trim(),
        want,
        "a reader process failed (see its stderr)"
    );
}

fn bench(c: &mut Criterion) {
    let (t, _) = jobdata::build(Some(&host(0)), &registration(RANKS, 64)).expect("build");
    let w = rshm_benches::publish("bench", &t);
    let mut g = c.benchmark_group("get_job_throughput");
    for n in [1usize, 2, 4] {
        let mut readers = Readers::start(n, w.path());
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(format!("{n}"), |b| {
            b.iter_custom(|iters| readers.run(iters))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);

fn main() {
    if let Some(store) = std::env::var_os(CHILD) {
        reader(Path::new(&store));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
