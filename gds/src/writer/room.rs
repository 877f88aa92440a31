//! A transaction's move to a new pack when the current one is full (docs/protocol.md P1n).

#![forbid(unsafe_code)]

use std::collections::HashSet;

use super::{TableKey, Transaction};
use crate::error::{Error, Result};
use crate::layout::{pack_place, place_in_pack, STATE_OFF};
use crate::pack::Pack;
use crate::protocol;
use crate::segment::pack_name;

impl Transaction<'_> {
    /// Make room for a segment of `len` bytes in the current pack: when it does not fit (or
    /// there is no pack yet), start a new pack and copy into it every embedded table the new
    /// root may name (the published ones this transaction keeps, and its own), so that the
    /// old pack is named by no root once this one is published (P5 unlinks it).
    pub(super) fn room(&mut self, len: u64) -> Result<()> {
        let w = &mut *self.writer;
        if w.pack.as_ref().is_some_and(|p| p.fits(len)) {
            return Ok(());
        }
        // What moves: (published key or index into puts, place, length).
        let replaced: HashSet<(&str, u32)> = self.puts.iter().map(|p| (&*p.0 .1, p.0 .2)).collect();
        let mut moving: Vec<(Option<&TableKey>, Option<usize>, u64, u64)> = Vec::new();
        for (k, p) in &w.tables {
            if p.at != 0 && !replaced.contains(&(&*k.1, k.2)) {
                let at = self.relocated.get(k).copied().unwrap_or(p.at);
                moving.push((Some(k), None, at, p.len));
            }
        }
        for (i, (_, p)) in self.puts.iter().enumerate() {
            if p.at != 0 {
                moving.push((None, Some(i), p.at, p.len));
            }
        }
        // Room for what moves and what comes, eight times over: a copy of the live tables is
        // paid for by at least seven times their bytes of new segments.
        let live: u64 = moving.iter().map(|m| m.3.next_multiple_of(64)).sum();
        let seq = w.next_pack;
        let mut pack = Pack::create(w.dir(), seq, 8 * (live + len), w.own)?;
        let mut moved = Vec::with_capacity(moving.len());
        // Every embedded table of the published root and of this transaction is in the current
        // pack (each new pack takes them all).
        let copied = (|| {
            for (_, _, at, len) in &moving {
                let old = w.pack.as_mut();
                let (old, off) = old
                    .zip(place_in_pack(*at))
                    .filter(|(p, (s, _))| *s == p.seq())
                    .map(|(p, (_, off))| (p, off))
                    .ok_or(Error::Corrupt("embedded table outside the current pack"))?;
                let bytes = old.segment(off, *len as usize)?;
                let to = pack.append(bytes.len(), |_, out| {
                    out.copy_from_slice(bytes);
                    // P2 stores the state again once the copy is whole.
                    out[STATE_OFF..STATE_OFF + 4]
                        .copy_from_slice(&protocol::STATE_BUILDING.to_ne_bytes());
                    Ok(())
                })?;
                moved.push(pack_place(pack.seq(), to));
            }
            Ok(())
        })();
        if let Err(e) = copied {
            drop(pack);
            let _ = w.dir().unlink(&pack_name(seq));
            return Err(e);
        }
        w.next_pack += 1;
        self.new_packs += 1;
        self.packed += moving.iter().map(|m| m.3).sum::<u64>();
        let keys: Vec<(Option<TableKey>, Option<usize>)> =
            moving.iter().map(|m| (m.0.cloned(), m.1)).collect();
        for ((key, put), at) in keys.into_iter().zip(moved) {
            match (key, put) {
                (Some(k), _) => {
                    self.relocated.insert(k, at);
                }
                (None, Some(i)) => self.puts[i].1.at = at,
                _ => {}
            }
        }
        let old = w.pack.replace(pack);
        match (&self.retired, old) {
            (None, old) => self.retired = old,
            // A pack this transaction started and left: named by no root, published or not.
            (Some(_), Some(old)) => {
                let name = pack_name(old.seq());
                drop(old);
                let _ = w.dir().unlink(&name);
            }
            (Some(_), None) => {}
        }
        Ok(())
    }
}
