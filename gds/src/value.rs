//! The PMIx value model: every storable `pmix_value_t` type of the PMIx v5 standard (3.2.8, 3.3),
//! archived with rkyv and read in place from the mapping.
//!
//! Not stored (format.md section 7): process-local pointers (`PMIX_POINTER`, `PMIX_TOPO`), the
//! statistics structs (query results) and `PMIX_KVAL` (an OpenPMIx-internal object). `PMIX_INFO`,
//! `PMIX_APP`, `PMIX_PDATA` and `PMIX_QUERY` are only elements of data arrays. Data arrays of
//! fixed-width elements are stored packed ([`crate::packed_array`]).
//!
//! Enumerated PMIx types (`pmix_scope_t`, `pmix_proc_state_t`, ...) keep their C integer width and
//! raw value: the store does not interpret them, and a value it does not know must round-trip.

#![forbid(unsafe_code)]

use rkyv::{Archive, Deserialize, Serialize};

/// PMIx data type codes (`pmix_data_type_t`), as in the standard and Debian's pmix_common.h
/// (checked against the header by the C ABI tests).
pub mod types {
    pub const UNDEF: u16 = 0;
    pub const BOOL: u16 = 1;
    pub const BYTE: u16 = 2;
    pub const STRING: u16 = 3;
    pub const SIZE: u16 = 4;
    pub const PID: u16 = 5;
    pub const INT: u16 = 6;
    pub const INT8: u16 = 7;
    pub const INT16: u16 = 8;
    pub const INT32: u16 = 9;
    pub const INT64: u16 = 10;
    pub const UINT: u16 = 11;
    pub const UINT8: u16 = 12;
    pub const UINT16: u16 = 13;
    pub const UINT32: u16 = 14;
    pub const UINT64: u16 = 15;
    pub const FLOAT: u16 = 16;
    pub const DOUBLE: u16 = 17;
    pub const TIMEVAL: u16 = 18;
    pub const TIME: u16 = 19;
    pub const STATUS: u16 = 20;
    pub const VALUE: u16 = 21;
    pub const PROC: u16 = 22;
    pub const APP: u16 = 23;
    pub const INFO: u16 = 24;
    pub const PDATA: u16 = 25;
    pub const BYTE_OBJECT: u16 = 27;
    pub const KVAL: u16 = 28;
    pub const PERSIST: u16 = 30;
    pub const POINTER: u16 = 31;
    pub const SCOPE: u16 = 32;
    pub const DATA_RANGE: u16 = 33;
    pub const COMMAND: u16 = 34;
    pub const INFO_DIRECTIVES: u16 = 35;
    pub const DATA_TYPE: u16 = 36;
    pub const PROC_STATE: u16 = 37;
    pub const PROC_INFO: u16 = 38;
    pub const DATA_ARRAY: u16 = 39;
    pub const PROC_RANK: u16 = 40;
    pub const QUERY: u16 = 41;
    pub const COMPRESSED_STRING: u16 = 42;
    pub const ALLOC_DIRECTIVE: u16 = 43;
    pub const IOF_CHANNEL: u16 = 45;
    pub const ENVAR: u16 = 46;
    pub const COORD: u16 = 47;
    pub const REGATTR: u16 = 48;
    pub const REGEX: u16 = 49;
    pub const JOB_STATE: u16 = 50;
    pub const LINK_STATE: u16 = 51;
    pub const PROC_CPUSET: u16 = 52;
    pub const GEOMETRY: u16 = 53;
    pub const DEVICE_DIST: u16 = 54;
    pub const ENDPOINT: u16 = 55;
    pub const TOPO: u16 = 56;
    pub const DEVTYPE: u16 = 57;
    pub const LOCTYPE: u16 = 58;
    pub const COMPRESSED_BYTE_OBJECT: u16 = 59;
    pub const PROC_NSPACE: u16 = 60;
    pub const PROC_STATS: u16 = 61;
    pub const DISK_STATS: u16 = 62;
    pub const NET_STATS: u16 = 63;
    pub const NODE_STATS: u16 = 64;
    pub const DATA_BUFFER: u16 = 65;
    pub const STOR_MEDIUM: u16 = 66;
    pub const STOR_ACCESS: u16 = 67;
    pub const STOR_PERSIST: u16 = 68;
    pub const STOR_ACCESS_TYPE: u16 = 69;
    /// An encoded node or process map (`pmix_regex2_t`, OpenPMIx 7.0's PRRTE maps).
    pub const REGEX2: u16 = 74;
}

