//! C strings: fixed-size buffers (keys, namespaces), NUL-terminated arguments and value
//! members, checked for their NUL and for UTF-8 without trusting the caller's lengths.

use core::ffi::c_char;

use super::bad;
use crate::AbiError;

/// A fixed-size C character buffer (key, nspace) as a string: it must hold a NUL.
#[inline]
pub fn fixed_str(buf: &[c_char]) -> Result<&str, AbiError> {
    // c_char is i8 here; view it as bytes. Keys and namespaces are short and almost always
    // ASCII: one pass, eight bytes a step, finds the NUL and checks for ASCII, with no call
    // (every Get reads a namespace this way, and a registration a key per info).
    let bytes = bytemuck_i8(buf);
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut high = 0u64; // the OR of every byte before the NUL
    let mut words = bytes.chunks_exact(8);
    for (i, w) in words.by_ref().enumerate() {
        let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        // The lowest byte flagged here is the first zero byte (flags above it may be false).
        let zero = w.wrapping_sub(LOW) & !w & HIGH;
        if zero != 0 {
            let at = (zero.trailing_zeros() / 8) as usize;
            high |= w & ((1u64 << (at * 8)) - 1);
            return utf8(&bytes[..i * 8 + at], high & HIGH == 0);
        }
        high |= w;
    }
    let done = bytes.len() - words.remainder().len();
    for (j, &c) in words.remainder().iter().enumerate() {
        if c == 0 {
            return utf8(&bytes[..done + j], high & HIGH == 0);
        }
        high |= u64::from(c);
    }
    Err(bad("unterminated fixed-size string"))
}

/// `bytes` as a `str`; `ascii` says the caller already found every byte below 0x80.
#[inline]
fn utf8(bytes: &[u8], ascii: bool) -> Result<&str, AbiError> {
    if ascii {
        debug_assert!(bytes.is_ascii());
        // SAFETY: every byte is below 0x80 (the caller checked), and ASCII is valid UTF-8.
        return Ok(unsafe { core::str::from_utf8_unchecked(bytes) });
    }
    core::str::from_utf8(bytes).map_err(|_| bad("string is not UTF-8"))
}

fn bytemuck_i8(s: &[c_char]) -> &[u8] {
    // SAFETY: c_char and u8 have the same size and alignment and every bit pattern is valid for
    // both; the length and lifetime are those of `s`.
    unsafe { core::slice::from_raw_parts(s.as_ptr().cast::<u8>(), s.len()) }
}

/// A NUL-terminated C string argument of at most `max` bytes before the NUL.
///
/// # Safety
/// `p` is NULL or points to readable memory up to its NUL or `max + 1` bytes.
#[inline]
pub unsafe fn c_str<'a>(p: *const c_char, max: usize) -> Result<&'a str, AbiError> {
    if p.is_null() {
        return Err(bad("NULL string"));
    }
    // glibc's strnlen finds the NUL a vector at a time (its aligned loads may reach past the
    // NUL, which Rust code may not do); then the bytes, now known to be in bounds, are checked
    // for ASCII a word at a time, and for UTF-8 only if that fails.
    // SAFETY: the caller promises `p` is readable up to its NUL or max + 1 bytes; strnlen reads
    // no further.
    let len = unsafe { libc::strnlen(p, max.saturating_add(1)) };
    if len > max {
        return Err(bad(format!("string longer than {max} bytes")));
    }
    // SAFETY: `len` bytes from `p` were just found readable and NUL-free.
    let bytes = unsafe { core::slice::from_raw_parts(p.cast::<u8>(), len) };
    utf8(bytes, is_ascii(bytes))
}

/// Whether a byte is 0: strings of 4 to 16 bytes (hostnames, most values a Get copies) in two
/// overlapping loads, instead of a call to memchr.
#[inline]
pub(crate) fn has_nul(b: &[u8]) -> bool {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |w: u64| w.wrapping_sub(LOW) & !w & HIGH != 0;
    let n = b.len();
    let word = |at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    match n {
        8..=16 => zero(word(0)) || zero(word(n - 8)),
        4..=7 => {
            zero(half(0) as u64 | 0xFFFF_FFFF_0000_0000)
                || zero(half(n - 4) as u64 | 0xFFFF_FFFF_0000_0000)
        }
        _ => b.contains(&0),
    }
}

/// Whether every byte is below 0x80: keys of 4 to 16 bytes in two overlapping loads.
#[inline]
fn is_ascii(b: &[u8]) -> bool {
    let n = b.len();
    let word = |at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"));
    match n {
        8..=16 => (word(0) | word(n - 8)) & 0x8080_8080_8080_8080 == 0,
        4..=7 => (half(0) | half(n - 4)) & 0x8080_8080 == 0,
        _ => b.is_ascii(),
    }
}

