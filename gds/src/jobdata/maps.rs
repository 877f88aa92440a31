//! Parsers for the node map and process map a PMIx server host passes to
//! `PMIx_server_register_nspace` (PMIx v5 standard 17.2.3.2, "Assembling the registration
//! information"): `PMIX_NODE_MAP` ("pmix.nmap") / `PMIX_PROC_MAP` ("pmix.pmap"), produced by
//! `PMIx_generate_regex` / `PMIx_generate_ppn`, and the uncompressed `PMIX_NODE_MAP_RAW`
//! ("pmix.nmap.raw") / `PMIX_PROC_MAP_RAW` ("pmix.pmap.raw").
//!
//! # Accepted forms
//!
//! Each map comes in three spellings; the generated ones are tagged by the OpenPMIx `preg`
//! component that made them:
//!
//! | form | node map | proc map |
//! |---|---|---|
//! | `pmix[...]` (preg/native) | `pmix[node[3:1-4],alpha]` | `pmix[0-3;4-7]` |
//! | `raw:...` (preg/raw) | `raw:node001,node002` | `raw:0,1;2,3` |
//! | untagged (the `*_RAW` keys) | `node001,node002` | `0,1;2,3` |
//!
//! A **node map** is a `,`-separated list of host names in node-id order. Inside `pmix[...]` an
//! entry is either a name written verbatim or a group `prefix[width:ranges]suffix`, standing for
//! `prefix`, each number of `ranges` zero-padded to `width` digits, then `suffix` (a number wider
//! than `width` is written in full). What OpenPMIx 4.2.2 generates (`tools/pmix-host`, the
//! corpus in `tests/data/maps/openpmix-4.2.2.txt`):
//!
//! * `node001..node004` -> `pmix[node[3:1-4]]`; `node1,node2,node3,node10,node11` ->
//!   `pmix[node[1:1-3],node[2:10-11]]` (one group per digit count);
//! * only the first digit run is numbered, the rest of the name is the suffix:
//!   `c1n01,c1n02,c2n01` -> `pmix[c[1:1]n01,c[1:1]n02,c[1:2]n01]`; `1,2,3` (no prefix) ->
//!   `pmix[[1:1-3]]`;
//! * a name holding anything but letters and digits (`c1-1`, `node001.cluster`, `h_1`) and a
//!   name without digits are kept verbatim; groups and verbatim names are mixed freely,
//!   duplicates are kept (`pmix[node[3:1,1]]`) and values are not sorted (`n[1:9,8]`).
//!
//! A **proc map** is a `;`-separated list, one entry per node of the node map, each a
//! `,`-separated list of ranks or ascending ranges `a-b`. OpenPMIx writes `pmix[...]` with ranges
//! only when that is shorter than its input and otherwise returns `raw:` + the input unchanged,
//! ranges included (`raw:0-3;4-7`), so ranges are accepted in every form.
//!
//! Names are returned in the order they are written. That is also what OpenPMIx does, even when
//! its own generator has reordered them: verbatim names do not stop later numbered names from
//! joining an earlier group, so `node1,alpha,node2` becomes `pmix[node[1:1-2],alpha]`, and the
//! OpenPMIx clients of such a job see node order `node1,node2,alpha` (checked with a job:
//! `PMIX_NODE_LIST` and every rank's `PMIX_HOSTNAME` follow the generated string).
//!
//! # Refused forms
//!
//! Everything below is `Error::InvalidArgument`, with what is wrong and the byte offset:
//!
//! * an empty value, `pmix[]`, `raw:`; the zlib-compressed `blob:` form (preg/compress: not
//!   supported; OpenPMIx 4.2.2 never generated it, even for 85 kB inputs); any other prefix
//!   (`foo[`, `foo:`);
//! * unbalanced brackets, a group without `width:`, a width of 0, a second group in one name;
//! * empty host names (OpenPMIx's generator moves them to the end, `node001,,node002` ->
//!   `pmix[node[3:1-2],]`, which its own parser then rejects), names holding `[`, `]` (OpenPMIx
//!   passes `x[1]` through verbatim and cannot parse it back), `:` (it would read as a tag),
//!   white space or control characters, names longer than 255 bytes;
//! * descending ranges, numbers that are not plain decimal digits (`-1`, `+1`, ` 1`: OpenPMIx's
//!   native form stores numbers in a C `int`, so ranks >= 2^31 come out as `pmix[-1]` or
//!   `pmix[2147483646--2147483648]`), ranks >= `PMIX_RANK_VALID` (`UINT32_MAX - 50`, standard
//!   3.2.3: the values from there up are reserved, wildcard, undef, local node...);
//! * a node without ranks in a proc map (`0;;1`, `;0`, `0;1;`). OpenPMIx cannot carry one: its
//!   native form silently drops it (`0,1,2,3;;4,5,6,7` -> `pmix[0-3;4-7]`) and its raw form
//!   keeps the empty field that its parser then skips, so either way the ranks would be paired
//!   with the wrong nodes. An empty rank entry (`0,,1`, dropped by OpenPMIx too) is refused
//!   for the same reason;
//! * node maps expanding to more than 2^20 (1,048,576) host names or 64 MiB of them, proc
//!   maps to more than 2^24 (16,777,216) ranks over all nodes: ranges make the text tiny
//!   compared to what it expands to, so the caps are checked before anything is allocated.
//!   A node costs a registration ~40 times what a rank does (its name, its entries in the node
//!   realm and the hostname index), hence the lower cap; the largest machines have ~160,000
//!   nodes.
//!
//! Only the syntax is checked: whether the proc map has one entry per node of the node map, or
//! holds each rank of the job exactly once, is for the caller to decide.

