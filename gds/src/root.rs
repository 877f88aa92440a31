//! Root segments (format.md section 5): where each (namespace, part)'s table is (a file or a
//! place in a pack) in one generation of the store.

#![forbid(unsafe_code)]

use std::cmp::Ordering;
use std::sync::Arc;

use crate::bytes::{slice_at, u32_at, u64_at, Encoder};
use crate::error::{Error, Result};
use crate::layout::{key_hash, Kind, TableRef, HEADER_LEN, MAX_NSPACE_LEN, REGION_ALIGN};
use crate::raw::RoMap;
use crate::segment::encode_header;

/// One record of a root, as the writer gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefSpec<'a> {
    /// `key_hash` of `name`.
    pub name_hash: u64,
    pub name: &'a str,
    pub nsid: u32,
    pub part: u32,
    /// Where the table is: its file's `gen`, or its place in a pack (format.md section 5).
    pub table_at: u64,
}

/// Encode a root segment for `refs`, given in root order: sorted by (`name_hash`, name,
/// part), each once (the writer keeps its tables in that order).
pub fn encode(generation: u64, refs: &[RefSpec<'_>]) -> Result<Vec<u8>> {
    fn order<'a>(r: &RefSpec<'a>) -> (u64, &'a [u8], u32) {
        (r.name_hash, r.name.as_bytes(), r.part)
    }
    if refs.windows(2).any(|w| order(&w[0]) >= order(&w[1])) {
        return Err(Error::InvalidArgument(
            "root records out of order or repeated".into(),
        ));
    }
    debug_assert!(refs
        .iter()
        .all(|r| r.name_hash == key_hash(r.name.as_bytes())));
    let mut enc = Encoder::default();
    encode_header(&mut enc, Kind::Root, generation, 0);
    enc.u32(refs.len() as u32);
    enc.u32(0);
    let refs_off = (HEADER_LEN + 32) as u64;
    let names_off = refs_off + (refs.len() * size_of::<TableRef>()) as u64;
    enc.u64(refs_off);
    enc.u64(names_off);
    let names_len_at = enc.buf.len();
    enc.u64(0);
    // The tables of one namespace are adjacent (sorted by name first) and share its name's
    // bytes: a namespace of many tables (posted rank tables) costs its name once.
    let mut names: Vec<&str> = Vec::new();
    let mut name_off = 0u32;
    for r in refs {
        if r.name.is_empty() || r.name.len() > MAX_NSPACE_LEN {
            return Err(Error::InvalidArgument(format!(
                "bad namespace name {:?}",
                r.name
            )));
        }
        if names.last() != Some(&r.name) {
            if let Some(prev) = names.last() {
                name_off += prev.len() as u32;
            }
            names.push(r.name);
        }
        enc.u64(r.name_hash);
        enc.u32(name_off);
        enc.u32(r.name.len() as u32);
        enc.u32(r.nsid);
        enc.u32(r.part);
        enc.u64(r.table_at);
    }
    let mut names_len = 0u64;
    for name in &names {
        enc.bytes(name.as_bytes());
        names_len += name.len() as u64;
    }
    enc.put_u64(names_len_at, names_len);
    enc.pad_to(REGION_ALIGN);
    let total = enc.len();
    enc.put_u64(32, total);
    Ok(enc.buf)
}

/// A mapped, validated root.
pub struct RootView {
    map: Arc<RoMap>,
    count: usize,
    refs_off: usize,
    names_off: u64,
    names_len: u64,
}

/// One reference read from a root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefView<'a> {
    pub name: &'a [u8],
    pub nsid: u32,
    pub part: u32,
    /// The table file's `gen`, or with `layout::PLACE_PACKED` set its place in a pack.
    pub table_at: u64,
}

const REF: usize = size_of::<TableRef>();

