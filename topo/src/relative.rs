//! Relative locality of two locality strings, as OpenPMIx 4.2.2's
//! `pmix_hwloc_get_relative_locality` computes it (what `PMIx_Get_relative_locality`
//! answers), without hwloc: both strings must start with `hwloc:`; they share the node; then
//! for each `<tag><list>` field of the first, the first field of the second with the same
//! two-letter tag is compared, and the level's bit is set when the two lists intersect.

use crate::bits;
use crate::cpulist::{self, Bits};

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

/// A list as `hwloc_bitmap_list_sscanf` reads it: a malformed list is the empty set; an open
/// range (`4-`) runs to infinity.
#[derive(Default)]
struct Set {
    bits: Bits,
    from: Option<u32>,
}

impl Set {
    fn parse(list: &str) -> Set {
        if let Some(bits) = cpulist::parse(list) {
            return Set { bits, from: None };
        }
        // The one form the finite parser refuses that hwloc accepts: a last open range.
        let (head, last) = list.rsplit_once(',').unwrap_or(("", list));
        match (last.strip_suffix('-'), cpulist::parse(head)) {
            (Some(n), Some(bits)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                match n.parse::<u32>() {
                    Ok(from) => Set {
                        bits,
                        from: Some(from),
                    },
                    Err(_) => Set::default(),
                }
            }
            _ => Set::default(),
        }
    }

    fn intersects(&self, o: &Set) -> bool {
        let tail = |s: &Set, from: u32| s.from.is_some() || s.bits.iter().any(|i| i >= from);
        self.bits.intersects(&o.bits)
            || self.from.is_some_and(|f| tail(o, f))
            || o.from.is_some_and(|f| tail(self, f))
    }
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
fn fields(s: &str) -> Vec<&str> {
    s.split(':').filter(|f| !f.is_empty()).collect()
}

/// The relative locality (`pmix_locality_t` bits) of two processes of one node by their
/// locality strings (`hwloc:` + what [`crate::locality_string`] writes).
pub fn relative_locality(a: &str, b: &str) -> Result<u16, RelativeError> {
    let (Some(a), Some(b)) = (strip(a), strip(b)) else {
        return Err(RelativeError::NotHwloc);
    };
    let mut loc = bits::SHARE_NODE;
    let mut unknown = false;
    let (fa, fb) = (fields(a), fields(b));
    for f1 in &fa {
        let Some(f2) = fb.iter().find(|f2| same_tag(f1, f2)) else {
            continue;
        };
        let rest = |f: &str| f.get(2..).map(Set::parse).unwrap_or_default();
        if rest(f1).intersects(&rest(f2)) {
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