#![forbid(unsafe_code)]

use super::query::RANK_VALID;
use crate::error::{Error, Result};

/// Most ranks one proc map may expand to, summed over all nodes.
pub(crate) const MAX_RANKS: u64 = 1 << 24;
/// Most host names one node map may expand to.
pub(crate) const MAX_NODES: u64 = 1 << 20;
/// Most bytes of host names one node map may expand to (2^20 names of 64 bytes): each is kept
/// several times over (the names, their index, the node list, the node realm).
const MAX_NAME_BYTES: u64 = 1 << 26;
/// Longest host name accepted: the DNS limit (253) rounded up to what `char[256]` buffers hold.
const MAX_NAME_LEN: usize = 255;

// Which map an error message is about.
const NODE_MAP: &str = "node map";
const PROC_MAP: &str = "proc map";

/// Hostnames in node-id order from a PMIX_NODE_MAP value: "pmix[...]" (OpenPMIx native regex),
/// "raw:host1,host2", or a plain comma-separated list (PMIX_NODE_MAP_RAW).
pub fn parse_node_map(s: &str) -> Result<Vec<String>> {
    let mut budget = Budget::new(MAX_NODES);
    let mut names = Vec::new();
    match split_form(NODE_MAP, s)? {
        Form::Native { body, at } => native_nodes(body, at, &mut budget, &mut names)?,
        Form::List { body, at } => {
            let mut pos = at;
            for name in body.split(',') {
                names.push(verbatim_name(name, pos, &mut budget)?);
                pos += name.len() + 1;
            }
        }
    }
    Ok(names)
}

/// Ranks on each node, in node order, from a PMIX_PROC_MAP value: "pmix[0-3;4-7]", "raw:0,1;2,3",
/// or a plain ';'-separated list of ','-separated ranks/ranges (PMIX_PROC_MAP_RAW).
pub fn parse_proc_map(s: &str) -> Result<Vec<Vec<u32>>> {
    // The native form is the same list with every run of consecutive ranks written as a range,
    // so all three forms share one grammar.
    let (Form::Native { body, at } | Form::List { body, at }) = split_form(PROC_MAP, s)?;
    let mut budget = Budget::new(MAX_RANKS);
    let mut nodes = Vec::new();
    let mut pos = at;
    for node in body.split(';') {
        if node.is_empty() {
            return Err(invalid(
                PROC_MAP,
                pos,
                format!(
                    "node {} has no ranks (OpenPMIx drops such nodes, which pairs the ranks \
                     that follow with the wrong nodes)",
                    nodes.len()
                ),
            ));
        }
        let mut ranks = Vec::new();
        let mut item_pos = pos;
        for item in node.split(',') {
            let (lo, hi) = range(PROC_MAP, item, item_pos)?;
            if hi >= u64::from(RANK_VALID) {
                return Err(invalid(
                    PROC_MAP,
                    item_pos,
                    format!("rank {hi} is a reserved PMIx rank value (>= {RANK_VALID})"),
                ));
            }
            budget.take(PROC_MAP, item_pos, hi - lo + 1, 0)?;
            // Both ends are below RANK_VALID, so they fit a u32.
            ranks.extend(lo as u32..=hi as u32);
            item_pos += item.len() + 1;
        }
        nodes.push(ranks);
        pos += node.len() + 1;
    }
    Ok(nodes)
}

