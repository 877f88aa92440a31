//! A published posted table's values, read back from its bytes: the writer keeps no copy of a
//! rank's table once it is published (a commit's values go from the host straight into the
//! pack), and reads it back when the rank commits again, a merge takes it into the base, or a
//! key of it is withdrawn.

#![forbid(unsafe_code)]

use super::Scope;
use crate::bytes::{u16_at, u32_at, u64_at};
use crate::error::{Error, Result};
use crate::layout::{Entry, KeyEntry, HEADER_LEN};

/// Call `f` with each posted value of the table `bytes` (a segment this writer encoded):
/// (rank, scope, key, entry flags, stored bytes). Entries of other classes are skipped.
pub(crate) fn each_value(
    bytes: &[u8],
    mut f: impl FnMut(u32, Scope, &str, u16, &[u8]) -> Result<()>,
) -> Result<()> {
    let bad = || Error::Corrupt("published posted table");
    let th = HEADER_LEN;
    let key_count = u32_at(bytes, th).ok_or_else(bad)? as usize;
    let keys_off = u64_at(bytes, th + 8).ok_or_else(bad)? as usize;
    let strings_off = u64_at(bytes, th + 24).ok_or_else(bad)? as usize;
    let strings_len = u64_at(bytes, th + 32).ok_or_else(bad)? as usize;
    let entry_count = u32_at(bytes, th + 40).ok_or_else(bad)? as usize;
    let entries_off = u64_at(bytes, th + 48).ok_or_else(bad)? as usize;
    let strings = bytes
        .get(strings_off..strings_off.checked_add(strings_len).ok_or_else(bad)?)
        .ok_or_else(bad)?;
    for e in 0..entry_count {
        let rec = entries_off + e * size_of::<Entry>();
        let class = u16_at(bytes, rec).ok_or_else(bad)?;
        let Some(scope) = Scope::of_class(class) else {
            continue;
        };
        let flags = u16_at(bytes, rec + 2).ok_or_else(bad)?;
        let rank = u32_at(bytes, rec + 4).ok_or_else(bad)?;
        let kid = u32_at(bytes, rec + 8).ok_or_else(bad)? as usize;
        let len = u32_at(bytes, rec + 12).ok_or_else(bad)? as usize;
        let off = u64_at(bytes, rec + 16).ok_or_else(bad)? as usize;
        if kid >= key_count {
            return Err(bad());
        }
        let krec = keys_off + kid * size_of::<KeyEntry>();
        let str_off = u32_at(bytes, krec + 8).ok_or_else(bad)? as usize;
        let str_len = u32_at(bytes, krec + 12).ok_or_else(bad)? as usize;
        let key = strings
            .get(str_off..str_off + str_len)
            .and_then(|k| std::str::from_utf8(k).ok())
            .ok_or_else(bad)?;
        let value = bytes.get(off..off + len).ok_or_else(bad)?;
        f(rank, scope, key, flags, value)?;
    }
    Ok(())
}
