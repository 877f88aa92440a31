//! Relative locality of two locality strings, as OpenPMIx 4.2.2's
//! `pmix_hwloc_get_relative_locality` computes it (what `PMIx_Get_relative_locality`
//! answers), without hwloc: both strings must start with `hwloc:`; they share the node; then
//! for each `<tag><list>` field of the first, the first field of the second with the same
//! two-letter tag is compared, and the level's bit is set when the two lists intersect.

use crate::bits;
use crate::cpulist;

/// Why no locality was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelativeError {
    /// A string does not start with `hwloc:` (libpmix: `PMIX_ERR_TAKE_NEXT_OPTION`, the
    /// answer left unset).
    NotHwloc,
    /// A field's tag is none of NM SK L3 L2 L1 CR HT (libpmix: `PMIX_ERROR`); the locality
    /// of the fields it knew is still given, as libpmix sets it.
    Unrecognized(u16),
}

const PREFIX: &str = "hwloc:";

fn strip(s: &str) -> Option<&str> {
    let head = s.get(..PREFIX.len())?;
    head.eq_ignore_ascii_case(PREFIX)
        .then(|| &s[PREFIX.len()..])
}

/// A number of a list: ASCII digits, at most `max`.
fn num(s: &[u8], max: u32) -> Option<u32> {
    if s.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
        if v > u64::from(max) {
            return None;
        }
    }
    Some(v as u32)
}

/// One element of a list as an inclusive range; `last` allows an open range (`4-`), which
/// runs to infinity.
fn range(part: &[u8], last: bool) -> Option<(u32, u32)> {
    match part.iter().position(|&b| b == b'-') {
        Some(i) if last && i + 1 == part.len() => Some((num(&part[..i], u32::MAX)?, u32::MAX)),
        Some(i) => {
            let a = num(&part[..i], cpulist::MAX_INDEX)?;
            let b = num(&part[i + 1..], cpulist::MAX_INDEX)?;
            (a <= b).then_some((a, b))
        }
        None => num(part, cpulist::MAX_INDEX).map(|a| (a, a)),
    }
}

/// Ranges kept on the stack: locality lists hold one or two.
const SMALL: usize = 8;

/// The ranges of a list as `hwloc_bitmap_list_sscanf` reads it: `None` for a malformed list
/// (hwloc reads it as the empty set); `0-3,8,10-` is (0,3) (8,8) (10,inf).
fn ranges(list: &str, small: &mut [(u32, u32); SMALL], big: &mut Vec<(u32, u32)>) -> Option<usize> {
    if list.is_empty() {
        return Some(0);
    }
    let mut n = 0;
    let mut parts = list.as_bytes().split(|&b| b == b',').peekable();
    while let Some(p) = parts.next() {
        let r = range(p, parts.peek().is_none())?;
        if n < SMALL {
            small[n] = r;
        } else {
            if n == SMALL {
                big.extend_from_slice(small);
            }
            big.push(r);
        }
        n += 1;
    }
    Some(n)
}

/// Whether two lists share an index.
fn intersects(a: &str, b: &str) -> bool {
    let (mut sa, mut sb) = ([(0, 0); SMALL], [(0, 0); SMALL]);
    let (mut ba, mut bb) = (Vec::new(), Vec::new());
    let (Some(na), Some(nb)) = (ranges(a, &mut sa, &mut ba), ranges(b, &mut sb, &mut bb)) else {
        return false;
    };
    let ra = if na <= SMALL { &sa[..na] } else { &ba[..] };
    let rb = if nb <= SMALL { &sb[..nb] } else { &bb[..] };
    ra.iter()
        .any(|&(alo, ahi)| rb.iter().any(|&(blo, bhi)| alo <= bhi && blo <= ahi))
}

/// Compare at most two bytes as `strncmp(a, b, 2)` does on C strings.
fn same_tag(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a[..a.len().min(2)] == b[..b.len().min(2)]
}

fn tag_bit(field: &str) -> Option<u16> {
    Some(match field.get(..2)? {
        "NM" => bits::SHARE_NUMA,
        "SK" => bits::SHARE_PACKAGE,
        "L3" => bits::SHARE_L3CACHE,
        "L2" => bits::SHARE_L2CACHE,
        "L1" => bits::SHARE_L1CACHE,
        "CR" => bits::SHARE_CORE,
        "HT" => bits::SHARE_HWTHREAD,
        _ => return None,
    })
}

