//! One process's commit as its host hands it over: byte objects borrowed where the host holds
//! them (they go from there straight into the pack), other values archived once. What
//! [`PostedParts::stage_small`](super::PostedParts::stage_small) publishes without building a
//! table; any other commit goes through a [`FenceBatch`](super::FenceBatch).

#![forbid(unsafe_code)]

use smallvec::SmallVec;

use super::{check_poster, Scope};
use crate::error::Result;
use crate::layout::ENTRY_RAW_BYTES;
use crate::table::small::{Item, Items, INLINE};
use crate::value::Value;

/// The values one process committed, in put order (the last put of a key wins, whatever its
/// scope). Keys are not checked here: a commit is published this way only when every key is
/// one the namespace has posted (and so checked) before.
pub struct Commit<'a> {
    rank: u32,
    /// Inline up to `INLINE` values: a commit of a few keys allocates nothing.
    values: SmallVec<[(u16, &'a str, Src<'a>); INLINE]>,
    arena: Vec<u8>,
}

/// Where a value's stored bytes are.
enum Src<'a> {
    /// A byte object's bytes, in the host's memory (stored raw).
    Bytes(&'a [u8]),
    /// An archive in the commit's arena: (offset, length).
    Archived(usize, usize),
}

impl<'a> Commit<'a> {
    /// An empty commit of `rank` (refused for a special rank), with room for `values` values.
    pub fn new(rank: u32, values: usize) -> Result<Commit<'a>> {
        check_poster(rank)?;
        Ok(Commit {
            rank,
            values: SmallVec::with_capacity(values),
            arena: Vec::new(),
        })
    }

    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// Add a `PMIX_BYTE_OBJECT` value from its bytes, which stay where they are.
    pub fn put_bytes(&mut self, scope: Scope, key: &'a str, bytes: &'a [u8]) {
        let class = scope.realm(self.rank).class_id().0;
        self.values.push((class, key, Src::Bytes(bytes)));
    }

    /// Add a value (a byte object borrowed, anything else archived now).
    pub fn put(&mut self, scope: Scope, key: &'a str, value: &'a Value) -> Result<()> {
        if let Value::ByteObject(bytes) = value {
            self.put_bytes(scope, key, bytes);
            return Ok(());
        }
        let archived = value.archive()?;
        let at = self.arena.len();
        self.arena.extend_from_slice(&archived);
        let class = scope.realm(self.rank).class_id().0;
        self.values
            .push((class, key, Src::Archived(at, archived.len())));
        Ok(())
    }

    /// Each key's last value, as the rank's table holds it, in key byte order.
    pub(crate) fn latest(&self) -> Items<'_> {
        let mut order: SmallVec<[usize; INLINE]> = (0..self.values.len()).collect();
        // By key, then put order: the last of each run wins. (An unstable sort on both needs
        // no scratch buffer, which a stable one takes on the stack.)
        order.sort_unstable_by(|&a, &b| {
            (self.values[a].1.as_bytes(), a).cmp(&(self.values[b].1.as_bytes(), b))
        });
        let mut out = Items::with_capacity(order.len());
        for (n, &i) in order.iter().enumerate() {
            let (class, key, ref src) = self.values[i];
            if order.get(n + 1).is_some_and(|&j| self.values[j].1 == key) {
                continue;
            }
            let (flags, bytes) = match *src {
                Src::Bytes(b) => (ENTRY_RAW_BYTES, b),
                Src::Archived(at, len) => (0, &self.arena[at..at + len]),
            };
            out.push(Item {
                class,
                key,
                flags,
                bytes,
            });
        }
        out
    }

    /// Keys in put order (the first put of each).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.values.iter().map(|(_, k, _)| *k)
    }
}
