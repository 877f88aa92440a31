//! Test support: drive `tools/pmix-host` (a PMIx server host over the system OpenPMIx 4.2.2)
//! and read its files into the crate's value model, for differential conformance tests that
//! compare OpenPMIx's `PMIx_Get` answers with ours for the same registration and queries.
//!
//! Include it from an integration test with
//! `#[path = "support/pmixhost/mod.rs"] mod pmixhost;`. Only std and `gds` are used.
//!
//! - [`build`]: `make -s -C tools/pmix-host`.
//! - [`run_job`]: run a job file + query corpus under OpenPMIx; returns the exact registration
//!   (`--dump-registration`, see [`read_registration`]) and the answer lines ([`Answer`]).
//! - [`read_corpus`]: the corpus queries as [`CorpusQuery`] (key strings + [`Qualifiers`]).
//! - [`canonical`]: the canonical answer text of one of our values, exactly as `pmix-client`
//!   prints an OpenPMIx value (type name from `PMIx_Data_type_string`, value text from
//!   `common.c`), so answers compare as strings.
//!
//! File formats: `tools/pmix-host/README.md`.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use gds::jobdata::query::Qualifiers;
use gds::value::types;
use gds::{Info, Value};

/// Where OpenPMIx's attribute macros (`#define PMIX_JOB_SIZE "pmix.job.size"`) come from.
pub const PMIX_COMMON_H: &str = "/usr/lib/x86_64-linux-gnu/pmix2/include/pmix_common.h";

/// Wall-clock limit for one [`run_job`] (pmix-host itself is given `--timeout` 10 s less).
pub const JOB_TIMEOUT: Duration = Duration::from_secs(120);

/// `PMIX_RANK_*` special values (pmix_common.h).
pub const RANK_UNDEF: u32 = u32::MAX;
pub const RANK_WILDCARD: u32 = u32::MAX - 1;
pub const RANK_LOCAL_NODE: u32 = u32::MAX - 2;
pub const RANK_INVALID: u32 = u32::MAX - 3;
pub const RANK_LOCAL_PEERS: u32 = u32::MAX - 4;

/// The repository root (the workspace directory holding `gds/` and `tools/`).
pub fn repo_root() -> PathBuf {
    // The nearest ancestor of the including crate that holds tools/pmix-host.
    let mut dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    while !dir.join("tools").join("pmix-host").is_dir() {
        if !dir.pop() {
            panic!("no tools/pmix-host above {}", env!("CARGO_MANIFEST_DIR"));
        }
    }
    dir
}

/// `tools/pmix-host`.
pub fn tool_dir() -> PathBuf {
    repo_root().join("tools").join("pmix-host")
}

/// Run `make -s -C dir args...` holding the lock file `lock` (in the temp dir): nextest runs
/// each test in its own process, and two makes into one output race on its temporary files.
/// Panics with make's output if the build fails.
pub fn make_locked(lock: &str, dir: &Path, args: &[String]) {
    let lock_path = std::env::temp_dir().join(lock);
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .unwrap_or_else(|e| panic!("open {}: {e}", lock_path.display()));
    lock.lock()
        .unwrap_or_else(|e| panic!("lock {}: {e}", lock_path.display()));
    let out = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run make: {e}"));
    drop(lock);
    if !out.status.success() {
        panic!(
            "make -s -C {} {} failed ({}):\n{}{}",
            dir.display(),
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The lock file of the builds of `component/` (the gds component), for [`make_locked`].
pub const COMPONENT_BUILD_LOCK: &str = "rshm-gds-component-build.lock";

/// Build pmix-host and pmix-client (`make -s -C tools/pmix-host`) and return the tool directory.
/// Panics with make's output if the build fails. Concurrent callers (test threads, test
/// binaries) are serialised with a lock file in the temp dir.
pub fn build() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = tool_dir();
            make_locked("rshm-pmix-host-build.lock", &dir, &[]);
            dir
        })
        .clone()
}

// ---------------------------------------------------------------------------------------------
// Registration dump
// ---------------------------------------------------------------------------------------------

/// What pmix-host passed to `PMIx_server_register_nspace`.
#[derive(Clone, Debug, PartialEq)]
pub struct Registration {
    pub nspace: String,
    /// The job file's local node (the hostname the server library was given).
    pub local_host: String,
    /// `nlocalprocs` argument: the number of ranks on the local node.
    pub nlocalprocs: u32,
    /// The info array, in order; nested `PMIX_DATA_ARRAY`s of `PMIX_INFO` as
    /// `Value::DataArray { elem_type: INFO, items: [Value::Info, ...] }`.
    pub infos: Vec<Info>,
}

/// Parse a `pmix-host --dump-registration` file (format: tools/pmix-host/README.md,
/// "Registration dump"). Panics, naming the line, on anything malformed.
pub fn read_registration(path: impl AsRef<Path>) -> Registration {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse_registration(&text, &path.display().to_string())
}

