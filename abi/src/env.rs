//! The names a server and its clients share: the environment a server hands its clients at
//! setup_fork (`PMIx_server_setup_fork`), the one a server reads, and rshm's own info key of
//! `rshm_server_open`, named once for the server, the client, the preload and the component's C
//! adapter (which reads the same names through the generated `rshm_server.h`).

/// The store directory (`rshm_gds::Reader::attach_from_env` reads it).
pub const STORE: &str = rshm_gds::ENV_STORE;
/// The uid a client requires the store to be owned by (`rshm_gds::Reader::attach` refuses any other
/// owner); set beside [`STORE`] at setup_fork.
pub const STORE_OWNER: &str = rshm_gds::ENV_STORE_OWNER;
/// The id of the store the server made (`rshm_gds::Reader::attach` refuses a store with another id
/// at that path: one moved or put there); set beside [`STORE`] at setup_fork.
pub const STORE_ID: &str = rshm_gds::ENV_STORE_ID;
/// The client's namespace and rank, when the server is not libpmix (which sets
/// `PMIX_NAMESPACE` / `PMIX_RANK`, read as a fallback).
pub const NSPACE: &str = "RSHM_NSPACE";
pub const RANK: &str = "RSHM_RANK";
/// How many NUMA replicas of the job tables the store holds (docs/topology.md "NUMA"); set
/// by setup_fork only when it holds some, so that a client of a single-domain node looks
/// nothing up.
pub const NUMA_REPLICAS: &str = "RSHM_NUMA_REPLICAS";
/// A server's explicit store base directory, used as given (`rshm_gds::choose_base_dir`);
/// [`INFO_DIR`] overrides it.
pub const DIR: &str = rshm_gds::ENV_DIR;
/// `rshm_server_open`'s info key for an explicit store base directory (a `PMIX_STRING`); the
/// header spells it `RSHM_SERVER_INFO_DIR`.
pub const INFO_DIR: &str = "rshm.dir";
