//! Bounds-checked native-endian reads from mapped bytes. `None` means out of bounds; callers
//! turn that into `Error::Corrupt` or `Error::Truncated`.

#![forbid(unsafe_code)]

pub fn u16_at(bytes: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(
        bytes.get(off..off.checked_add(2)?)?.try_into().ok()?,
    ))
}

pub fn u32_at(bytes: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(
        bytes.get(off..off.checked_add(4)?)?.try_into().ok()?,
    ))
}

pub fn u64_at(bytes: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(
        bytes.get(off..off.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// Whether `a` and `b` are equal. Keys and namespaces of up to 16 bytes (most PMIx keys and
/// namespaces) are compared in two loads each, with no call to memcmp: a get compares a few per
/// call.
#[inline]
pub fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        return u64_at(a, 0) == u64_at(b, 0) && u64_at(a, n - 8) == u64_at(b, n - 8);
    }
    if (4..8).contains(&n) {
        return u32_at(a, 0) == u32_at(b, 0) && u32_at(a, n - 4) == u32_at(b, n - 4);
    }
    if (2..4).contains(&n) {
        return u16_at(a, 0) == u16_at(b, 0) && u16_at(a, n - 2) == u16_at(b, n - 2);
    }
    if n < 2 {
        return a.first() == b.first();
    }
    a == b
}

/// `len` bytes at `off`, with `off`/`len` given as u64 from a segment.
pub fn slice_at(bytes: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let off = usize::try_from(off).ok()?;
    let len = usize::try_from(len).ok()?;
    bytes.get(off..off.checked_add(len)?)
}

/// Appends native-endian fields to a segment under construction.
#[derive(Default)]
pub struct Encoder {
    pub buf: Vec<u8>,
}

impl Encoder {
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_ne_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_ne_bytes());
    }
    pub fn bytes(&mut self, v: &[u8]) {
        self.buf.extend_from_slice(v);
    }
    /// Pad with zeros to a multiple of `align`.
    pub fn pad_to(&mut self, align: usize) {
        let n = self.buf.len().next_multiple_of(align);
        self.buf.resize(n, 0);
    }
    pub fn len(&self) -> u64 {
        self.buf.len() as u64
    }
    /// Overwrite a u64 at `off`.
    pub fn put_u64(&mut self, off: usize, v: u64) {
        self.buf[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }
}

/// Where a segment under construction is written: positioned writes into a zeroed buffer or a
/// new (fallocated, all-zero) file. Bytes never written stay zero.
pub trait Sink {
    /// Write `bytes` at offset `off`.
    fn write_at(&mut self, off: usize, bytes: &[u8]) -> crate::Result<()>;

    /// Write `bufs` one after the other from offset `off` (one `pwritev` for a file).
    fn write_all_at(&mut self, off: usize, bufs: &[&[u8]]) -> crate::Result<()> {
        let mut off = off;
        for b in bufs {
            self.write_at(off, b)?;
            off += b.len();
        }
        Ok(())
    }
}

impl Sink for [u8] {
    fn write_at(&mut self, off: usize, bytes: &[u8]) -> crate::Result<()> {
        let end = off
            .checked_add(bytes.len())
            .filter(|&e| e <= self.len())
            .ok_or_else(|| crate::Error::InvalidArgument("write past the segment's end".into()))?;
        self[off..end].copy_from_slice(bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn same_bytes_is_equality() {
        let words = ["", "a", "job", "job.size", "job.sizf", "0123456789abcdef"];
        for a in words {
            for b in words {
                assert_eq!(same_bytes(a.as_bytes(), b.as_bytes()), a == b, "{a} {b}");
            }
        }
        assert!(!same_bytes(b"jxb.size", b"job.size"));
        assert!(!same_bytes(b"0123456789abcdeg0", b"0123456789abcdef0"));
        // Every length of every load width, and a difference at every place.
        let base: Vec<u8> = (b'a'..=b'z').collect();
        for n in 0..=base.len() {
            let a = &base[..n];
            let copy = a.to_vec();
            assert!(same_bytes(a, &copy), "{n}");
            for at in 0..n {
                let mut b = a.to_vec();
                b[at] ^= 1;
                assert!(!same_bytes(a, &b), "length {n}, byte {at}");
            }
            if n > 0 {
                assert!(!same_bytes(a, &base[..n - 1]), "{n} vs {}", n - 1);
            }
        }
    }
}