/// [`read_registration`] on text; `origin` names it in panic messages.
pub fn parse_registration(text: &str, origin: &str) -> Registration {
    let mut nspace = None;
    let mut local_host = None;
    let mut nlocalprocs = None;
    let mut ninfo = None;
    // (line number, depth, key, type name, rest)
    let mut lines: Vec<(usize, usize, String, String, String)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = raw.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (first, rest) = split_token(line);
        let at = || format!("{origin}:{lineno}: {raw:?}");
        match first {
            "nspace" => nspace = Some(rest.to_string()),
            "local" => local_host = Some(rest.to_string()),
            "nlocalprocs" => {
                nlocalprocs = Some(rest.parse::<u32>().unwrap_or_else(|_| panic!("{}", at())))
            }
            "ninfo" => ninfo = Some(rest.parse::<usize>().unwrap_or_else(|_| panic!("{}", at()))),
            d if d.bytes().all(|b| b.is_ascii_digit()) => {
                let depth: usize = d.parse().unwrap_or_else(|_| panic!("{}", at()));
                let (key, rest) = split_token(rest);
                let (ty, rest) = split_token(rest);
                if key.is_empty() || ty.is_empty() {
                    panic!("{}: expected <depth> <key> <type> <value>", at());
                }
                lines.push((lineno, depth, key.into(), ty.into(), rest.into()));
            }
            _ => panic!("{}: unknown line", at()),
        }
    }
    let mut pos = 0;
    let infos = parse_info_list(&lines, &mut pos, 0, None, origin);
    if pos != lines.len() {
        panic!("{origin}:{}: unexpected depth", lines[pos].0);
    }
    if let Some(n) = ninfo {
        assert_eq!(
            n,
            infos.len(),
            "{origin}: ninfo {n} but {} top-level infos",
            infos.len()
        );
    }
    Registration {
        nspace: nspace.unwrap_or_else(|| panic!("{origin}: no nspace line")),
        local_host: local_host.unwrap_or_else(|| panic!("{origin}: no local line")),
        nlocalprocs: nlocalprocs.unwrap_or_else(|| panic!("{origin}: no nlocalprocs line")),
        infos,
    }
}

type DumpLine = (usize, usize, String, String, String);

/// Infos at `depth` starting at `lines[*pos]`: `count` of them, or (top level) all.
fn parse_info_list(
    lines: &[DumpLine],
    pos: &mut usize,
    depth: usize,
    count: Option<usize>,
    origin: &str,
) -> Vec<Info> {
    let mut out = Vec::new();
    while *pos < lines.len() && count.is_none_or(|n| out.len() < n) {
        let (lineno, d, key, ty, rest) = &lines[*pos];
        if *d != depth {
            if count.is_some() {
                panic!("{origin}:{lineno}: depth {d}, expected {depth}");
            }
            break;
        }
        *pos += 1;
        let at = format!("{origin}:{lineno}");
        let value = if ty == "PMIX_DATA_ARRAY" {
            let (elem, rest) = split_token(rest);
            let (n, _) = split_token(rest);
            let n: usize = n
                .parse()
                .unwrap_or_else(|_| panic!("{at}: bad array size {n:?}"));
            if elem != "PMIX_INFO" {
                panic!("{at}: data arrays of {elem} are not supported by this parser");
            }
            let items = parse_info_list(lines, pos, depth + 1, Some(n), origin)
                .into_iter()
                .map(|i| Value::Info(Box::new(i)))
                .collect::<Vec<_>>();
            if items.len() != n {
                panic!("{at}: array of {n} infos has {} elements", items.len());
            }
            Value::array(types::INFO, items)
        } else {
            parse_scalar(ty, rest).unwrap_or_else(|e| panic!("{at}: {ty} {rest:?}: {e}"))
        };
        out.push(Info {
            key: key.clone(),
            flags: 0,
            value,
        });
    }
    out
}

/// A scalar value in dump text: the canonical text, except `PMIX_STATUS` (decimal code) and
/// `PMIX_REGEX` (all bytes, the terminating NUL included).
fn parse_scalar(ty: &str, text: &str) -> Result<Value, String> {
    fn int<T: std::str::FromStr>(s: &str) -> Result<T, String> {
        s.parse::<T>().map_err(|_| format!("bad integer {s:?}"))
    }
    Ok(match ty {
        "PMIX_BOOL" => Value::Bool(match text {
            "true" => true,
            "false" => false,
            _ => return Err("bad bool".into()),
        }),
        "PMIX_BYTE" => Value::Byte(int(text)?),
        "PMIX_STRING" => Value::String(
            String::from_utf8(unquote(text)?).map_err(|_| "string is not UTF-8".to_string())?,
        ),
        "PMIX_SIZE" => Value::Size(int(text)?),
        "PMIX_PID" => Value::Pid(int(text)?),
        "PMIX_INT" => Value::Int(int(text)?),
        "PMIX_INT8" => Value::Int8(int(text)?),
        "PMIX_INT16" => Value::Int16(int(text)?),
        "PMIX_INT32" => Value::Int32(int(text)?),
        "PMIX_INT64" => Value::Int64(int(text)?),
        "PMIX_UINT" => Value::Uint(int(text)?),
        "PMIX_UINT8" => Value::Uint8(int(text)?),
        "PMIX_UINT16" => Value::Uint16(int(text)?),
        "PMIX_UINT32" => Value::Uint32(int(text)?),
        "PMIX_UINT64" => Value::Uint64(int(text)?),
        "PMIX_FLOAT" => Value::Float(int(text)?),
        "PMIX_DOUBLE" => Value::Double(int(text)?),
        "PMIX_STATUS" => Value::Status(int(text)?),
        "PMIX_PROC_RANK" => Value::ProcRank(parse_rank_text(text)?),
        "PMIX_PROC" => {
            let (ns, r) = text.rsplit_once(':').ok_or("proc is not nspace:rank")?;
            Value::Proc(gds::value::Proc {
                nspace: ns.to_string(),
                rank: parse_rank_text(r)?,
            })
        }
        "PMIX_REGEX" => Value::Regex(unquote(text)?),
        "PMIX_BYTE_OBJECT" => Value::ByteObject(unhex(text)?),
        "PMIX_COMPRESSED_STRING" => Value::CompressedString(unhex(text)?),
        "PMIX_COMPRESSED_BYTE_OBJECT" => Value::CompressedBytes(unhex(text)?),
        _ => return Err(format!("type {ty} is not supported by this parser")),
    })
}

