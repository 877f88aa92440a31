//! NUMA-aware reading (docs/topology.md "NUMA"): on a node of several NUMA domains the server
//! writes a replica of each hot table per domain, its pages bound to that domain, and a reader
//! maps its own domain's replica. A node of one domain gets no replicas and no map, so its
//! readers pay nothing. The domains are the NUMA nodes that have CPUs, in logical order.
//!
//! The domain map the server publishes, so that readers choose without hwloc (all integers
//! little-endian): magic `RNM1`, `ndomains` (u32), `npus` (u32), then one byte per PU by OS
//! index below `npus`: its domain, or `0xff` for none.

use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::memory::binding::{MemoryBindingFlags, MemoryBindingPolicy};
use hwlocality::object::depth::Depth;
use hwlocality::object::TopologyObject;
use hwlocality::Topology;

/// Most replicas (domains) the store keeps; a node with more domains gets none.
pub const MAX_REPLICAS: usize = 8;
const MAGIC: &[u8; 4] = b"RNM1";
const NONE: u8 = 0xff;
/// Widest PU index the map covers.
const MAX_PUS: usize = 1 << 16;

fn domains(topology: &Topology) -> Vec<&TopologyObject> {
    topology
        .objects_at_depth(Depth::NUMANode)
        .filter(|d| d.cpuset().is_some_and(|c| !c.is_empty()))
        .collect()
}

/// The replica a reader bound to `binding` maps: the index of the one domain whose CPUs
/// contain the binding. `None` (read the primary copy) when the node has a single domain, the
/// reader is not bound (empty or full), or its binding spans several domains.
pub fn replica_for(topology: &Topology, binding: &CpuSet) -> Option<usize> {
    let domains = domains(topology);
    if domains.len() < 2 || binding.is_empty() || binding.is_full() {
        return None;
    }
    domains
        .iter()
        .position(|d| d.cpuset().is_some_and(|cpus| cpus.includes(binding)))
}

/// How many replicas the server should write: one per domain with CPUs, none on a node of one
/// domain (or of more than [`MAX_REPLICAS`]).
pub fn replicas_wanted(topology: &Topology) -> usize {
    match domains(topology).len() {
        n if (2..=MAX_REPLICAS).contains(&n) => n,
        _ => 0,
    }
}

/// The domain map's bytes; `None` when no replicas are wanted.
pub fn domain_map(topology: &Topology) -> Option<Vec<u8>> {
    let n = replicas_wanted(topology);
    if n == 0 {
        return None;
    }
    let domains = domains(topology);
    let npus = topology
        .cpuset()
        .last_set()
        .map_or(0, |i| usize::from(i) + 1);
    if npus > MAX_PUS {
        return None;
    }
    let mut by_pu = vec![NONE; npus];
    for (d, dom) in domains.iter().enumerate() {
        if let Some(cpus) = dom.cpuset() {
            for pu in cpus.iter_set() {
                if let Some(slot) = by_pu.get_mut(usize::from(pu)) {
                    *slot = d as u8;
                }
            }
        }
    }
    let mut out = Vec::with_capacity(12 + npus);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(n as u32).to_le_bytes());
    out.extend_from_slice(&(npus as u32).to_le_bytes());
    out.extend_from_slice(&by_pu);
    Some(out)
}

/// The domain of a reader allowed to run on `cpus` (OS indexes), by the map: `Some` only when
/// every CPU lies in the same domain. Malformed map bytes are no domain.
pub fn domain_of(map: &[u8], cpus: impl IntoIterator<Item = usize>) -> Option<usize> {
    if map.len() < 12 || &map[..4] != MAGIC {
        return None;
    }
    let word = |o: usize| u32::from_le_bytes([map[o], map[o + 1], map[o + 2], map[o + 3]]);
    let (n, npus) = (word(4) as usize, word(8) as usize);
    let by_pu = map.get(12..12 + npus)?;
    let mut found: Option<u8> = None;
    for cpu in cpus {
        let d = *by_pu.get(cpu)?;
        if d == NONE || d as usize >= n || found.is_some_and(|f| f != d) {
            return None;
        }
        found = Some(d);
    }
    found.map(usize::from)
}

/// Run `f` with the calling thread's memory bound to `domain` (pages it allocates, a table
/// file's among them, come from that domain), then unbind. Returns `f`'s value and whether the
/// binding took (it does not on a topology that is not this machine's, nor where the kernel
/// refuses: `f` runs anyway, its pages placed by the default policy).
pub fn with_memory_on<T>(topology: &Topology, domain: usize, f: impl FnOnce() -> T) -> (T, bool) {
    let nodes = domains(topology)
        .get(domain)
        .and_then(|d| d.nodeset().map(|n| n.clone_target()));
    // hwloc's binding calls on a topology that is not this machine's do nothing and succeed.
    let bound = topology.is_this_system()
        && nodes.is_some_and(|n| {
            topology
                .bind_memory(&n, MemoryBindingPolicy::Bind, MemoryBindingFlags::THREAD)
                .is_ok()
        });
    let out = f();
    if bound {
        let _ = topology.unbind_memory(MemoryBindingFlags::THREAD);
    }
    (out, bound)
}
