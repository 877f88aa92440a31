//! The set index: named, ordered sets of processes stored as runs of consecutive ranks, with a
//! search structure for "which sets hold this process" that is not a list per process
//! (docs/psets-groups.md "Size and cost"). One byte string, little-endian `u32`s whatever the
//! store's byte order; a reader checks every offset it follows, so a forged index answers
//! "nothing" rather than reading out of bounds.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// `PMIX_RANK_WILDCARD`: a member naming every process of its namespace.
pub use crate::jobdata::query::RANK_WILDCARD;

/// The index's version word (offset 0).
pub const VERSION: u32 = 1;
/// Words of the header: version, sets, namespaces, runs, string bytes.
const HEADER_WORDS: usize = 5;
const NS_WORDS: usize = 2;
const SET_WORDS: usize = 4;
const RUN_WORDS: usize = 3;
const STAB_WORDS: usize = 5;

/// A run of members: `count` consecutive ranks of one namespace from `first` (a special rank,
/// such as `PMIX_RANK_WILDCARD`, is a run of 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub ns: u32,
    pub first: u32,
    pub count: u32,
}

/// Members in their given order, as runs: a member one rank above the previous one (same
/// namespace, both ordinary ranks) extends its run.
pub fn push_member(runs: &mut Vec<Run>, ns: u32, rank: u32) {
    if let Some(last) = runs.last_mut() {
        let ordinary = last.first < super::RANK_VALID && rank < super::RANK_VALID;
        if ordinary && last.ns == ns && last.first.checked_add(last.count) == Some(rank) {
            last.count += 1;
            return;
        }
    }
    runs.push(Run {
        ns,
        first: rank,
        count: 1,
    });
}

/// One set as the writer keeps it: name and runs (namespace numbers of the writer's table).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetSpec<'a> {
    pub name: &'a str,
    pub runs: &'a [Run],
}

fn put(out: &mut Vec<u8>, w: u32) {
    out.extend_from_slice(&w.to_le_bytes());
}

fn count(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::InvalidArgument(format!("too many {what} (max 2^32-1)")))
}

/// Encode `sets` (in their order: definition order) over the namespace names `nspaces` (a run's
/// `ns` indexes it). Namespaces are renumbered in byte order so that equal sets give equal bytes.
/// Costs the sets given (and their namespaces), not `nspaces`: a chunk of a few sets over a
/// writer's many namespaces encodes only those it names.
pub fn encode<N: AsRef<str>>(nspaces: &[N], sets: &[SetSpec<'_>]) -> Result<Vec<u8>> {
    // Namespace names sorted (a reader binary-searches them); old number -> new.
    let used: BTreeMap<&str, u32> = sets
        .iter()
        .flat_map(|s| s.runs.iter())
        .filter_map(|r| nspaces.get(r.ns as usize).map(|n| (n.as_ref(), 0)))
        .collect();
    let mut renum: BTreeMap<&str, u32> = BTreeMap::new();
    for (i, (n, _)) in used.iter().enumerate() {
        renum.insert(n, count(i, "namespaces")?);
    }
    let ns_of = |old: u32| -> Result<u32> {
        let name = nspaces
            .get(old as usize)
            .ok_or_else(|| Error::InvalidArgument("run names no namespace".into()))?;
        Ok(renum[name.as_ref()])
    };
    let nruns: usize = sets.iter().map(|s| s.runs.len()).sum();
    let mut strings = Vec::new();
    let mut ns_words = Vec::with_capacity(renum.len() * NS_WORDS);
    for n in renum.keys() {
        ns_words.push(count(strings.len(), "string bytes")?);
        ns_words.push(count(n.len(), "string bytes")?);
        strings.extend_from_slice(n.as_bytes());
    }
    let mut set_words = Vec::with_capacity(sets.len() * SET_WORDS);
    let mut run_words = Vec::with_capacity(nruns * RUN_WORDS);
    // (ns, first, last, set)
    let mut stab: Vec<(u32, u32, u32, u32)> = Vec::with_capacity(nruns);
    for (si, s) in sets.iter().enumerate() {
        let si = count(si, "sets")?;
        set_words.push(count(strings.len(), "string bytes")?);
        set_words.push(count(s.name.len(), "string bytes")?);
        set_words.push(count(run_words.len() / RUN_WORDS, "runs")?);
        set_words.push(count(s.runs.len(), "runs")?);
        strings.extend_from_slice(s.name.as_bytes());
        for r in s.runs {
            if r.count == 0 {
                return Err(Error::InvalidArgument("empty run".into()));
            }
            let ns = ns_of(r.ns)?;
            run_words.extend_from_slice(&[ns, r.first, r.count]);
            let (first, last) = if r.first == RANK_WILDCARD {
                (0, u32::MAX)
            } else {
                let last = r
                    .first
                    .checked_add(r.count - 1)
                    .ok_or_else(|| Error::InvalidArgument("run beyond the largest rank".into()))?;
                (r.first, last)
            };
            stab.push((ns, first, last, si));
        }
    }
    stab.sort_unstable();
    let mut by_name: Vec<u32> = (0..count(sets.len(), "sets")?).collect();
    by_name.sort_by(|&a, &b| sets[a as usize].name.cmp(sets[b as usize].name));

    let mut out = Vec::new();
    for w in [
        VERSION,
        count(sets.len(), "sets")?,
        count(renum.len(), "namespaces")?,
        count(nruns, "runs")?,
        count(strings.len(), "string bytes")?,
    ] {
        put(&mut out, w);
    }
    for w in ns_words
        .iter()
        .chain(&set_words)
        .chain(&by_name)
        .chain(&run_words)
    {
        put(&mut out, *w);
    }
    // The running largest last rank of the namespace's entries, wildcards left out (they are
    // found apart, so they do not make every walk go back to the namespace's first entry).
    let mut max_last = 0;
    let mut prev_ns = None;
    for &(ns, first, last, set) in &stab {
        if prev_ns != Some(ns) {
            max_last = 0;
            prev_ns = Some(ns);
        }
        if !is_wildcard_entry(first, last) {
            max_last = max_last.max(last);
        }
        for w in [ns, first, last, set, max_last] {
            put(&mut out, w);
        }
    }
    out.extend_from_slice(&strings);
    Ok(out)
}

/// A set index read in place. Built by [`IndexView::new`], which checks that every region lies
/// inside the bytes; each access checks what it follows.
#[derive(Clone, Copy, Debug)]
pub struct IndexView<'a> {
    bytes: &'a [u8],
    nsets: usize,
    nns: usize,
    nruns: usize,
    ns_off: usize,
    sets_off: usize,
    by_name_off: usize,
    runs_off: usize,
    stab_off: usize,
    strings: &'a [u8],
}

