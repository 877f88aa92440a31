//! A rank's posted table encoded straight from its values (a commit: one rank, a few keys),
//! with no [`TableBuilder`](super::TableBuilder) built and kept: the same bytes the builder
//! encodes for the same contents (keys numbered in byte order, entries in (class, key) order,
//! the same indexes and padding), written into the caller's buffer, the pack.

use smallvec::SmallVec;

use super::encode::{fill_index, put32, put64, Regions};
use crate::error::{Error, Result};
use crate::layout::{
    entry_hash, key_hash, Entry, KeyEntry, Kind, HEADER_LEN, REGION_ALIGN, VALUE_ALIGN,
};
use crate::segment::header_bytes;

/// One value of the table: its entry class (posted scope), key, entry flags and stored bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item<'a> {
    pub class: u16,
    pub key: &'a str,
    pub flags: u16,
    pub bytes: &'a [u8],
}

/// A commit's values, inline up to this many (on the stack: a server that forks its clients
/// while they commit pays a page copy for each heap page a commit writes, and for each stack
/// page: twice as many would take the commit path's frames over a page or two more).
pub(crate) const INLINE: usize = 16;

/// A commit's items.
pub(crate) type Items<'a> = SmallVec<[Item<'a>; INLINE]>;

/// The table of `rank`'s `items` (distinct keys), planned: sorted, with every offset.
pub(crate) struct RankTable<'a> {
    rank: u32,
    /// By key bytes: the index is the key id.
    by_key: Items<'a>,
    /// Entry order: key ids sorted by (class, key id).
    entries: SmallVec<[u32; INLINE]>,
    r: Regions,
    values_off: usize,
    total: usize,
}

impl<'a> RankTable<'a> {
    /// Plan the table; `items` must hold each key once.
    pub(crate) fn plan(rank: u32, mut by_key: Items<'a>) -> Result<RankTable<'a>> {
        by_key.sort_unstable_by(|a, b| a.key.as_bytes().cmp(b.key.as_bytes()));
        if by_key.windows(2).any(|w| w[0].key == w[1].key) {
            return Err(Error::InvalidArgument(
                "a key twice in one rank table".into(),
            ));
        }
        if by_key.iter().any(|i| i.bytes.len() > u32::MAX as usize) {
            return Err(Error::InvalidArgument("value larger than 4 GiB".into()));
        }
        let mut entries: SmallVec<[u32; INLINE]> = (0..by_key.len() as u32).collect();
        entries.sort_unstable_by_key(|&k| (by_key[k as usize].class, k));
        let n = by_key.len();
        let strings_len: usize = by_key.iter().map(|i| i.key.len()).sum();
        let r = Regions::new(n, strings_len, n);
        let align = |n: usize| n.next_multiple_of(REGION_ALIGN);
        let values_off = r.columns_off.next_multiple_of(VALUE_ALIGN);
        // Each value padded to VALUE_ALIGN, the last (in entry order) to REGION_ALIGN.
        let total = match entries.last() {
            None => align(r.columns_off),
            Some(&last) => {
                let padded: usize = by_key
                    .iter()
                    .map(|i| i.bytes.len().next_multiple_of(VALUE_ALIGN))
                    .sum();
                let last = by_key[last as usize].bytes.len();
                align(values_off + padded - last.next_multiple_of(VALUE_ALIGN) + last)
            }
        };
        Ok(RankTable {
            rank,
            by_key,
            entries,
            r,
            values_off,
            total,
        })
    }

    /// The segment's length.
    pub(crate) fn total_len(&self) -> usize {
        self.total
    }

    /// Bytes of its values (what a merge would copy).
    pub(crate) fn value_bytes(&self) -> usize {
        self.by_key.iter().map(|i| i.bytes.len()).sum()
    }

    /// Write the segment of generation `generation` (header state BUILDING) into `out`,
    /// exactly [`RankTable::total_len`] bytes, every byte of it.
    pub(crate) fn write(&self, out: &mut [u8], generation: u64) -> Result<()> {
        if out.len() != self.total {
            return Err(Error::InvalidArgument(
                "rank table buffer of the wrong size".into(),
            ));
        }
        out.fill(0);
        out[..HEADER_LEN].copy_from_slice(&header_bytes(
            Kind::Table,
            generation,
            self.total as u64,
        ));
        let r = &self.r;
        r.put_header(out);
        let mut homes: SmallVec<[u32; INLINE]> = SmallVec::with_capacity(self.by_key.len());
        let mut str_off = 0usize;
        for (kid, item) in self.by_key.iter().enumerate() {
            let h = key_hash(item.key.as_bytes());
            homes.push((h as usize & r.key_slots.wrapping_sub(1)) as u32);
            let rec = r.keys_off + kid * size_of::<KeyEntry>();
            put64(out, rec, h);
            put32(out, rec + 8, str_off as u32);
            put32(out, rec + 12, item.key.len() as u32);
            let s = r.strings_off + str_off;
            out[s..s + item.key.len()].copy_from_slice(item.key.as_bytes());
            str_off += item.key.len();
        }
        fill_index(
            &mut out[r.key_index_off..r.key_index_off + r.key_slots * 4],
            &homes,
        );

        homes.clear();
        let mask = r.entry_slots.wrapping_sub(1);
        let mut v = self.values_off;
        for (e, &kid) in self.entries.iter().enumerate() {
            let item = &self.by_key[kid as usize];
            let rec = r.entries_off + e * size_of::<Entry>();
            out[rec..rec + 2].copy_from_slice(&item.class.to_ne_bytes());
            out[rec + 2..rec + 4].copy_from_slice(&item.flags.to_ne_bytes());
            put32(out, rec + 4, self.rank);
            put32(out, rec + 8, kid);
            put32(out, rec + 12, item.bytes.len() as u32);
            put64(out, rec + 16, v as u64);
            out[v..v + item.bytes.len()].copy_from_slice(item.bytes);
            v = (v + item.bytes.len()).next_multiple_of(VALUE_ALIGN);
            homes.push((entry_hash(item.class, self.rank, kid) as usize & mask) as u32);
        }
        fill_index(
            &mut out[r.entry_index_off..r.entry_index_off + r.entry_slots * 4],
            &homes,
        );
        Ok(())
    }
}
