//! Proc columns stored in blocks (format.md, "Blocked columns"): a column cut into blocks of
//! [`BLOCK_RANKS`] ranks, each block either two pieces of lines with one step (16 bytes for 32
//! ranks) or, when its values are not, its values as a plain column stores them.
//!
//! Why: the maps make these columns lines broken at node boundaries: a node's local ranks count
//! up, its ranks share a node id and an app number, app ranks and global ranks are the ranks.
//! With a node boundary at most once per block (32 or more ranks per node, wherever the
//! boundaries fall) every block is two pieces, and the six columns of a 1M-rank job take 0.5 MiB
//! each instead of 2-4 MiB (20 bytes per rank): less shared memory, and the column a random
//! rank's Get reads fits the 1 MiB L2 of this machine's cores.
//!
//! The writer chooses per column: blocks when the plain column is larger than
//! [`PLAIN_UP_TO`] (a builder can lower it) and the blocks are smaller. A small plain column
//! stays in L1/L2 next to its neighbours, and reading it skips the decode (~4 ns measured at
//! 1k-10k ranks in the scale harness, docs/performance.md).

#![forbid(unsafe_code)]

use crate::bytes::{u16_at, u32_at, Sink};
use crate::error::Result;
use crate::layout::ColumnKind;

/// The largest plain column a writer keeps plain by default (bytes): 32,768 ranks of a 2-byte
/// column, 16,384 of a 4-byte one.
pub(crate) const PLAIN_UP_TO: usize = 64 * 1024;
/// Ranks per block.
pub(crate) const BLOCK_RANKS: usize = 32;
/// A descriptor's `step` that marks a block stored as its values.
pub(crate) const ESCAPE: u32 = 0x8000_0000;
/// `dense_blocks` u32 and a reserved u32 before the descriptors.
const HEAD: usize = 8;
/// A descriptor: `base0`, `step`, `base1`, `brk` (u32 each).
const DESC: usize = 16;

/// The value a column stores for a builder's column value (`u32::MAX`: absent).
fn stored(kind: ColumnKind, v: u32) -> u32 {
    match (kind, v) {
        (ColumnKind::Uint16, u32::MAX) => u16::MAX as u32,
        _ => v,
    }
}

/// A column's blocked form, planned before the segment is written.
pub(crate) struct Blocked {
    /// Per block: [`base0`, `step`, `base1`, `brk`], or [index among the stored blocks,
    /// [`ESCAPE`], 0, 0].
    descs: Vec<[u32; 4]>,
    /// The blocks stored as values, in block order.
    dense: Vec<u32>,
    blocks: usize,
    width: usize,
}

impl Blocked {
    /// The blocked form of `col` (a builder's column of `kind`), when the plain column is larger
    /// than `plain_up_to` bytes and the blocks are smaller than it.
    pub(crate) fn plan(col: &[u32], kind: ColumnKind, plain_up_to: usize) -> Option<Blocked> {
        let width = kind.width();
        let plain = col.len() * width;
        if plain <= plain_up_to {
            return None;
        }
        let blocks = col.len().div_ceil(BLOCK_RANKS);
        let mut b = Blocked {
            descs: Vec::with_capacity(blocks),
            dense: Vec::new(),
            blocks,
            width,
        };
        let mut vals = [0u32; BLOCK_RANKS];
        for (i, block) in col.chunks(BLOCK_RANKS).enumerate() {
            let vals = &mut vals[..block.len()];
            for (to, &v) in vals.iter_mut().zip(block) {
                *to = stored(kind, v);
            }
            if let Some(desc) = pieces(vals) {
                b.descs.push(desc);
            } else {
                b.descs.push([b.dense.len() as u32, ESCAPE, 0, 0]);
                b.dense.push(i as u32);
                // Give up as soon as the blocks cannot be the smaller form.
                if b.len() >= plain {
                    return None;
                }
            }
        }
        (b.len() < plain).then_some(b)
    }

    /// Bytes of the blocked column.
    pub(crate) fn len(&self) -> usize {
        blocked_len(self.blocks, self.dense.len(), self.width)
    }

    /// Write the blocked form of `col` (the column [`Blocked::plan`] was given) at `off`, into
    /// zeroed bytes (the unused tail of a last, partial stored block stays zero).
    pub(crate) fn write(
        &self,
        col: &[u32],
        kind: ColumnKind,
        out: &mut (impl Sink + ?Sized),
        off: usize,
    ) -> Result<()> {
        let mut buf = Vec::with_capacity(HEAD + self.descs.len() * DESC);
        buf.extend_from_slice(&(self.dense.len() as u32).to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes());
        for desc in &self.descs {
            for f in desc {
                buf.extend_from_slice(&f.to_ne_bytes());
            }
        }
        out.write_at(off, &buf)?;
        let mut at = off + HEAD + self.descs.len() * DESC;
        buf.clear();
        for &block in &self.dense {
            let start = block as usize * BLOCK_RANKS;
            let values = &col[start..(start + BLOCK_RANKS).min(col.len())];
            for &v in values {
                match kind {
                    ColumnKind::Uint16 => {
                        buf.extend_from_slice(&(stored(kind, v) as u16).to_ne_bytes())
                    }
                    _ => buf.extend_from_slice(&v.to_ne_bytes()),
                }
            }
            out.write_at(at, &buf)?;
            buf.clear();
            at += BLOCK_RANKS * self.width;
        }
        Ok(())
    }
}