/// The fields of a string, as `pmix_argv_split` gives them (empty ones dropped).
fn fields(s: &str) -> impl Iterator<Item = &str> + Clone {
    s.split(':').filter(|f| !f.is_empty())
}

/// The relative locality (`pmix_locality_t` bits) of two processes of one node by their
/// locality strings (`hwloc:` + what [`crate::locality_string`] writes).
pub fn relative_locality(a: &str, b: &str) -> Result<u16, RelativeError> {
    let (Some(a), Some(b)) = (strip(a), strip(b)) else {
        return Err(RelativeError::NotHwloc);
    };
    let mut loc = bits::SHARE_NODE;
    let mut unknown = false;
    for f1 in fields(a) {
        let Some(f2) = fields(b).find(|f2| same_tag(f1, f2)) else {
            continue;
        };
        // A field too short for a list (or split inside a character) is the empty set.
        if intersects(f1.get(2..).unwrap_or("-"), f2.get(2..).unwrap_or("-")) {
            match tag_bit(f1) {
                Some(bit) => loc |= bit,
                None => unknown = true,
            }
        }
    }
    if unknown {
        Err(RelativeError::Unrecognized(loc))
    } else {
        Ok(loc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::*;

    #[test]
    fn levels_shared_by_intersection() {
        let a = "hwloc:SK0:L30:L20:L10:CR0:HT0:NM0";
        let b = "hwloc:SK0:L30:L21:L11:CR1:HT1:NM0";
        assert_eq!(
            relative_locality(a, b),
            Ok(SHARE_NODE | SHARE_PACKAGE | SHARE_L3CACHE | SHARE_NUMA)
        );
        assert_eq!(
            relative_locality(a, a),
            Ok(SHARE_NODE
                | SHARE_PACKAGE
                | SHARE_L3CACHE
                | SHARE_L2CACHE
                | SHARE_L1CACHE
                | SHARE_CORE
                | SHARE_HWTHREAD
                | SHARE_NUMA)
        );
    }

    #[test]
    fn long_lists_as_short_ones() {
        let a: Vec<String> = (0..20).map(|i| (i * 4).to_string()).collect();
        let a = format!("hwloc:CR{}", a.join(","));
        assert_eq!(
            relative_locality(&a, "hwloc:CR76"),
            Ok(SHARE_NODE | SHARE_CORE)
        );
        assert_eq!(relative_locality(&a, "hwloc:CR77"), Ok(SHARE_NODE));
        assert_eq!(
            relative_locality(&a, "hwloc:CR1,2,3,5,6,7,9,10,77-"),
            Ok(SHARE_NODE)
        );
        assert_eq!(
            relative_locality(&a, "hwloc:CR1,2,3,5,6,7,9,10,76-"),
            Ok(SHARE_NODE | SHARE_CORE)
        );
    }

    #[test]
    fn prefix_required_and_lists_as_hwloc_reads_them() {
        assert_eq!(
            relative_locality("SK0", "hwloc:SK0"),
            Err(RelativeError::NotHwloc)
        );
        assert_eq!(
            relative_locality("HWLOC:SK0-1", "hwloc:SK1"),
            Ok(SHARE_NODE | SHARE_PACKAGE)
        );
        assert_eq!(
            relative_locality("hwloc:CR4-", "hwloc:CR9"),
            Ok(SHARE_NODE | SHARE_CORE)
        );
        assert_eq!(relative_locality("hwloc:CRx", "hwloc:CRx"), Ok(SHARE_NODE));
        assert_eq!(
            relative_locality("hwloc:XX0:SK0", "hwloc:XX0:SK0"),
            Err(RelativeError::Unrecognized(SHARE_NODE | SHARE_PACKAGE))
        );
        // Only the first field of a tag in the second string is compared.
        assert_eq!(
            relative_locality("hwloc:SK1", "hwloc:SK0:SK1"),
            Ok(SHARE_NODE)
        );
    }
}
