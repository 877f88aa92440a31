//! The relative-locality table of a namespace's processes on one node: how close are ranks a
//! and b, in one lookup, without parsing a string. Local ranks are grouped into classes of
//! equal locality strings; the table holds each rank's class and the class-by-class matrix of
//! relative localities, computed once by the server with [`relative_locality`] (so a lookup
//! answers what comparing the two strings answers). Its bytes, all little-endian (the format
//! is docs/topology.md's):
//!
//! | off | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `RLT1` |
//! | 4 | 4 | `first_rank`: the lowest local rank |
//! | 8 | 4 | `span`: ranks covered, `first_rank .. first_rank + span` |
//! | 12 | 4 | `nclasses` (at most [`MAX_CLASSES`]) |
//! | 16 | 2 × span | each rank's class; `NOT_LOCAL`, `UNBOUND` |
//! | then, at a multiple of 2 | 2 × nclasses² | the matrix, row-major |
//! | then, at a multiple of 4 | 4 × (nclasses + 1) | each class's string's start, then the end |
//! | then | | the classes' locality strings (without `hwloc:`) |

use std::collections::HashMap;

use crate::bits;
use crate::relative::relative_locality;

const MAGIC: &[u8; 4] = b"RLT1";
/// A rank of the span that is not on this node.
pub const NOT_LOCAL: u16 = 0xffff;
/// A local rank without a locality string (not bound): it shares the node only.
pub const UNBOUND: u16 = 0xfffe;
/// Most distinct locality strings one table holds (a 32 MiB matrix).
pub const MAX_CLASSES: usize = 4096;
/// Widest span of ranks one table covers.
pub const MAX_SPAN: u32 = 1 << 24;

/// Why bytes are not a table, or a table cannot be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableError(pub String);

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "locality table: {}", self.0)
    }
}

fn bad<T>(what: impl Into<String>) -> Result<T, TableError> {
    Err(TableError(what.into()))
}

/// A locality string without its `hwloc:` source prefix, if it has one (hosts store either).
pub fn strip_prefix(s: &str) -> &str {
    match s.get(..6) {
        Some(p) if p.eq_ignore_ascii_case("hwloc:") => &s[6..],
        _ => s,
    }
}

/// Build the table's bytes from the local ranks and their locality strings (`None`: unbound;
/// with or without the `hwloc:` prefix). A rank listed twice is refused.
pub fn build(ranks: &[(u32, Option<&str>)]) -> Result<Vec<u8>, TableError> {
    let Some(first) = ranks.iter().map(|r| r.0).min() else {
        return bad("no local ranks");
    };
    let last = ranks.iter().map(|r| r.0).max().unwrap_or(first);
    let span = last - first + 1;
    if span > MAX_SPAN {
        return bad(format!("ranks span {span} > {MAX_SPAN}"));
    }
    let mut classes: Vec<&str> = Vec::new();
    let mut by_str: HashMap<&str, u16> = HashMap::new();
    let mut class = vec![NOT_LOCAL; span as usize];
    for &(rank, s) in ranks {
        let s = s.map(strip_prefix);
        let slot = &mut class[(rank - first) as usize];
        if *slot != NOT_LOCAL {
            return bad(format!("rank {rank} listed twice"));
        }
        *slot = match s {
            None => UNBOUND,
            Some(s) => match by_str.get(s) {
                Some(&c) => c,
                None => {
                    if classes.len() == MAX_CLASSES {
                        return bad(format!("more than {MAX_CLASSES} locality strings"));
                    }
                    let c = classes.len() as u16;
                    classes.push(s);
                    by_str.insert(s, c);
                    c
                }
            },
        };
    }
    let n = classes.len();
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    for w in [first, span, n as u32] {
        out.extend_from_slice(&w.to_le_bytes());
    }
    for c in &class {
        out.extend_from_slice(&c.to_le_bytes());
    }
    let prefixed: Vec<String> = classes.iter().map(|s| format!("hwloc:{s}")).collect();
    for a in &prefixed {
        for b in &prefixed {
            // Strings this crate wrote have known tags: an error leaves the node only.
            let loc = relative_locality(a, b).unwrap_or(bits::SHARE_NODE);
            out.extend_from_slice(&loc.to_le_bytes());
        }
    }
    while out.len() % 4 != 0 {
        out.push(0);
    }
    let mut off = 0u32;
    for s in classes.iter().map(|s| s.len()).chain([0]) {
        out.extend_from_slice(&off.to_le_bytes());
        off += s as u32;
    }
    for s in &classes {
        out.extend_from_slice(s.as_bytes());
    }
    Ok(out)
}

