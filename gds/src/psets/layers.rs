//! The sets as a reader sees them: the base index (the sets as of the last merge) with the
//! delta beside it (sets defined since, and the base's sets deleted or redefined since), read
//! delta first (docs/psets-groups.md "Size and cost"). A define or delete rewrites the delta
//! only; the writer merges it into the base once it outweighs its bound.

#![forbid(unsafe_code)]

use super::index::{IndexView, Member};

/// One generation's sets: base, delta and gone, each an index read in place. A set is named
/// by an id: `i < base.len()` is the base's set `i` (when not gone), `base.len() + j` the
/// delta's set `j`. Ids in ascending order are the definition order.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sets<'a> {
    base: Option<IndexView<'a>>,
    delta: Option<IndexView<'a>>,
    /// Names only (sets without runs): the base's sets deleted or defined again since the
    /// merge. The writer keeps it a subset of the base's names.
    gone: Option<IndexView<'a>>,
}

impl<'a> Sets<'a> {
    /// A generation's sets from its three indexes (any may be absent).
    pub fn new(
        base: Option<IndexView<'a>>,
        delta: Option<IndexView<'a>>,
        gone: Option<IndexView<'a>>,
    ) -> Sets<'a> {
        Sets { base, delta, gone }
    }

    /// One index alone (a group index, or a base without delta).
    pub fn single(ix: IndexView<'a>) -> Sets<'a> {
        Sets::new(Some(ix), None, None)
    }

    fn base_len(&self) -> usize {
        self.base.map_or(0, |b| b.len())
    }

    fn delta_len(&self) -> usize {
        self.delta.map_or(0, |d| d.len())
    }

    fn is_gone(&self, name: &str) -> bool {
        self.gone.is_some_and(|g| g.find(name).is_some())
    }

    fn live_base(&self, i: usize) -> bool {
        match self.base.and_then(|b| b.name(i)) {
            Some(n) => !self.is_gone(n),
            None => false,
        }
    }

    /// How many sets.
    pub fn len(&self) -> usize {
        let gone = self.gone.map_or(0, |g| g.len());
        self.base_len().saturating_sub(gone) + self.delta_len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The ids of every set, in definition order.
    pub fn ids(&self) -> impl Iterator<Item = usize> + '_ {
        let bl = self.base_len();
        (0..bl)
            .filter(move |&i| self.gone.is_none() || self.live_base(i))
            .chain(bl..bl + self.delta_len())
    }

    /// Set `id`'s name.
    pub fn name(&self, id: usize) -> Option<&'a str> {
        let bl = self.base_len();
        if id < bl {
            self.base?.name(id)
        } else {
            self.delta?.name(id - bl)
        }
    }

    /// The set named `name`: the delta's, else the base's unless gone.
    pub fn find(&self, name: &str) -> Option<usize> {
        if let Some(j) = self.delta.and_then(|d| d.find(name)) {
            return Some(self.base_len() + j);
        }
        if self.is_gone(name) {
            return None;
        }
        self.base?.find(name)
    }

    /// Set `id`'s members in order.
    pub fn members(&self, id: usize) -> Vec<Member<'a>> {
        let bl = self.base_len();
        let (ix, i) = if id < bl {
            (self.base, id)
        } else {
            (self.delta, id - bl)
        };
        ix.map_or_else(Vec::new, |ix| ix.members(i).collect())
    }

    /// How many members set `id` has (a wildcard member counts as one), from its runs: no
    /// member is built.
    pub fn member_count(&self, id: usize) -> u64 {
        let bl = self.base_len();
        let (ix, i) = if id < bl {
            (self.base, id)
        } else {
            (self.delta, id - bl)
        };
        ix.map_or(0, |ix| ix.member_count(i))
    }

    /// The sets holding process (`nspace`, `rank`), in definition order.
    pub fn sets_of(&self, nspace: &str, rank: u32) -> Vec<usize> {
        let bl = self.base_len();
        let mut out: Vec<usize> = match self.base {
            Some(b) => b.sets_of(nspace, rank),
            None => Vec::new(),
        };
        if self.gone.is_some() {
            out.retain(|&i| self.live_base(i));
        }
        if let Some(d) = self.delta {
            out.extend(d.sets_of(nspace, rank).into_iter().map(|j| bl + j));
        }
        out
    }
}