/// A map value split into its form and body; `at` is the body's byte offset in the value, so
/// errors point into what the host passed.
enum Form<'a> {
    /// `pmix[...]`, OpenPMIx's native regex.
    Native { body: &'a str, at: usize },
    /// `raw:...` or untagged: the plain list.
    List { body: &'a str, at: usize },
}

fn split_form<'a>(map: &'static str, s: &'a str) -> Result<Form<'a>> {
    let form = if let Some(rest) = s.strip_prefix("pmix[") {
        // Brackets inside the body are checked by the body's parser; only the outer pair here.
        let body = rest
            .strip_suffix(']')
            .ok_or_else(|| invalid(map, s.len(), "\"pmix[\" is not closed by a final ']'"))?;
        Form::Native { body, at: 5 }
    } else if let Some(body) = s.strip_prefix("raw:") {
        Form::List { body, at: 4 }
    } else if s.starts_with("blob:") {
        return Err(invalid(
            map,
            0,
            "the zlib-compressed \"blob:\" form is not supported (use \"pmix[...]\", \"raw:...\" \
             or a plain list)",
        ));
    } else {
        // Host names and ranks hold neither '[' nor ':', so one of them in the first entry
        // ends a tag this parser does not know (another preg component, or a typo).
        let first = &s[..s.find([',', ';']).unwrap_or(s.len())];
        if let Some(i) = first.find(['[', ':']) {
            return Err(invalid(
                map,
                0,
                format!(
                    "unknown prefix {} (expected \"pmix[\", \"raw:\" or an untagged list)",
                    shown(&s[..=i])
                ),
            ));
        }
        Form::List { body: s, at: 0 }
    };
    let (Form::Native { body, at } | Form::List { body, at }) = form;
    if body.is_empty() {
        return Err(invalid(map, at, "empty map"));
    }
    Ok(form)
}

/// The body of `pmix[...]` in a node map: entries separated by ',', where a group's ranges
/// also use ',' (`n[2:1-3,5],m01`), so the split has to know about brackets.
fn native_nodes(body: &str, at: usize, budget: &mut Budget, names: &mut Vec<String>) -> Result<()> {
    let mut pos = 0;
    loop {
        let rest = &body[pos..];
        let stop = rest.find([',', '[', ']']).unwrap_or(rest.len());
        match rest.as_bytes().get(stop) {
            Some(b'[') => {
                let close = rest[stop..].find(']').map(|i| stop + i).ok_or_else(|| {
                    invalid(NODE_MAP, at + pos + stop, "'[' without a closing ']'")
                })?;
                let after = &rest[close + 1..];
                let suffix = &after[..after.find(',').unwrap_or(after.len())];
                let group = Group {
                    prefix: &rest[..stop],
                    spec: &rest[stop + 1..close],
                    suffix,
                    at: at + pos,
                };
                group.expand(budget, names)?;
                pos += close + 1 + suffix.len();
            }
            Some(b']') => {
                return Err(invalid(
                    NODE_MAP,
                    at + pos + stop,
                    "']' without an opening '['",
                ));
            }
            // ',' or the end: a name written as is.
            _ => {
                names.push(verbatim_name(&rest[..stop], at + pos, budget)?);
                pos += stop;
            }
        }
        // `pos` is now at the ',' before the next entry, or at the end.
        if pos >= body.len() {
            return Ok(());
        }
        pos += 1;
    }
}

/// A `prefix[width:ranges]suffix` entry of a native node map.
struct Group<'a> {
    prefix: &'a str,
    /// `width:ranges`, between the brackets.
    spec: &'a str,
    suffix: &'a str,
    /// Byte offset of the entry (its prefix) in the map value.
    at: usize,
}

