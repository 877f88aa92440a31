//! Loading a topology: discovered as libpmix 4.2.2 does (important I/O objects kept), from the
//! XML the store holds, or from a synthetic description; and exporting it as hwloc v2 XML.

use hwlocality::object::types::ObjectType;
use hwlocality::topology::builder::{BuildFlags, TypeFilter};
use hwlocality::topology::export::xml::XMLExportFlags;
use hwlocality::Topology;

/// Where a topology comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// This machine (hwloc honours `HWLOC_XMLFILE` and `HWLOC_SYNTHETIC` here, as libpmix's
    /// own discovery does).
    Discover,
    /// An hwloc XML document.
    Xml(String),
    /// An hwloc synthetic description (`pack:2 core:64 pu:2`).
    Synthetic(String),
}

fn err(what: &str, e: impl std::fmt::Display) -> String {
    format!("{what}: {e}")
}

/// Load a topology from `source`.
pub fn load(source: &Source) -> Result<Topology, String> {
    let b = Topology::builder()
        .with_type_filter(ObjectType::Bridge, TypeFilter::KeepImportant)
        .and_then(|b| b.with_type_filter(ObjectType::PCIDevice, TypeFilter::KeepImportant))
        .and_then(|b| b.with_type_filter(ObjectType::OSDevice, TypeFilter::KeepImportant))
        .map_err(|e| err("hwloc type filter", e))?;
    let b = match source {
        Source::Discover => b,
        Source::Xml(xml) => b
            .from_xml(xml)
            .map_err(|e| err("hwloc XML", e))?
            .with_flags(BuildFlags::ASSUME_THIS_SYSTEM)
            .map_err(|e| err("hwloc flags", e))?,
        Source::Synthetic(s) => b.from_synthetic(s).map_err(|e| err("hwloc synthetic", e))?,
    };
    b.build().map_err(|e| err("hwloc load", e))
}

/// This machine's topology.
pub fn discover() -> Result<Topology, String> {
    load(&Source::Discover)
}

/// A topology from hwloc XML.
pub fn from_xml(xml: &str) -> Result<Topology, String> {
    load(&Source::Xml(xml.to_owned()))
}

/// The topology as hwloc v2 XML (what libpmix exports as `PMIX_HWLOC_XML_V2`).
pub fn to_xml(topology: &Topology) -> Result<String, String> {
    topology
        .export_xml(XMLExportFlags::empty())
        .map(|x| x.as_str().to_owned())
        .map_err(|e| err("hwloc XML export", e))
}