/// `vals` as two pieces of lines with one step: [`base0`, `step`, `base1`, `brk`], value `i`
/// being `base0 + step * i` below `brk` and `base1 + step * (i - brk)` from it (`brk` =
/// [`BLOCK_RANKS`]: one line). The step is the first piece's, or the last piece's when the first
/// is one value.
fn pieces(vals: &[u32]) -> Option<[u32; 4]> {
    let n = vals.len();
    let line = |base: u32, step: u32, from: usize, to: usize| {
        (from..to).all(|i| vals[i] == base.wrapping_add(step.wrapping_mul((i - from) as u32)))
    };
    let head = if n > 1 {
        vals[1].wrapping_sub(vals[0])
    } else {
        0
    };
    let tail = if n > 1 {
        vals[n - 1].wrapping_sub(vals[n - 2])
    } else {
        0
    };
    for step in [head, tail] {
        if step == ESCAPE {
            continue;
        }
        let brk = (0..n)
            .find(|&i| vals[i] != vals[0].wrapping_add(step.wrapping_mul(i as u32)))
            .unwrap_or(BLOCK_RANKS);
        if brk == BLOCK_RANKS || brk == n {
            return Some([vals[0], step, 0, BLOCK_RANKS as u32]);
        }
        if line(vals[brk], step, brk, n) {
            return Some([vals[0], step, vals[brk], brk as u32]);
        }
    }
    None
}

/// Where a blocked column's parts lie, once validated.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockedAt {
    descs: usize,
    dense: usize,
}

/// Validate the blocked column of `ranks` ranks and `width`-byte values at `off` in `b`: its
/// parts lie inside `b` and every stored block's index is below `dense_blocks`. Returns where
/// its parts are and its length.
pub(crate) fn validate(
    b: &[u8],
    off: usize,
    ranks: u32,
    width: usize,
) -> Option<(BlockedAt, usize)> {
    let blocks = (ranks as usize).div_ceil(BLOCK_RANKS);
    let dense_blocks = u32_at(b, off)? as usize;
    if dense_blocks > blocks || u32_at(b, off.checked_add(4)?)? != 0 {
        return None;
    }
    let descs = off.checked_add(HEAD)?;
    let dense = descs.checked_add(blocks.checked_mul(DESC)?)?;
    let end = dense.checked_add(dense_blocks.checked_mul(BLOCK_RANKS * width)?)?;
    if end > b.len() {
        return None;
    }
    for d in 0..blocks {
        let at = descs + d * DESC;
        if u32_at(b, at + 4)? == ESCAPE && u32_at(b, at)? as usize >= dense_blocks {
            return None;
        }
    }
    Some((BlockedAt { descs, dense }, end - off))
}

/// Blocks, and blocks stored as values, of the validated blocked column `at` of `ranks` ranks
/// (for inspection: `rshm dump`).
pub(crate) fn shape(b: &[u8], at: BlockedAt, ranks: u32) -> (usize, usize) {
    let blocks = (ranks as usize).div_ceil(BLOCK_RANKS);
    // `validate` read `dense_blocks` at this offset.
    let stored = u32_at(b, at.descs - HEAD).unwrap_or(0) as usize;
    (blocks, stored)
}

/// Bytes of a blocked column of `blocks` blocks, `stored` of them as `width`-byte values.
pub(crate) fn blocked_len(blocks: usize, stored: usize, width: usize) -> usize {
    HEAD + blocks * DESC + stored * BLOCK_RANKS * width
}

/// The stored value of `rank` in the validated blocked column `at` (`rank` below its ranks).
/// Inlined into every proc Get of a blocked column: a line is one 16-byte descriptor read, two
/// selects and a multiply; a stored block's read is out of line.
#[inline]
pub(crate) fn value_at(b: &[u8], at: BlockedAt, rank: u32, width: usize) -> Option<u32> {
    let i = (rank as usize % BLOCK_RANKS) as u32;
    let d: &[u8; DESC] = b
        .get(at.descs + rank as usize / BLOCK_RANKS * DESC..)?
        .first_chunk()?;
    let word = |w: usize| u32::from_ne_bytes([d[4 * w], d[4 * w + 1], d[4 * w + 2], d[4 * w + 3]]);
    let (base0, step, base1, brk) = (word(0), word(1), word(2), word(3));
    if step != ESCAPE {
        // Which piece: a select, not a branch (a random rank's piece is not predictable).
        let second = i >= brk;
        let base = if second { base1 } else { base0 };
        let from = if second { brk } else { 0 };
        return Some(base.wrapping_add(step.wrapping_mul(i.wrapping_sub(from))));
    }
    stored_value(b, at, base0, i as usize, width)
}