/// `pmix_proc_t`: a namespace and a rank.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    pub nspace: String,
    pub rank: u32,
}

/// `pmix_proc_info_t`.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    pub proc: Proc,
    pub hostname: String,
    pub executable: String,
    pub pid: i32,
    pub exit_code: i32,
    pub state: u8,
}

/// `pmix_envar_t`.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Envar {
    pub name: String,
    pub value: String,
    pub separator: u8,
}

/// `pmix_coord_t`: a view (logical/physical) and its coordinates.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Coord {
    pub view: u8,
    pub coords: Vec<u32>,
}

/// `pmix_cpuset_t`: the bitmap is a process-local hwloc object in C, so it is stored in its
/// printed form (what `PMIx_server_generate_cpuset_string` produces).
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Cpuset {
    pub source: String,
    pub bitmap: String,
}

/// `pmix_geometry_t`.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    pub fabric: u64,
    pub uuid: String,
    pub osname: String,
    pub coordinates: Vec<Coord>,
}

/// `pmix_device_distance_t`.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct DeviceDistance {
    pub uuid: String,
    pub osname: String,
    pub device_type: u64,
    pub mindist: u16,
    pub maxdist: u16,
}

/// `pmix_endpoint_t`.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub uuid: String,
    pub osname: String,
    pub endpt: Vec<u8>,
}

/// `pmix_regattr_t`: an attribute's name, key string, value type and description lines.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct RegAttr {
    pub name: String,
    pub key: String,
    pub value_type: u16,
    pub description: Vec<String>,
}

/// `pmix_info_t` as an element of an info array (a data array of type `PMIX_INFO`).
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[rkyv(serialize_bounds(
    __S: rkyv::ser::Writer + rkyv::ser::Allocator,
    __S::Error: rkyv::rancor::Source,
))]
#[rkyv(deserialize_bounds(__D::Error: rkyv::rancor::Source))]
#[rkyv(bytecheck(bounds(__C: rkyv::validation::ArchiveContext, __C::Error: rkyv::rancor::Source)))]
pub struct Info {
    pub key: String,
    /// `pmix_info_directives_t`.
    pub flags: u32,
    #[rkyv(omit_bounds)]
    pub value: Value,
}

impl Info {
    /// A key of 1..=511 bytes and a value that checks.
    fn check(&self) -> crate::Result<()> {
        if self.key.is_empty() || self.key.len() > crate::layout::MAX_KEY_LEN {
            return Err(crate::Error::InvalidArgument(format!(
                "info key of {} bytes (1..=511)",
                self.key.len()
            )));
        }
        self.value.check()
    }

    fn pack_in_place(&mut self) {
        self.value = std::mem::replace(&mut self.value, Value::Undef).into_packed();
    }

    /// An info with no directives.
    pub fn new(key: impl Into<String>, value: Value) -> Info {
        Info {
            key: key.into(),
            flags: 0,
            value,
        }
    }

    /// An info whose value is an info array (`PMIX_*_INFO_ARRAY`, registration arrays).
    pub fn array(key: impl Into<String>, items: Vec<Info>) -> Info {
        let items = items
            .into_iter()
            .map(|i| Value::Info(Box::new(i)))
            .collect();
        Info::new(key, Value::array(types::INFO, items))
    }
}