/// A validated table, read in place.
#[derive(Clone, Copy, Debug)]
pub struct LocalityTable<'a> {
    first: u32,
    span: u32,
    n: usize,
    class: &'a [u8],
    matrix: &'a [u8],
    offs: &'a [u8],
    strings: &'a [u8],
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

#[inline]
fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[2 * i], b[2 * i + 1]])
}

impl<'a> LocalityTable<'a> {
    /// Read `bytes` as a table, checking its header and that the regions it names fit: O(1).
    /// Lookups check the class and offsets they read, so corrupt bytes give `None`, never a
    /// panic or a read out of bounds.
    pub fn new(bytes: &'a [u8]) -> Result<Self, TableError> {
        if bytes.len() < 16 || &bytes[..4] != MAGIC {
            return bad("not a table (magic)");
        }
        let (first, span, n) = (
            u32_at(bytes, 4),
            u32_at(bytes, 8),
            u32_at(bytes, 12) as usize,
        );
        if span == 0 || span > MAX_SPAN || first.checked_add(span - 1).is_none() {
            return bad(format!("span {span} from rank {first}"));
        }
        if n > MAX_CLASSES {
            return bad(format!("{n} classes"));
        }
        let class_end = 16 + 2 * span as usize;
        let matrix_end = class_end + 2 * n * n;
        let offs_start = matrix_end.next_multiple_of(4);
        let offs_end = offs_start + 4 * (n + 1);
        if bytes.len() < offs_end {
            return bad("truncated");
        }
        Ok(LocalityTable {
            first,
            span,
            n,
            class: &bytes[16..class_end],
            matrix: &bytes[class_end..matrix_end],
            offs: &bytes[offs_start..offs_end],
            strings: &bytes[offs_end..],
        })
    }

    /// Check every class and string offset too ([`LocalityTable::new`] checks the layout
    /// only: a lookup checks what it reads, so that one costs O(1) per mapping).
    pub fn validate(&self) -> Result<(), TableError> {
        let t = self;
        let (first, span, n) = (t.first, t.span, t.n);
        for i in 0..span as usize {
            let c = u16_at(t.class, i);
            if c != NOT_LOCAL && c != UNBOUND && c as usize >= n {
                return bad(format!("rank {} has class {c} of {n}", first as usize + i));
            }
        }
        let mut prev = 0;
        for i in 0..=n {
            let o = u32_at(t.offs, 4 * i) as usize;
            if o < prev || o > t.strings.len() {
                return bad(format!("string offset {o}"));
            }
            prev = o;
        }
        if prev != t.strings.len() || std::str::from_utf8(t.strings).is_err() {
            return bad("strings");
        }
        Ok(())
    }

    #[inline]
    fn class_of(&self, rank: u32) -> u16 {
        let c = match rank.wrapping_sub(self.first) {
            i if i < self.span => u16_at(self.class, i as usize),
            _ => NOT_LOCAL,
        };
        // A class past the matrix (corrupt bytes) is no locality.
        if c < UNBOUND && c as usize >= self.n {
            NOT_LOCAL
        } else {
            c
        }
    }

    /// The relative locality of two ranks; `None` when either is not a local rank of the
    /// table (the table cannot say: another node, or not this namespace's).
    #[inline]
    pub fn lookup(&self, a: u32, b: u32) -> Option<u16> {
        let (ca, cb) = (self.class_of(a), self.class_of(b));
        if ca == NOT_LOCAL || cb == NOT_LOCAL {
            return None;
        }
        if ca == UNBOUND || cb == UNBOUND {
            return Some(bits::SHARE_NODE);
        }
        Some(u16_at(self.matrix, ca as usize * self.n + cb as usize))
    }