/// A member as the index holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    pub nspace: &'a str,
    pub rank: u32,
}

impl<'a> IndexView<'a> {
    /// The index in `bytes`, or `Corrupt` when its regions do not fit.
    pub fn new(bytes: &'a [u8]) -> Result<IndexView<'a>> {
        const BAD: Error = Error::Corrupt("set index does not fit its value");
        let word = |i: usize| -> Result<usize> {
            let b = bytes.get(i * 4..i * 4 + 4).ok_or(BAD)?;
            Ok(u32::from_le_bytes(b.try_into().map_err(|_| BAD)?) as usize)
        };
        if word(0)? != VERSION as usize {
            return Err(Error::Corrupt("set index of an unknown version"));
        }
        let (nsets, nns, nruns, nstr) = (word(1)?, word(2)?, word(3)?, word(4)?);
        let mut at = HEADER_WORDS * 4;
        let mut region = |words: usize, n: usize| -> Result<usize> {
            let start = at;
            let len = words
                .checked_mul(n)
                .and_then(|w| w.checked_mul(4))
                .ok_or(BAD)?;
            at = at.checked_add(len).ok_or(BAD)?;
            Ok(start)
        };
        let ns_off = region(NS_WORDS, nns)?;
        let sets_off = region(SET_WORDS, nsets)?;
        let by_name_off = region(1, nsets)?;
        let runs_off = region(RUN_WORDS, nruns)?;
        let stab_off = region(STAB_WORDS, nruns)?;
        let end = at.checked_add(nstr).ok_or(BAD)?;
        if end > bytes.len() {
            return Err(BAD);
        }
        Ok(IndexView {
            bytes,
            nsets,
            nns,
            nruns,
            ns_off,
            sets_off,
            by_name_off,
            runs_off,
            stab_off,
            strings: &bytes[at..end],
        })
    }

    #[inline]
    fn word(&self, off: usize, i: usize) -> u32 {
        // Inside the bytes: `new` checked every region's end.
        let at = off + i * 4;
        self.bytes
            .get(at..at + 4)
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    }

    fn string(&self, off: u32, len: u32) -> Option<&'a str> {
        let end = (off as usize).checked_add(len as usize)?;
        std::str::from_utf8(self.strings.get(off as usize..end)?).ok()
    }

    /// How many sets.
    pub fn len(&self) -> usize {
        self.nsets
    }

