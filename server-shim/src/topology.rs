//! The node's topology in the store (docs/topology.md), when the server turns it on
//! (`rshm.topology`): the hwloc XML published once, in a table of its own; and for each
//! registered namespace, the locality strings of local processes whose host gave a cpuset but
//! no string (as `PMIx_server_generate_locality_string` makes them), and the relative-locality
//! table of its local ranks.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use rshm_gds::jobdata::{keys, RegInfo};
use rshm_gds::{Error, Realm, Result, TableBuilder, Value};
use rshm_topo::hwlocality::Topology;
use rshm_topo::topology::{load, Source};

/// The server directive that turns it on ([`crate::ServerOptions::topology`]).
pub const INFO_KEY: &str = "rshm.topology";
pub use rshm_topo::store::{LOCALITY_TABLE_KEY, NAMESPACE, NUMA_MAP_KEY, PART, XML_KEY};
// The topology's part is chosen outside gds: it must be none of gds's layers' parts
// (gds/tests/parts.rs checks those among themselves).
const _: () = {
    use rshm_gds::part as p;
    assert!(PART != p::DATA && PART != p::RESOURCES && PART != p::POSTED);
    assert!(PART != p::POSTED_INDEX && PART != p::PSETS && PART != p::GROUPS);
    assert!(PART < p::DATA_REPLICAS || (PART >= p::DATA_REPLICAS + 8 && PART < p::POSTED_RANKS));
};
/// The server directive that turns NUMA replicas on (with topology).
pub const NUMA_INFO_KEY: &str = "rshm.numa";
const CPUSET: &str = "pmix.cpuset";
const LOCALITY_STRING: &str = "pmix.locstr";

/// The node's topology, loaded once by the server.
pub struct NodeTopology {
    topology: Topology,
    xml: String,
    /// The NUMA domain map, when replicas are written (more than one domain, asked for).
    numa_map: Option<Vec<u8>>,
}

fn topo_err(e: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!("topology: {e}"))
}

impl NodeTopology {
    /// Load from `source` (this machine: hwloc also honours `HWLOC_XMLFILE` and
    /// `HWLOC_SYNTHETIC`).
    /// `numa`: write a replica of each job table per NUMA domain (none on a node of one).
    pub fn load(source: &Source, numa: bool) -> Result<NodeTopology> {
        let topology = load(source).map_err(topo_err)?;
        let xml = rshm_topo::to_xml(&topology).map_err(topo_err)?;
        let numa_map = numa
            .then(|| rshm_topo::numa::domain_map(&topology))
            .flatten();
        Ok(NodeTopology {
            topology,
            xml,
            numa_map,
        })
    }

    /// How many NUMA replicas each job table gets (0: none).
    pub fn replicas(&self) -> usize {
        if self.numa_map.is_some() {
            rshm_topo::numa::replicas_wanted(&self.topology)
        } else {
            0
        }
    }

    /// Write `table` as replica `d` of `ns`'s job table, its pages bound to domain `d` when the
    /// kernel allows (part [`rshm_gds::part::DATA_REPLICAS`] + d).
    pub fn put_replicas(
        &self,
        tx: &mut rshm_gds::Transaction<'_>,
        ns: &str,
        table: &TableBuilder,
    ) -> Result<()> {
        for d in 0..self.replicas() {
            let part = rshm_gds::part::DATA_REPLICAS + d as u32;
            rshm_topo::numa::with_memory_on(&self.topology, d, || tx.put_table(ns, part, table))
                .0?;
        }
        Ok(())
    }

    /// The hwloc topology.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The table the store publishes once: the XML.
    pub fn table(&self) -> Result<TableBuilder> {
        let mut t = TableBuilder::new();
        t.insert(Realm::Meta, XML_KEY, &Value::String(self.xml.clone()))?;
        if let Some(map) = &self.numa_map {
            t.insert(Realm::Meta, NUMA_MAP_KEY, &Value::ByteObject(map.clone()))?;
        }
        Ok(t)
    }

    /// Add to a namespace's job table what its registration leaves to the topology: the
    /// locality strings of processes given a cpuset without one, and the relative-locality
    /// table of the local processes (those the registration gives a cpuset or a locality
    /// string, i.e. bound on this node). A cpuset that is not `hwloc:<list>` or not bound
    /// derives nothing, as libpmix derives nothing from it.
    pub fn complete<I: RegInfo>(&self, infos: &[I], table: &mut TableBuilder) -> Result<()> {
        // rank -> (cpuset, locality string, whether a locality string of any type was given).
        let mut procs: BTreeMap<u32, (Option<&str>, Option<&str>)> = BTreeMap::new();
        for info in infos {
            if info.key() != keys::PROC_INFO_ARRAY {
                continue;
            }
            let Some(items) = info.infos() else { continue };
            let (mut rank, mut cpuset, mut loc, mut has_loc) = (None, None, None, false);
            for i in items {
                match i.key() {
                    keys::RANK => rank = i.number(),
                    CPUSET => cpuset = i.string(),
                    LOCALITY_STRING => {
                        has_loc = true;
                        loc = i.string();
                    }
                    _ => {}
                }
            }
            // A locality string the host gave (of whatever type) is its to answer: nothing is
            // derived in its place.
            let cpuset = cpuset.filter(|_| !has_loc);
            if let Some(rank) = rank.filter(|_| cpuset.is_some() || loc.is_some()) {
                procs.insert(rank, (cpuset, loc));
            }
        }
        if procs.is_empty() {
            return Ok(());
        }
        let mut derived: Vec<(u32, Option<String>)> = Vec::with_capacity(procs.len());
        for (&rank, &(cpuset, loc)) in &procs {
            let s = match (loc, cpuset) {
                (Some(l), _) => Some(l.to_owned()),
                (None, Some(c)) => {
                    let s = rshm_topo::locality::locality_of_cpuset_string(&self.topology, c);
                    if let Some(s) = &s {
                        table.insert(
                            Realm::Proc(rank),
                            LOCALITY_STRING,
                            &Value::String(s.clone()),
                        )?;
                    }
                    s
                }
                (None, None) => None,
            };
            derived.push((rank, s));
        }
        let ranks: Vec<(u32, Option<&str>)> =
            derived.iter().map(|(r, s)| (*r, s.as_deref())).collect();
        // Beyond the table's bounds (more distinct strings, or a wider span of ranks, than it
        // holds) the namespace gets no table: its clients compare strings instead, and the
        // registration itself is not refused for it.
        if let Ok(bytes) = rshm_topo::table::build(&ranks) {
            table.insert(Realm::Meta, LOCALITY_TABLE_KEY, &Value::ByteObject(bytes))?;
        }
        Ok(())
    }
}