impl Group<'_> {
    fn expand(&self, budget: &mut Budget, names: &mut Vec<String>) -> Result<()> {
        let spec_at = self.at + self.prefix.len() + 1;
        check_name_chars(self.prefix, self.at)?;
        check_name_chars(self.suffix, spec_at + self.spec.len() + 1)?;
        let (width_text, ranges) = self.spec.split_once(':').ok_or_else(|| {
            invalid(
                NODE_MAP,
                spec_at,
                format!(
                    "group {} has no \"width:\" (expected prefix[width:ranges])",
                    shown(self.spec)
                ),
            )
        })?;
        let width = number(NODE_MAP, width_text, spec_at)?;
        if width == 0 || width > MAX_NAME_LEN as u64 {
            return Err(invalid(
                NODE_MAP,
                spec_at,
                format!("zero-padding width {width} is not in 1..={MAX_NAME_LEN}"),
            ));
        }
        // Checked just above: the width is at most MAX_NAME_LEN.
        let width = width as usize;
        let mut pos = spec_at + width_text.len() + 1;
        for item in ranges.split(',') {
            let (lo, hi) = range(NODE_MAP, item, pos)?;
            // The longest name of the range is `hi`'s: padded to `width`, or longer than it.
            let digits = hi.checked_ilog10().map_or(1, |d| d as usize + 1);
            let len = self.prefix.len() + width.max(digits) + self.suffix.len();
            if len > MAX_NAME_LEN {
                return Err(invalid(
                    NODE_MAP,
                    pos,
                    format!("host names of {len} bytes (longer than {MAX_NAME_LEN})"),
                ));
            }
            let count = (hi - lo).saturating_add(1);
            budget.take(NODE_MAP, pos, count, count.saturating_mul(len as u64))?;
            names.extend((lo..=hi).map(|v| format!("{}{v:0width$}{}", self.prefix, self.suffix)));
            pos += item.len() + 1;
        }
        Ok(())
    }
}

/// A host name written in full (a node map's list form, or a verbatim `pmix[...]` entry).
fn verbatim_name(name: &str, at: usize, budget: &mut Budget) -> Result<String> {
    if name.is_empty() {
        return Err(invalid(NODE_MAP, at, "empty host name"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(
            NODE_MAP,
            at,
            format!(
                "host name {} is longer than {MAX_NAME_LEN} bytes",
                shown(name)
            ),
        ));
    }
    check_name_chars(name, at)?;
    budget.take(NODE_MAP, at, 1, name.len() as u64)?;
    Ok(name.to_owned())
}

/// Refuses characters no host name holds: brackets (the group syntax, which OpenPMIx cannot
/// parse back either), ':' (it would read as a form's tag in an untagged list), white space and
/// control characters (a host's formatting mistake, such as "node1, node2", rather than a name).
fn check_name_chars(part: &str, at: usize) -> Result<()> {
    match part
        .char_indices()
        .find(|&(_, c)| matches!(c, '[' | ']' | ':') || c.is_whitespace() || c.is_control())
    {
        Some((i, c)) => Err(invalid(
            NODE_MAP,
            at + i,
            format!("character {c:?} in a host name"),
        )),
        None => Ok(()),
    }
}

/// `n` or `a-b` (a <= b), both plain decimal numbers.
fn range(map: &'static str, item: &str, at: usize) -> Result<(u64, u64)> {
    let Some((lo_text, hi_text)) = item.split_once('-') else {
        let v = number(map, item, at)?;
        return Ok((v, v));
    };
    let lo = number(map, lo_text, at)?;
    let hi = number(map, hi_text, at + lo_text.len() + 1)?;
    if lo > hi {
        return Err(invalid(map, at, format!("descending range {lo}-{hi}")));
    }
    Ok((lo, hi))
}

/// Decimal digits only: `str::parse` alone would also take a leading '+'.
fn number(map: &'static str, text: &str, at: usize) -> Result<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        let found = if text.is_empty() {
            "nothing".to_owned()
        } else {
            shown(text)
        };
        return Err(invalid(
            map,
            at,
            format!("expected a decimal number, found {found}"),
        ));
    }
    // Digits only, so the one possible failure is overflow.
    text.parse()
        .map_err(|_| invalid(map, at, format!("number {} is too large", shown(text))))
}

