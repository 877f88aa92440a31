//! Locality and topology answered from the store in the caller's thread (docs/topology.md):
//! the relative locality of two ranks of a namespace by one lookup in its relative-locality
//! table, and the node's hwloc XML, from which an hwloc topology is built only when asked.

#![forbid(unsafe_code)]

use rshm_gds::Reader;
use rshm_gds::{part, Error, Realm, Result};
use rshm_topo::store::{
    LOCALITY_TABLE_KEY, NAMESPACE, NUMA_MAP_KEY, PART as TOPOLOGY_PART, XML_KEY,
};
use rshm_topo::LocalityTable;

use crate::client::Client;

fn corrupt(_: rshm_topo::TableError) -> Error {
    Error::Corrupt("a namespace's locality table does not validate")
}

impl Client {
    /// The relative locality (`pmix_locality_t`) of ranks `a` and `b` of `ns`:
    /// `Err(NotFound)` when the store has no locality table for `ns` or either rank is not
    /// one of its local ranks.
    pub fn relative_locality(&self, ns: &str, a: u32, b: u32) -> Result<u16> {
        self.with_locality_table(ns, |t| t.lookup(a, b))?
            .ok_or(Error::NotFound)
    }

    /// Run `f` on the locality table of `ns`, read in place in the mapping.
    pub fn with_locality_table<T>(
        &self,
        ns: &str,
        f: impl FnOnce(&LocalityTable<'_>) -> T,
    ) -> Result<T> {
        let reader = self.reader();
        let pin = reader.pin();
        let table = reader.table_arc(&pin, ns, part::DATA)?;
        let bytes = table
            .get(Realm::Meta, LOCALITY_TABLE_KEY)
            .and_then(|v| v.as_bytes())
            .ok_or(Error::NotFound)?;
        Ok(f(&LocalityTable::new(bytes).map_err(corrupt)?))
    }

    /// Run `f` on the node topology's hwloc XML the server published (`Err(NotFound)` when it
    /// published none).
    pub fn with_topology_xml<T>(&self, f: impl FnOnce(&str) -> T) -> Result<T> {
        let reader = self.reader();
        let pin = reader.pin();
        let table = reader.table_arc(&pin, NAMESPACE, TOPOLOGY_PART)?;
        let xml = table
            .get(Realm::Meta, XML_KEY)
            .and_then(|v| v.as_str())
            .ok_or(Error::NotFound)?;
        Ok(f(xml))
    }
}

impl Client {
    /// A new hwloc topology (`hwloc_topology_t`) built from the store's XML, owned by the
    /// caller; `Err(NotFound)` when the server published none.
    pub fn hwloc_topology(&self) -> Result<*mut std::ffi::c_void> {
        let t = self.with_topology_xml(rshm_topo::raw::hwloc_topology_from_xml)?;
        if t.is_null() {
            return Err(Error::Corrupt("the store's topology XML does not load"));
        }
        Ok(t)
    }
}

/// The part this process reads job tables from: its NUMA domain's replica when the server
/// announced replicas (`RSHM_NUMA_REPLICAS`, set at setup_fork only then) and every CPU this
/// process may run on lies in one domain of the server's map; part DATA otherwise. A node of
/// one domain announces none, so this looks nothing up there.
pub fn numa_part(reader: &Reader) -> u32 {
    if std::env::var_os(crate::client::env::NUMA_REPLICAS).is_none() {
        return part::DATA;
    }
    let pin = reader.pin();
    let Ok(t) = reader.table_arc(&pin, NAMESPACE, TOPOLOGY_PART) else {
        return part::DATA;
    };
    let Some(map) = t.get(Realm::Meta, NUMA_MAP_KEY).and_then(|v| v.as_bytes()) else {
        return part::DATA;
    };
    let Ok(cpus) = rustix::thread::sched_getaffinity(None) else {
        return part::DATA;
    };
    let allowed = (0..rustix::thread::CpuSet::MAX_CPU).filter(|&i| cpus.is_set(i));
    match rshm_topo::numa::domain_of(map, allowed) {
        Some(d) if d < rshm_topo::numa::MAX_REPLICAS => part::DATA_REPLICAS + d as u32,
        _ => part::DATA,
    }
}