/// A rank as `fmt_rank` prints it.
fn parse_rank_text(s: &str) -> Result<u32, String> {
    Ok(match s {
        "WILDCARD" => RANK_WILDCARD,
        "UNDEF" => RANK_UNDEF,
        "LOCAL_NODE" => RANK_LOCAL_NODE,
        "INVALID" => RANK_INVALID,
        "LOCAL_PEERS" => RANK_LOCAL_PEERS,
        _ => s.parse().map_err(|_| format!("bad rank {s:?}"))?,
    })
}

/// Undo `fmt_bytes_quoted`: `"..."` with `\" \\ \n \t \r \0 \xNN`.
pub fn unquote(text: &str) -> Result<Vec<u8>, String> {
    let b = text.as_bytes();
    if b.len() < 2 || b[0] != b'"' || b[b.len() - 1] != b'"' {
        return Err(format!("not a quoted string: {text:?}"));
    }
    let inner = &b[1..b.len() - 1];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let c = inner[i];
        i += 1;
        if c == b'"' {
            return Err(format!("unescaped quote in {text:?}"));
        }
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let e = *inner
            .get(i)
            .ok_or_else(|| format!("dangling backslash in {text:?}"))?;
        i += 1;
        out.push(match e {
            b'"' => b'"',
            b'\\' => b'\\',
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'0' => 0,
            b'x' => {
                let hex = inner
                    .get(i..i + 2)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("bad \\x escape in {text:?}"))?;
                i += 2;
                hex
            }
            _ => return Err(format!("unknown escape \\{} in {text:?}", e as char)),
        });
    }
    Ok(out)
}

fn unhex(text: &str) -> Result<Vec<u8>, String> {
    let h = text.strip_prefix("0x").ok_or("byte object is not 0x...")?;
    if h.len() % 2 != 0 {
        return Err("odd hex length".into());
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).map_err(|_| "bad hex".to_string()))
        .collect()
}

/// First blank-separated token and the rest (leading blanks of the rest removed).
fn split_token(s: &str) -> (&str, &str) {
    let s = s.trim_start_matches([' ', '\t']);
    match s.find([' ', '\t']) {
        Some(i) => (&s[..i], s[i..].trim_start_matches([' ', '\t'])),
        None => (s, ""),
    }
}

// ---------------------------------------------------------------------------------------------
// Running a job
// ---------------------------------------------------------------------------------------------

/// One pmix-client answer line: `<id> <rank> <status> <type> <value>`, or
/// `<id> <rank> <status> - -` when the Get failed (`type_name` and `value` are then "-").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub id: String,
    /// The rank of the client that asked.
    pub rank: u32,
    /// `PMIx_Error_string()`: "SUCCESS", "NOT-FOUND", "TIMEOUT", "NOT-SUPPORTED", ...
    pub status: String,
    /// `PMIx_Data_type_string()`, e.g. "PMIX_UINT32".
    pub type_name: String,
    /// Canonical value text (README.md, "Canonical value text").
    pub value: String,
}

/// Parse pmix-client output: query answers only (put/commit/fence lines are skipped), sorted by
/// (id, rank). Panics on a line that does not parse.
pub fn parse_answers(text: &str) -> Vec<Answer> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty()
            || line.starts_with("put:")
            || line.starts_with("commit ")
            || line.starts_with("fence ")
        {
            continue;
        }
        out.push(parse_answer(line).unwrap_or_else(|e| panic!("bad answer line {line:?}: {e}")));
    }
    out.sort_by(|a, b| (&a.id, a.rank).cmp(&(&b.id, b.rank)));
    out
}

fn parse_answer(line: &str) -> Result<Answer, String> {
    let (id, rest) = line.split_once(' ').ok_or("no rank")?;
    let (rank, rest) = rest.split_once(' ').ok_or("no status")?;
    let rank: u32 = rank.parse().map_err(|_| format!("bad rank {rank:?}"))?;
    // The status string may contain blanks ("ERROR STRING NOT FOUND"); the type is "-" (then the
    // line ends in " - -") or a PMIX_* name.
    let (status, type_name, value) = if let Some(status) = rest.strip_suffix(" - -") {
        (status, "-", "-")
    } else {
        let i = rest.find(" PMIX_").ok_or("no type")?;
        let (type_name, value) = rest[i + 1..].split_once(' ').ok_or("no value")?;
        (&rest[..i], type_name, value)
    };
    if id.is_empty() || status.is_empty() || value.is_empty() {
        return Err("empty field".into());
    }
    Ok(Answer {
        id: id.into(),
        rank,
        status: status.into(),
        type_name: type_name.into(),
        value: value.into(),
    })
}

/// A tool-directory-relative or absolute path, checked to exist and to hold no blanks (the
/// client command is split on blanks).
fn tool_path(p: &Path) -> PathBuf {
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        tool_dir().join(p)
    };
    assert!(p.exists(), "{} does not exist", p.display());
    assert!(
        !p.to_string_lossy().contains([' ', '\t']),
        "{}: paths with blanks are not supported",
        p.display()
    );
    p
}

