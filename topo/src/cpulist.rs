//! hwloc's "list" form of a bitmap (`hwloc_bitmap_list_asprintf` / `_sscanf`): `0-3,8,10-11`.
//! Written and read here without hwloc, so that clients compare locality strings without it.

/// Indexes of a finite bitmap as hwloc lists them: ascending runs, `a-b` or `a`, comma-separated.
pub fn format(indexes: impl IntoIterator<Item = u32>) -> String {
    let mut out = String::new();
    let mut run: Option<(u32, u32)> = None;
    let flush = |out: &mut String, (a, b): (u32, u32)| {
        if !out.is_empty() {
            out.push(',');
        }
        if a == b {
            out.push_str(&a.to_string());
        } else {
            out.push_str(&format!("{a}-{b}"));
        }
    };
    for i in indexes {
        run = match run {
            Some((a, b)) if b.checked_add(1) == Some(i) => Some((a, i)),
            Some(r) => {
                flush(&mut out, r);
                Some((i, i))
            }
            None => Some((i, i)),
        };
    }
    if let Some(r) = run {
        flush(&mut out, r);
    }
    out
}

/// The largest index a list may name: hwloc's cpusets of real machines stay far below.
pub const MAX_INDEX: u32 = 1 << 20;

/// A small bitmap of indexes below [`MAX_INDEX`], as 64-bit words.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bits(Vec<u64>);

impl Bits {
    pub fn set(&mut self, i: u32) {
        let w = (i / 64) as usize;
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << (i % 64);
    }

    pub fn intersects(&self, other: &Bits) -> bool {
        self.0.iter().zip(&other.0).any(|(a, b)| a & b != 0)
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }

    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64u32)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w as u32 * 64 + b)
        })
    }
}

/// Read a list (`0-3,8`). `None` for anything else: a malformed list, an open range (`4-`,
/// an infinite set), an index above [`MAX_INDEX`].
pub fn parse(s: &str) -> Option<Bits> {
    let mut bits = Bits::default();
    if s.is_empty() {
        return Some(bits);
    }
    for part in s.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let a = num(part)?;
                (a, a)
            }
        };
        if a > b {
            return None;
        }
        for i in a..=b {
            bits.set(i);
        }
    }
    Some(bits)
}

fn num(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok().filter(|&n| n <= MAX_INDEX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_as_hwloc_writes_them() {
        assert_eq!(format([]), "");
        assert_eq!(format([3]), "3");
        assert_eq!(format([0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
    }

    #[test]
    fn parse_round_trips_and_refuses_garbage() {
        let b = parse("0-3,8,10-11").unwrap();
        assert_eq!(format(b.iter()), "0-3,8,10-11");
        assert!(parse("").unwrap().is_empty());
        for bad in ["4-", "a", "1,,2", "3-1", "-1", "99999999", "1 2"] {
            assert!(parse(bad).is_none(), "{bad}");
        }
    }
}