/// `pmix_app_t`, as an element of a `PMIX_APP` data array. NULL strings and arrays read as
/// empty ones.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[rkyv(serialize_bounds(
    __S: rkyv::ser::Writer + rkyv::ser::Allocator,
    __S::Error: rkyv::rancor::Source,
))]
#[rkyv(deserialize_bounds(__D::Error: rkyv::rancor::Source))]
#[rkyv(bytecheck(bounds(__C: rkyv::validation::ArchiveContext, __C::Error: rkyv::rancor::Source)))]
pub struct App {
    pub cmd: String,
    pub argv: Vec<String>,
    pub env: Vec<String>,
    pub cwd: String,
    pub maxprocs: i32,
    #[rkyv(omit_bounds)]
    pub info: Vec<Info>,
}

/// `pmix_pdata_t` (a published datum), as an element of a `PMIX_PDATA` data array.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[rkyv(serialize_bounds(
    __S: rkyv::ser::Writer + rkyv::ser::Allocator,
    __S::Error: rkyv::rancor::Source,
))]
#[rkyv(deserialize_bounds(__D::Error: rkyv::rancor::Source))]
#[rkyv(bytecheck(bounds(__C: rkyv::validation::ArchiveContext, __C::Error: rkyv::rancor::Source)))]
pub struct PData {
    pub proc: Proc,
    pub key: String,
    #[rkyv(omit_bounds)]
    pub value: Value,
}

/// `pmix_query_t`, as an element of a `PMIX_QUERY` data array.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[rkyv(serialize_bounds(
    __S: rkyv::ser::Writer + rkyv::ser::Allocator,
    __S::Error: rkyv::rancor::Source,
))]
#[rkyv(deserialize_bounds(__D::Error: rkyv::rancor::Source))]
#[rkyv(bytecheck(bounds(__C: rkyv::validation::ArchiveContext, __C::Error: rkyv::rancor::Source)))]
pub struct Query {
    pub keys: Vec<String>,
    #[rkyv(omit_bounds)]
    pub qualifiers: Vec<Info>,
}

/// `pmix_data_array_t`: a type code and its elements. The element type is kept even for an
/// empty array; every element's own type must match it (`Value::Info` for `PMIX_INFO`, any
/// value for `PMIX_VALUE`).
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[rkyv(serialize_bounds(
    __S: rkyv::ser::Writer + rkyv::ser::Allocator,
    __S::Error: rkyv::rancor::Source,
))]
#[rkyv(deserialize_bounds(__D::Error: rkyv::rancor::Source))]
#[rkyv(bytecheck(bounds(__C: rkyv::validation::ArchiveContext, __C::Error: rkyv::rancor::Source)))]
pub struct DataArray {
    pub elem_type: u16,
    #[rkyv(omit_bounds)]
    pub items: Vec<Value>,
}

