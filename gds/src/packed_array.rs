//! Data arrays of fixed-size elements (integers, floats, enums, times) stored as their bytes:
//! one element costs its C width in the store, not a whole archived [`Value`] (~48 bytes), so a
//! 40 MB array of `uint32_t` stays ~40 MB. format.md section 7 defines the encoding: every
//! element little-endian in the width of its C type, one after another.

#![forbid(unsafe_code)]

use rkyv::{Archive, Deserialize, Serialize};

use crate::value::{types as t, Value};

/// A `pmix_data_array_t` whose element type has a fixed width ([`width`]): the type code and
/// the elements' bytes.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct PackedArray {
    pub elem_type: u16,
    pub bytes: Vec<u8>,
}

/// The width of one element of `elem_type` in a packed array (its C size on LP64), or `None`
/// for a type that holds pointers or strings and is stored element by element. The one table
/// of these widths: abi's C element sizes (`rshm_abi::c::elem_size`) start from it.
pub const fn width(elem_type: u16) -> Option<usize> {
    Some(match elem_type {
        t::BOOL | t::BYTE | t::INT8 | t::UINT8 | t::PERSIST | t::SCOPE | t::DATA_RANGE => 1,
        t::PROC_STATE | t::ALLOC_DIRECTIVE | t::JOB_STATE | t::LINK_STATE | t::COMMAND => 1,
        t::INT16 | t::UINT16 | t::DATA_TYPE | t::IOF_CHANNEL | t::LOCTYPE => 2,
        // pmix_storage_access_type_t is a uint16_t (pmix_common.h), unlike the other three.
        t::STOR_ACCESS_TYPE => 2,
        t::PID | t::INT | t::INT32 | t::UINT | t::UINT32 | t::FLOAT | t::STATUS => 4,
        t::PROC_RANK | t::INFO_DIRECTIVES => 4,
        t::SIZE | t::INT64 | t::UINT64 | t::DOUBLE | t::TIME | t::DEVTYPE => 8,
        t::STOR_MEDIUM | t::STOR_ACCESS | t::STOR_PERSIST => 8,
        t::TIMEVAL => 16,
        _ => return None,
    })
}

impl PackedArray {
    /// An empty array of `elem_type` with room for `n` elements, or `None` if the type is not
    /// fixed-width.
    pub fn with_capacity(elem_type: u16, n: usize) -> Option<PackedArray> {
        let w = width(elem_type)?;
        Some(PackedArray {
            elem_type,
            bytes: Vec::with_capacity(n.saturating_mul(w)),
        })
    }

    /// `items` packed, or `None` if `elem_type` is not fixed-width or an item is not of it.
    pub fn from_items(elem_type: u16, items: &[Value]) -> Option<PackedArray> {
        let mut a = PackedArray::with_capacity(elem_type, items.len())?;
        for v in items {
            a.push(v).then_some(())?;
        }
        Some(a)
    }

