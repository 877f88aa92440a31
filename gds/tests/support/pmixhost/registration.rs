//! The registration dump: what pmix-host passed to `PMIx_server_register_nspace`
//! (`--dump-registration`), read back into the crate's value model.

use std::path::Path;

use rshm_gds::value::types;
use rshm_gds::{Info, Value};

use super::{RANK_INVALID, RANK_LOCAL_NODE, RANK_LOCAL_PEERS, RANK_UNDEF, RANK_WILDCARD};

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
        let top = lines.iter().filter(|l| l.1 == 0).count();
        assert_eq!(n, top, "{origin}: ninfo {n} but {top} top-level infos");
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
    let mut seen = 0;
    while *pos < lines.len() && count.is_none_or(|n| seen < n) {
        let (lineno, d, key, ty, rest) = &lines[*pos];
        if *d != depth {
            if count.is_some() {
                panic!("{origin}:{lineno}: depth {d}, expected {depth}");
            }
            break;
        }
        *pos += 1;
        seen += 1;
        let at = format!("{origin}:{lineno}");
        // A NULL string (Open MPI's PMIX_LOCALITY_STRING of unbound procs, in recorded
        // registrations): left out, as the gds component leaves it out of what the store gets.
        if ty == "PMIX_STRING" && rest == "null" {
            continue;
        }
        let value = if ty == "PMIX_DATA_ARRAY" {
            let (elem, rest) = split_token(rest);
            let (n, _) = split_token(rest);
            let n: usize = n
                .parse()
                .unwrap_or_else(|_| panic!("{at}: bad array size {n:?}"));
            if elem != "PMIX_INFO" {
                panic!("{at}: data arrays of {elem} are not supported by this parser");
            }
            let start = *pos;
            let items = parse_info_list(lines, pos, depth + 1, Some(n), origin)
                .into_iter()
                .map(|i| Value::Info(Box::new(i)))
                .collect::<Vec<_>>();
            let lines_read = lines[start..*pos]
                .iter()
                .filter(|l| l.1 == depth + 1)
                .count();
            if lines_read != n {
                panic!("{at}: array of {n} infos has {lines_read} elements");
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
            Value::Proc(rshm_gds::value::Proc {
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
pub(super) fn split_token(s: &str) -> (&str, &str) {
    let s = s.trim_start_matches([' ', '\t']);
    match s.find([' ', '\t']) {
        Some(i) => (&s[..i], s[i..].trim_start_matches([' ', '\t'])),
        None => (s, ""),
    }
}