    /// The locality string of a local rank (without `hwloc:`), `None` when it has none.
    pub fn string_of(&self, rank: u32) -> Option<&'a str> {
        let c = self.class_of(rank);
        (c != NOT_LOCAL && c != UNBOUND).then(|| self.class_str(c as usize))
    }

    fn class_str(&self, c: usize) -> &'a str {
        let (s, e) = (
            u32_at(self.offs, 4 * c) as usize,
            u32_at(self.offs, 4 * c + 4) as usize,
        );
        // Checked in new(): offsets ascend within the strings, which are UTF-8 as a whole; a
        // boundary inside a character gives "", never a panic.
        self.strings
            .get(s..e)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    /// The class of a locality string (without `hwloc:`), to answer a pair of strings.
    pub fn class_of_str(&self, s: &str) -> Option<u16> {
        (0..self.n)
            .find(|&c| self.class_str(c) == s)
            .map(|c| c as u16)
    }

    /// The relative locality of two classes.
    pub fn by_class(&self, a: u16, b: u16) -> Option<u16> {
        let (a, b) = (a as usize, b as usize);
        (a < self.n && b < self.n).then(|| u16_at(self.matrix, a * self.n + b))
    }

    /// Distinct locality strings.
    pub fn classes(&self) -> usize {
        self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_answers_what_strings_answer() {
        let s = ["SK0:CR0:HT0", "SK0:CR1:HT1", "SK1:CR2:HT2"];
        let ranks = [
            (4, Some(s[0])),
            (5, Some(s[1])),
            (7, Some(s[2])),
            (8, None),
            (9, Some(s[0])),
        ];
        let bytes = build(&ranks).unwrap();
        let t = LocalityTable::new(&bytes).unwrap();
        t.validate().unwrap();
        assert_eq!(t.classes(), 3);
        for &(a, sa) in &ranks {
            for &(b, sb) in &ranks {
                let want = match (sa, sb) {
                    (Some(x), Some(y)) => {
                        relative_locality(&format!("hwloc:{x}"), &format!("hwloc:{y}")).unwrap()
                    }
                    _ => bits::SHARE_NODE,
                };
                assert_eq!(t.lookup(a, b), Some(want), "{a} {b}");
            }
        }
        assert_eq!(t.lookup(6, 4), None);
        assert_eq!(t.lookup(3, 4), None);
        assert_eq!(t.lookup(u32::MAX, 4), None);
        assert_eq!(t.string_of(9), Some(s[0]));
        assert_eq!(t.string_of(8), None);
        assert_eq!(t.class_of_str(s[2]), Some(2));
    }

    #[test]
    fn hostile_bytes_are_refused_not_panicking() {
        let bytes = build(&[(0, Some("SK0")), (1, Some("SK1"))]).unwrap();
        assert!(LocalityTable::new(&bytes).unwrap().validate().is_ok());
        // A class past the matrix is no locality, whether or not validate() was asked.
        let mut b = bytes.clone();
        b[16] = 9;
        let t = LocalityTable::new(&b).unwrap();
        assert!(t.validate().is_err());
        assert_eq!(t.lookup(0, 1), None);
        for cut in 0..bytes.len() {
            let _ = LocalityTable::new(&bytes[..cut]);
        }
        for i in 0..bytes.len() {
            for v in [0u8, 1, 0x7f, 0xff] {
                let mut b = bytes.clone();
                b[i] = v;
                if let Ok(t) = LocalityTable::new(&b) {
                    let _ = t.validate();
                    for r in 0..4 {
                        let _ = (t.lookup(r, 0), t.string_of(r));
                    }
                }
            }
        }
        assert!(build(&[(0, None), (0, None)]).is_err());
        assert!(build(&[]).is_err());
    }
}