/// Run `job_file` under OpenPMIx: pmix-host registers it (dumping the registration into a temp
/// file) and starts pmix-client on `corpus_file` for every local rank. `env` is added to
/// pmix-host's environment (the clients inherit it), e.g. `[("PMIX_MCA_gds", "hash")]`.
/// Relative paths are taken relative to `tools/pmix-host` (so `"examples/job-2node.txt"`
/// works). Returns the registration and the answers sorted by (id, rank). Panics (with
/// pmix-host's stderr) if pmix-host fails or exceeds [`JOB_TIMEOUT`]; every process of the run
/// is killed before returning.
pub fn run_job(
    job_file: impl AsRef<Path>,
    corpus_file: impl AsRef<Path>,
    env: &[(&str, &str)],
) -> (Registration, Vec<Answer>) {
    run_job_with_timeout(job_file, corpus_file, env, JOB_TIMEOUT)
}

/// [`run_job`] with another wall-clock limit. pmix-host is given `--timeout` = limit - 10 s
/// (at least 1 s): a hung client is killed by pmix-host (which then fails), a hung pmix-host
/// by us (with its whole process group).
pub fn run_job_with_timeout(
    job_file: impl AsRef<Path>,
    corpus_file: impl AsRef<Path>,
    env: &[(&str, &str)],
    timeout: Duration,
) -> (Registration, Vec<Answer>) {
    run_job_with_args(job_file, corpus_file, env, &[], timeout)
}

/// [`run_job_with_timeout`] with extra pmix-host arguments (e.g. `--rshm LIB`).
pub fn run_job_with_args(
    job_file: impl AsRef<Path>,
    corpus_file: impl AsRef<Path>,
    env: &[(&str, &str)],
    args: &[&str],
    timeout: Duration,
) -> (Registration, Vec<Answer>) {
    let dir = build();
    let job = tool_path(job_file.as_ref());
    let corpus = tool_path(corpus_file.as_ref());
    static SEQ: AtomicUsize = AtomicUsize::new(0);
    let dump = std::env::temp_dir().join(format!(
        "rshm-pmixhost-{}-{}.reg",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let client_cmd = format!("{} {}", dir.join("pmix-client").display(), corpus.display());
    let host_timeout = timeout.as_secs().saturating_sub(10).max(1);

    let mut cmd = Command::new(dir.join("pmix-host"));
    cmd.current_dir(&dir)
        .arg("--job")
        .arg(&job)
        .arg("--timeout")
        .arg(host_timeout.to_string())
        .arg("--dump-registration")
        .arg(&dump)
        .arg("--client-cmd")
        .arg(&client_cmd)
        .args(args)
        .envs(env.iter().copied());
    let (status, out, err) = run_group(cmd, timeout);
    let err = String::from_utf8_lossy(&err);
    let ok = status.is_some_and(|s| s.success());
    if !ok {
        let _ = std::fs::remove_file(&dump);
        let why = match status {
            Some(s) => format!("exited with {s}"),
            None => format!("timed out after {timeout:?}"),
        };
        panic!(
            "pmix-host --job {} (corpus {}, env {env:?}) {why}; stderr:\n{err}",
            job.display(),
            corpus.display()
        );
    }
    let reg = read_registration(&dump);
    let _ = std::fs::remove_file(&dump);
    let out = String::from_utf8(out).expect("pmix-client output is not UTF-8");
    (reg, parse_answers(&out))
}

/// Run `cmd` (stdin closed) in its own process group with a wall-clock limit: the exit status
/// (None: it ran out of time), stdout and stderr. The whole group is killed at the end, so
/// stragglers (clients that outlived pmix-host, or everything on a timeout) cannot hold the
/// pipes open.
pub fn run_group(
    mut cmd: Command,
    limit: Duration,
) -> (Option<std::process::ExitStatus>, Vec<u8>, Vec<u8>) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pgid = child.id();
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    let err_reader = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stderr.read_to_end(&mut b);
        b
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() >= deadline => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("waiting for {cmd:?}: {e}"),
        }
    };
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
    if status.is_none() {
        let _ = child.wait(); // reap it (killed above)
    }
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    (status, out, err)
}

// ---------------------------------------------------------------------------------------------
// Query corpus
// ---------------------------------------------------------------------------------------------

/// The rank column of a corpus query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CorpusRank {
    /// `me`: the asking client's own rank.
    Me,
    Rank(u32),
    /// `*`: `PMIX_RANK_WILDCARD`.
    Wildcard,
    /// `undef`: `PMIX_RANK_UNDEF`.
    Undef,
}

impl CorpusRank {
    /// The `pmix_rank_t` asked for by the client of rank `me`.
    pub fn resolve(self, me: u32) -> u32 {
        match self {
            CorpusRank::Me => me,
            CorpusRank::Rank(r) => r,
            CorpusRank::Wildcard => RANK_WILDCARD,
            CorpusRank::Undef => RANK_UNDEF,
        }
    }
}

/// One `<id> <rank> <key> [QUAL[:TYPE]=VALUE ...]` corpus line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CorpusQuery {
    pub id: String,
    pub rank: CorpusRank,
    /// The key string, e.g. "pmix.job.size" (macro names are translated).
    pub key: String,
    pub quals: Qualifiers,
}

/// Parse a pmix-client query corpus (put/commit/fence lines are skipped). A relative path is
/// taken relative to `tools/pmix-host`. Panics, naming the line, on a malformed line or a
/// qualifier [`Qualifiers`] has no field for.
pub fn read_corpus(path: impl AsRef<Path>) -> Vec<CorpusQuery> {
    let path = path.as_ref();
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        tool_dir().join(path)
    };
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    parse_corpus(&text, &path.display().to_string())
}

