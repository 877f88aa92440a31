//! A mapped table's keys of 1 to 16 bytes, found without the segment's shared key index
//! ([`ShortKeys`]).

use crate::bytes::{u16_at, u32_at, u64_at};

/// Keys of 1 to 16 bytes (nearly every PMIx key) as the reader finds them without the shared
/// key index: each key's bytes in two overlapping words, open-addressed by a multiply-shift of
/// those words. Process-local, built at map time; 24 bytes a slot, at most [`SHORT_KEYS_MAX`]
/// keys (a table with more short keys than that looks every key up in the shared index). The
/// shared index's probe reads bounds-checked records and the key's string; this is one slot
/// compare, for the get of a key a client asks a million times.
#[derive(Default)]
pub(super) struct ShortKeys {
    /// Empty slots have `len` 0.
    slots: Box<[ShortKey]>,
    /// log2 of the slot count.
    bits: u32,
}

#[derive(Clone, Copy, Default)]
struct ShortKey {
    lo: u64,
    hi: u64,
    len: u32,
    kid: u32,
}

/// Short keys a [`ShortKeys`] holds at most (192 KiB of slots).
const SHORT_KEYS_MAX: usize = 4096;

/// A key of 1 to 16 bytes as two words: for each length class the two loads overlap and cover
/// every byte, so (length, words) are equal exactly when the bytes are.
#[inline]
fn short_words(k: &[u8]) -> Option<(u64, u64)> {
    let n = k.len();
    Some(match n {
        8..=16 => (u64_at(k, 0)?, u64_at(k, n - 8)?),
        4..=7 => (u32_at(k, 0)? as u64, u32_at(k, n - 4)? as u64),
        2..=3 => (u16_at(k, 0)? as u64, u16_at(k, n - 2)? as u64),
        1 => (k[0] as u64, 0),
        _ => return None,
    })
}

impl ShortKeys {
    #[inline]
    fn home(&self, lo: u64, hi: u64, len: usize) -> usize {
        let h = (lo ^ hi.rotate_left(29) ^ len as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> (63 - self.bits) >> 1) as usize
    }

    /// From (key id, key bytes) of every key of a table; empty if it has too many short ones.
    pub(super) fn build<'a>(keys: impl Iterator<Item = (u32, &'a [u8])> + Clone) -> ShortKeys {
        let count = keys
            .clone()
            .filter(|(_, k)| short_words(k).is_some())
            .count();
        if count == 0 || count > SHORT_KEYS_MAX {
            return ShortKeys::default();
        }
        let bits = (count * 2).next_power_of_two().trailing_zeros();
        let mut t = ShortKeys {
            slots: vec![ShortKey::default(); 1 << bits].into_boxed_slice(),
            bits,
        };
        let mask = t.slots.len() - 1;
        for (kid, k) in keys {
            let Some((lo, hi)) = short_words(k) else {
                continue;
            };
            let mut s = t.home(lo, hi, k.len());
            while t.slots[s].len != 0 {
                s = (s + 1) & mask;
            }
            t.slots[s] = ShortKey {
                lo,
                hi,
                len: k.len() as u32,
                kid,
            };
        }
        t
    }

    /// `Some(answer)` for a short key when the table's short keys are all here; `None`: ask
    /// the shared index.
    #[inline]
    pub(super) fn find(&self, key: &[u8]) -> Option<Option<u32>> {
        if self.slots.is_empty() {
            return None;
        }
        let (lo, hi) = short_words(key)?;
        let mask = self.slots.len() - 1;
        let mut s = self.home(lo, hi, key.len());
        loop {
            let e = self.slots[s];
            if e.len == 0 {
                return Some(None);
            }
            if e.lo == lo && e.hi == hi && e.len as usize == key.len() {
                return Some(Some(e.kid));
            }
            s = (s + 1) & mask;
        }
    }
}
