//! Reserved keys the job-data layer knows by name, and each key's default realm (standard 6.1.1
//! to 6.1.5). A key not listed here defaults to the process realm (6.2.1.4).

#![forbid(unsafe_code)]

pub const SESSION_INFO_ARRAY: &str = "pmix.ssn.arr";
pub const JOB_INFO_ARRAY: &str = "pmix.job.arr";
pub const APP_INFO_ARRAY: &str = "pmix.app.arr";
pub const NODE_INFO_ARRAY: &str = "pmix.node.arr";
pub const PROC_INFO_ARRAY: &str = "pmix.pdata";

pub const SESSION_ID: &str = "pmix.session.id";
pub const APPNUM: &str = "pmix.appnum";
pub const NODEID: &str = "pmix.nodeid";
pub const HOSTNAME: &str = "pmix.hname";
pub const RANK: &str = "pmix.rank";

pub const NODE_MAP: &str = "pmix.nmap";
pub const PROC_MAP: &str = "pmix.pmap";
pub const NODE_MAP_RAW: &str = "pmix.nmap.raw";
pub const PROC_MAP_RAW: &str = "pmix.pmap.raw";

pub const JOB_SIZE: &str = "pmix.job.size";
pub const MAX_PROCS: &str = "pmix.max.size";
pub const NUM_NODES: &str = "pmix.num.nodes";
pub const NODE_LIST: &str = "pmix.nlist";
pub const LOCAL_PEERS: &str = "pmix.lpeers";
pub const LOCAL_SIZE: &str = "pmix.local.size";
pub const LOCALLDR: &str = "pmix.lldr";
pub const LOCAL_RANK: &str = "pmix.lrank";
pub const NODE_RANK: &str = "pmix.nrank";

/// Store metadata keys (`Realm::Meta`, never PMIx answers).
pub mod meta {
    /// The job's session id (u32).
    pub const SESSION_ID: &str = "rshm.session.id";
    /// The node id of the store's own node (u32), when the registration names it.
    pub const LOCAL_NODEID: &str = "rshm.local.nodeid";
    /// The hostname → node id index, a byte object (`jobdata::node_names`).
    pub const NODES_BY_NAME: &str = "rshm.nodes.by.name";
}

/// The realm a reserved key refers to when no realm qualifier is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultRealm {
    Session,
    Job,
    App,
    Node,
    Proc,
}

/// Job-realm keys that take a node selector (PMIX_HOSTNAME / PMIX_NODEID) to mean "of the
/// specified job on that node" (6.1.2: PMIX_LOCALLDR "defaults to current node in absence of
/// PMIX_HOSTNAME or PMIX_NODEID qualifier"; likewise the local peers and size).
pub const NODE_SELECTABLE_JOB_KEYS: &[&str] = &[LOCAL_PEERS, LOCAL_SIZE, LOCALLDR];

/// The keys OpenPMIx 4.2.2 files under the server's own node when a registration gives them at
/// the top level (`pmix_check_node_info`, src/include/pmix_globals.h), beside its job realm
/// copy; the node's identity (`PMIX_HOSTNAME`, `PMIX_NODEID`) is not moved (it names the node).
/// Sorted, for a binary search.
pub const TOP_LEVEL_NODE_KEYS: &[&str] = &[
    "pmix.alias",
    "pmix.fab.coord",
    "pmix.fab.devs",
    "pmix.fabdev",
    "pmix.fabdev.addr",
    "pmix.fabdev.btyp",
    "pmix.fabdev.driver",
    "pmix.fabdev.fmwr",
    "pmix.fabdev.idx",
    "pmix.fabdev.mtu",
    "pmix.fabdev.nm",
    "pmix.fabdev.pcidevid",
    "pmix.fabdev.speed",
    "pmix.fabdev.state",
    "pmix.fabdev.type",
    "pmix.fabdev.vendid",
    "pmix.fabdev.vndr",
    "pmix.lcpus",
    "pmix.lldr",
    "pmix.local.size",
    "pmix.lpeers",
    "pmix.lprocs",
    "pmix.ndosub",
    "pmix.node.size",
    "pmix.pmem",
];

/// The keys OpenPMIx 4.2.2 files under the job's app when a registration gives them at the top
/// level (`pmix_check_app_info`). Sorted.
pub const TOP_LEVEL_APP_KEYS: &[&str] = &[
    "pmix.aldr",
    "pmix.apmap.regex",
    "pmix.apmap.type",
    "pmix.app.argv",
    "pmix.app.size",
    "pmix.pset.mems",
    "pmix.pset.nm",
    "pmix.wdir",
];

/// The node keys the maps give (each node's local size, leader and peers): OpenPMIx stores them
/// after everything registered, so the maps' values win over a node array's or a top-level key's
/// (`pmix_gds_hash_store_map`).
pub const MAP_NODE_KEYS: &[&str] = &[LOCAL_SIZE, LOCALLDR, LOCAL_PEERS];

/// The default realm of `key`: session keys (6.1.1), job keys (6.1.2, and the session-related
/// keys of 6.1.1 that "default to the job realm"), app keys (6.1.3), node keys (6.1.5); any
/// other key is a process key (6.1.4, 6.2.1.4). A `match` compiles to length-then-bytes
/// comparisons: this runs on every get.
pub fn default_realm(key: &str) -> DefaultRealm {
    match key {
        "pmix.clid" | "pmix.univ.size" | "pmix.tmpdir" | "pmix.tdir.rmclean" | "pmix.fqdn"
        | "pmix.rm.name" | "pmix.rm.version" => DefaultRealm::Session,
        "pmix.alist" | "pmix.num.anodes" | "pmix.max.size" | "pmix.nlist" | "pmix.num.slots"
        | "pmix.num.nodes" | "pmix.nmap" | "pmix.nmap.raw" | "pmix.pmap" | "pmix.pmap.raw"
        | "pmix.anlmap" | "pmix.jobid" | "pmix.offset" | "pmix.cmd.line" | "pmix.nsdir"
        | "pmix.job.size" | "pmix.job.napps" | "pmix.lpeers" | "pmix.lldr" | "pmix.lcpus"
        | "pmix.local.size" => DefaultRealm::Job,
        "pmix.aldr" | "pmix.app.size" | "pmix.app.argv" | "pmix.apmap.type"
        | "pmix.apmap.regex" => DefaultRealm::App,
        "pmix.hname" | "pmix.alias" | "pmix.nodeid" | "pmix.node.size" | "pmix.pmem"
        | "pmix.lprocs" | "pmix.ndosub" => DefaultRealm::Node,
        _ => DefaultRealm::Proc,
    }
}

/// Reserved keys start with "pmix" (5.3: a client may not post them).
#[inline]
pub fn is_reserved(key: &str) -> bool {
    key.starts_with("pmix")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lists are searched by bisection.
    #[test]
    fn top_level_key_lists_are_sorted() {
        for list in [TOP_LEVEL_NODE_KEYS, TOP_LEVEL_APP_KEYS] {
            assert!(list.is_sorted(), "{list:?}");
        }
    }
}