/// [`read_corpus`] on text; `origin` names it in panic messages.
pub fn parse_corpus(text: &str, origin: &str) -> Vec<CorpusQuery> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let tok: Vec<&str> = line
            .split([' ', '\t', '\r'])
            .filter(|t| !t.is_empty())
            .collect();
        if tok.is_empty() || tok[0].starts_with('#') {
            continue;
        }
        if matches!(tok[0], "put" | "commit" | "fence") {
            continue;
        }
        let at = format!("{origin}:{}: {line:?}", i + 1);
        if tok.len() < 3 {
            panic!("{at}: expected <id> <rank> <key> [QUAL=VALUE ...]");
        }
        let rank = match tok[1] {
            "me" => CorpusRank::Me,
            "*" | "wildcard" => CorpusRank::Wildcard,
            "undef" => CorpusRank::Undef,
            r => CorpusRank::Rank(parse_uint(r).unwrap_or_else(|| panic!("{at}: bad rank"))),
        };
        let mut quals = Qualifiers::default();
        for q in &tok[3..] {
            apply_qualifier(&mut quals, q).unwrap_or_else(|e| panic!("{at}: {e}"));
        }
        out.push(CorpusQuery {
            id: tok[0].to_string(),
            rank,
            key: resolve_key(tok[2]),
            quals,
        });
    }
    out
}

/// `NAME[:TYPE]=VALUE` into the qualifier struct (TYPE is accepted and ignored: each field has
/// its own type).
fn apply_qualifier(q: &mut Qualifiers, tok: &str) -> Result<(), String> {
    let (name, value) = tok
        .split_once('=')
        .ok_or_else(|| format!("qualifier {tok:?} is not NAME=VALUE"))?;
    let name = name.split_once(':').map_or(name, |(n, _)| n);
    let key = resolve_key(name);
    let b = || parse_bool(value).ok_or_else(|| format!("{tok}: bad bool {value:?}"));
    let u = || parse_uint(value).ok_or_else(|| format!("{tok}: bad uint32 {value:?}"));
    match key.as_str() {
        "pmix.ssn.info" => q.session_info = b()?,
        "pmix.job.info" => q.job_info = b()?,
        "pmix.app.info" => q.app_info = b()?,
        "pmix.node.info" => q.node_info = b()?,
        "pmix.proc.info" => q.proc_info = b()?,
        "pmix.session.id" => q.session_id = Some(u()?),
        "pmix.appnum" => q.appnum = Some(u()?),
        "pmix.hname" => q.hostname = Some(value.to_string()),
        "pmix.nodeid" => q.nodeid = Some(u()?),
        "pmix.immediate" => q.immediate = b()?,
        "pmix.optional" => q.optional = b()?,
        other => {
            return Err(format!(
                "qualifier {name} ({other:?}) is not supported by jobdata::query::Qualifiers"
            ))
        }
    }
    Ok(())
}

/// As common.c parses a bool.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// Decimal or 0x-hex u32.
fn parse_uint(s: &str) -> Option<u32> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Macro name -> key string (`PMIX_JOB_SIZE` -> `pmix.job.size`) from the `#define PMIX_X
/// "..."` lines of the installed pmix_common.h (parsed once).
pub fn attr_keys() -> &'static HashMap<String, String> {
    static MAP: OnceLock<HashMap<String, String>> = OnceLock::new();
    MAP.get_or_init(|| {
        let text = std::fs::read_to_string(PMIX_COMMON_H)
            .unwrap_or_else(|e| panic!("cannot read {PMIX_COMMON_H}: {e}"));
        let mut map = HashMap::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("#define") else {
                continue;
            };
            let (name, rest) = split_token(rest);
            if !name.starts_with("PMIX_")
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
            {
                continue;
            }
            let Some(rest) = rest.strip_prefix('"') else {
                continue;
            };
            let Some(end) = rest.find('"') else { continue };
            map.insert(name.to_string(), rest[..end].to_string());
        }
        assert!(
            map.len() > 100,
            "{PMIX_COMMON_H}: only {} attribute macros",
            map.len()
        );
        map
    })
}

/// As pmix-client resolves a key: a known macro name gives its key string, anything else is
/// taken literally.
pub fn resolve_key(name: &str) -> String {
    attr_keys()
        .get(name)
        .cloned()
        .unwrap_or_else(|| name.to_string())
}

// ---------------------------------------------------------------------------------------------
// Canonical answer text
// ---------------------------------------------------------------------------------------------

/// The type name and value text pmix-client would print for `v` had OpenPMIx returned it:
/// `PMIx_Data_type_string()` and common.c's `fmt_value`.
pub fn canonical(v: &Value) -> (String, String) {
    let mut s = String::new();
    fmt_value(&mut s, v);
    (type_name(v.type_code()).to_string(), s)
}

/// `PMIx_Data_type_string()` of OpenPMIx 4.2.2 (initialised library) for a type code.
pub fn type_name(code: u16) -> &'static str {
    TYPE_NAMES
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("UNKNOWN", |(_, n)| n)
}

/// `PMIx_Error_string()` of OpenPMIx 4.2.2 for a status code.
pub fn status_string(code: i32) -> &'static str {
    STATUS_STRINGS
        .iter()
        .find(|(c, _)| *c == code)
        .map_or("ERROR STRING NOT FOUND", |(_, n)| n)
}