    /// Append `v`; false (nothing appended) if it is not of the array's element type.
    pub fn push(&mut self, v: &Value) -> bool {
        if v.type_code() != self.elem_type {
            return false;
        }
        let b = &mut self.bytes;
        match *v {
            Value::Bool(x) => b.push(x as u8),
            Value::Byte(x)
            | Value::Uint8(x)
            | Value::Persistence(x)
            | Value::Scope(x)
            | Value::DataRange(x)
            | Value::ProcState(x)
            | Value::AllocDirective(x)
            | Value::JobState(x)
            | Value::LinkState(x)
            | Value::Command(x) => b.push(x),
            Value::Int8(x) => b.push(x as u8),
            Value::Int16(x) => b.extend_from_slice(&x.to_le_bytes()),
            Value::Uint16(x) | Value::DataType(x) | Value::IofChannel(x) | Value::Locality(x) => {
                b.extend_from_slice(&x.to_le_bytes())
            }
            Value::StorAccessType(x) => match u16::try_from(x) {
                Ok(x) => b.extend_from_slice(&x.to_le_bytes()),
                Err(_) => return false,
            },
            Value::Pid(x) | Value::Int(x) | Value::Int32(x) | Value::Status(x) => {
                b.extend_from_slice(&x.to_le_bytes())
            }
            Value::Uint(x) | Value::Uint32(x) | Value::ProcRank(x) | Value::InfoDirectives(x) => {
                b.extend_from_slice(&x.to_le_bytes())
            }
            Value::Float(x) => b.extend_from_slice(&x.to_bits().to_le_bytes()),
            Value::Int64(x) | Value::Time(x) => b.extend_from_slice(&x.to_le_bytes()),
            Value::Size(x)
            | Value::Uint64(x)
            | Value::DeviceType(x)
            | Value::StorMedium(x)
            | Value::StorAccess(x)
            | Value::StorPersist(x) => b.extend_from_slice(&x.to_le_bytes()),
            Value::Double(x) => b.extend_from_slice(&x.to_bits().to_le_bytes()),
            Value::Timeval { sec, usec } => {
                b.extend_from_slice(&sec.to_le_bytes());
                b.extend_from_slice(&usec.to_le_bytes());
            }
            _ => return false,
        }
        true
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / width(self.elem_type).unwrap_or(1)
    }

    /// Whether the array has no element.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The elements as values (for code that walks arrays element by element).
    pub fn items(&self) -> Vec<Value> {
        decode_all(self.elem_type, &self.bytes)
    }

    /// A known fixed-width type and a whole number of elements.
    pub fn check(&self) -> crate::Result<()> {
        check(self.elem_type, self.bytes.len())
    }
}

impl ArchivedPackedArray {
    /// The element type code.
    pub fn elem_type(&self) -> u16 {
        self.elem_type.to_native()
    }

    /// The elements' bytes, in place.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The elements as values.
    pub fn items(&self) -> Vec<Value> {
        decode_all(self.elem_type(), self.bytes())
    }
}

fn check(elem_type: u16, len: usize) -> crate::Result<()> {
    match width(elem_type) {
        Some(w) if len.is_multiple_of(w) => Ok(()),
        Some(w) => Err(crate::Error::InvalidArgument(format!(
            "packed array of type {elem_type}: {len} bytes is not a multiple of {w}"
        ))),
        None => Err(crate::Error::InvalidArgument(format!(
            "packed array of type {elem_type}, which is not fixed-width"
        ))),
    }
}

fn decode_all(elem_type: u16, bytes: &[u8]) -> Vec<Value> {
    let Some(w) = width(elem_type) else {
        return Vec::new();
    };
    bytes
        .chunks_exact(w)
        .map(|c| decode(elem_type, c))
        .collect()
}