/// An unbounded NUL-terminated string inside a value (hostnames, names, envars).
///
/// # Safety
/// As [`c_str`].
pub(crate) unsafe fn c_string(p: *const c_char) -> Result<String, AbiError> {
    // SAFETY: forwarded caller promise; values' strings are bounded by 1 GiB here.
    unsafe { c_str(p, 1 << 30) }.map(str::to_owned)
}

/// A string member that C leaves NULL when unset: stored as "".
///
/// # Safety
/// As [`c_str`].
pub(crate) unsafe fn opt_string(p: *const c_char) -> Result<String, AbiError> {
    if p.is_null() {
        Ok(String::new())
    } else {
        // SAFETY: forwarded caller promise.
        unsafe { c_string(p) }
    }
}

/// Copy `msg` into the caller's buffer as a NUL-terminated C string, truncated to `len - 1`
/// bytes; returns `msg`'s full length (a caller whose buffer was too small sees it is). NULL or
/// `len` 0 copies nothing.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
pub unsafe fn copy_to_buf(msg: &str, buf: *mut c_char, len: usize) -> usize {
    if !buf.is_null() && len > 0 {
        let n = msg.len().min(len - 1);
        // SAFETY: `buf` is writable for `len` > n bytes (caller contract); `msg` is a separate
        // Rust allocation, so the ranges do not overlap.
        unsafe {
            core::ptr::copy_nonoverlapping(msg.as_ptr(), buf.cast::<u8>(), n);
            *buf.add(n) = 0;
        }
    }
    msg.len()
}

/// The calling thread's last error message ([`crate::last_error`]) copied as [`copy_to_buf`]
/// does: the body of both shims' `*_last_error` exports.
///
/// # Safety
/// As [`copy_to_buf`].
pub unsafe fn copy_last_error(buf: *mut c_char, len: usize) -> usize {
    // SAFETY: forwarded caller contract.
    unsafe { copy_to_buf(&crate::last_error(), buf, len) }
}

#[cfg(test)]
mod has_nul_tests {
    #[test]
    fn agrees_with_a_byte_search() {
        for n in 0..40 {
            let base: Vec<u8> = (0..n as u8).map(|i| 1 + i.wrapping_mul(37) % 255).collect();
            assert!(!super::has_nul(&base), "{n}");
            for at in 0..n {
                for v in [0u8, 1, 0x80, 0xff] {
                    let mut b = base.clone();
                    b[at] = v;
                    assert_eq!(
                        super::has_nul(&b),
                        b.contains(&0),
                        "length {n}, byte {at} = {v}"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod is_ascii_tests {
    #[test]
    fn agrees_with_the_standard_library() {
        for n in 0..40 {
            let base: Vec<u8> = (0..n as u8).map(|i| b'a' + i % 26).collect();
            assert!(super::is_ascii(&base), "{n}");
            for at in 0..n {
                let mut b = base.clone();
                b[at] |= 0x80;
                assert_eq!(super::is_ascii(&b), b.is_ascii(), "length {n}, byte {at}");
                assert!(!super::is_ascii(&b), "length {n}, byte {at}");
            }
        }
    }
}

#[cfg(test)]
mod fixed_str_tests {
    use super::fixed_str;
    use core::ffi::c_char;

    /// The plain byte-at-a-time definition fixed_str must agree with.
    fn reference(b: &[u8]) -> Option<&str> {
        let end = b.iter().position(|&c| c == 0)?;
        core::str::from_utf8(&b[..end]).ok()
    }

    #[test]
    fn agrees_with_the_bytewise_definition() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Every length up to 40 (word and remainder paths), NULs at every place or none,
        // ASCII, valid multi-byte UTF-8 and invalid bytes, before and after the NUL.
        let alphabet: [&[u8]; 5] = [b"a", b"pmix.", "\u{e9}".as_bytes(), &[0xff], &[0x80]];
        for len in 0..40usize {
            for case in 0..400 {
                let mut b = Vec::with_capacity(len + 4);
                while b.len() < len {
                    let piece = alphabet[(next() % 5) as usize];
                    b.extend_from_slice(piece);
                }
                b.truncate(len);
                if case % 4 != 0 && len > 0 {
                    let at = (next() % len as u64) as usize;
                    b[at] = 0;
                }
                let c: Vec<c_char> = b.iter().map(|&v| v as c_char).collect();
                assert_eq!(fixed_str(&c).ok(), reference(&b), "bytes {b:?}");
            }
        }
    }
}