/// A storable `pmix_value_t`. Variant names follow the `PMIX_*` type names.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[rkyv(serialize_bounds(
    __S: rkyv::ser::Writer + rkyv::ser::Allocator,
    __S::Error: rkyv::rancor::Source,
))]
#[rkyv(deserialize_bounds(__D::Error: rkyv::rancor::Source))]
#[rkyv(bytecheck(bounds(__C: rkyv::validation::ArchiveContext, __C::Error: rkyv::rancor::Source)))]
pub enum Value {
    Undef,
    Bool(bool),
    Byte(u8),
    String(String),
    Size(u64),
    Pid(i32),
    Int(i32),
    Int8(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Uint(u32),
    Uint8(u8),
    Uint16(u16),
    Uint32(u32),
    Uint64(u64),
    Float(f32),
    Double(f64),
    Timeval {
        sec: i64,
        usec: i64,
    },
    Time(i64),
    Status(i32),
    Proc(Proc),
    ByteObject(Vec<u8>),
    Persistence(u8),
    Scope(u8),
    DataRange(u8),
    DataType(u16),
    ProcState(u8),
    ProcInfo(ProcInfo),
    DataArray(#[rkyv(omit_bounds)] Box<DataArray>),
    /// Only as an element of a `PMIX_INFO` data array.
    Info(#[rkyv(omit_bounds)] Box<Info>),
    CompressedString(Vec<u8>),
    AllocDirective(u8),
    IofChannel(u16),
    Envar(Envar),
    Coord(Coord),
    Regex(Vec<u8>),
    JobState(u8),
    LinkState(u8),
    ProcCpuset(Cpuset),
    Geometry(Geometry),
    DeviceDistance(DeviceDistance),
    Endpoint(Endpoint),
    DeviceType(u64),
    Locality(u16),
    CompressedBytes(Vec<u8>),
    ProcNspace(String),
    ProcRank(u32),
    StorMedium(u64),
    StorAccess(u64),
    StorPersist(u64),
    StorAccessType(u64),
    // Added after the variants above (whose archived tags they keep): format.md section 7.
    /// `PMIX_DATA_BUFFER`: the buffer's unread payload (what `PMIx_Data_copy_payload` copies).
    DataBuffer(Vec<u8>),
    /// `PMIX_COMMAND` (`pmix_cmd_t`).
    Command(u8),
    /// `PMIX_INFO_DIRECTIVES` (`pmix_info_directives_t`).
    InfoDirectives(u32),
    RegAttr(Box<RegAttr>),
    /// A `PMIX_DATA_ARRAY` of fixed-width elements, stored as their bytes.
    PackedArray(crate::packed_array::PackedArray),
    /// Only as an element of a `PMIX_APP` data array.
    App(#[rkyv(omit_bounds)] Box<App>),
    /// Only as an element of a `PMIX_PDATA` data array.
    PData(#[rkyv(omit_bounds)] Box<PData>),
    /// Only as an element of a `PMIX_QUERY` data array.
    Query(#[rkyv(omit_bounds)] Box<Query>),
    /// A `PMIX_STRING` whose pointer is NULL (Open MPI registers `PMIX_LOCALITY_STRING` so for
    /// an unbound process): read back as a `PMIX_STRING` with a NULL `data.string`, as OpenPMIx
    /// answers it.
    NullString,
}

impl Value {
    /// The `pmix_data_type_t` code of this value.
    pub fn type_code(&self) -> u16 {
        use types as t;
        match self {
            Value::Undef => t::UNDEF,
            Value::Bool(_) => t::BOOL,
            Value::Byte(_) => t::BYTE,
            Value::String(_) | Value::NullString => t::STRING,
            Value::Size(_) => t::SIZE,
            Value::Pid(_) => t::PID,
            Value::Int(_) => t::INT,
            Value::Int8(_) => t::INT8,
            Value::Int16(_) => t::INT16,
            Value::Int32(_) => t::INT32,
            Value::Int64(_) => t::INT64,
            Value::Uint(_) => t::UINT,
            Value::Uint8(_) => t::UINT8,
            Value::Uint16(_) => t::UINT16,
            Value::Uint32(_) => t::UINT32,
            Value::Uint64(_) => t::UINT64,
            Value::Float(_) => t::FLOAT,
            Value::Double(_) => t::DOUBLE,
            Value::Timeval { .. } => t::TIMEVAL,
            Value::Time(_) => t::TIME,
            Value::Status(_) => t::STATUS,
            Value::Proc(_) => t::PROC,
            Value::ByteObject(_) => t::BYTE_OBJECT,
            Value::Persistence(_) => t::PERSIST,
            Value::Scope(_) => t::SCOPE,
            Value::DataRange(_) => t::DATA_RANGE,
            Value::DataType(_) => t::DATA_TYPE,
            Value::ProcState(_) => t::PROC_STATE,
            Value::ProcInfo(_) => t::PROC_INFO,
            Value::DataArray(_) => t::DATA_ARRAY,
            Value::Info(_) => t::INFO,
            Value::CompressedString(_) => t::COMPRESSED_STRING,
            Value::AllocDirective(_) => t::ALLOC_DIRECTIVE,
            Value::IofChannel(_) => t::IOF_CHANNEL,
            Value::Envar(_) => t::ENVAR,
            Value::Coord(_) => t::COORD,
            Value::Regex(_) => t::REGEX,
            Value::JobState(_) => t::JOB_STATE,
            Value::LinkState(_) => t::LINK_STATE,
            Value::ProcCpuset(_) => t::PROC_CPUSET,
            Value::Geometry(_) => t::GEOMETRY,
            Value::DeviceDistance(_) => t::DEVICE_DIST,
            Value::Endpoint(_) => t::ENDPOINT,
            Value::DeviceType(_) => t::DEVTYPE,
            Value::Locality(_) => t::LOCTYPE,
            Value::CompressedBytes(_) => t::COMPRESSED_BYTE_OBJECT,
            Value::ProcNspace(_) => t::PROC_NSPACE,
            Value::ProcRank(_) => t::PROC_RANK,
            Value::StorMedium(_) => t::STOR_MEDIUM,
            Value::StorAccess(_) => t::STOR_ACCESS,
            Value::StorPersist(_) => t::STOR_PERSIST,
            Value::StorAccessType(_) => t::STOR_ACCESS_TYPE,
            Value::DataBuffer(_) => t::DATA_BUFFER,
            Value::Command(_) => t::COMMAND,
            Value::InfoDirectives(_) => t::INFO_DIRECTIVES,
            Value::RegAttr(_) => t::REGATTR,
            Value::PackedArray(_) => t::DATA_ARRAY,
            Value::App(_) => t::APP,
            Value::PData(_) => t::PDATA,
            Value::Query(_) => t::QUERY,
        }
    }

    /// Check what rkyv cannot: data array elements match their declared type, info, app,
    /// pdata and query elements only inside arrays of their type, key lengths. Called by the
    /// writer before archiving.
    pub fn check(&self) -> crate::Result<()> {
        self.check_at(types::UNDEF)
    }

    /// Whether this type is only ever an element of a data array of its type.
    fn element_only(&self) -> bool {
        matches!(
            self,
            Value::Info(_) | Value::App(_) | Value::PData(_) | Value::Query(_)
        )
    }

    /// `elem_of`: the element type of the array holding this value (UNDEF: none).
    fn check_at(&self, elem_of: u16) -> crate::Result<()> {
        if self.element_only() && elem_of != self.type_code() {
            return Err(crate::Error::InvalidArgument(format!(
                "a value of type {} outside a data array of that type",
                self.type_code()
            )));
        }
        let infos = |infos: &[Info]| infos.iter().try_for_each(Info::check);
        match self {
            Value::Info(info) => info.check(),
            Value::App(app) => infos(&app.info),
            Value::PData(d) => {
                if d.key.len() > crate::layout::MAX_KEY_LEN {
                    return Err(crate::Error::InvalidArgument(format!(
                        "pdata key of {} bytes (..=511)",
                        d.key.len()
                    )));
                }
                d.value.check()
            }
            Value::Query(q) => infos(&q.qualifiers),
            Value::DataArray(array) => {
                for item in &array.items {
                    let ok = match array.elem_type {
                        types::VALUE => !item.element_only(),
                        t => item.type_code() == t,
                    };
                    if !ok {
                        return Err(crate::Error::InvalidArgument(format!(
                            "data array of type {} holds an element of type {}",
                            array.elem_type,
                            item.type_code()
                        )));
                    }
                    item.check_at(array.elem_type)?;
                }
                Ok(())
            }
            Value::PackedArray(p) => p.check(),
            _ => Ok(()),
        }
    }

    /// This value with every data array of fixed-width elements, at any depth, packed
    /// ([`crate::packed_array`]), as the C conversion reads it: the form a C round trip gives back.
    pub fn into_packed(self) -> Value {
        match self {
            Value::DataArray(a) => {
                let DataArray { elem_type, items } = *a;
                match crate::packed_array::PackedArray::from_items(elem_type, &items) {
                    Some(p) => Value::PackedArray(p),
                    None => Value::array(
                        elem_type,
                        items.into_iter().map(Value::into_packed).collect(),
                    ),
                }
            }
            Value::Info(mut info) => {
                info.pack_in_place();
                Value::Info(info)
            }
            Value::App(mut app) => {
                app.info.iter_mut().for_each(Info::pack_in_place);
                Value::App(app)
            }
            Value::PData(mut d) => {
                d.value = std::mem::replace(&mut d.value, Value::Undef).into_packed();
                Value::PData(d)
            }
            Value::Query(mut q) => {
                q.qualifiers.iter_mut().for_each(Info::pack_in_place);
                Value::Query(q)
            }
            v => v,
        }
    }

    /// A data array of `elem_type`.
    pub fn array(elem_type: u16, items: Vec<Value>) -> Value {
        Value::DataArray(Box::new(DataArray { elem_type, items }))
    }

    /// An info array (a data array of `PMIX_INFO`).
    pub fn info_array(items: impl IntoIterator<Item = (String, Value)>) -> Value {
        let items = items
            .into_iter()
            .map(|(key, value)| {
                Value::Info(Box::new(Info {
                    key,
                    flags: 0,
                    value,
                }))
            })
            .collect();
        Value::array(types::INFO, items)
    }

    /// Archive the value (root at the end, as format.md section 6 stores it).
    pub fn archive(&self) -> crate::Result<rkyv::util::AlignedVec> {
        self.check()?;
        rkyv::to_bytes::<rkyv::rancor::Error>(self)
            .map_err(|e| crate::Error::InvalidArgument(format!("value cannot be archived: {e}")))
    }
}

impl ArchivedValue {
    /// The `pmix_data_type_t` code of this value, without deserializing it.
    #[inline]
    pub fn type_code(&self) -> u16 {
        use types as t;
        match self {
            ArchivedValue::Undef => t::UNDEF,
            ArchivedValue::Bool(_) => t::BOOL,
            ArchivedValue::Byte(_) => t::BYTE,
            ArchivedValue::String(_) | ArchivedValue::NullString => t::STRING,
            ArchivedValue::Size(_) => t::SIZE,
            ArchivedValue::Pid(_) => t::PID,
            ArchivedValue::Int(_) => t::INT,
            ArchivedValue::Int8(_) => t::INT8,
            ArchivedValue::Int16(_) => t::INT16,
            ArchivedValue::Int32(_) => t::INT32,
            ArchivedValue::Int64(_) => t::INT64,
            ArchivedValue::Uint(_) => t::UINT,
            ArchivedValue::Uint8(_) => t::UINT8,
            ArchivedValue::Uint16(_) => t::UINT16,
            ArchivedValue::Uint32(_) => t::UINT32,
            ArchivedValue::Uint64(_) => t::UINT64,
            ArchivedValue::Float(_) => t::FLOAT,
            ArchivedValue::Double(_) => t::DOUBLE,
            ArchivedValue::Timeval { .. } => t::TIMEVAL,
            ArchivedValue::Time(_) => t::TIME,
            ArchivedValue::Status(_) => t::STATUS,
            ArchivedValue::Proc(_) => t::PROC,
            ArchivedValue::ByteObject(_) => t::BYTE_OBJECT,
            ArchivedValue::Persistence(_) => t::PERSIST,
            ArchivedValue::Scope(_) => t::SCOPE,
            ArchivedValue::DataRange(_) => t::DATA_RANGE,
            ArchivedValue::DataType(_) => t::DATA_TYPE,
            ArchivedValue::ProcState(_) => t::PROC_STATE,
            ArchivedValue::ProcInfo(_) => t::PROC_INFO,
            ArchivedValue::DataArray(_) => t::DATA_ARRAY,
            ArchivedValue::Info(_) => t::INFO,
            ArchivedValue::CompressedString(_) => t::COMPRESSED_STRING,
            ArchivedValue::AllocDirective(_) => t::ALLOC_DIRECTIVE,
            ArchivedValue::IofChannel(_) => t::IOF_CHANNEL,
            ArchivedValue::Envar(_) => t::ENVAR,
            ArchivedValue::Coord(_) => t::COORD,
            ArchivedValue::Regex(_) => t::REGEX,
            ArchivedValue::JobState(_) => t::JOB_STATE,
            ArchivedValue::LinkState(_) => t::LINK_STATE,
            ArchivedValue::ProcCpuset(_) => t::PROC_CPUSET,
            ArchivedValue::Geometry(_) => t::GEOMETRY,
            ArchivedValue::DeviceDistance(_) => t::DEVICE_DIST,
            ArchivedValue::Endpoint(_) => t::ENDPOINT,
            ArchivedValue::DeviceType(_) => t::DEVTYPE,
            ArchivedValue::Locality(_) => t::LOCTYPE,
            ArchivedValue::CompressedBytes(_) => t::COMPRESSED_BYTE_OBJECT,
            ArchivedValue::ProcNspace(_) => t::PROC_NSPACE,
            ArchivedValue::ProcRank(_) => t::PROC_RANK,
            ArchivedValue::StorMedium(_) => t::STOR_MEDIUM,
            ArchivedValue::StorAccess(_) => t::STOR_ACCESS,
            ArchivedValue::StorPersist(_) => t::STOR_PERSIST,
            ArchivedValue::StorAccessType(_) => t::STOR_ACCESS_TYPE,
            ArchivedValue::DataBuffer(_) => t::DATA_BUFFER,
            ArchivedValue::Command(_) => t::COMMAND,
            ArchivedValue::InfoDirectives(_) => t::INFO_DIRECTIVES,
            ArchivedValue::RegAttr(_) => t::REGATTR,
            ArchivedValue::PackedArray(_) => t::DATA_ARRAY,
            ArchivedValue::App(_) => t::APP,
            ArchivedValue::PData(_) => t::PDATA,
            ArchivedValue::Query(_) => t::QUERY,
        }
    }

    /// Deserialize into an owned [`Value`] (the copy path; the read path uses the archive).
    pub fn to_value(&self) -> Value {
        // Infallible for a validated archive: every archived field has an owned counterpart.
        rkyv::deserialize::<Value, rkyv::rancor::Error>(self).unwrap_or(Value::Undef)
    }

    /// The string of a `PMIX_STRING` or `PMIX_PROC_NSPACE` value, in place.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            ArchivedValue::String(s) | ArchivedValue::ProcNspace(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// The bytes of a byte object (or compressed/regex blob), in place.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            ArchivedValue::ByteObject(b)
            | ArchivedValue::CompressedString(b)
            | ArchivedValue::CompressedBytes(b)
            | ArchivedValue::Regex(b) => Some(b.as_slice()),
            _ => None,
        }
    }

    /// Any unsigned or signed integer value that fits a u64 (ranks, sizes, counts).
    pub fn as_u64(&self) -> Option<u64> {
        Some(match self {
            ArchivedValue::Size(v) | ArchivedValue::Uint64(v) => v.to_native(),
            ArchivedValue::Uint(v) | ArchivedValue::Uint32(v) => v.to_native() as u64,
            ArchivedValue::ProcRank(v) => v.to_native() as u64,
            ArchivedValue::Uint16(v) => v.to_native() as u64,
            ArchivedValue::Uint8(v) | ArchivedValue::Byte(v) => *v as u64,
            ArchivedValue::Int(v) | ArchivedValue::Int32(v) if v.to_native() >= 0 => {
                v.to_native() as u64
            }
            ArchivedValue::Int64(v) if v.to_native() >= 0 => v.to_native() as u64,
            _ => return None,
        })
    }
}
