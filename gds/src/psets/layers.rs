//! The sets as a reader sees them: the chunks of a generation, each a set index read in place,
//! in the order the chunk list names them (docs/psets-groups.md "Size and cost"). A reader
//! consults each chunk: a name's set is found by a binary search per chunk, a process's sets
//! by a search of each chunk's runs.

#![forbid(unsafe_code)]

use super::index::{IndexView, Member};

/// One generation's sets. A set is named by an id: the sets of the chunks before its own, plus
/// its number in its chunk. Ids in ascending order are the definition order.
#[derive(Clone, Debug, Default)]
pub struct Sets<'a> {
    chunks: Vec<IndexView<'a>>,
    /// The id of each chunk's first set, and the number of sets last.
    starts: Vec<usize>,
}

impl<'a> Sets<'a> {
    /// A generation's sets from its chunks in order.
    pub fn new(chunks: Vec<IndexView<'a>>) -> Sets<'a> {
        let mut starts = Vec::with_capacity(chunks.len() + 1);
        let mut at = 0;
        for c in &chunks {
            starts.push(at);
            at += c.len();
        }
        starts.push(at);
        Sets { chunks, starts }
    }

    /// One index alone (a group index, or a single chunk).
    pub fn single(ix: IndexView<'a>) -> Sets<'a> {
        Sets::new(vec![ix])
    }

    /// How many chunks.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// The chunk holding set `id`, and its number there.
    fn locate(&self, id: usize) -> Option<(IndexView<'a>, usize)> {
        if id >= self.len() {
            return None;
        }
        // The last chunk starting at or below `id` that is not empty.
        let k = self.starts.partition_point(|&s| s <= id) - 1;
        Some((*self.chunks.get(k)?, id - self.starts[k]))
    }

    /// How many sets.
    pub fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids of every set, in definition order.
    pub fn ids(&self) -> impl Iterator<Item = usize> + '_ {
        0..self.len()
    }

    /// Set `id`'s name.
    pub fn name(&self, id: usize) -> Option<&'a str> {
        let (ix, i) = self.locate(id)?;
        ix.name(i)
    }

    /// The set named `name` (the first chunk's holding it).
    pub fn find(&self, name: &str) -> Option<usize> {
        self.chunks
            .iter()
            .zip(&self.starts)
            .find_map(|(c, &s)| c.find(name).map(|i| s + i))
    }

    /// Set `id`'s members in order.
    pub fn members(&self, id: usize) -> Vec<Member<'a>> {
        self.locate(id)
            .map_or_else(Vec::new, |(ix, i)| ix.members(i).collect())
    }

    /// How many members set `id` has (a wildcard member counts as one), from its runs: no
    /// member is built.
    pub fn member_count(&self, id: usize) -> u64 {
        self.locate(id).map_or(0, |(ix, i)| ix.member_count(i))
    }

    /// The sets holding process (`nspace`, `rank`), in definition order.
    pub fn sets_of(&self, nspace: &str, rank: u32) -> Vec<usize> {
        let mut out = Vec::new();
        for (c, &s) in self.chunks.iter().zip(&self.starts) {
            out.extend(c.sets_of(nspace, rank).into_iter().map(|i| s + i));
        }
        out
    }
}