fn fmt_value(out: &mut String, v: &Value) {
    use std::fmt::Write;
    match v {
        Value::Undef => out.push('-'),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Byte(x) | Value::Uint8(x) => write!(out, "{x}").unwrap(),
        Value::String(s) => quote_into(out, s.as_bytes()),
        Value::Size(x) | Value::Uint64(x) => write!(out, "{x}").unwrap(),
        Value::Pid(x) | Value::Int(x) | Value::Int32(x) => write!(out, "{x}").unwrap(),
        Value::Int8(x) => write!(out, "{x}").unwrap(),
        Value::Int16(x) => write!(out, "{x}").unwrap(),
        Value::Int64(x) => write!(out, "{x}").unwrap(),
        Value::Uint(x) | Value::Uint32(x) => write!(out, "{x}").unwrap(),
        Value::Uint16(x) => write!(out, "{x}").unwrap(),
        Value::Float(x) => out.push_str(&fmt_g(*x as f64, 9)),
        Value::Double(x) => out.push_str(&fmt_g(*x, 17)),
        Value::Status(x) => out.push_str(status_string(*x)),
        Value::ProcRank(r) => fmt_rank(out, *r),
        Value::Proc(p) => {
            out.push_str(&p.nspace);
            out.push(':');
            fmt_rank(out, p.rank);
        }
        Value::Regex(b) => {
            // a plain string regex carries its terminating NUL; common.c drops it
            let b = b.strip_suffix(&[0]).unwrap_or(b);
            quote_into(out, b);
        }
        Value::ByteObject(b) | Value::CompressedString(b) | Value::CompressedBytes(b) => {
            out.push_str("0x");
            for x in b {
                write!(out, "{x:02x}").unwrap();
            }
        }
        Value::DataArray(d) => {
            let info = d.elem_type == types::INFO;
            if !elem_supported(d.elem_type) {
                write!(out, "[<{} x{}>]", type_name(d.elem_type), d.items.len()).unwrap();
                return;
            }
            out.push(if info { '{' } else { '[' });
            for (i, item) in d.items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                fmt_value(out, item);
            }
            out.push(if info { '}' } else { ']' });
        }
        Value::Info(i) => {
            out.push_str(&i.key);
            out.push('=');
            fmt_value(out, &i.value);
        }
        other => write!(out, "<{}>", type_name(other.type_code())).unwrap(),
    }
}

/// Element types common.c can print inside a data array (its `elem_size` table).
fn elem_supported(t: u16) -> bool {
    use types as t_;
    matches!(
        t,
        t_::BOOL
            | t_::BYTE
            | t_::STRING
            | t_::SIZE
            | t_::PID
            | t_::INT
            | t_::INT8
            | t_::INT16
            | t_::INT32
            | t_::INT64
            | t_::UINT
            | t_::UINT8
            | t_::UINT16
            | t_::UINT32
            | t_::UINT64
            | t_::FLOAT
            | t_::DOUBLE
            | t_::STATUS
            | t_::PROC_RANK
            | t_::PROC
            | t_::BYTE_OBJECT
            | t_::COMPRESSED_STRING
            | t_::COMPRESSED_BYTE_OBJECT
            | t_::REGEX
            | t_::VALUE
            | t_::INFO
            | t_::DATA_ARRAY
    )
}

fn fmt_rank(out: &mut String, r: u32) {
    match r {
        RANK_UNDEF => out.push_str("UNDEF"),
        RANK_WILDCARD => out.push_str("WILDCARD"),
        RANK_LOCAL_NODE => out.push_str("LOCAL_NODE"),
        RANK_INVALID => out.push_str("INVALID"),
        RANK_LOCAL_PEERS => out.push_str("LOCAL_PEERS"),
        r => out.push_str(&r.to_string()),
    }
}

/// `fmt_bytes_quoted`: `"..."`, `\" \\ \n \t \r \0`, other non-printables (C `isprint`, "C"
/// locale: 0x20..=0x7e) as `\xNN`.
pub fn quote(bytes: &[u8]) -> String {
    let mut s = String::new();
    quote_into(&mut s, bytes);
    s
}