/// Value `i` of stored block `index`.
#[inline(never)]
fn stored_value(b: &[u8], at: BlockedAt, index: u32, i: usize, width: usize) -> Option<u32> {
    let v = at.dense + (index as usize * BLOCK_RANKS + i) * width;
    match width {
        2 => u16_at(b, v).map(u32::from),
        _ => u32_at(b, v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(col: &[u32], kind: ColumnKind) -> Vec<u8> {
        let b = Blocked::plan(col, kind, 0).expect("blocked");
        let mut out = vec![0u8; b.len()];
        b.write(col, kind, &mut out[..], 0).unwrap();
        out
    }

    #[test]
    fn lines_are_kept_and_a_step_of_2_to_the_31_is_stored_as_values() {
        let col: Vec<u32> = (0..320)
            .map(|r| match r {
                0..64 => r / 7,
                64..96 => (r & 1) << 31,
                _ => r,
            })
            .collect();
        let b = Blocked::plan(&col, ColumnKind::Uint32, 0).unwrap();
        // Blocks 0 and 1 hold several node boundaries, block 2 alternates by 2^31: stored; the
        // rest count up: lines.
        assert_eq!(b.dense.len(), 3);
        let col: Vec<u32> = (0..96).collect();
        assert!(Blocked::plan(&col, ColumnKind::Uint32, 0)
            .unwrap()
            .dense
            .is_empty());
    }

    #[test]
    fn a_node_boundary_anywhere_in_a_block_makes_two_pieces() {
        for brk in 1..BLOCK_RANKS as u32 {
            // Local ranks (count up, restart at 0), node ids (one up), from 32 ranks per node.
            let lrank: Vec<u32> = (0..32)
                .map(|i| if i < brk { 40 + i } else { i - brk })
                .collect();
            assert_eq!(pieces(&lrank), Some([40, 1, 0, brk]), "break at {brk}");
            let node: Vec<u32> = (0..32).map(|i| 7 + u32::from(i >= brk)).collect();
            assert_eq!(pieces(&node), Some([7, 0, 8, brk]), "break at {brk}");
        }
        let ranks: Vec<u32> = (100..132).collect();
        assert_eq!(pieces(&ranks), Some([100, 1, 0, 32]));
        assert_eq!(
            pieces(&ranks[..5]),
            Some([100, 1, 0, 32]),
            "a partial last block"
        );
        assert_eq!(pieces(&[3]), Some([3, 0, 0, 32]));
        let two_breaks: Vec<u32> = (0..32).map(|i| i % 12).collect();
        assert_eq!(pieces(&two_breaks), None);
    }

    #[test]
    fn a_column_no_smaller_in_blocks_stays_plain() {
        let col: Vec<u32> = (0..100u32)
            .map(|r| r.wrapping_mul(2654435761) % 1000)
            .collect();
        assert!(Blocked::plan(&col, ColumnKind::Uint16, 0).is_none());
        assert!(
            Blocked::plan(&[5], ColumnKind::Uint32, 0).is_none(),
            "1 rank: 4 bytes plain"
        );
    }

    #[test]
    fn every_value_reads_back_and_absent_is_the_kinds_pattern() {
        let col: Vec<u32> = (0..200)
            .map(|r| if r % 50 == 3 { u32::MAX } else { r % 64 })
            .collect();
        for kind in [ColumnKind::Uint16, ColumnKind::Uint32] {
            let bytes = written(&col, kind);
            let (at, len) = validate(&bytes, 0, 200, kind.width()).unwrap();
            assert_eq!(len, bytes.len());
            for (r, &v) in col.iter().enumerate() {
                assert_eq!(
                    value_at(&bytes, at, r as u32, kind.width()),
                    Some(stored(kind, v))
                );
            }
        }
    }

    #[test]
    fn forged_blocks_are_refused() {
        // Block 1 has four node boundaries: stored; the others are lines.
        let col: Vec<u32> = (0..320)
            .map(|r| if (32..64).contains(&r) { r % 7 } else { r })
            .collect();
        let good = written(&col, ColumnKind::Uint32);
        let ok = |b: &[u8], ranks| validate(b, 0, ranks, 4).is_some();
        assert!(ok(&good, 320));
        assert!(!ok(&good[..good.len() - 1], 320), "truncated");
        assert!(!ok(&good, 640), "more ranks than descriptors");
        let mut more = good.clone();
        more[..4].copy_from_slice(&11u32.to_ne_bytes());
        assert!(!ok(&more, 320), "more stored blocks than blocks");
        // Block 1 is stored (index 0): point it past the stored blocks.
        let mut past = good.clone();
        assert_eq!(u32_at(&past, HEAD + DESC + 4), Some(ESCAPE));
        past[HEAD + DESC..HEAD + DESC + 4].copy_from_slice(&1u32.to_ne_bytes());
        assert!(!ok(&past, 320), "stored block index out of range");
        let mut reserved = good;
        reserved[4] = 1;
        assert!(!ok(&reserved, 320), "reserved word");
    }
}
