//! Which NUMA replica of the store's hot tables a reader maps: the domain its binding lies in.
//! A node of one NUMA domain has no replicas, so it pays nothing (docs/topology.md "NUMA").

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::depth::Depth;
use hwlocality::Topology;

/// The replica a reader bound to `binding` maps: the logical index of the one NUMA node whose
/// CPUs contain the binding. `None` (read the primary copy) when the node has a single NUMA
/// domain, the reader is not bound (empty or full), or its binding spans several domains or
/// lies in none (a domain without CPUs).
pub fn replica_for(topology: &Topology, binding: &CpuSet) -> Option<usize> {
    let domains: Vec<_> = topology.objects_at_depth(Depth::NUMANode).collect();
    if domains.len() < 2 || binding.is_empty() || binding.is_full() {
        return None;
    }
    // A binding straddling domains reads the primary copy: no domain is local to all of it.
    domains
        .iter()
        .position(|d| d.cpuset().is_some_and(|cpus| cpus.includes(binding)))
}

/// Whether the server should write replicas at all: more than one NUMA domain with CPUs.
pub fn replicas_wanted(topology: &Topology) -> usize {
    let n = topology
        .objects_at_depth(Depth::NUMANode)
        .filter(|d| d.cpuset().is_some_and(|c| !c.is_empty()))
        .count();
    if n < 2 {
        0
    } else {
        n
    }
}