fn quote_into(out: &mut String, bytes: &[u8]) {
    out.push('"');
    for &c in bytes {
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            0 => out.push_str("\\0"),
            0x20..=0x7e => out.push(c as char),
            _ => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
}

/// C's `printf("%.<prec>g", x)`.
pub fn fmt_g(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.into();
    }
    let p = prec.max(1);
    // the exponent after rounding to p significant digits
    let sci = format!("{:.*e}", p - 1, x);
    let (mant, exp) = sci.split_once('e').expect("exponent");
    let exp: i32 = exp.parse().expect("exponent");
    if exp < -4 || exp >= p as i32 {
        let mant = trim_zeros(mant);
        format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `PMIx_Data_type_string()` of libpmix 4.2.2 after init (codes without a name print
/// "UNKNOWN"; before init some print "NOT INITIALIZED").
pub const TYPE_NAMES: &[(u16, &str)] = &[
    (0, "UNKNOWN"),
    (1, "PMIX_BOOL"),
    (2, "PMIX_BYTE"),
    (3, "PMIX_STRING"),
    (4, "PMIX_SIZE"),
    (5, "PMIX_PID"),
    (6, "PMIX_INT"),
    (7, "PMIX_INT8"),
    (8, "PMIX_INT16"),
    (9, "PMIX_INT32"),
    (10, "PMIX_INT64"),
    (11, "PMIX_UINT"),
    (12, "PMIX_UINT8"),
    (13, "PMIX_UINT16"),
    (14, "PMIX_UINT32"),
    (15, "PMIX_UINT64"),
    (16, "PMIX_FLOAT"),
    (17, "PMIX_DOUBLE"),
    (18, "PMIX_TIMEVAL"),
    (19, "PMIX_TIME"),
    (20, "PMIX_STATUS"),
    (21, "PMIX_VALUE"),
    (22, "PMIX_PROC"),
    (23, "PMIX_APP"),
    (24, "PMIX_INFO"),
    (25, "PMIX_PDATA"),
    (26, "PMIX_BUFFER"),
    (27, "PMIX_BYTE_OBJECT"),
    (28, "PMIX_KVAL"),
    (29, "PMIX_MODEX"),
    (30, "PMIX_PERSIST"),
    (31, "PMIX_POINTER"),
    (32, "PMIX_SCOPE"),
    (33, "PMIX_DATA_RANGE"),
    (34, "PMIX_COMMAND"),
    (35, "PMIX_INFO_DIRECTIVES"),
    (36, "PMIX_DATA_TYPE"),
    (37, "PMIX_PROC_STATE"),
    (38, "PMIX_PROC_INFO"),
    (39, "PMIX_DATA_ARRAY"),
    (40, "PMIX_PROC_RANK"),
    (41, "PMIX_QUERY"),
    (42, "PMIX_COMPRESSED_STRING"),
    (43, "PMIX_ALLOC_DIRECTIVE"),
    (44, "PMIX_INFO_ARRAY"),
    (45, "PMIX_IOF_CHANNEL"),
    (46, "PMIX_ENVAR"),
    (47, "PMIX_COORD"),
    (48, "PMIX_REGATTR"),
    (49, "PMIX_REGEX"),
    (50, "PMIX_JOB_STATE"),
    (51, "PMIX_LINK_STATE"),
    (52, "PMIX_PROC_CPUSET"),
    (53, "PMIX_GEOMETRY"),
    (54, "PMIX_DEVICE_DIST"),
    (55, "PMIX_ENDPOINT"),
    (56, "PMIX_TOPO"),
    (57, "PMIX_DEVTYPE"),
    (58, "PMIX_LOCTYPE"),
    (59, "PMIX_COMPRESSED_BYTE_OBJECT"),
    (60, "PMIX_PROC_NSPACE"),
    (61, "PMIX_PROC_STATS"),
    (62, "PMIX_DISK_STATS"),
    (63, "PMIX_NET_STATS"),
    (64, "PMIX_NODE_STATS"),
    (65, "PMIX_DATA_BUFFER"),
    (66, "PMIX_STOR_MEDIUM"),
    (67, "PMIX_STOR_ACCESS"),
    (68, "PMIX_STOR_PERSIST"),
    (69, "PMIX_STOR_ACCESS_TYPE"),
];

/// `PMIx_Error_string()` of libpmix 4.2.2 for every code in 1..=-400 that has a name
/// (anything else prints "ERROR STRING NOT FOUND").
pub const STATUS_STRINGS: &[(i32, &str)] = &[
    (0, "SUCCESS"),
    (-1, "ERROR"),
    (-2, "SILENT_ERROR"),
    (-3, "DEBUGGER-RELEASE"),
    (-4, "PROC_RESTART"),
    (-5, "PROC-CHECKPOINT-ERROR"),
    (-6, "PROC-MIGRATE"),
    (-7, "PROC-ABORTED"),
    (-8, "PROC-ABORT-REQUESTED"),
    (-9, "PROC-ABORTING"),
    (-10, "SERVER FAILED REQUEST"),
    (-11, "EXISTS"),
    (-12, "INVALID-CREDENTIAL"),
    (-13, "HANDSHAKE-FAILED"),
    (-14, "READY-FOR-HANDSHAKE"),
    (-15, "WOULD-BLOCK"),
    (-16, "UNKNOWN-DATA-TYPE"),
    (-17, "PROC-ENTRY-NOT-FOUND"),
    (-18, "TYPE-MISMATCH"),
    (-19, "UNPACK-INADEQUATE-SPACE"),
    (-20, "UNPACK-FAILURE"),
    (-21, "PACK-FAILURE"),
    (-22, "PACK-MISMATCH"),
    (-23, "NO-PERMISSIONS"),
    (-24, "TIMEOUT"),
    (-25, "UNREACHABLE"),
    (-26, "ERR-IN-ERRNO"),
    (-27, "BAD-PARAM"),
    (-28, "RESOURCE-BUSY"),
    (-29, "OUT-OF-RESOURCE"),
    (-30, "DATA-VALUE-NOT-FOUND"),
    (-31, "INIT"),
    (-32, "NO-MEM"),
    (-33, "INVALID-ARG"),
    (-34, "INVALID-KEY"),
    (-35, "INVALID-KEY-LENGTH"),
    (-36, "INVALID-VAL"),
    (-37, "INVALID-VAL-LENGTH"),
    (-38, "INVALID-LENGTH"),
    (-39, "INVALID-NUM-ARGS"),
    (-40, "INVALID-ARGS"),
    (-41, "INVALID-NUM-PARSED"),
    (-42, "INVALID-KEYVAL"),
    (-43, "INVALID-SIZE"),
    (-44, "INVALID-NAMESPACE"),
    (-45, "SERVER-NOT-AVAIL"),
    (-46, "NOT-FOUND"),
    (-47, "NOT-SUPPORTED"),
    (-48, "NOT-IMPLEMENTED"),
    (-49, "COMM-FAILURE"),
    (-50, "UNPACK-PAST-END"),
    (-51, "PMIX CONFLICTING CLEANUP DIRECTIVES"),
    (-52, "PARTIAL SUCCESS"),
    (-53, "DUPLICATE KEY"),
    (-55, "PROCESS SET DEFINED"),
    (-58, "READY-FOR-DEBUG"),
    (-59, "PARAM-VALUE-NOT-SUPPORTED"),
    (-60, "EMPTY"),
    (-61, "LOST_CONNECTION"),
    (-62, "OUTSIDE-SCOPE"),
    (-63, "FATAL"),
    (-64, "NOT_AVAILABLE"),
    (-65, "VALUE_OUT_OF_BOUNDS"),
    (-67, "FILE_OPEN_FAILURE"),
    (-68, "FILE_READ_FAILURE"),
    (-69, "FILE_WRITE_FAILURE"),
    (-70, "SYS_LIMITS_PIPES"),
    (-71, "SYS_LIMITS_CHILDREN"),
    (-72, "PIPE_SETUP_FAILURE"),
    (-73, "EXE NOT ACCESSIBLE"),
    (-74, "WDIR NOT ACCESSIBLE"),
    (-104, "QUERY-PARTIAL-SUCCESS"),
    (-105, "PMIX ALLOC OPERATION COMPLETE"),
    (-106, "PMIX JOB CONTROL CHECKPOINT"),
    (-107, "PMIX JOB CONTROL CHECKPOINT COMPLETE"),
    (-108, "PMIX PRE-EMPTION ALERT"),
    (-109, "PMIX HEARTBEAT ALERT"),
    (-110, "PMIX FILE MONITOR ALERT"),
    (-111, "PROC-TERMINATED"),
    (-112, "INVALID-TERMINATION"),
    (-113, "FABRIC-UPDATE-ENDPOINTS"),
    (-144, "EVENT-REGISTRATION"),
    (-145, "JOB ENDED"),
    (-146, "UPDATE-ENDPOINTS"),
    (-147, "PMIX MODEL DECLARED"),
    (-148, "GDS-ACTION-COMPLETE"),
    (-149, "PROC-HAS-CONNECTED"),
    (-150, "CONNECT-REQUESTED"),
    (-152, "OPENMP-PARALLEL-ENTERED"),
    (-153, "OPENMP-PARALLEL-EXITED"),
    (-155, "LAUNCHER-READY"),
    (-156, "OPERATION-IN-PROGRESS"),
    (-157, "OPERATION-SUCCEEDED"),
    (-158, "INVALID-OPERATION"),
    (-159, "GROUP-INVITED"),
    (-160, "GROUP-LEFT"),
    (-161, "GROUP-INVITE-ACCEPTED"),
    (-162, "GROUP-INVITE-DECLINED"),
    (-163, "GROUP-INVITE-FAILED"),
    (-164, "GROUP-MEMBERSHIP-UPDATE"),
    (-165, "GROUP-CONSTRUCT-ABORT"),
    (-166, "GROUP-CONSTRUCT-COMPLETE"),
    (-167, "GROUP-LEADER-SELECTED"),
    (-168, "GROUP-LEADER-FAILED"),
    (-169, "GROUP-CONTEXT-ID-ASSIGNED"),
    (-170, "GROUP-MEMBER-FAILED"),
    (-171, "REPEAT-ATTRIBUTE-REGISTRATION"),
    (-172, "IOF FAILURE"),
    (-173, "IOF COMPLETE"),
    (-174, "PMIX LAUNCH COMPLETE"),
    (-175, "FABRIC-UPDATED"),
    (-176, "FABRIC-UPDATE-PENDING"),
    (-177, "APPLICATION NOT EXECUTABLE"),
    (-178, "NO EXECUTABLE SPECIFIED"),
    (-179, "JOB FAILED TO MAP"),
    (-180, "JOB CANCELED"),
    (-181, "JOB FAILED TO LAUNCH"),
    (-182, "JOB ABORTED"),
    (-183, "KILLED BY COMMAND"),
    (-184, "ABORTED BY SIGNAL"),
    (-185, "TERMINATED WITHOUT SYNC"),
    (-186, "SENSOR BOUND EXCEEDED"),
    (-187, "NON-ZERO TERMINATION"),
    (-188, "FAILED TO OBTAIN ALLOCATION"),
    (-189, "JOB ABORTED BY SYSTEM EVENT"),
    (-190, "EXECUTABLE NOT FOUND"),
    (-191, "JOB STARTED"),
    (-192, "SESSION STARTED"),
    (-193, "SESSION ENDED"),
    (-200, "PROC TERMINATED WITHOUT SYNC"),
    (-201, "PROC TERMINATED"),
    (-230, "SYSTEM BASE EVENT"),
    (-231, "NODE-DOWN"),
    (-232, "NODE-OFFLINE"),
    (-233, "WORKING DIRECTORY NOT FOUND"),
    (-234, "INSUFFICIENT RESOURCES"),
    (-235, "SYSTEM OPERATION FAILED"),
    (-330, "UNDEFINED-SYSTEM-EVENT"),
    (-331, "EVENT-NO-ACTION-TAKEN"),
    (-332, "EVENT-PARTIAL-ACTION-TAKEN"),
    (-333, "EVENT-ACTION-DEFERRED"),
    (-334, "EVENT-ACTION-COMPLETE"),
    (-400, "PROC-KILLED-BY-CMD"),
];
