//! The ranks that have a table of their own in a namespace's posted data, each with the size
//! of its values, and their sum: one sorted array. Ranks mostly commit in order, so a new one
//! is appended, and a commit writes one slot where an ordered map would write a node (and, in
//! a server that forks its clients while they commit, copy its page).

#![forbid(unsafe_code)]

#[derive(Clone, Default)]
pub(super) struct RankSizes {
    sizes: Vec<(u32, usize)>,
    total: usize,
}

impl RankSizes {
    fn find(&self, rank: u32) -> Result<usize, usize> {
        match self.sizes.last() {
            Some(&(last, _)) if last < rank => Err(self.sizes.len()),
            _ => self.sizes.binary_search_by_key(&rank, |&(r, _)| r),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.sizes.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// The sizes' sum: bytes of every rank table's values.
    pub(super) fn total(&self) -> usize {
        self.total
    }

    pub(super) fn contains(&self, rank: u32) -> bool {
        self.find(rank).is_ok()
    }

    pub(super) fn get(&self, rank: u32) -> Option<usize> {
        self.find(rank).ok().map(|i| self.sizes[i].1)
    }

    /// Set `rank`'s size; returns the one it had.
    pub(super) fn insert(&mut self, rank: u32, bytes: usize) -> Option<usize> {
        self.total += bytes;
        let old = match self.find(rank) {
            Ok(i) => Some(std::mem::replace(&mut self.sizes[i].1, bytes)),
            Err(i) => {
                self.sizes.insert(i, (rank, bytes));
                None
            }
        };
        self.total -= old.unwrap_or(0);
        old
    }

    pub(super) fn remove(&mut self, rank: u32) -> Option<usize> {
        let old = self.find(rank).ok().map(|i| self.sizes.remove(i).1);
        self.total -= old.unwrap_or(0);
        old
    }

    /// The ranks, in order.
    pub(super) fn ranks(&self) -> impl Iterator<Item = u32> + '_ {
        self.sizes.iter().map(|&(r, _)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::RankSizes;
    use std::collections::BTreeMap;

    /// Any sequence of inserts and removes leaves what an ordered map does.
    #[test]
    fn same_as_an_ordered_map() {
        let mut sizes = RankSizes::default();
        let mut map = BTreeMap::new();
        let mut x = 0x9e37_79b9_u32;
        for i in 0..4000usize {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let rank = if i.is_multiple_of(3) {
                i as u32 / 3
            } else {
                x % 300
            };
            if x.is_multiple_of(4) {
                assert_eq!(sizes.remove(rank), map.remove(&rank));
            } else {
                assert_eq!(sizes.insert(rank, i), map.insert(rank, i));
            }
            assert_eq!(sizes.get(rank), map.get(&rank).copied());
            assert_eq!(sizes.contains(rank + 1), map.contains_key(&(rank + 1)));
            assert_eq!(sizes.len(), map.len());
            assert_eq!(sizes.total(), map.values().sum::<usize>());
        }
        assert!(sizes.ranks().eq(map.keys().copied()));
    }
}