impl RootView {
    /// Validate a mapped root segment whose common header was already checked.
    pub fn new(map: Arc<RoMap>) -> Result<RootView> {
        let b = map.bytes();
        let bad = || Error::Corrupt("root header");
        let count = u32_at(b, HEADER_LEN).ok_or_else(bad)? as usize;
        let refs_off = u64_at(b, HEADER_LEN + 8).ok_or_else(bad)?;
        let names_off = u64_at(b, HEADER_LEN + 16).ok_or_else(bad)?;
        let names_len = u64_at(b, HEADER_LEN + 24).ok_or_else(bad)?;
        if count > 0
            && (refs_off % REGION_ALIGN as u64 != 0
                || slice_at(b, refs_off, (count * REF) as u64).is_none())
        {
            return Err(Error::Corrupt("root references out of bounds"));
        }
        slice_at(b, names_off, names_len).ok_or(Error::Corrupt("root names out of bounds"))?;
        let view = RootView {
            count,
            refs_off: refs_off as usize,
            names_off,
            names_len,
            map,
        };
        let b = view.map.bytes();
        let mut prev: Option<(u64, &[u8], u32)> = None;
        for i in 0..count {
            let r = view.get(i).ok_or(Error::Corrupt("root reference"))?;
            let stored =
                u64_at(b, view.refs_off + i * REF).ok_or(Error::Corrupt("root reference"))?;
            // Records of one name are adjacent: its hash is computed once.
            let checked = prev.is_some_and(|p| p.0 == stored && p.1 == r.name);
            if !checked && stored != key_hash(r.name) {
                return Err(Error::Corrupt("root name hash"));
            }
            let key = (stored, r.name, r.part);
            if prev.is_some_and(|p| p >= key) {
                return Err(Error::Corrupt("root references not sorted"));
            }
            prev = Some(key);
        }
        Ok(view)
    }

    pub fn len(&self) -> usize {
        self.count
    }

