//! The query corpus pmix-client asks, and the attribute macro names it may use.

use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;

use rshm_gds::jobdata::query::Qualifiers;

use super::registration::split_token;
use super::{tool_dir, RANK_UNDEF, RANK_WILDCARD};

/// Where OpenPMIx's attribute macros (`#define PMIX_JOB_SIZE "pmix.job.size"`) come from.
pub const PMIX_COMMON_H: &str = "/usr/lib/x86_64-linux-gnu/pmix2/include/pmix_common.h";

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