    pub fn is_empty(&self) -> bool {
        self.nsets == 0
    }

    /// Set `i`'s name (definition order).
    pub fn name(&self, i: usize) -> Option<&'a str> {
        if i >= self.nsets {
            return None;
        }
        let b = self.sets_off + i * SET_WORDS * 4;
        self.string(self.word(b, 0), self.word(b, 1))
    }

    fn nspace(&self, i: u32) -> Option<&'a str> {
        let i = i as usize;
        if i >= self.nns {
            return None;
        }
        let b = self.ns_off + i * NS_WORDS * 4;
        self.string(self.word(b, 0), self.word(b, 1))
    }

    /// The set named `name`, by binary search of the name order.
    pub fn find(&self, name: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.nsets);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let set = self.word(self.by_name_off, mid) as usize;
            match self.name(set)?.cmp(name) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(set),
            }
        }
        None
    }

    /// Set `i`'s runs, in member order: (namespace, first, count).
    pub fn runs(&self, i: usize) -> impl Iterator<Item = (&'a str, u32, u32)> + '_ {
        let b = self.sets_off + i * SET_WORDS * 4;
        let (first, n) = if i < self.nsets {
            (self.word(b, 2) as usize, self.word(b, 3) as usize)
        } else {
            (0, 0)
        };
        let n = if first.checked_add(n).is_some_and(|e| e <= self.nruns) {
            n
        } else {
            0
        };
        (first..first + n).filter_map(move |r| {
            let rb = self.runs_off + r * RUN_WORDS * 4;
            let ns = self.nspace(self.word(rb, 0))?;
            Some((ns, self.word(rb, 1), self.word(rb, 2)))
        })
    }

    /// How many members set `i` has (a wildcard member counts as one).
    pub fn member_count(&self, i: usize) -> u64 {
        self.runs(i).map(|(_, _, c)| u64::from(c)).sum()
    }

    /// Set `i`'s members in order.
    pub fn members(&self, i: usize) -> impl Iterator<Item = Member<'a>> + '_ {
        self.runs(i).flat_map(|(nspace, first, c)| {
            (0..c).map(move |k| Member {
                nspace,
                rank: first.wrapping_add(k),
            })
        })
    }

    /// Set `i`'s member at position `pos` (its group rank), walking the runs.
    pub fn member_at(&self, i: usize, pos: u32) -> Option<Member<'a>> {
        let mut left = pos;
        for (nspace, first, c) in self.runs(i) {
            if left < c {
                return Some(Member {
                    nspace,
                    rank: first.wrapping_add(left),
                });
            }
            left -= c;
        }
        None
    }

    /// The sets holding process (`nspace`, `rank`), in definition order: the run search
    /// entries of the namespace sorted by first rank, each with the largest last rank up to it,
    /// so the walk back from the last run starting at or below `rank` stops as soon as no
    /// earlier run can reach it.
    pub fn sets_of(&self, nspace: &str, rank: u32) -> Vec<usize> {
        let mut out = Vec::new();
        let Some(ns) = self.find_ns(nspace) else {
            return out;
        };
        let e = |i: usize, w: usize| self.word(self.stab_off, i * STAB_WORDS + w);
        // The namespace's entries [lo, hi).
        let lo = partition(0, self.nruns, |i| e(i, 0) < ns);
        let hi = partition(lo, self.nruns, |i| e(i, 0) <= ns);
        let p = partition(lo, hi, |i| e(i, 1) <= rank);
        for i in (lo..p).rev() {
            if e(i, 4) < rank {
                break;
            }
            if e(i, 2) >= rank && !is_wildcard_entry(e(i, 1), e(i, 2)) {
                out.push(e(i, 3) as usize);
            }
        }
        // Wildcard members: at the end of the entries starting at rank 0.
        for i in lo..hi {
            if e(i, 1) != 0 {
                break;
            }
            if is_wildcard_entry(0, e(i, 2)) {
                out.push(e(i, 3) as usize);
            }
        }
        out.sort_unstable();
        out.dedup();
        out.retain(|&s| s < self.nsets);
        out
    }

    fn find_ns(&self, nspace: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0u32, u32::try_from(self.nns).ok()?);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.nspace(mid)?.cmp(nspace) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}

/// A wildcard member's search entry: every rank, `[0, u32::MAX]` (an ordinary run ends below
/// `PMIX_RANK_VALID`).
fn is_wildcard_entry(first: u32, last: u32) -> bool {
    first == 0 && last == u32::MAX
}

/// The first index in `[lo, hi)` where `pred` is false (`pred` true then false).
fn partition(mut lo: usize, mut hi: usize, pred: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