/// What a map has expanded to so far, checked against the caps before each expansion.
struct Budget {
    /// The cap on entries ([`MAX_NODES`] or [`MAX_RANKS`]).
    max: u64,
    entries: u64,
    bytes: u64,
}

impl Budget {
    fn new(max: u64) -> Self {
        Budget {
            max,
            entries: 0,
            bytes: 0,
        }
    }

    fn take(&mut self, map: &'static str, at: usize, entries: u64, bytes: u64) -> Result<()> {
        let entries = self.entries.saturating_add(entries);
        let bytes = self.bytes.saturating_add(bytes);
        if entries > self.max {
            return Err(invalid(
                map,
                at,
                format!("expands to more than {} entries", self.max),
            ));
        }
        if bytes > MAX_NAME_BYTES {
            return Err(invalid(
                map,
                at,
                format!("expands to more than {MAX_NAME_BYTES} bytes of host names"),
            ));
        }
        self.entries = entries;
        self.bytes = bytes;
        Ok(())
    }
}

fn invalid(map: &str, at: usize, what: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("{map}: {what} (at byte {at})"))
}

/// A piece of the input for an error message, quoted and cut short: maps can be megabytes.
fn shown(text: &str) -> String {
    const MAX_CHARS: usize = 40;
    match text.char_indices().nth(MAX_CHARS) {
        Some((cut, _)) => format!("{:?}...", &text[..cut]),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORPUS: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/maps/openpmix-4.2.2.txt"
    );

    fn names(list: &str) -> Vec<String> {
        list.split(',').map(str::to_owned).collect()
    }

    /// Expands a plain proc map without the parser under test, so the corpus check does not
    /// compare the parser with itself.
    fn expand_ppn(list: &str) -> Vec<Vec<u32>> {
        list.split(';')
            .map(|node| {
                node.split(',')
                    .flat_map(|item| match item.split_once('-') {
                        Some((a, b)) => a.parse().unwrap()..=b.parse().unwrap(),
                        None => item.parse().unwrap()..=item.parse().unwrap(),
                    })
                    .collect()
            })
            .collect()
    }

    fn message(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Err(Error::InvalidArgument(m)) => m,
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    /// Every corpus pair: the generated string parses back to the input, or, where OpenPMIx
    /// lost information (4th field), to what the string really encodes, or is refused.
    #[test]
    fn openpmix_corpus_round_trips() {
        let corpus = std::fs::read_to_string(CORPUS).unwrap();
        let (mut regex, mut ppn) = (0, 0);
        for line in corpus.lines().filter(|l| !l.starts_with('#')) {
            let fields: Vec<&str> = line.split('\t').collect();
            let (kind, input, output) = (fields[0], fields[1], fields[2]);
            let expected = fields.get(3).copied().unwrap_or(input);
            match kind {
                "regex" => {
                    regex += 1;
                    let got = parse_node_map(output);
                    if expected == "!error" {
                        message(got);
                    } else {
                        assert_eq!(got.unwrap(), names(expected), "{output}");
                    }
                }
                "ppn" => {
                    ppn += 1;
                    let got = parse_proc_map(output);
                    if expected == "!error" {
                        message(got);
                    } else {
                        assert_eq!(got.unwrap(), expand_ppn(expected), "{output}");
                    }
                }
                _ => panic!("bad corpus line {line:?}"),
            }
        }
        assert!(
            regex >= 50 && ppn >= 35,
            "corpus too small: {regex} regex, {ppn} ppn"
        );
    }

    #[test]
    fn node_map_forms() {
        let ok = |s: &str| parse_node_map(s).unwrap();
        assert_eq!(
            ok("pmix[node[3:1-4]]"),
            names("node001,node002,node003,node004")
        );
        assert_eq!(ok("pmix[node[1:1-3]]"), names("node1,node2,node3"));
        // A number wider than the width is written in full.
        assert_eq!(ok("pmix[n[2:99-101]]"), names("n99,n100,n101"));
        assert_eq!(ok("pmix[c[1:1-2]n01,[2:7]]"), names("c1n01,c2n01,07"));
        assert_eq!(ok("pmix[b,n[1:3,1],a,n[1:1]]"), names("b,n3,n1,a,n1"));
        assert_eq!(ok("raw:node2,node1,node2"), names("node2,node1,node2"));
        assert_eq!(
            ok("node001,node002.cluster"),
            names("node001,node002.cluster")
        );
    }

    #[test]
    fn proc_map_forms() {
        let ok = |s: &str| parse_proc_map(s).unwrap();
        assert_eq!(
            ok("pmix[0-3;4-7]"),
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]
        );
        assert_eq!(ok("raw:0,1;2,3"), vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(ok("raw:0-1,5;2-4"), vec![vec![0, 1, 5], vec![2, 3, 4]]);
        assert_eq!(ok("3,1;0;2"), vec![vec![3, 1], vec![0], vec![2]]);
        assert_eq!(ok("0,0-1"), vec![vec![0, 0, 1]]);
        assert_eq!(ok("4294967244"), vec![vec![u32::MAX - 51]]);
    }

    #[test]
    fn refusals_say_what_and_where() {
        let node = |s: &str| message(parse_node_map(s));
        let proc = |s: &str| message(parse_proc_map(s));
        for (got, want) in [
            (node(""), "empty map (at byte 0)"),
            (node("pmix[]"), "empty map (at byte 5)"),
            (node("raw:"), "empty map (at byte 4)"),
            (node("blob:x\0y"), "\"blob:\" form is not supported"),
            (node("regex[a]"), "unknown prefix \"regex[\""),
            (
                node("pmix[node[3:1-4]"),
                "'[' without a closing ']' (at byte 9)",
            ),
            (
                node("pmix[node[3:1-4]]]"),
                "character ']' in a host name (at byte 16)",
            ),
            (node("pmix[a]b]"), "']' without an opening '[' (at byte 6)"),
            (
                node("pmix[node[3:1-4][1:2]]"),
                "character '[' in a host name (at byte 16)",
            ),
            (
                node("pmix[node[1-4]]"),
                "has no \"width:\" (expected prefix[width:ranges])",
            ),
            (node("pmix[node[0:1]]"), "width 0 is not in 1..=255"),
            (
                node("pmix[node[x:1]]"),
                "expected a decimal number, found \"x\" (at byte 10)",
            ),
            (
                node("pmix[node[3:4-1]]"),
                "descending range 4-1 (at byte 12)",
            ),
            (node("pmix[node[20:-1,-1]]"), "found nothing (at byte 13)"),
            (node("pmix[node[3:1-2],]"), "empty host name (at byte 17)"),
            (node("a,,b"), "empty host name (at byte 2)"),
            (
                node("node1, node2"),
                "character ' ' in a host name (at byte 6)",
            ),
            (node("pmix[x[1],x[2]]"), "has no \"width:\""),
            (
                node("pmix[a,b:c]"),
                "character ':' in a host name (at byte 8)",
            ),
            (node("a,b:c"), "character ':' in a host name (at byte 3)"),
            (
                node("pmix[n[1:0-16777215]]"),
                "more than 1048576 entries (at byte 9)",
            ),
            (
                node("pmix[n[1:0-1048575],m]"),
                "more than 1048576 entries (at byte 20)",
            ),
            (node("pmix[n[1:99999999999999999999]]"), "is too large"),
            (node(&"x".repeat(256)), "longer than 255 bytes"),
            (node("pmix[n[255:1]]"), "host names of 256 bytes"),
            (proc(""), "proc map: empty map"),
            (
                proc("pmix[0-3;4-7"),
                "not closed by a final ']' (at byte 12)",
            ),
            (proc("blob:"), "not supported"),
            (proc("zip:0;1"), "unknown prefix \"zip:\""),
            (
                proc("raw:0;;1"),
                "node 1 has no ranks (OpenPMIx drops such nodes",
            ),
            (proc(";0"), "node 0 has no ranks"),
            (proc("0;1;"), "node 2 has no ranks"),
            (proc("0;1;"), "with the wrong nodes) (at byte 4)"),
            (
                proc("0,,1"),
                "expected a decimal number, found nothing (at byte 2)",
            ),
            (proc("raw:a,b;c"), "found \"a\" (at byte 4)"),
            (proc("0, 1"), "found \" 1\" (at byte 2)"),
            (proc("+1"), "found \"+1\""),
            (proc("pmix[-1]"), "found nothing (at byte 5)"),
            (
                proc("pmix[2147483646--2147483648]"),
                "found \"-2147483648\" (at byte 16)",
            ),
            (proc("5-3"), "descending range 5-3"),
            (
                proc("4294967280"),
                "rank 4294967280 is a reserved PMIx rank value",
            ),
            (
                proc("0;4294967245"),
                "rank 4294967245 is a reserved PMIx rank value (>= 4294967245) (at byte 2)",
            ),
            (proc("0-4294967295"), "reserved PMIx rank value"),
            (proc("99999999999999999999"), "too large"),
            (
                proc("0-16777215;16777216"),
                "more than 16777216 entries (at byte 11)",
            ),
            (proc("pmix[0-3[;4-7]"), "found \"3[\""),
        ] {
            assert!(got.contains(want), "{got:?} does not contain {want:?}");
        }
    }

    #[test]
    fn entry_caps_are_inclusive() {
        let all = parse_proc_map("0-16777215").unwrap();
        assert_eq!(all[0].len(), 1 << 24);
        assert_eq!(
            parse_node_map("pmix[n[1:1-1048576]]").unwrap().len(),
            1 << 20
        );
    }

    /// The 1000-node x 16 block map of the corpus at scale: 62,500 nodes x 16 = 1M ranks.
    #[test]
    fn million_rank_proc_map() {
        let body: Vec<String> = (0..62_500u32)
            .map(|n| format!("{}-{}", n * 16, n * 16 + 15))
            .collect();
        let map = parse_proc_map(&format!("pmix[{}]", body.join(";"))).unwrap();
        assert_eq!(map.len(), 62_500);
        assert!(map.iter().flatten().copied().eq(0..1_000_000));
    }

    /// Random and mutated corpus strings: any answer is fine, a panic is not.
    #[test]
    fn never_panics() {
        let corpus = std::fs::read_to_string(CORPUS).unwrap();
        // The big maps are left to the corpus test: parsing them thousands of times in a debug
        // build would take minutes.
        let seeds: Vec<&str> = corpus
            .lines()
            .filter(|l| !l.starts_with('#'))
            .flat_map(|l| l.split('\t').skip(1))
            .filter(|s| s.len() <= 4096)
            .collect();
        const ALPHABET: &[&str] = &[
            "[", "]", ":", ",", ";", "-", "0", "1", "9", "x", "pmix[", "raw:", "blob:", "é", " ",
            "\0",
        ];
        // xorshift64: a fixed sequence, so a failure reproduces.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut rand = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..20_000 {
            let mut s = if rand(4) == 0 {
                String::new()
            } else {
                seeds[rand(seeds.len())].to_owned()
            };
            for _ in 0..1 + rand(4) {
                let mut at = rand(s.len() + 1);
                while !s.is_char_boundary(at) {
                    at -= 1;
                }
                match rand(3) {
                    0 => s.insert_str(at, ALPHABET[rand(ALPHABET.len())]),
                    1 => {
                        let end = s[at..]
                            .char_indices()
                            .nth(1 + rand(3))
                            .map_or(s.len(), |(i, _)| at + i);
                        s.replace_range(at..end, "");
                    }
                    _ => s.insert_str(at, seeds[rand(seeds.len())].get(..rand(12)).unwrap_or("")),
                }
            }
            let _ = parse_node_map(&s);
            let _ = parse_proc_map(&s);
        }
    }
}
