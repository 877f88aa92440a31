//! Locality strings, as OpenPMIx 4.2.2's `pmix_hwloc_generate_locality_string` writes them
//! (what `PMIx_server_generate_locality_string` returns): for each level of the topology below
//! the machine that is a package, an L3, L2 or L1 (data) cache, a core or a PU, in depth order,
//! `<tag><list>:` where the list holds the logical indexes (within the level) of the objects
//! the cpuset intersects; then the NUMA nodes' (`NM`); the last colon removed. An unbound
//! process (an empty or full cpuset) has none. Example: `SK0:L30:L20:L10:CR0:HT0:NM0`.

use hwlocality::bitmap::BitmapRef;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::depth::Depth;
use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;
use hwlocality::Topology;

use crate::cpulist;

/// The two-letter tag of a level, as the string names it; `None` for levels it skips.
fn tag(ty: ObjectType) -> Option<&'static str> {
    Some(match ty {
        ObjectType::Package => "SK",
        ObjectType::L3Cache => "L3",
        ObjectType::L2Cache => "L2",
        ObjectType::L1Cache => "L1",
        ObjectType::Core => "CR",
        ObjectType::PU => "HT",
        ObjectType::NUMANode => "NM",
        _ => return None,
    })
}

/// Logical indexes (within the level) of the objects whose cpuset intersects `cpuset`.
fn level<'t>(objs: impl Iterator<Item = &'t TopologyObject>, cpuset: &CpuSet) -> Vec<u32> {
    objs.enumerate()
        .filter(|(_, o)| {
            o.cpuset()
                .is_some_and(|c: BitmapRef<'_, CpuSet>| c.intersects(cpuset))
        })
        .map(|(w, _)| w as u32)
        .collect()
}

/// The locality string of a process bound to `cpuset` (without the `hwloc:` prefix, as
/// libpmix returns it); `None` when it is not bound (empty or full cpuset).
pub fn locality_string(topology: &Topology, cpuset: &CpuSet) -> Option<String> {
    if cpuset.is_empty() || cpuset.is_full() {
        return None;
    }
    let mut out = String::new();
    let depth = usize::from(topology.depth());
    let mut push = |tag: &str, idx: Vec<u32>| {
        if !idx.is_empty() {
            out.push_str(tag);
            out.push_str(&cpulist::format(idx));
            out.push(':');
        }
    };
    for d in 1..depth {
        let Ok(depth) = Depth::try_from(d) else {
            continue;
        };
        let Some(ty) = topology.type_at_depth(depth) else {
            continue;
        };
        // hwloc 2 keeps NUMA nodes out of the normal levels (they come last); L1 is the data
        // cache (an instruction cache is L1ICache, skipped as libpmix skips it).
        let Some(t) = tag(ty).filter(|_| ty != ObjectType::NUMANode) else {
            continue;
        };
        push(t, level(topology.objects_at_depth(depth), cpuset));
    }
    push(
        "NM",
        level(topology.objects_at_depth(Depth::NUMANode), cpuset),
    );
    out.pop();
    (!out.is_empty()).then_some(out)
}

/// A cpuset string as hosts register `PMIX_CPUSET` (`hwloc:<list>`, what
/// `PMIx_server_generate_cpuset_string` writes); `None` if it is not one.
pub fn parse_cpuset_string(s: &str) -> Option<CpuSet> {
    let (src, list) = s.split_once(':')?;
    if !src.eq_ignore_ascii_case("hwloc") {
        return None;
    }
    let bits = cpulist::parse(list)?;
    let mut set = CpuSet::new();
    for i in bits.iter() {
        set.set(i as usize);
    }
    Some(set)
}

/// The locality string of a registered `PMIX_CPUSET` value.
pub fn locality_of_cpuset_string(topology: &Topology, cpuset: &str) -> Option<String> {
    locality_string(topology, &parse_cpuset_string(cpuset)?)
}
