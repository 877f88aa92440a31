//! What a registration reads: [`RegInfo`], one element of the info array (a Rust [`Info`] or a
//! C `pmix_info_t` read in place), the prefetch stages a walk tells it ([`Ahead`]), and the
//! readers of string-like and numeric values the registration accepts.

use std::borrow::Cow;

use super::bad;
use crate::error::Result;
use crate::layout::ColumnKind;
use crate::raw::prefetch;
use crate::table::column_value;
use crate::value::{types, Info, Value};

/// One element of a registration array as the registration reads it: a Rust [`Info`], or an
/// element of a C `pmix_info_t` array read in place (the C ABI's validated view), so that a
/// million proc arrays are walked where they lie instead of being converted first. `Sync`: the
/// proc arrays are read by several threads at once (the source is not changed meanwhile).
pub trait RegInfo: Sized + Sync {
    /// The elements of an info array.
    type Elems<'a>: Iterator<Item = &'a Self> + Clone
    where
        Self: 'a;
    /// The key.
    fn key(&self) -> &str;
    /// The elements, if the value is an info array (a data array of PMIX_INFO).
    fn infos(&self) -> Option<Self::Elems<'_>>;
    /// The string of a PMIX_STRING value.
    fn string(&self) -> Option<&str>;
    /// The string of a string-like value: PMIX_STRING, or PMIX_REGEX / byte-object bytes up to
    /// their NUL (maps arrive as either).
    fn text(&self) -> Option<&str>;
    /// A non-negative integer value that fits a u32 (ids and ranks arrive with varying types).
    fn number(&self) -> Option<u32>;
    /// The value, to store.
    fn value(&self) -> Result<Cow<'_, Value>>;
    /// The value as proc column `kind` holds it: a value of the column's type that is not its
    /// absent pattern, as [`TableBuilder::insert`](crate::table::TableBuilder::insert) would store it in the column. Sources that can read it
    /// without making a [`Value`] say so: a million proc arrays ask it eight times each.
    fn column(&self, kind: ColumnKind) -> Option<u32> {
        column_value(kind, &*self.value().ok()?)
    }
    /// Whether the element is well-formed, for sources that leave that to the walk (a C array,
    /// read in place unchecked): called on the elements of a proc or node array that are not
    /// stored nor read otherwise. Every other element is checked by what reads it:
    /// [`RegInfo::value`] for what is stored, [`RegInfo::infos`], [`RegInfo::text`],
    /// [`RegInfo::number`] or [`RegInfo::string`] for what pass 1 or the read-ahead reads.
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// A hint that the element will be read soon (a C array's proc arrays lie far apart in
    /// memory, and a million-element walk outruns the hardware prefetcher): told three times
    /// as the walk approaches, each stage reading only what the one before asked for.
    fn prefetch(&self, _ahead: Ahead) {}
}

/// How far ahead of the walk an element is when [`RegInfo::prefetch`] is told about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ahead {
    /// Telling the top level's proc arrays apart ([`PREFETCH_INFO`] elements ahead): the
    /// element's key only.
    Key,
    /// Farthest ([`PREFETCH_INFO`] elements): the element itself, its key and its value.
    Info,
    /// [`PREFETCH_ARRAY`] elements: what its value points to (an info array's header).
    Array,
    /// Nearest ([`PREFETCH_ELEMS`] elements): the elements of that array.
    Elements,
}

/// Elements ahead of the walk at each [`Ahead`] stage. One proc array of 8 infos is ~17 cache
/// lines, about what a core tracks in flight: asking for more arrays at once drops requests
/// (1M C registration, the whole build as pass 2's distances vary: 16/8/4 ahead 520-600 ms,
/// 6/3/1 430-470 ms, none 660-770 ms; docs/performance.md).
pub const PREFETCH_INFO: usize = 6;
pub const PREFETCH_ARRAY: usize = 3;
pub const PREFETCH_ELEMS: usize = 1;

pub(super) type InfoElems<'a> =
    std::iter::FilterMap<std::slice::Iter<'a, Value>, fn(&Value) -> Option<&Info>>;

pub(super) fn as_info(v: &Value) -> Option<&Info> {
    match v {
        Value::Info(info) => Some(info),
        _ => None,
    }
}

impl RegInfo for Info {
    type Elems<'a> = InfoElems<'a>;

    fn key(&self) -> &str {
        &self.key
    }

    fn infos(&self) -> Option<InfoElems<'_>> {
        match &self.value {
            Value::DataArray(a) if a.elem_type == types::INFO => Some(
                a.items
                    .iter()
                    .filter_map(as_info as fn(&Value) -> Option<&Info>),
            ),
            _ => None,
        }
    }

    fn string(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    fn text(&self) -> Option<&str> {
        text(&self.value)
    }

    fn number(&self) -> Option<u32> {
        number(&self.value)
    }

    fn value(&self) -> Result<Cow<'_, Value>> {
        Ok(Cow::Borrowed(&self.value))
    }

    /// An info array's three allocations in turn: its `DataArray`, the elements' buffer, the
    /// elements (each its own box).
    fn prefetch(&self, ahead: Ahead) {
        match (ahead, &self.value) {
            (Ahead::Key, _) => prefetch(self.key.as_ptr()),
            (Ahead::Info, Value::DataArray(a)) => prefetch(&**a),
            (Ahead::Array, Value::DataArray(a)) => prefetch(a.items.as_ptr()),
            (Ahead::Elements, Value::DataArray(a)) => {
                for v in a.items.iter().take(16) {
                    if let Value::Info(i) = v {
                        prefetch(&**i);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The string of a string-like value (maps arrive as PMIX_STRING or PMIX_REGEX bytes).
pub fn text(v: &Value) -> Option<&str> {
    match v {
        Value::String(s) => Some(s),
        Value::Regex(b) | Value::ByteObject(b) => text_of_bytes(b),
        _ => None,
    }
}

/// Bytes up to their first NUL as a string, if UTF-8.
pub fn text_of_bytes(b: &[u8]) -> Option<&str> {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    std::str::from_utf8(&b[..end]).ok()
}

/// A non-negative integer value that fits a u32 (ids and ranks arrive with varying types).
pub fn number(v: &Value) -> Option<u32> {
    let n: i128 = match *v {
        Value::Uint32(n) | Value::Uint(n) | Value::ProcRank(n) => n as i128,
        Value::Uint16(n) => n as i128,
        Value::Uint8(n) => n as i128,
        Value::Uint64(n) | Value::Size(n) => n as i128,
        Value::Int(n) | Value::Int32(n) => n as i128,
        Value::Int64(n) => n as i128,
        Value::Int16(n) => n as i128,
        _ => return None,
    };
    u32::try_from(n).ok()
}

/// The elements of an info-array value, walked in place.
pub(super) fn infos_of<I: RegInfo>(info: &I) -> Result<I::Elems<'_>> {
    info.infos()
        .ok_or_else(|| bad(format!("{} must be an array of pmix_info_t", info.key())))
}