/// One element from its `width(elem_type)` little-endian bytes.
fn decode(elem_type: u16, c: &[u8]) -> Value {
    let u8_ = || c[0];
    let u16_ = || u16::from_le_bytes([c[0], c[1]]);
    let u32_ = || u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    let u64_at = |o: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&c[o..o + 8]);
        u64::from_le_bytes(a)
    };
    let u64_ = || u64_at(0);
    match elem_type {
        t::BOOL => Value::Bool(u8_() != 0),
        t::BYTE => Value::Byte(u8_()),
        t::INT8 => Value::Int8(u8_() as i8),
        t::UINT8 => Value::Uint8(u8_()),
        t::PERSIST => Value::Persistence(u8_()),
        t::SCOPE => Value::Scope(u8_()),
        t::DATA_RANGE => Value::DataRange(u8_()),
        t::PROC_STATE => Value::ProcState(u8_()),
        t::ALLOC_DIRECTIVE => Value::AllocDirective(u8_()),
        t::JOB_STATE => Value::JobState(u8_()),
        t::LINK_STATE => Value::LinkState(u8_()),
        t::COMMAND => Value::Command(u8_()),
        t::INT16 => Value::Int16(u16_() as i16),
        t::UINT16 => Value::Uint16(u16_()),
        t::DATA_TYPE => Value::DataType(u16_()),
        t::IOF_CHANNEL => Value::IofChannel(u16_()),
        t::LOCTYPE => Value::Locality(u16_()),
        t::STOR_ACCESS_TYPE => Value::StorAccessType(u16_() as u64),
        t::PID => Value::Pid(u32_() as i32),
        t::INT => Value::Int(u32_() as i32),
        t::INT32 => Value::Int32(u32_() as i32),
        t::STATUS => Value::Status(u32_() as i32),
        t::UINT => Value::Uint(u32_()),
        t::UINT32 => Value::Uint32(u32_()),
        t::PROC_RANK => Value::ProcRank(u32_()),
        t::INFO_DIRECTIVES => Value::InfoDirectives(u32_()),
        t::FLOAT => Value::Float(f32::from_bits(u32_())),
        t::SIZE => Value::Size(u64_()),
        t::INT64 => Value::Int64(u64_() as i64),
        t::TIME => Value::Time(u64_() as i64),
        t::UINT64 => Value::Uint64(u64_()),
        t::DEVTYPE => Value::DeviceType(u64_()),
        t::STOR_MEDIUM => Value::StorMedium(u64_()),
        t::STOR_ACCESS => Value::StorAccess(u64_()),
        t::STOR_PERSIST => Value::StorPersist(u64_()),
        t::DOUBLE => Value::Double(f64::from_bits(u64_())),
        t::TIMEVAL => Value::Timeval {
            sec: u64_at(0) as i64,
            usec: u64_at(8) as i64,
        },
        _ => Value::Undef,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixed_width_type_round_trips_through_its_bytes() {
        let samples = [
            Value::Bool(true),
            Value::Byte(7),
            Value::Int8(-3),
            Value::Uint8(200),
            Value::Persistence(2),
            Value::Scope(3),
            Value::DataRange(4),
            Value::ProcState(5),
            Value::AllocDirective(1),
            Value::JobState(6),
            Value::LinkState(2),
            Value::Command(9),
            Value::Int16(-300),
            Value::Uint16(60000),
            Value::DataType(65),
            Value::IofChannel(4),
            Value::Locality(0x1f),
            Value::StorAccessType(3),
            Value::Pid(4242),
            Value::Int(-5),
            Value::Int32(i32::MIN),
            Value::Status(-46),
            Value::Uint(9),
            Value::Uint32(u32::MAX),
            Value::ProcRank(12),
            Value::InfoDirectives(0x8000_0001),
            Value::Float(1.5),
            Value::Size(1 << 40),
            Value::Int64(-1),
            Value::Time(1_700_000_000),
            Value::Uint64(u64::MAX),
            Value::DeviceType(0x20),
            Value::StorMedium(8),
            Value::StorAccess(4),
            Value::StorPersist(2),
            Value::Double(-0.25),
            Value::Timeval { sec: 5, usec: -7 },
        ];
        for v in samples {
            let ty = v.type_code();
            let items = vec![v.clone(), v.clone()];
            let p = PackedArray::from_items(ty, &items).unwrap_or_else(|| panic!("{v:?}"));
            assert_eq!(p.bytes.len(), 2 * width(ty).unwrap(), "{v:?}");
            assert_eq!(p.len(), 2);
            assert_eq!(p.items(), items, "{v:?}");
            p.check().unwrap();
        }
    }

    #[test]
    fn strings_mixed_types_and_partial_elements_are_refused() {
        assert!(PackedArray::from_items(t::STRING, &[Value::String("x".into())]).is_none());
        assert!(PackedArray::from_items(t::UINT32, &[Value::Uint16(1)]).is_none());
        assert!(
            PackedArray::from_items(t::STOR_ACCESS_TYPE, &[Value::StorAccessType(1 << 20)])
                .is_none()
        );
        let bad = PackedArray {
            elem_type: t::UINT32,
            bytes: vec![0; 6],
        };
        assert!(bad.check().is_err());
        let bad = PackedArray {
            elem_type: t::STRING,
            bytes: vec![],
        };
        assert!(bad.check().is_err());
    }
}
