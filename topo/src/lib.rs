//! The node's topology as rshm stores and answers it: locality strings of processes from their
//! cpusets (byte-equal to OpenPMIx 4.2.2's `PMIx_server_generate_locality_string`), the
//! relative locality of two processes (as `PMIx_Get_relative_locality` computes it), a compact
//! per-node table answering it with one lookup, the topology exported as hwloc XML, and the
//! choice of a NUMA replica. hwloc (through `hwlocality`) is needed to make strings and
//! tables; reading a table or comparing strings needs none (docs/topology.md).

#![deny(unsafe_code)]

pub mod cpulist;
pub mod locality;
pub mod numa;
// The one module allowed `unsafe`; every other module is covered by the crate-level deny.
#[allow(unsafe_code)]
pub mod raw;
pub mod relative;
pub mod table;
pub mod topology;

pub use locality::locality_string;
pub use relative::{relative_locality, RelativeError};
pub use table::{LocalityTable, TableError};
pub use topology::{discover, from_xml, to_xml, Source};

/// A topology's source as libpmix names it: `hwloc:<release>` of the hwloc built against
/// (`hwloc` when pkg-config could not tell), NUL-terminated for C.
pub const SOURCE: &str = if env!("RSHM_HWLOC_RELEASE").is_empty() {
    "hwloc\0"
} else {
    concat!("hwloc:", env!("RSHM_HWLOC_RELEASE"), "\0")
};

/// The hwloc bindings this crate speaks in (`Topology`, `CpuSet`), for its users.
pub use hwlocality;

/// Where the store keeps what this crate makes (docs/topology.md): names shared by the server
/// that writes them and the clients that read them.
pub mod store {
    /// Store name of the topology table, published as part [`PART`].
    pub const NAMESPACE: &str = "rshm.topology";
    /// The topology table's part (format.md section 5, `part`: chosen by the layer above the
    /// store; server-shim's tests check it collides with none of `rshm_gds::part`).
    pub const PART: u32 = 4;
    /// The topology table's hwloc v2 XML (a string), in the metadata realm.
    pub const XML_KEY: &str = "rshm.topology.xml";
    /// A namespace's relative-locality table (a byte object, [`crate::table`]), in the
    /// metadata realm of its job table.
    pub const LOCALITY_TABLE_KEY: &str = "rshm.locality.table";
    /// The topology table's NUMA domain map ([`crate::numa`]), a byte object, in the metadata
    /// realm; only when the store holds replicas.
    pub const NUMA_MAP_KEY: &str = "rshm.numa.map";
}

/// `pmix_locality_t` bits (pmix_common.h).
pub mod bits {
    pub const UNKNOWN: u16 = 0x0000;
    pub const NONLOCAL: u16 = 0x8000;
    pub const SHARE_HWTHREAD: u16 = 0x0001;
    pub const SHARE_CORE: u16 = 0x0002;
    pub const SHARE_L1CACHE: u16 = 0x0004;
    pub const SHARE_L2CACHE: u16 = 0x0008;
    pub const SHARE_L3CACHE: u16 = 0x0010;
    pub const SHARE_PACKAGE: u16 = 0x0020;
    pub const SHARE_NUMA: u16 = 0x0040;
    pub const SHARE_NODE: u16 = 0x4000;
}
