//! A value found in a table: an rkyv archive in the mapping, or a proc-column scalar.

#![forbid(unsafe_code)]

use crate::value::{ArchivedValue, Value};

/// A value read in place. Borrowed from the mapping for as long as the reader's pin.
#[derive(Clone, Copy)]
pub enum ValueRef<'a> {
    /// A value archived as an entry.
    Archived(&'a ArchivedValue),
    /// A PMIX_UINT16 proc-column value.
    Uint16(u16),
    /// A PMIX_UINT32 proc-column value.
    Uint32(u32),
    /// A PMIX_PROC_RANK proc-column value.
    ProcRank(u32),
    /// A PMIX_BYTE_OBJECT stored raw: its bytes in the mapping.
    Bytes(&'a [u8]),
}

impl<'a> From<crate::raw::Stored<'a>> for ValueRef<'a> {
    fn from(s: crate::raw::Stored<'a>) -> Self {
        match s {
            crate::raw::Stored::Archived(v) => ValueRef::Archived(v),
            crate::raw::Stored::Bytes(b) => ValueRef::Bytes(b),
        }
    }
}

impl std::fmt::Debug for ValueRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.to_value())
    }
}

impl<'a> ValueRef<'a> {
    /// An owned copy.
    pub fn to_value(&self) -> Value {
        match *self {
            ValueRef::Archived(v) => v.to_value(),
            ValueRef::Uint16(v) => Value::Uint16(v),
            ValueRef::Uint32(v) => Value::Uint32(v),
            ValueRef::ProcRank(v) => Value::ProcRank(v),
            ValueRef::Bytes(b) => Value::ByteObject(b.to_vec()),
        }
    }

    /// The `pmix_data_type_t` of the value.
    #[inline]
    pub fn type_code(&self) -> u16 {
        use crate::value::types;
        match self {
            ValueRef::Archived(v) => v.type_code(),
            ValueRef::Uint16(_) => types::UINT16,
            ValueRef::Uint32(_) => types::UINT32,
            ValueRef::ProcRank(_) => types::PROC_RANK,
            ValueRef::Bytes(_) => types::BYTE_OBJECT,
        }
    }

    /// The string of a string value, in place.
    pub fn as_str(&self) -> Option<&'a str> {
        match *self {
            ValueRef::Archived(v) => v.as_str(),
            _ => None,
        }
    }

    /// The bytes of a byte-object-like value, in place.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match *self {
            ValueRef::Archived(v) => v.as_bytes(),
            ValueRef::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// Any integer value that fits a u64.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            ValueRef::Archived(v) => v.as_u64(),
            ValueRef::Uint16(v) => Some(v as u64),
            ValueRef::Uint32(v) | ValueRef::ProcRank(v) => Some(v as u64),
            ValueRef::Bytes(_) => None,
        }
    }

    /// The archived value, for an entry (not a column scalar).
    pub fn archived(&self) -> Option<&'a ArchivedValue> {
        match *self {
            ValueRef::Archived(v) => Some(v),
            _ => None,
        }
    }
}