    /// Reference `i`, or `None` if its name is out of bounds.
    pub fn get(&self, i: usize) -> Option<RefView<'_>> {
        if i >= self.count {
            return None;
        }
        let b = self.map.bytes();
        let rec = self.refs_off + i * REF;
        let name_off = u32_at(b, rec + 8)? as u64;
        let name_len = u32_at(b, rec + 12)? as u64;
        if name_len == 0 || name_len > MAX_NSPACE_LEN as u64 || name_off + name_len > self.names_len
        {
            return None;
        }
        Some(RefView {
            name: slice_at(b, self.names_off + name_off, name_len)?,
            nsid: u32_at(b, rec + 16)?,
            part: u32_at(b, rec + 20)?,
            table_at: u64_at(b, rec + 24)?,
        })
    }

    /// Index of (`name`, `part`), by binary search on (hash, name, part). The stored hash is
    /// compared first: names are only read when hashes are equal.
    pub fn find(&self, name: &str, part: u32) -> Option<usize> {
        let want_hash = key_hash(name.as_bytes());
        let b = self.map.bytes();
        let (mut lo, mut hi) = (0usize, self.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let ord = match u64_at(b, self.refs_off + mid * REF)?.cmp(&want_hash) {
                Ordering::Equal => {
                    let r = self.get(mid)?;
                    (r.name, r.part).cmp(&(name.as_bytes(), part))
                }
                ord => ord,
            };
            match ord {
                Ordering::Less => lo = mid + 1,
                Ordering::Greater => hi = mid,
                Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}

/// The root of a generation: `prev` (a root this writer encoded) with `changes` applied, each a
/// table of a namespace `prev` already names, given in root order: a record of the same
/// (name, part) gets the change's `table_at`, any other is inserted in order. `None` when a
/// change names a namespace `prev` does not (its name is not in `prev`'s names region): encode
/// the root anew. A copy of `prev`'s records with a few spliced in, where [`encode`] visits
/// every table of the store: a commit's root costs a copy of the previous one.
///
/// This is the length of that root.
pub fn patch_len(prev: &[u8], changes: &[RefSpec<'_>]) -> Option<usize> {
    Some(splice(prev, changes, &mut Count)?.total)
}

/// Write the root [`patch_len`] measures into `out`, which must be exactly that long (the
/// writer's pack, where the root is published from: no buffer of it is built apart). `None`
/// as [`patch_len`], or when `out` is not that long.
pub fn patch_into(
    prev: &[u8],
    generation: u64,
    changes: &[RefSpec<'_>],
    out: &mut [u8],
) -> Option<()> {
    let mut cur = Cursor { buf: out, at: 0 };
    let s = splice(prev, changes, &mut cur)?;
    let Cursor { buf: out, at } = cur;
    if out.len() != s.total || at > s.total {
        return None;
    }
    out[at..].fill(0);
    out[24..32].copy_from_slice(&generation.to_ne_bytes());
    out[32..40].copy_from_slice(&(s.total as u64).to_ne_bytes());
    out[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&(s.count as u32).to_ne_bytes());
    out[HEADER_LEN + 16..HEADER_LEN + 24].copy_from_slice(&(s.names_off as u64).to_ne_bytes());
    Some(())
}

/// Where [`splice`] writes: nowhere, or a slice.
trait Out {
    fn put(&mut self, b: &[u8]) -> Option<()>;
}

/// Writes nothing: [`patch_len`] needs only [`Spliced`].
struct Count;

impl Out for Count {
    fn put(&mut self, _: &[u8]) -> Option<()> {
        Some(())
    }
}

struct Cursor<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Out for Cursor<'_> {
    fn put(&mut self, b: &[u8]) -> Option<()> {
        let end = self.at.checked_add(b.len())?;
        self.buf.get_mut(self.at..end)?.copy_from_slice(b);
        self.at = end;
        Some(())
    }
}

/// What [`splice`] made: the new record count, the names region's new offset, the length.
struct Spliced {
    count: usize,
    names_off: usize,
    total: usize,
}

/// Write `prev` up to the end of its names, with `changes` spliced into its records.
fn splice(prev: &[u8], changes: &[RefSpec<'_>], out: &mut impl Out) -> Option<Spliced> {
    let count = u32_at(prev, HEADER_LEN)? as usize;
    let refs_off = u64_at(prev, HEADER_LEN + 8)? as usize;
    let names_off = u64_at(prev, HEADER_LEN + 16)? as usize;
    let names_len = u64_at(prev, HEADER_LEN + 24)? as usize;
    let names = prev.get(names_off..names_off.checked_add(names_len)?)?;
    let record = |i: usize| prev.get(refs_off + i * REF..refs_off + (i + 1) * REF);
    let key = |i: usize| -> Option<(u64, &[u8], u32)> {
        let rec = record(i)?;
        let (off, len) = (u32_at(rec, 8)? as usize, u32_at(rec, 12)? as usize);
        Some((
            u64_at(rec, 0)?,
            names.get(off..off + len)?,
            u32_at(rec, 20)?,
        ))
    };
    out.put(prev.get(..refs_off)?)?;
    let mut next = 0; // the first record of `prev` not copied yet
    let mut added = 0;
    for c in changes {
        let want = (c.name_hash, c.name.as_bytes(), c.part);
        // The first record not before `want`, from `next` on (changes are in root order).
        let (mut lo, mut hi) = (next, count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if key(mid)? < want {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        out.put(prev.get(refs_off + next * REF..refs_off + lo * REF)?)?;
        // The name's place in the names region, from a record of the same name beside it.
        let same_name = |i: usize| key(i).filter(|k| k.0 == want.0 && k.1 == want.1);
        let named = [lo, lo.wrapping_sub(1)]
            .into_iter()
            .find(|&i| i < count && same_name(i).is_some())?;
        let rec = record(named)?;
        out.put(&c.name_hash.to_ne_bytes())?;
        out.put(&rec[8..16])?;
        out.put(&c.nsid.to_ne_bytes())?;
        out.put(&c.part.to_ne_bytes())?;
        out.put(&c.table_at.to_ne_bytes())?;
        if lo < count && key(lo)? == want {
            next = lo + 1;
        } else {
            next = lo;
            added += 1;
        }
    }
    out.put(prev.get(refs_off + next * REF..names_off + names_len)?)?;
    let moved = added * REF;
    Some(Spliced {
        count: count + added,
        names_off: names_off + moved,
        total: (names_off + moved + names_len).next_multiple_of(REGION_ALIGN),
    })
}
